"""Anchors, session seeds and transitions round-trip through the project file."""

from __future__ import annotations

import random

import pytest
from pydantic import ValidationError

from workbench.core.project import _sql
from workbench.core.project import echo as records
from workbench.core.protocols.echo.models import ResonanceAnchor, SessionSeed, VerificationEntry, next_session_id
from workbench.core.protocols.echo.restore import Transition

MARKER = "the hand on the neck, the shape of the breath — 7f3a9c"


def test_the_anchor_keeps_the_seed_fields_and_its_full_verification_history(project):
    records.record_marker(project, MARKER, at="2026-01-31T10:00:00.000Z")
    anchor = records.save_anchor(project, ResonanceAnchor(
        agent="claude", marker=MARKER, session_id="2026-01-31-001", created_at="2026-01-31T10:00:00.000Z",
        injection="compaction_aware",
        verifications=[VerificationEntry(time="2026-01-31T10:10:00.000Z", success=True, turn=1, trigger="boot")]))
    assert anchor.id is not None and anchor.verifications[0].id is not None
    records.record_verification(project, anchor.id, VerificationEntry(
        time="2026-01-31T10:30:00.000Z", success=True, turn=10, trigger="interval"))
    records.record_verification(project, anchor.id, VerificationEntry(
        time="2026-01-31T10:45:00.000Z", success=False, turn=14, trigger="compaction",
        action="restoration_triggered"))

    loaded = records.load_anchor(project, "claude")
    assert loaded.key == "resonance_anchor_claude"
    assert loaded.seed_view() == {
        "marker": MARKER, "session_id": "2026-01-31-001", "created_at": "2026-01-31T10:00:00.000Z",
        "last_verified": "2026-01-31T10:30:00.000Z",  # the last SUCCESSFUL check
        "verifications": [{"time": "2026-01-31T10:10:00.000Z", "success": True},
                          {"time": "2026-01-31T10:30:00.000Z", "success": True},
                          {"time": "2026-01-31T10:45:00.000Z", "success": False,
                           "action": "restoration_triggered"}]}
    assert [v.trigger for v in loaded.verifications] == ["boot", "interval", "compaction"]
    assert loaded.injection == "compaction_aware" and loaded.active


def test_an_anchor_never_reuses_a_marker(project):
    first = records.save_anchor(project, ResonanceAnchor(agent="a", marker=MARKER, session_id="s1"))
    assert _sql.get(project, "echo_markers", "7f3a9c")["marker"] == MARKER  # recorded as issued
    with pytest.raises(records.MarkerReusedError):
        records.save_anchor(project, ResonanceAnchor(agent="b", marker=MARKER, session_id="s2"))
    with pytest.raises(records.MarkerReusedError):
        records.save_anchor(project, ResonanceAnchor(agent="b", marker="salt on the threshold — 7f3a9c",
                                                     session_id="s2"))
    records.retire_anchor(project, first.id)
    assert records.load_anchor(project, "a") is None
    assert records.load_anchor(project, "a", active_only=False).id == first.id


def test_the_session_seed_round_trips_and_is_updated_in_place(project):
    seed = SessionSeed(agent="gemini", persona="The Architect",
                       active_tasks=["Design resonance protocol", "Review memory schema"],
                       settled_decisions=["Using hybrid marker format", "Polymorphic injection by agent type"],
                       recent_exchange=["a", "b", "c"], resonance_marker=MARKER,
                       last_checkpoint="2026-01-31T10:30:00.000Z")
    saved = records.save_seed(project, seed)
    loaded = records.load_seed(project, "gemini")
    assert loaded.key == "session_seed_gemini"
    assert loaded.seed_view() == seed.seed_view()
    records.save_seed(project, saved.with_exchange("d").checkpoint("2026-01-31T11:00:00.000Z"))
    assert _sql.count(project, "echo_session_seeds") == 1
    again = records.load_seed(project, "gemini")
    assert again.recent_exchange == ["b", "c", "d"] and again.last_checkpoint == "2026-01-31T11:00:00.000Z"


def test_bad_records_are_refused():
    with pytest.raises(ValidationError):
        ResonanceAnchor(agent="a", marker="no dash 7f3a9c", session_id="s")
    with pytest.raises(ValidationError):
        SessionSeed(agent="a", resonance_marker="x — 7F3A9C")


def test_transitions_are_stored_in_order_and_grouped_by_episode(project):
    for i, step in enumerate(["log", "read_seed", "inject"]):
        records.record_transition(project, "restore-1", "a1", Transition(step, {"i": i}, f"t{i}"))
    records.record_transition(project, "restore-2", "a2", Transition("log", {}, "t9"))
    assert [t.step for t in records.load_transitions(project, "restore-1")] == ["log", "read_seed", "inject"]
    assert records.load_transitions(project, "restore-1")[2].detail == {"i": 2}
    assert records.restoration_ids(project) == ["restore-1", "restore-2"]
    assert records.restoration_ids(project, "a2") == ["restore-2"]


def test_issue_marker_records_it(project):
    m = records.issue_marker(project, rng=random.Random(3), at="2026-01-31T10:00:00.000Z")
    assert _sql.get(project, "echo_markers", m.hex) == {"hex": m.hex, "marker": str(m),
                                                 "issued_at": "2026-01-31T10:00:00.000Z",
                                                 "run_id": None, "issue_key": None}  # issued outside a run


def test_session_ids_count_up():
    assert next_session_id("2026-01-31-001") == "2026-01-31-002"
    assert next_session_id("2026-01-31-099") == "2026-01-31-100"
    assert next_session_id("alpha") == "alpha-002"
