"""The conductor's checklist (seed: "Conductor's Checklist") and each item's status for a session.

Statuses: ``done``, ``pending`` (not yet, or nothing recorded shows it), ``not_applicable``
(e.g. the failure phase when no check failed, the every-turn seed for stateful agents) and
``failed`` (a check interval overrun, a restoration that escalated, a marker that did not survive
the session). :func:`checklist_status` is pure over :class:`SessionFacts`, which
``echo_records.session_facts`` builds from the project file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from workbench.core.protocols.echo.models import VerificationEntry

Status = Literal["done", "pending", "not_applicable", "failed"]


@dataclass(frozen=True)
class ChecklistItem:
    id: str
    text: str
    patterns: tuple[str, ...] = ("stateless", "stateful", "compaction_aware")  # where it applies


@dataclass(frozen=True)
class ChecklistPhase:
    id: str
    title: str
    items: tuple[ChecklistItem, ...]


CHECKLIST: tuple[ChecklistPhase, ...] = (
    ChecklistPhase("session_start", "Session Start", (
        ChecklistItem("start.marker", "Generate or retrieve resonance marker"),
        ChecklistItem("start.inject", "Inject marker into agent's first message"),
        ChecklistItem("start.anchor", "Store resonance_anchor_{agent} in memory"),
        ChecklistItem("start.seed", "Store session_seed_{agent} with initial state"),
    )),
    ChecklistPhase("during_session", "During Session", (
        ChecklistItem("during.seed_every_turn", "For DeepSeek (stateless): Include seed in every interaction",
                      ("stateless",)),
        ChecklistItem("during.periodic_check",
                      "For Gemini/Claude (stateful, compaction-aware): Check marker every ~10 turns or "
                      "before key decisions", ("stateful", "compaction_aware")),
        ChecklistItem("during.seed_checkpoints", "Update session_seed_{agent} at significant checkpoints"),
        ChecklistItem("during.footer_watch", "Watch for footer state changes (Degraded, Recovering)"),
    )),
    ChecklistPhase("on_failure", "On Verification Failure", (
        ChecklistItem("failure.log", "Log the failure with timestamp"),
        ChecklistItem("failure.restore", "Execute Restoration Protocol"),
        ChecklistItem("failure.notify", "Notify relevant crew members"),
        ChecklistItem("failure.resume", "Resume from last known good state"),
    )),
    ChecklistPhase("session_end", "Session End", (
        ChecklistItem("end.checkpoint", "Final checkpoint to session_seed_{agent}"),
        ChecklistItem("end.summary", "Log session summary"),
        ChecklistItem("end.marker_persists", "Marker persists for next session continuity check"),
    )),
)


class RestorationFacts(BaseModel):
    id: str
    steps: list[str]
    notified: list[str] = Field(default_factory=list)
    started_at: str | None = None


class SessionFacts(BaseModel):
    """What the records show about one agent's session (unknown facts stay ``None``)."""

    agent: str
    pattern: str | None = None
    interval: int = 10
    marker_issued: bool = False
    anchor_stored: bool = False
    seed_stored: bool = False
    seed_updated: bool = False  # checkpointed after the session started
    checks: list[VerificationEntry] = Field(default_factory=list)
    restorations: list[RestorationFacts] = Field(default_factory=list)
    turns: int | None = None
    footer_states: list[dict] | None = None  # None: no footer information recorded
    ended: bool = False
    summary_logged: bool = False
    final_checkpoint: bool = False
    marker_persisted: bool = False  # an active anchor with an issued marker remains


class ItemStatus(BaseModel):
    id: str
    phase: str
    text: str
    status: Status
    detail: str = ""


def _periodic(f: SessionFacts) -> tuple[Status, str]:
    turns = [c.turn for c in f.checks if c.turn is not None and c.trigger != "restoration"]
    if not f.checks:
        return "pending", "no check recorded yet"
    if f.turns is None:
        return "done", f"{len(f.checks)} checks recorded"
    points = sorted(set(turns))
    gaps = [b - a for a, b in zip([0, *points], points)] + [f.turns - (points[-1] if points else 0)]
    worst = max(gaps) if gaps else 0
    if worst > f.interval:
        return "failed", f"{worst} turns passed without a check (interval {f.interval})"
    return "done", f"{len(points)} check points over {f.turns} turns; longest gap {worst}"


