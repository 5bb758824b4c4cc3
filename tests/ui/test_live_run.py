"""The Live Run panel as a user drives it: start a simulated run and watch it, cancel and resume,
play the CONS conductor, and close the window while a run goes."""

from __future__ import annotations

import threading
import time

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from tests.services.test_run_service import DEMO_CALLS, cons_config, demo_project, read, slow_sim
from tests.ui.conftest import WAIT_MS
from tests.ui.live_run_helpers import click, click_run
from workbench.core.project import _sql
from workbench.core.project.store import Store, utc_now
from workbench.services.workers import live_workers
from workbench.ui.panels.live_run_panel import GREY, SIM_NOTE


def panel_of(window):
    window.show_panel("liveRunPanel")  # (the Run workspace)
    return window.panels["liveRunPanel"]


def table_rows(table) -> list[dict]:
    """The rows as shown (after sorting and filtering)."""
    return [table.model.row(table.proxy.mapToSource(table.proxy.index(r, 0)).row())
            for r in range(table.proxy.rowCount())]


def cell(table, row: int, header: str, role=Qt.ItemDataRole.DisplayRole):
    headers = [table.proxy.headerData(c, Qt.Orientation.Horizontal) for c in range(table.proxy.columnCount())]
    return table.proxy.index(row, headers.index(header)).data(role)


def test_a_simulated_run_from_the_panel_completes_with_its_calls_and_the_sim_badge(
        qtbot, window, tmp_path, open_project):
    # One critic always answers its votes in an unreadable way: its calls are grey, never hidden.
    path = demo_project(tmp_path)
    store = Store.open(path)
    params = _sql.get(store, "agents", "c3")["params_json"]
    _sql.update(store, "agents", "c3", {"params_json": {**params, "malformed_rate": 1.0}})
    store.close_connection()
    open_project(path)
    panel = panel_of(window)
    assert panel.config_combo.currentText() == "Resonant consensus: downtown cars (RCP)"
    assert panel.start_button.isEnabled() and not panel.cancel_button.isEnabled()

    bar_seen: list[bool] = []
    window.runs.progressed.connect(lambda _p: bar_seen.append(window.progress.isVisible()
                                                              and window.cancel_button.isVisible()))
    with qtbot.waitSignal(window.runs.finished, timeout=WAIT_MS) as finished:
        qtbot.mouseClick(panel.start_button, Qt.MouseButton.LeftButton)
        assert not panel.start_button.isEnabled() and panel.cancel_button.isEnabled()
    summary = finished.args[0]
    assert summary["status"] == "completed" and summary["calls"] == DEMO_CALLS
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)  # the panels read the run off the GUI thread

    assert bar_seen and all(bar_seen)  # the status bar showed the run while it went
    assert not window.progress.isVisible() and not window.cancel_button.isVisible()
    assert panel.start_button.isEnabled() and not panel.cancel_button.isEnabled()

    [run] = table_rows(panel.runs_table)
    assert run["id"] == summary["run_id"] and run["status"] == "completed"
    assert cell(panel.runs_table, 0, "SIM") == "SIM"
    assert cell(panel.runs_table, 0, "SIM", Qt.ItemDataRole.ToolTipRole) == SIM_NOTE
    assert cell(panel.runs_table, 0, "Calls") == str(DEMO_CALLS)
    assert panel.sim_note.isVisible() and panel.sim_note.text() == SIM_NOTE
    assert panel.selected_run()["id"] == run["id"]  # the run just started is the one shown

    calls = table_rows(panel.calls_table)
    stored = read(path, "SELECT id, status FROM llm_calls WHERE run_id = ? ORDER BY id", (run["id"],))
    assert [c["id"] for c in calls] == [c["id"] for c in stored] and len(calls) == DEMO_CALLS
    invalid = [i for i, c in enumerate(calls) if c["status"] == "invalid"]
    assert invalid, "c3's malformed votes should be in the log"
    for i in invalid:
        assert calls[i]["agent_id"] == "c3" and calls[i]["reason"]
        assert cell(panel.calls_table, i, "Reason") == calls[i]["reason"]
        assert cell(panel.calls_table, i, "Status", Qt.ItemDataRole.ForegroundRole).color() == QColor(GREY)
    ok = next(i for i, c in enumerate(calls) if c["status"] == "ok")
    assert cell(panel.calls_table, ok, "Status", Qt.ItemDataRole.ForegroundRole) is None
    assert f"{len(invalid)} invalid or failed" in panel.calls_heading.text()
    [notice] = window.notices.messages
    assert notice.level == "info" and "completed" in notice.text
    # Named as the runs list names it (label, protocol, start), never by its id (issue 26).
    assert run["id"] not in notice.text and "RCP" in notice.text
    assert notice.text.startswith("Run " + cell(panel.runs_table, 0, "Run").split(" · ")[0])

    # For the docs: a taller Live Run, the grey rows in view, c3's persona, every panel refreshed.
    qtbot.wait(2 * window.model.POLL_MS)  # the model's poll has shown the run to the other panels
    window.resizeDocks([window.docks["liveRunPanel"]], [440], Qt.Orientation.Vertical)
    QApplication.processEvents()  # let the docks take their new sizes before the grab
    window.panels["clustersPanel"].select_agent("c3")
    panel.calls_table.view.sortByColumn(2, Qt.SortOrder.DescendingOrder)  # by agent: c3's grey rows first
    panel.calls_table.view.scrollToTop()
    assert window.grab().save(str(tmp_path / "rwb_live_run_finished.png"))


