"""The Consensus Server's findings, declared (SPEC §7): agents confirm or challenge findings. Its
settings, its step and template, its replies, its records, validity, summary and simulated
behaviour, in the one object central code reads."""

from __future__ import annotations

from dataclasses import replace

from pydantic import model_validator

from workbench.core.errors import InputError
from workbench.core.protocols.findings.config import FindingsOptions
from workbench.core.protocols.findings.metrics import METRICS
from workbench.core.protocols.findings.report import section
from workbench.core.protocols.findings.run import (
    FindingsAgent,
    FindingsRunConfig,
    FindingVoteReply,
    read,
    run_findings,
)
from workbench.core.protocols.findings.steps import IDENTITY
from workbench.core.protocols.shared.declaration import Finished, Prompts, Record, ValidityUnit
from workbench.core.protocols.shared.steps import AgentCall
from workbench.core.protocols.shared.tiers import TIERS


class FindingsRunOptions(FindingsOptions):
    """The findings' part of a run configuration: :class:`FindingsOptions` at the top level."""

    @model_validator(mode="after")
    def _tiers(self):
        for k, tier in enumerate(self.findings_tiers):
            if tier not in TIERS:
                raise InputError(f"findings_tiers[{k}]", f"must be one of {', '.join(TIERS)}, got {tier!r}")
        return self


def generator(cfg, prompts: Prompts):
    agents = tuple(FindingsAgent(a.id, a.role or "scout", a.persona) for a in cfg.agents)
    return run_findings(FindingsRunConfig(seed=cfg.seed, agents=agents, findings=tuple(cfg.findings),
                                          threshold=cfg.threshold), prompts)


def reply_model(call: AgentCall):
    return FindingVoteReply if call.reply_schema == "finding_vote" else None


def prepare(cfg, run_id: str) -> tuple[Record, ...]:
    """The findings voted on, before the first call. A finding is its id and its claim: one already
    in the project with the same claim is kept, one whose id another claim holds is refused."""
    return tuple(Record("finding", dict(finding)) for finding in cfg.findings)


def finish(cfg, run_id: str, result) -> Finished:
    return Finished({"findings": [r.to_output() for r in result.results.values() if r is not None]})


PROTOCOL = replace(
    IDENTITY, config=FindingsRunOptions, generator=generator, read=read, reply_model=reply_model,
    prepare=prepare, finish=finish, validity=ValidityUnit("finding_vote", "findings votes"),
    report=section, metrics=METRICS, sim="workbench.core.sim.findings",
)
