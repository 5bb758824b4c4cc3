"""The Resonant Consensus Protocol, declared (SPEC §7): its settings, steps, templates, replies,
records, validity, summary and simulated behaviour, in the one object central code reads."""

from __future__ import annotations

from dataclasses import replace

from workbench.core.protocols.rcp.config import RcpOptions
from workbench.core.protocols.rcp.metrics import METRICS
from workbench.core.protocols.rcp.report import section
from workbench.core.protocols.rcp.run import (
    RcpAgent,
    RcpRunConfig,
    VoteReply,
    ballot_model,
    read,
    run_rcp,
)
from workbench.core.protocols.rcp.steps import IDENTITY
from workbench.core.protocols.shared.declaration import Finished, Prompts, ValidityUnit
from workbench.core.protocols.shared.steps import AgentCall


class RcpRunOptions(RcpOptions):
    """RCP's part of a run configuration: θ, τ, weights, the reference cluster, ballot mode and
    refinement rounds (:class:`RcpOptions`, at the top level)."""

    def classification_panel(self) -> list[dict]:
        """The clusters as the engine's input takes them: names, agent ids, theta and weight."""
        return [c.model_dump(exclude_none=True) for c in self._classification_panel().clusters]


def generator(cfg, prompts: Prompts):
    agents = tuple(RcpAgent(a.id, c.name, a.persona) for c in cfg.clusters for a in c.agents)
    return run_rcp(RcpRunConfig(query=cfg.query, seed=cfg.seed, agents=agents,
                                clusters=tuple(cfg.classification_panel()), reference=cfg.reference,
                                theta=cfg.theta, tau=cfg.tau, weighted=cfg.weighted,
                                ballot_mode=cfg.ballot_mode, refinement_rounds=cfg.refinement_rounds), prompts)


def reply_model(call: AgentCall):
    if call.reply_schema == "rcp_ballot" and call.meta.get("labels"):
        return ballot_model(tuple(call.meta["labels"]))
    return VoteReply if call.reply_schema == "rcp_vote" else None


def finish(cfg, run_id: str, result) -> Finished:
    return Finished({"rounds": [{"round": r.index, "artifacts": len(r.artifacts), "states": r.states} for r in result]})


PROTOCOL = replace(
    IDENTITY, config=RcpRunOptions, generator=generator, read=read, reply_model=reply_model, finish=finish,
    validity=ValidityUnit("vote", "votes"), report=section, metrics=METRICS, sim="workbench.core.sim.rcp",
)