def test_cancel_mid_run_then_resume_finishes_without_duplicate_calls(
        qtbot, window, tmp_path, open_project, monkeypatch):
    gate = threading.Event()
    slow_sim(monkeypatch, gate=gate, hold_from=5)
    path = demo_project(tmp_path, dispatch="sequential")
    open_project(path)
    panel = panel_of(window)
    click(qtbot, panel.start_button)
    qtbot.waitUntil(lambda: window.runs.last_progress is not None and window.runs.last_progress.done == 4,
                    timeout=WAIT_MS)
    assert window.progress.format().startswith("4/6 calls, 0 failed")
    assert window.progress.value() == 4
    with qtbot.waitSignal(window.runs.finished, timeout=WAIT_MS) as stopped:
        qtbot.mouseClick(window.cancel_button, Qt.MouseButton.LeftButton)  # the status bar's Cancel
        gate.set()
    assert stopped.args[0]["status"] == "interrupted"
    run_id = stopped.args[0]["run_id"]
    qtbot.waitUntil(lambda: bool(table_rows(panel.runs_table)) and
                    table_rows(panel.runs_table)[0]["status"] == "interrupted", timeout=WAIT_MS)
    click_run(qtbot, panel, run_id)
    assert panel.resume_button.isEnabled()
    assert not window.progress.isVisible()
    assert any(n.level == "warning" and "Resume" in n.text for n in window.notices.messages)

    with qtbot.waitSignal(window.runs.finished, timeout=WAIT_MS) as resumed:
        qtbot.mouseClick(panel.resume_button, Qt.MouseButton.LeftButton)
    assert resumed.args[0]["status"] == "completed"
    assert resumed.args[0]["resumed_calls"] == stopped.args[0]["calls"]
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    keys = [r["step_key"] for r in read(path, "SELECT step_key FROM llm_calls WHERE run_id = ?", (run_id,))]
    assert len(keys) == len(set(keys)) == DEMO_CALLS  # a straight run's number of calls
    [run] = table_rows(panel.runs_table)
    assert run["status"] == "completed" and run["calls"] == DEMO_CALLS
    assert len(table_rows(panel.calls_table)) == DEMO_CALLS
    assert not panel.resume_button.isEnabled()


