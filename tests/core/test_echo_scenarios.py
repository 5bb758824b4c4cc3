"""Losing context on purpose, detecting it and restoring it, with every record in the project file.

The simulated agent recites a marker only while a full marker is inside its context window, so
the tests know (from its ``history``) exactly when the marker was lost, and check that the
protocol notices within the check interval.
"""

from __future__ import annotations

import random

import pytest

from workbench.core.project import _sql
from workbench.core.project import echo as records
from workbench.core.protocols.echo import (
    AgentContext,
    EchoPlan,
    SimulatedAgent,
    summary_keeping_markers,
)
from workbench.core.protocols.shared.steps import AgentCall

QUERY = ("Please weigh the next part of the design against the constraints we settled and list the "
         "risks you see in it today")
FULL = ["log", "read_seed", "new_session", "inject", "verify", "resume"]


def plan(pattern="stateful", turns=8, interval=5, **kw) -> EchoPlan:
    return EchoPlan(agent="a1", persona="The Architect", pattern=pattern, interval=interval,
                    queries=[f"{QUERY} (part {i})" for i in range(1, turns + 1)],
                    active_tasks=["Design resonance protocol"], settled_decisions=["Using hybrid marker format"],
                    session_id="2026-01-31-001", **kw)


def steps_of(store, restoration_id):
    rows = _sql.rows(store, "echo_restorations", "restoration = ?", (restoration_id,), order_by="id")
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)
    return [r["step"] for r in rows]


def checks(store):
    return _sql.rows(store, "echo_verifications", order_by="id")


def lost_at(agent: SimulatedAgent, hex_: str) -> int:
    """Ground truth: the first working turn after which ``hex_`` was no longer in the window."""
    return next(h["turn"] for h in agent.history if h["purpose"] == "turn" and hex_ not in h["hexes"])


# ----- silent truncation ------------------------------------------------------------------------
def test_silent_truncation_is_detected_within_the_interval_and_restored(project, now):
    agent = SimulatedAgent("a1", AgentContext(150, "silent_truncation"), persona="The Architect")
    summary = records.run_echo_session(project, plan(turns=8, interval=5), agent.answer,
                                       rng=random.Random(11), now=now)

    first, second = records.list_anchors(project, "a1")
    t = lost_at(agent, first.hex)
    failed = [c for c in first.verifications if not c.success]
    assert len(failed) == 1
    detected = failed[0].turn  # the check point before this turn found the loss
    assert t <= detected - 1 and detected <= t + 5, (t, detected)
    assert all(c.success for c in first.verifications if c.turn <= t)  # no false alarm before the loss
    assert failed[0].action == "restoration_triggered" and "interval" in failed[0].trigger

    # Restoration ran through every step, in order, for the lost anchor.
    (rid,) = records.restoration_ids(project, "a1")
    assert steps_of(project, rid) == FULL
    assert {r["anchor_id"] for r in _sql.rows(project, "echo_restorations")} == {first.id}
    log = _sql.rows(project, "echo_restorations", "step = 'log'")[0]
    assert log["detail_json"]["message"] == f"Resonance anchor lost at {failed[0].time}"

    # A new, recorded, unique marker; the lost anchor retired, the new one active and verified.
    assert second.hex != first.hex and not first.active and second.active
    assert _sql.count(project, "echo_markers") == 2 == len(records.issued_hexes(project))
    assert second.session_id == "2026-01-31-002"
    assert second.verifications[0].success and second.verifications[0].trigger == "restoration"
    assert records.load_seed(project, "a1").resonance_marker == second.marker
    # ...and the agent really carries it afterwards.
    assert second.hex in agent.history[-1]["hexes"]
    assert summary.status == "completed" and summary.turns == 8 and summary.restorations == [rid]