def _every_turn(f: SessionFacts) -> tuple[Status, str]:
    silent = {c.turn for c in f.checks if c.trigger and "every_turn" in c.trigger.split(",")}
    if not f.turns:
        return "pending", "no turn taken yet"
    missing = [t for t in range(1, f.turns + 1) if t not in silent]
    if missing:
        return "failed", f"turns without the seed check: {missing[:10]}"
    return "done", f"all {f.turns} turns carried the seed and were checked"


def _failure_phase(f: SessionFacts) -> dict[str, tuple[Status, str]]:
    failures = [c for c in f.checks if not c.success and c.trigger != "restoration"]
    if not failures:
        na = ("not_applicable", "no verification failed")
        return {"failure.log": na, "failure.restore": na, "failure.notify": na, "failure.resume": na}
    episodes = f.restorations
    logged = [r for r in episodes if "log" in r.steps]
    finished = [r for r in episodes if {"resume", "escalate"} & set(r.steps)]
    out: dict[str, tuple[Status, str]] = {}
    out["failure.log"] = (("done", f"{len(logged)} failures logged") if len(logged) >= len(failures)
                          else ("pending", f"{len(failures) - len(logged)} failures not logged"))
    out["failure.restore"] = (("done", f"{len(finished)} restorations ran to the end")
                              if episodes and len(finished) == len(episodes)
                              else ("pending", "a restoration is not finished" if episodes else "not started"))
    notified = [r for r in finished if r.notified]
    out["failure.notify"] = (("done", "notified: " + ", ".join(sorted({n for r in notified for n in r.notified})))
                             if finished and len(notified) == len(finished) else ("pending", "nobody notified yet"))
    last = episodes[-1] if episodes else None
    if last is None or not ({"resume", "escalate"} & set(last.steps)):
        out["failure.resume"] = ("pending", "restoration in progress" if last else "not started")
    elif "resume" in last.steps:
        out["failure.resume"] = ("done", "resumed from the last checkpoint with a new marker")
    else:
        out["failure.resume"] = ("failed", "restoration escalated to the conductor")
    return out


def checklist_status(facts: SessionFacts) -> list[ItemStatus]:
    """Every checklist item with its status for the session ``facts`` describes, in order."""
    f = facts
    started = f.anchor_stored and (bool(f.checks) or bool(f.turns))
    s: dict[str, tuple[Status, str]] = {
        "start.marker": ("done", "marker issued and recorded") if f.marker_issued else ("pending", "no marker"),
        "start.inject": ("done", "the anchor was given in the first message")
        if started else ("pending", "no call recorded with the marker"),
        "start.anchor": ("done", f"resonance_anchor_{f.agent} stored") if f.anchor_stored
        else ("pending", "no anchor stored"),
        "start.seed": ("done", f"session_seed_{f.agent} stored") if f.seed_stored else ("pending", "no seed stored"),
        "during.seed_every_turn": _every_turn(f),
        "during.periodic_check": _periodic(f),
        "during.seed_checkpoints": ("done", "seed updated after the session started") if f.seed_updated
        else ("pending", "no checkpoint after the initial seed"),
        "during.footer_watch": ("pending", "no footer information recorded") if f.footer_states is None
        else ("done", "states seen: " + (", ".join(x["state"] for x in f.footer_states) or "none")),
        **_failure_phase(f),
        "end.checkpoint": ("done", "final checkpoint stored") if f.ended and f.final_checkpoint
        else ("pending", "session not ended" if not f.ended else "no final checkpoint"),
        "end.summary": ("done", "session summary logged") if f.summary_logged else ("pending", "no summary logged"),
        "end.marker_persists": ("pending", "session not ended") if not f.ended
        else (("done", "an active anchor keeps the marker") if f.marker_persisted
              else ("failed", "no active anchor remains for the next session")),
    }
    out = []
    for phase in CHECKLIST:
        for item in phase.items:
            status, detail = s[item.id]
            if f.pattern is not None and f.pattern not in item.patterns:
                status, detail = "not_applicable", f"does not apply to {f.pattern} agents"
            out.append(ItemStatus(id=item.id, phase=phase.title, text=item.text, status=status, detail=detail))
    return out