def test_a_person_plays_the_conductor_of_a_contested_cons_run(qtbot, window, tmp_path, open_project):
    path = tmp_path / "cons.rwb"
    store = Store.create(path, "CONS with a conductor")
    cfg = cons_config().model_dump(mode="json", by_alias=True, exclude={"protocol", "label"})
    _sql.insert(store, "protocol_configs", {"name": "Caching strategy (contested)", "protocol": "cons",
                                      "config_json": cfg, "created_at": utc_now(), "updated_at": utc_now()})
    store.close_connection()
    open_project(path)
    panel = panel_of(window)
    assert panel.config_combo.currentText() == "Caching strategy (contested) (CONS)"
    assert not panel.prompt_box.isVisible()

    click(qtbot, panel.start_button)
    qtbot.waitUntil(panel.prompt_box.isVisible, timeout=WAIT_MS)
    box = panel.prompt_box
    assert box.current.agent == "conductor" and box.current.purpose == "hitl_decision"
    assert "conductor's decision" in box.heading.text() and "contested_verdict" in box.heading.text()
    assert "Escalated to you: contested_verdict" in box.messages.toPlainText()
    assert "Which caching strategy" in box.messages.toPlainText()
    assert "The ballots" in box.messages.toPlainText()  # what the conductor decides on
    for agent in ("w1", "w2", "w3", "c1", "c2"):
        assert f"{agent}: accept" in box.messages.toPlainText()
    assert window.progress.format() == "Waiting for you"
    assert window.runs.running and not box.send_button.isEnabled()  # nothing typed yet
    assert box.messages.height() >= 70 and box.send_button.height() > 0  # readable, not squeezed away
    window.docks["liveRunPanel"].raise_()
    qtbot.keyClicks(box.reply, "Adopt write-through; revisit cache-aside in Q3.")
    assert window.grab().save(str(tmp_path / "rwb_live_run_waiting.png"))

    time.sleep(0.2)
    assert window.runs.running  # the run waits for the person, however long
    with qtbot.waitSignal(window.runs.finished, timeout=WAIT_MS) as finished:
        qtbot.mouseClick(box.send_button, Qt.MouseButton.LeftButton)
    summary = finished.args[0]
    assert summary["status"] == "completed" and not box.isVisible()
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    assert summary["cons"]["humanDecision"] == "Adopt write-through; revisit cache-aside in Q3."
    rows = read(path, "SELECT e.decision, e.decided_by FROM cons_escalations e JOIN cons_questions q "
                      "ON q.id = e.question_id WHERE q.run_id = ?", (summary["run_id"],))
    assert rows and all(r == {"decision": "Adopt write-through; revisit cache-aside in Q3.",
                              "decided_by": "conductor"} for r in rows)
    calls = table_rows(panel.calls_table)
    assert calls[-1]["agent_id"] == "conductor" and calls[-1]["status"] == "ok"


def test_cancelling_while_the_conductor_is_asked_takes_the_prompt_down(qtbot, window, tmp_path, open_project):
    path = tmp_path / "cons.rwb"
    store = Store.create(path)
    cfg = cons_config().model_dump(mode="json", by_alias=True, exclude={"protocol", "label"})
    _sql.insert(store, "protocol_configs", {"name": "contested", "protocol": "cons", "config_json": cfg,
                                      "created_at": utc_now(), "updated_at": utc_now()})
    store.close_connection()
    open_project(path)
    panel = panel_of(window)
    click(qtbot, panel.start_button)
    qtbot.waitUntil(panel.prompt_box.isVisible, timeout=WAIT_MS)
    with qtbot.waitSignal(window.runs.finished, timeout=WAIT_MS) as finished:
        click(qtbot, panel.cancel_button)
    assert finished.args[0]["status"] == "interrupted"
    qtbot.waitUntil(lambda: not panel.prompt_box.isVisible(), timeout=WAIT_MS)
    run_id = finished.args[0]["run_id"]
    assert read(path, "SELECT count(*) AS n FROM llm_calls WHERE run_id = ? AND agent_id = 'conductor'",
                (run_id,))[0]["n"] == 0  # a cancelled question is not an answer: a resume asks again


def test_a_second_start_is_refused_with_a_message(qtbot, window, tmp_path, open_project, monkeypatch):
    gate = threading.Event()
    slow_sim(monkeypatch, gate=gate, hold_from=2)
    open_project(demo_project(tmp_path, dispatch="sequential"))
    panel = panel_of(window)
    click(qtbot, panel.start_button)
    qtbot.waitUntil(lambda: window.runs.run_id is not None, timeout=WAIT_MS)
    assert not panel.start_button.isEnabled()
    assert not window.runs.start(1)  # e.g. from a script while the button is disabled
    assert any("already in progress" in n.text and n.level == "warning" for n in window.notices.messages)
    with qtbot.waitSignal(window.runs.finished, timeout=WAIT_MS):
        window.runs.cancel()
        gate.set()