def test_when_reverification_fails_the_restoration_escalates(project, now):
    # The seed holds so many settled decisions that the restored context no longer fits the
    # window: silent truncation cuts the new marker off the front, so the recital fails.
    decisions = [f"Decision {i}: keep the layered design and review every interface twice" for i in range(14)]
    agent = SimulatedAgent("a1", AgentContext(150, "silent_truncation"), persona="The Architect")
    p = plan(turns=12, interval=5).model_copy(update={"settled_decisions": decisions})
    summary = records.run_echo_session(project, p, agent.answer, rng=random.Random(12), now=now)

    (anchor,) = records.list_anchors(project, "a1")
    (rid,) = records.restoration_ids(project, "a1")
    assert steps_of(project, rid) == ["log", "read_seed", "new_session", "inject", "verify", "escalate"]
    escalate = _sql.rows(project, "echo_restorations", "step = 'escalate'")[0]["detail_json"]
    assert escalate["to"] == "conductor"
    assert not anchor.active
    assert [(c.success, c.action) for c in anchor.verifications][-2:] == [
        (False, "restoration_triggered"), (False, "escalated")]
    assert summary.status == "escalated" and summary.turns < 12 and summary.marker is None
    # The marker issued for the failed restoration is recorded too, so it is never issued again.
    assert _sql.count(project, "echo_markers") == 2


# ----- hard rejection ---------------------------------------------------------------------------
def test_hard_rejection_is_checked_after_the_error_and_restored_in_a_new_session(project, now):
    agent = SimulatedAgent("a1", AgentContext(200, "hard_rejection"), persona="The Architect")
    summary = records.run_echo_session(project, plan(turns=8, interval=50), agent.answer,
                                       rng=random.Random(13), now=now)
    wall = next(h["turn"] for h in agent.history if h["purpose"] == "turn" and not h["ok"])
    # Nothing was lost at the wall (the agent is aware at failure), but the session cannot go on.
    assert any(h["hexes"] for h in agent.history if h["turn"] == wall)
    first, second = records.list_anchors(project, "a1")
    failed = [c for c in first.verifications if not c.success]
    assert len(failed) == 1
    assert failed[0].turn == wall + 1 and failed[0].trigger == "error"  # the next check point
    assert "context_limit" in failed[0].reply_excerpt
    (rid,) = records.restoration_ids(project, "a1")
    assert steps_of(project, rid) == FULL
    assert _sql.rows(project, "echo_restorations", "step = 'log'")[0]["detail_json"]["new_session_required"] is True
    assert second.active and second.session_id == "2026-01-31-002"
    assert all(h["ok"] for h in agent.history if h["purpose"] == "turn" and h["turn"] > wall)
    assert summary.status == "completed" and summary.turns == 8


# ----- compaction-aware -------------------------------------------------------------------------
def test_compaction_triggers_a_check_that_catches_a_lossy_summary(project, now):
    agent = SimulatedAgent("a1", AgentContext(150, "compaction"), persona="The Architect")
    records.run_echo_session(project, plan("compaction_aware", turns=8, interval=50), agent.answer,
                             rng=random.Random(14), now=now)
    first, second = records.list_anchors(project, "a1")
    compacted = next(h["turn"] for h in agent.history if h["purpose"] == "turn" and first.hex not in h["hexes"])
    failed = [c for c in first.verifications if not c.success]
    assert len(failed) == 1 and failed[0].turn == compacted + 1 and failed[0].trigger == "compaction"
    (rid,) = records.restoration_ids(project, "a1")
    # Compaction leaves room in the same session: no new session is needed.
    assert steps_of(project, rid) == ["log", "read_seed", "inject", "verify", "resume"]
    assert second.session_id == first.session_id


def test_compaction_with_a_faithful_summary_passes_its_check(project, now):
    ctx = AgentContext(150, "compaction", summariser=summary_keeping_markers)
    agent = SimulatedAgent("a1", ctx, persona="The Architect", footers=True)
    summary = records.run_echo_session(project, plan("compaction_aware", turns=8, interval=50), agent.answer,
                                       rng=random.Random(15), now=now)
    (anchor,) = records.list_anchors(project, "a1")
    triggers = [c.trigger for c in anchor.verifications]
    assert ctx.compactions >= 1
    assert triggers[0] == "boot" and any("compaction" in t for t in triggers[1:])
    assert all(c.success for c in anchor.verifications)
    assert records.restoration_ids(project, "a1") == []
    # The agent's footer reported Recovering after compaction: the watch saw the change.
    assert [s["state"] for s in summary.footer_states][:2] == ["Stable", "Recovering"]
    assert any("footer" in t for t in triggers)


