"""Ask, critique, revise, declared (SPEC §7): the one object the workbench reads. The entry point
``resonance_workbench.protocols: acr = "acr_protocol.declaration:PROTOCOL"`` (pyproject.toml)
registers it; the registry then gives it its distribution's name as ``source``.

Nothing here writes SQL or reads the project: the protocol returns :class:`Record` values (its
artifacts, its critiques, its revisions' summary) and the workbench stores them.
"""

from __future__ import annotations

import re
from dataclasses import replace

from acr_protocol.config import AcrOptions
from acr_protocol.report import report
from acr_protocol.run import (
    AcrAgent,
    AcrResult,
    artifact_key,
    read,
    reply_model,
    run_acr,
)
from acr_protocol.steps import IDENTITY
from workbench.core.protocols.shared.declaration import (
    Finished,
    Prompts,
    Record,
    ValidityUnit,
)

_WORD = re.compile(r"\w+")


def generator(cfg, prompts: Prompts):
    """The run's step generator, from the run configuration (the shared fields and :class:`AcrOptions`)."""
    agents = tuple(AcrAgent(a.id, c.name, a.persona) for c in cfg.clusters for a in c.agents)
    return run_acr(cfg.query, cfg.seed, agents, cfg.critique_max_words, prompts)


def changed_share(before: str, after: str) -> float:
    """How far a revision moved from its answer: 1 minus the Jaccard overlap of their word sets
    (0: the same words; 1: none in common)."""
    a, b = set(_WORD.findall(before.lower())), set(_WORD.findall(after.lower()))
    return round(1.0 - len(a & b) / len(a | b), 4) if a | b else 0.0


def finish(cfg, run_id: str, result: AcrResult) -> Finished:
    """The summary's ``acr`` part (one row per agent) and a ``revision`` record per revised answer."""
    rows, records = [], []
    for agent in result.agents:
        before, after = result.answers.get(agent.id), result.revisions.get(agent.id)
        critique = result.critiques.get(agent.id)
        row = {"agent": agent.id, "answered": before is not None, "critic": result.critics.get(agent.id),
               "severity": critique.severity if critique else None, "revised": after is not None,
               "changed_share": changed_share(before, after) if before and after else None}
        rows.append(row)
        if after is not None:
            records.append(Record("revision", {"key": artifact_key(2, agent.id), "agent": agent.id, "data": {
                "before": artifact_key(1, agent.id), "after": artifact_key(2, agent.id), "critic": row["critic"],
                "severity": row["severity"], "changed_share": row["changed_share"]}}))
    moved = [r["changed_share"] for r in rows if r["changed_share"] is not None]
    summary = {"answers": len(result.answers), "critiques": len(result.critiques), "revisions": len(result.revisions),
               "mean_changed_share": round(sum(moved) / len(moved), 4) if moved else None, "agents": rows}
    return Finished({"acr": summary}, tuple(records))


PROTOCOL = replace(
    IDENTITY, config=AcrOptions, generator=generator, read=read, reply_model=reply_model, finish=finish,
    # The critiques are this protocol's judgments: what a run's validity counts (SPEC §1).
    validity=ValidityUnit("critique", "critiques"),
    report=report, sim="acr_protocol.sim",
)
