"""Live Run's pace control (issue 26): a simulated run at a room's pace, on an injected clock; step by
step on Next phase; never for a run that calls a real model."""

from __future__ import annotations

import threading

from tests.runs.test_pace import FakeClock
from tests.services.test_run_service import demo_project
from tests.ui.conftest import WAIT_MS
from tests.ui.live_run_helpers import RUN_MS, click, panel_of, put, template
from workbench.services.runs.pace import PACES, Pace, Pacer


def choose(panel, text: str) -> None:
    """Pick the pace whose item reads ``text``, as a user does in the combo box."""
    index = panel.pace_combo.findText(f"Pace: {text}")
    assert index >= 0, text
    panel.pace_combo.setCurrentIndex(index)
    panel.pace_combo.activated.emit(index)


def test_the_control_offers_each_pace_and_sets_the_run_services(qtbot, window, tmp_path, open_project):
    open_project(demo_project(tmp_path))
    panel = panel_of(window)
    qtbot.waitUntil(lambda: panel.editor.valid, timeout=WAIT_MS)
    items = [panel.pace_combo.itemText(i) for i in range(panel.pace_combo.count())]
    assert items == ["Pace: as fast as possible", "Pace: 0.25 s a call", "Pace: 0.5 s a call", "Pace: 1 s a call",
                     "Pace: 2 s a call", "Pace: one phase at a time"]
    assert panel.pace_combo.isEnabled()  # the demo's configuration is on the simulated panel
    choose(panel, "0.5 s a call")
    assert window.runs.pacer.pace == Pace("delay", 0.5) and not panel.next_button.isVisibleTo(panel)
    choose(panel, "one phase at a time")
    assert panel.next_button.isVisibleTo(panel) and not panel.next_button.isEnabled()  # nothing runs yet
    choose(panel, "as fast as possible")
    assert window.runs.pacer.pace == PACES[0]


def test_at_half_a_second_a_call_the_run_from_live_run_goes_at_that_pace(qtbot, window, tmp_path, open_project):
    fake = FakeClock()
    window.runs.pacer = Pacer(clock=fake.clock, sleep=fake.sleep)  # the same control, on a fake clock
    open_project(demo_project(tmp_path))
    panel = panel_of(window)
    qtbot.waitUntil(lambda: panel.editor.valid, timeout=WAIT_MS)
    choose(panel, "0.5 s a call")
    ended: list[float] = []
    window.runs.calls_changed.connect(lambda events: ended.extend(fake.clock() for e in events
                                                                  if e.kind == "finished"))
    with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as finished:
        click(qtbot, panel.start_button)
    summary = finished.args[0]
    assert summary["status"] == "completed" and summary["calls"] > 10
    assert fake.slept >= 0.5 * summary["calls"] - 1e-9  # each call waited its turn
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)


def test_step_by_step_runs_one_phase_per_press_of_next_phase(qtbot, window, tmp_path, open_project):
    open_project(demo_project(tmp_path, refinement_rounds=1))  # four phases: generate, vote, refine, vote
    panel = panel_of(window)
    qtbot.waitUntil(lambda: panel.editor.valid, timeout=WAIT_MS)
    choose(panel, "one phase at a time")
    phases: set[int] = set()
    lock = threading.Lock()

    def on_calls(events) -> None:
        with lock:
            phases.update(e.round_idx for e in events if e.kind == "finished")

    window.runs.calls_changed.connect(on_calls)
    click(qtbot, panel.start_button)
    pacer = window.runs.pacer
    qtbot.waitUntil(lambda: pacer.holding and panel.next_button.isEnabled(), timeout=RUN_MS)
    qtbot.waitUntil(lambda: "waits for Next phase" in panel.progress_label.text(), timeout=WAIT_MS)
    assert phases == {1}  # Start ran the first phase, and the run waits
    for press in (2, 3):
        holds = pacer.holds
        click(qtbot, panel.next_button)
        # It went on for one phase, and waits again (the events of that phase's last calls follow).
        qtbot.waitUntil(lambda: pacer.holds == holds + 1 and pacer.holding, timeout=RUN_MS)
        qtbot.waitUntil(lambda: max(phases) == press, timeout=WAIT_MS)
        assert phases == set(range(1, press + 1)) and window.runs.running
    with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as finished:
        choose(panel, "as fast as possible")  # play the rest
    assert finished.args[0]["status"] == "completed" and max(phases) > 3
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)


def test_a_configuration_that_calls_a_real_model_is_never_slowed(qtbot, window, tmp_path, open_project):
    open_project(demo_project(tmp_path))
    panel = panel_of(window)
    doc = template("rcp-advocate-critic")
    doc["providers"] = {"cloud": {"model": "openai/gpt-4o-mini", "api_key_env": "RWB_NO_SUCH_KEY"}}
    for cluster in doc["clusters"]:
        for agent in cluster["agents"]:
            agent["provider"] = "cloud"
    put(qtbot, panel, doc)
    assert not panel.pace_combo.isEnabled()
    assert "never slowed" in panel.pace_combo.toolTip()
    put(qtbot, panel, template("rcp-advocate-critic"))
    assert panel.pace_combo.isEnabled()