# ----- stateless pacemaker ----------------------------------------------------------------------
def test_stateless_replies_are_all_verified_silently(project, now):
    agent = SimulatedAgent("a1", AgentContext(150, "silent_truncation"), persona="The Resonator")
    summary = records.run_echo_session(project, plan("stateless", turns=6), agent.answer,
                                       rng=random.Random(16), now=now)
    (anchor,) = records.list_anchors(project, "a1")
    assert [c.turn for c in anchor.verifications] == [1, 2, 3, 4, 5, 6]
    assert all(c.success and c.trigger.endswith("every_turn") for c in anchor.verifications)
    assert summary.checks == 6 and not summary.restorations


def test_a_stateless_request_that_overflows_loses_its_seed_and_is_restored(project, now):
    agent = SimulatedAgent("a1", AgentContext(150, "silent_truncation"), persona="The Resonator")
    p = plan("stateless", turns=4)
    p = p.model_copy(update={"queries": p.queries[:2] + [" ".join(["filler"] * 160)] + p.queries[3:]})
    records.run_echo_session(project, p, agent.answer, rng=random.Random(17), now=now)
    first, second = records.list_anchors(project, "a1")
    failed = [c for c in first.verifications if not c.success]
    assert [c.turn for c in failed] == [3]  # detected on the very turn
    (rid,) = records.restoration_ids(project, "a1")
    assert steps_of(project, rid) == ["log", "read_seed", "inject", "verify", "resume"]
    assert [c.success for c in second.verifications] == [True, True]  # restoration, then turn 4


# ----- continuing an interrupted restoration ----------------------------------------------------
def test_an_interrupted_restoration_resumes_from_its_rows(project, now):
    agent = SimulatedAgent("a1", AgentContext(150, "silent_truncation"), persona="The Architect")

    class Crash(Exception):
        pass

    def crashing(call: AgentCall):
        if call.meta.get("restoration"):
            raise Crash("the workbench was closed during the verify call")
        return agent.answer(call)

    with pytest.raises(Crash):
        records.run_echo_session(project, plan(turns=8), crashing, rng=random.Random(18), now=now)
    (rid,) = records.restoration_ids(project, "a1")
    assert steps_of(project, rid) == ["log", "read_seed", "new_session", "inject"]
    issued = _sql.count(project, "echo_markers")

    outcome = records.resume_restoration(project, rid, agent.answer, now=now)
    assert outcome.status == "resumed"
    assert steps_of(project, rid) == FULL
    assert _sql.count(project, "echo_markers") == issued  # the injected marker was reused, none issued
    inject = _sql.rows(project, "echo_restorations", "step = 'inject'")[0]["detail_json"]
    assert str(outcome.new_marker) == inject["marker"]
    old, new = records.list_anchors(project, "a1")
    assert not old.active and new.active and new.marker == inject["marker"]
    assert records.load_seed(project, "a1").resonance_marker == new.marker
    # Resuming a finished episode changes nothing.
    before = _sql.count(project, "echo_restorations")
    records.resume_restoration(project, rid, agent.answer, now=now)
    assert _sql.count(project, "echo_restorations") == before


# ----- next session: the continuity check -------------------------------------------------------
def test_a_retrieved_anchor_is_checked_for_continuity_at_boot(project, now):
    agent = SimulatedAgent("a1", AgentContext(400, "compaction"), persona="The Architect")
    records.run_echo_session(project, plan("compaction_aware", turns=2, interval=50), agent.answer,
                             rng=random.Random(19), now=now)
    # Same agent, context intact: it still knows the marker, so the boot check passes.
    records.run_echo_session(project, plan("compaction_aware", turns=2, interval=50), agent.answer,
                             rng=random.Random(20), now=now, continue_anchor=True)
    (anchor,) = records.list_anchors(project, "a1")
    assert [c.trigger for c in anchor.verifications] == ["boot", "boot"] and anchor.active

    # A fresh agent (new process, empty context) cannot recite it: restoration follows.
    fresh = SimulatedAgent("a1", AgentContext(400, "compaction"), persona="The Architect")
    records.run_echo_session(project, plan("compaction_aware", turns=2, interval=50), fresh.answer,
                             rng=random.Random(21), now=now, continue_anchor=True)
    old, new = records.list_anchors(project, "a1")
    assert old.verifications[-1].success is False and old.verifications[-1].trigger == "boot"
    assert old.verifications[-1].action == "restoration_triggered"
    assert new.active and not old.active
