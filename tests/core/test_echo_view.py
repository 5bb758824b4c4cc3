"""The Anchors & Restoration panel's reads (core.project.echo_view) and the conductor's actions
(services.runs.echo_actions), over a real simulated Echo run: no Qt."""

from __future__ import annotations

import pytest

from workbench.core.project import _sql, echo_view
from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config
from workbench.services.runs import echo_actions
from workbench.services.runs.runner import Runner
from workbench.ui.widgets.echo_teaching import narrate, story_steps, teaching_config


@pytest.fixture
def run(tmp_path):
    store = Store.create(tmp_path / "echo.rwb")
    runner = Runner(store)
    run_id = runner.create(parse_run_config(teaching_config()))
    assert runner.execute(run_id)["status"] == "completed"
    yield store, run_id
    store.close_connection()


def test_no_echo_run_reads_empty(tmp_path):
    store = Store.create(tmp_path / "empty.rwb")
    try:
        view = echo_view.read_echo_view(store)
        assert view.runs == () and view.run_id is None and view.agents == ()
    finally:
        store.close_connection()


def test_view_of_the_teaching_run(run):
    store, run_id = run
    view = echo_view.read_echo_view(store)
    assert [r.id for r in view.runs] == [run_id] and view.run_id == run_id
    assert [a.agent for a in view.agents] == ["a2", "c1"]
    c1 = view.agent("c1")
    assert c1.pattern == "stateful" and c1.agent_type == "B" and "Anchor" in c1.pattern_text
    assert c1.marker and c1.marker.endswith(c1.hex) and c1.session_id == "c1-002"
    lost = [c for c in c1.checks if not c.success]
    assert len(lost) == 1 and lost[0].action == "restoration_triggered"
    assert all(c.call_id for c in c1.checks)  # each check read a recorded call
    [episode] = c1.episodes
    assert [s.step for s in episode.steps] == ["log", "read_seed", "new_session", "inject", "verify", "resume"]
    assert episode.status == "resumed" and episode.call_id is not None
    assert episode.steps[0].text.startswith("Resonance anchor lost at")
    assert [s.state for s in c1.states] == ["Stable", "Degraded", "Recovering", "Stable"]
    assert c1.seed and c1.seed["resonance_marker"] == c1.marker
    status = {row.id: row for row in c1.checklist}
    assert status["failure.resume"].status == "done" and status["failure.resume"].changed_at
    assert status["during.seed_every_turn"].status == "not_applicable"
    a2 = view.agent("a2")
    assert a2.agent_type == "C" and a2.episodes == () and [s.state for s in a2.states] == ["Stable"]
    assert echo_view.verification_call(store, lost[0].id) == (lost[0].call_id, run_id)


def test_narration_follows_the_records(run):
    store, run_id = run
    c1 = echo_view.read_echo_view(store, run_id).agent("c1")
    story = narrate(c1, started=True, finished="completed")
    assert [line[:2] for line in story] == ["1.", "2.", "3.", "4."]
    assert "The marker is lost" in story[1] and "Loss detected" in story[2] and "Restored" in story[3]
    assert story[-1].endswith("The run is completed.")
    assert narrate(None, started=True)[0].startswith("1. Starting")


def test_each_step_of_the_story_shows_the_records_as_they_stood(run):
    store, run_id = run
    c1 = echo_view.read_echo_view(store, run_id).agent("c1")
    steps = {s.key: s.agent for s in story_steps(c1)}
    assert list(steps) == ["start", "loss", "detection", "restoration"]
    # Lost: every check so far passed, no restoration, and the footer still reads Stable.
    assert all(c.success for c in steps["loss"].checks) and steps["loss"].episodes == ()
    assert steps["loss"].state == "Stable"
    # Detected: the failed check is the last one shown, the state Degraded, the restoration not begun.
    assert not steps["detection"].checks[-1].success and steps["detection"].state == "Degraded"
    assert steps["detection"].episodes == ()
    assert steps["restoration"] == c1 and steps["restoration"].state == "Stable"


def test_recite_and_inject_record_through_the_echo_code(run):
    store, run_id = run
    before = echo_view.read_echo_view(store, run_id).agent("a2")
    changes = echo_actions.recite(store, run_id, "a2")
    assert changes.touches("echo_verifications")
    after = echo_view.read_echo_view(store, run_id).agent("a2")
    assert len(after.checks) == len(before.checks) + 1
    assert after.checks[-1].trigger == "conductor" and after.checks[-1].success  # a2 has room to spare
    echo_actions.inject(store, run_id, "a2")
    injected = echo_view.read_echo_view(store, run_id).agent("a2")
    assert injected.marker != before.marker and injected.session_id == before.session_id
    [episode] = injected.episodes
    assert [s.step for s in episode.steps] == ["log", "read_seed", "inject", "verify", "resume"]


def test_the_conductor_rebuilds_an_agents_session_in_the_runs_order_not_the_rows(run):
    """Calls are stored as they complete, which concurrency shuffles; the window a recital reads
    must be the one the run built, so the session comes back in the conductor's order."""
    store, run_id = run
    summary = _sql.get(store, "runs", run_id)["summary_json"]
    order = summary["echo"]["c1"]["call_order"]
    assert [c["key"] for c in echo_view.agent_calls(store, run_id, "c1")] == order
    summary["echo"]["c1"]["call_order"] = order[::-1]  # as if the rows had come back the other way
    _sql.update(store, "runs", run_id, {"summary_json": summary})
    assert [c["key"] for c in echo_view.agent_calls(store, run_id, "c1")] == order[::-1]
