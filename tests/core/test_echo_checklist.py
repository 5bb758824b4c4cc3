"""The conductor's checklist: its items, and their status computed from a session's records."""

from __future__ import annotations

import random

from workbench.core.project import _sql
from workbench.core.project import echo as records
from workbench.core.protocols.echo import AgentContext, EchoPlan, SimulatedAgent
from workbench.core.protocols.echo.checklist import CHECKLIST, SessionFacts, checklist_status
from workbench.core.protocols.echo.models import VerificationEntry

QUERY = ("Please weigh the next part of the design against the constraints we settled and list the "
         "risks you see in it today")


def statuses(items) -> dict[str, str]:
    return {i.id: i.status for i in items}


def plan(pattern: str, turns: int, interval: int = 5, **kw) -> EchoPlan:
    return EchoPlan(agent="a1", persona="The Architect", pattern=pattern, interval=interval,
                    queries=[f"{QUERY} (part {i})" for i in range(1, turns + 1)], session_id="2026-01-31-001", **kw)


def test_the_checklist_has_the_seeds_four_phases_and_fifteen_items():
    assert [p.title for p in CHECKLIST] == ["Session Start", "During Session", "On Verification Failure",
                                           "Session End"]
    ids = [i.id for p in CHECKLIST for i in p.items]
    assert len(ids) == len(set(ids)) == 15
    assert "Inject marker into agent's first message" in [i.text for p in CHECKLIST for i in p.items]


def test_an_empty_project_leaves_everything_pending(project):
    s = statuses(records.checklist(project, "a1"))
    assert s["start.marker"] == s["start.anchor"] == s["start.seed"] == "pending"
    assert s["failure.log"] == "not_applicable"
    assert s["end.marker_persists"] == "pending"


def test_a_restored_session_stored_in_a_run(project, now):
    _sql.insert(project, "runs", {"id": "r1", "protocol": "echo", "status": "running", "started_at": now()})
    agent = SimulatedAgent("a1", AgentContext(150, "silent_truncation"), persona="The Architect")
    summary = records.run_echo_session(project, plan("stateful", 8, run_id="r1"), agent.answer,
                                       rng=random.Random(1), now=now)
    # Before the runner logs the summary, the session has not visibly ended.
    s = statuses(records.checklist(project, "a1", run_id="r1"))
    assert s["end.summary"] == "pending" and s["end.checkpoint"] == "pending"
    # The runner keeps the summary in runs.summary_json["echo"][agent].
    _sql.update(project, "runs", "r1", {"status": "completed", "summary_json": {"echo": {"a1": summary.model_dump()}}})
    items = records.checklist(project, "a1", run_id="r1")
    s = statuses(items)
    assert s == {
        "start.marker": "done", "start.inject": "done", "start.anchor": "done", "start.seed": "done",
        "during.seed_every_turn": "not_applicable", "during.periodic_check": "done",
        "during.seed_checkpoints": "done", "during.footer_watch": "done",
        "failure.log": "done", "failure.restore": "done", "failure.notify": "done", "failure.resume": "done",
        "end.checkpoint": "done", "end.summary": "done", "end.marker_persists": "done"}
    assert next(i for i in items if i.id == "failure.notify").detail == "notified: conductor"


def test_an_escalated_session_fails_resume_and_marker_persistence(project, now):
    decisions = [f"Decision {i}: keep the layered design and review every interface twice" for i in range(14)]
    agent = SimulatedAgent("a1", AgentContext(150, "silent_truncation"), persona="The Architect")
    summary = records.run_echo_session(project, plan("stateful", 12, settled_decisions=decisions), agent.answer,
                                       rng=random.Random(2), now=now)
    s = statuses(records.checklist(project, "a1", summary=summary))
    assert s["failure.restore"] == "done" and s["failure.notify"] == "done"
    assert s["failure.resume"] == "failed"
    assert s["end.marker_persists"] == "failed"


def test_stateless_sessions_need_the_seed_every_turn(project, now):
    agent = SimulatedAgent("a1", AgentContext(150, "silent_truncation"), persona="The Resonator")
    summary = records.run_echo_session(project, plan("stateless", 4), agent.answer, rng=random.Random(3), now=now)
    s = statuses(records.checklist(project, "a1", summary=summary))
    assert s["during.seed_every_turn"] == "done" and s["during.periodic_check"] == "not_applicable"
    assert s["failure.resume"] == "not_applicable"


def test_an_overrun_interval_and_an_unfinished_restoration_are_reported():
    checks = [VerificationEntry(time="t1", success=True, turn=1, trigger="boot"),
              VerificationEntry(time="t2", success=False, turn=14, trigger="interval",
                                action="restoration_triggered")]
    facts = SessionFacts(agent="a1", pattern="stateful", interval=10, marker_issued=True, anchor_stored=True,
                         seed_stored=True, checks=checks, turns=20,
                         restorations=[{"id": "r", "steps": ["log", "read_seed", "inject"]}])
    items = {i.id: i for i in checklist_status(facts)}
    assert items["during.periodic_check"].status == "failed"
    assert "13 turns passed without a check" in items["during.periodic_check"].detail
    assert items["failure.log"].status == "done"
    assert items["failure.restore"].status == "pending" and items["failure.resume"].status == "pending"
    assert items["during.footer_watch"].status == "pending"
