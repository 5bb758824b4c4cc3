"""The Anchors & Restoration panel, driven by clicks: the teaching scenario, Recite, Inject and
"Open in Trace Inspector"."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt

from tests.ui.conftest import WAIT_MS
from tests.ui.live_run_helpers import RUN_MS, empty_project, read


def anchors(window):
    window.docks["anchorsPanel"].show()
    window.docks["anchorsPanel"].raise_()
    return window.panels["anchorsPanel"]


def click(qtbot, widget) -> None:
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def teach(qtbot, window, panel, *, play: bool = True) -> dict:
    """Click the teaching scenario and wait for its run; then Play the whole story."""
    qtbot.waitUntil(panel.teach_button.isEnabled, timeout=WAIT_MS)
    with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as finished:
        click(qtbot, panel.teach_button)
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    if play:
        panel.play_ms = 20  # a room would read each step for seconds; the test need not
        qtbot.waitUntil(panel.play_button.isEnabled, timeout=WAIT_MS)
        click(qtbot, panel.play_button)
        qtbot.waitUntil(lambda: "The run is completed" in panel.story(), timeout=WAIT_MS)
        qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    return finished.args[0]


def test_the_teaching_scenario_waits_at_each_step_until_next(qtbot, window, tmp_path, open_project):
    path = empty_project(tmp_path)
    open_project(path)
    panel = anchors(window)
    summary = teach(qtbot, window, panel, play=False)
    assert summary["status"] == "completed"
    # The run is over and every read has landed, yet the story is at its first step.
    assert panel.step_key == "start" and panel.story().startswith("1. Starting")
    assert "Step 1 of 4" in panel.step_label.text()
    for key in ("loss", "detection"):
        qtbot.waitUntil(panel.next_step_button.isEnabled, timeout=WAIT_MS)
        click(qtbot, panel.next_step_button)
        assert panel.step_key == key
    # At the detection: the failed check is the last on screen, no restoration yet, and it stays so.
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    panel.refresh()
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    assert panel.step_key == "detection" and "3. Loss detected" in panel.story()
    assert "Restored" not in panel.story() and panel.log.count() == 0
    assert panel.diagram.current is None and "Degraded" in panel.agent_card.text()
    click(qtbot, panel.next_step_button)
    assert panel.step_key == "restoration" and "4. Restored" in panel.story()
    assert panel.log.count() > 0 and panel.diagram.current == "resume"
    assert not panel.next_step_button.isEnabled() and not panel.play_button.isEnabled()


def test_pressing_the_scenario_again_replays_its_run_rather_than_adding_one(qtbot, window, tmp_path, open_project):
    path = empty_project(tmp_path)
    open_project(path)
    panel = anchors(window)
    teach(qtbot, window, panel)
    assert panel.step_key == "restoration"
    before = read(path, "SELECT count(*) AS n FROM runs")[0]["n"]
    click(qtbot, panel.teach_button)  # no run starts: the story starts over on the same run
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    assert panel.step_key == "start" and not window.runs.running
    assert read(path, "SELECT count(*) AS n FROM runs")[0]["n"] == before == 1
    assert read(path, "SELECT label FROM runs") == [{"label": "Teaching scenario"}]


def test_teaching_scenario_shows_a_detected_loss_and_a_restoration_within_its_run(qtbot, window, tmp_path,
                                                                                  open_project):
    path = empty_project(tmp_path)
    open_project(path)
    panel = anchors(window)
    summary = teach(qtbot, window, panel)
    assert summary["status"] == "completed"
    story = panel.story()
    assert "1. Starting a simulated RCP run wrapped in Resonance Echo" in story
    assert "2. The marker is lost" in story and "3. Loss detected" in story and "4. Restored" in story
    run_id = summary["run_id"]
    assert panel.view.run_id == run_id and panel.agent_box.currentText() == "c1"
    c1 = panel.current_agent()
    # The loss and its restoration are records of that run: a failed check, then the episode.
    assert any(not c.success and c.trigger != "restoration" for c in c1.checks)
    [episode] = c1.episodes
    assert episode.status == "resumed" and [s.step for s in episode.steps][-1] == "resume"
    assert [s.state for s in c1.states] == ["Stable", "Degraded", "Recovering", "Stable"]
    assert panel.diagram.current == "resume" and "verify" in panel.diagram.visited
    assert panel.log.count() == len(episode.steps)
    rows = read(path, "SELECT DISTINCT run_id FROM echo_restorations")
    assert rows == [{"run_id": run_id}]
    # Every checklist item has a status; the failure phase is done, with a time.
    items = {panel.checklist.topLevelItem(i).text(0).strip(): panel.checklist.topLevelItem(i)
             for i in range(panel.checklist.topLevelItemCount())}
    restore = items["Execute Restoration Protocol"]
    assert restore.text(1) == "✓ done" and restore.text(2)


def test_recite_inject_and_open_in_trace_inspector_by_clicks(qtbot, window, tmp_path, open_project):
    open_project(empty_project(tmp_path))
    panel = anchors(window)
    teach(qtbot, window, panel)
    c1 = panel.current_agent()
    checks, marker = len(c1.checks), c1.marker
    qtbot.waitUntil(panel.recite_button.isEnabled, timeout=WAIT_MS)
    click(qtbot, panel.recite_button)
    qtbot.waitUntil(lambda: len(panel.current_agent().checks) == checks + 1, timeout=WAIT_MS)
    assert panel.current_agent().checks[-1].trigger == "conductor"
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    # A recital the small window already lost starts a restoration of its own: count from here.
    episodes = len(panel.current_agent().episodes)
    qtbot.waitUntil(panel.inject_button.isEnabled, timeout=WAIT_MS)
    click(qtbot, panel.inject_button)
    # Each restoration step is its own write: wait for the episode's last one, by when the new
    # anchor is stored too (a read between two steps saw the episode with the old marker).
    qtbot.waitUntil(lambda: len(panel.current_agent().episodes) == episodes + 1
                    and panel.current_agent().episodes[-1].status == "resumed", timeout=WAIT_MS)
    after = panel.current_agent()
    assert after.marker != marker and after.episodes[-1].status == "resumed"
    assert "new_session" not in [s.step for s in after.episodes[-1].steps]  # same session
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    # The first episode's verify line opens the call it read in the Trace Inspector.
    panel.agent_box.setCurrentText("c1")
    first = panel.current_agent().episodes[0]
    row = next(i for i in range(panel.log.count())
               if panel.log.item(i).data(Qt.ItemDataRole.UserRole)[1] == "verify")
    rect = panel.log.visualItemRect(panel.log.item(row))
    panel.log.scrollToItem(panel.log.item(row))
    rect = panel.log.visualItemRect(panel.log.item(row))
    click_at = rect.center()
    qtbot.mouseClick(panel.log.viewport(), Qt.MouseButton.LeftButton, pos=click_at)
    assert panel.open_button.isEnabled() and panel._selected.id == first.call_id
    with qtbot.waitSignal(window.model.reveal_requested, timeout=WAIT_MS) as revealed:
        click(qtbot, panel.open_button)
    assert revealed.args[0].kind == "call" and revealed.args[0].id == first.call_id
    # A mark of the history strip selects that verification's call.
    strip = panel.timeline
    qtbot.mouseClick(strip, Qt.MouseButton.LeftButton, pos=QPoint(int(strip._x(0)), 10))
    assert panel._selected.kind == "call" and panel._selected.id == panel.current_agent().checks[0].call_id
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