def test_closing_the_window_during_a_run_cancels_it_cleanly(qtbot, window, tmp_path, open_project, monkeypatch):
    slow_sim(monkeypatch, delay_s=0.05)
    path = demo_project(tmp_path, dispatch="sequential")
    open_project(path)
    panel_of(window).start_button.click()
    qtbot.waitUntil(lambda: window.runs.last_progress is not None and window.runs.last_progress.done >= 2,
                    timeout=WAIT_MS)
    run_id = window.runs.run_id
    started = time.monotonic()
    window.close()
    assert time.monotonic() - started < 3.0
    assert live_workers() == [] and window.model.store is None
    [run] = read(path, "SELECT status FROM runs WHERE id = ?", (run_id,))
    assert run["status"] == "interrupted"
    assert read(path, "PRAGMA integrity_check")[0]["integrity_check"] == "ok"


def test_the_runs_and_calls_tables_sort_filter_and_copy(qtbot, window, tmp_path, open_project):
    open_project(demo_project(tmp_path))
    panel = panel_of(window)
    for _ in range(2):
        with qtbot.waitSignal(window.runs.finished, timeout=WAIT_MS):
            click(qtbot, panel.start_button)
    qtbot.waitUntil(lambda: len(table_rows(panel.runs_table)) == 2, timeout=WAIT_MS)
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)  # the shown run's calls too
    runs = panel.runs_table
    # A run by its label, protocol and start time first (issue 26); its id last.
    assert runs.as_text().splitlines()[0] == "Run\tSIM\tStatus\tProtocol\tStarted\tCalls\tFailed\tInvalid\tLabel\tId"
    calls = panel.calls_table
    calls.filter.setText("generate")
    assert calls.visible_rows() == 6
    calls.filter.setText("")
    calls.view.sortByColumn(2, Qt.SortOrder.DescendingOrder)  # by agent
    assert cell(calls, 0, "Agent") == "c3"


def test_a_degraded_run_whose_calls_failed_is_resumed_from_the_panel(qtbot, window, tmp_path, open_project,
                                                                      monkeypatch):
    """A provider failed every vote call: the run ends degraded, the notice says Resume retries
    the failed calls, and Resume (the provider back) issues them and the run completes."""
    import json
    from pathlib import Path

    from tests.support.fake_llm_server import FakeLLMServer, Reply
    from workbench.core.runs.config import parse_run_config
    from workbench.services.runs.runner import Runner

    failing = {"on": True}
    data = json.loads((Path(__file__).resolve().parents[2] / "sample_runs" / "rcp-sim.json").read_text())
    monkeypatch.setenv("LOOP_KEY", "sk-loop-test-key-0000")
    with FakeLLMServer(default=Reply(text='{"vote": "YES", "reason": "fine"}')) as server:
        server.rule = lambda r: (Reply(status=500, error_message="overloaded")
                                 if failing["on"] and "vote" in str(r.body).lower() else None)
        data["providers"] = {"sim": {"model": "openai/fake-model", "api_base": server.base_url,
                                     "api_key_env": "LOOP_KEY", "max_retries": 0}}
        path = tmp_path / "p.rwb"
        store = Store.create(path)
        runner = Runner(store)
        run_id = runner.create(parse_run_config(data))
        assert runner.execute(run_id)["status"] == "degraded"
        store.close_connection()
        open_project(path)
        panel = panel_of(window)
        click_run(qtbot, panel, run_id)
        assert panel.resume_button.isEnabled()
        failing["on"] = False  # the provider is back
        with qtbot.waitSignal(window.runs.finished, timeout=WAIT_MS) as resumed:
            qtbot.mouseClick(panel.resume_button, Qt.MouseButton.LeftButton)
    summary = resumed.args[0]
    assert summary["status"] == "completed" and summary["votes_cast"] == summary["votes_expected"] == 30
    qtbot.waitUntil(lambda: bool(table_rows(panel.runs_table)) and
                    table_rows(panel.runs_table)[0]["status"] == "completed", timeout=WAIT_MS)
    assert not panel.resume_button.isEnabled()
