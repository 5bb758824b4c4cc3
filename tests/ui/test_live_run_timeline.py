"""Live Run's timeline and call detail: calls appear as they start and change as they end, a
cancel and a resume, the fenced request and the raw reply of a call, the ETA as text, and a run
whose every call fails ending red with its reason."""

from __future__ import annotations

import itertools
import threading
import time

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from tests.services.test_run_service import slow_sim
from tests.support.fake_llm_server import FakeLLMServer, Reply
from tests.ui.conftest import WAIT_MS
from tests.ui.live_run_helpers import (
    RUN_MS,
    click,
    click_call,
    click_run,
    empty_project,
    panel_of,
    plain,
    put,
    read,
    rows,
    start,
    template,
)
from workbench.services.runs.agents import AgentRouter
from workbench.services.runs.runner import RunProgress
from workbench.ui.widgets.run_timeline import GREY, RED


def small_rcp(**overrides) -> dict:
    """Two advocates and two critics on the simulated panel: 4 artifacts, 12 votes."""
    doc = template("rcp-advocate-critic")
    doc["clusters"] = [{**c, "agents": c["agents"][:2]} for c in doc["clusters"]]
    return {**doc, **overrides}


def test_calls_appear_as_they_start_and_change_as_they_end_then_cancel_and_resume(
        qtbot, window, tmp_path, open_project, monkeypatch):
    gate = threading.Event()
    slow_sim(monkeypatch, gate=gate, hold_from=3)  # the third call waits until the gate opens
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    put(qtbot, panel, small_rcp(dispatch="sequential"))
    events: list = []
    window.runs.calls_changed.connect(lambda batch: events.extend(batch))
    click(qtbot, panel.start_button)

    # Two calls have ended and the third is in flight: three rows, the last one running.
    qtbot.waitUntil(lambda: [r["status"] for r in rows(panel)] == ["ok", "ok", "running"], timeout=WAIT_MS)
    shown = rows(panel)
    assert [r["agent_id"] for r in shown] == ["a1", "a2", "c1"]
    assert shown[2]["id"] is None and shown[2]["status_text"].startswith("◌ running")
    assert shown[0]["cost"] == "$0 sim" and shown[0]["tokens"] and shown[0]["latency"] is not None
    assert [(e.kind, e.agent) for e in events][:5] == [("started", "a1"), ("finished", "a1"), ("started", "a2"),
                                                      ("finished", "a2"), ("started", "c1")]
    assert "Round 1: generate" in panel.timeline.phases.text() and "◌1" in panel.timeline.phases.text()
    assert panel.badge.status == "running" and panel.progress_bar.isVisible()
    # A call in flight has no record yet: the detail says so.
    table = panel.calls_table  # the row in flight, clicked
    qtbot.mouseClick(table.view.viewport(), Qt.MouseButton.LeftButton,
                     pos=table.view.visualRect(table.proxy.index(2, 0)).center())
    assert "no record yet" in panel.call_view.summary.text()

    with qtbot.waitSignal(window.runs.finished, timeout=WAIT_MS) as stopped:
        click(qtbot, panel.cancel_button)
        gate.set()
    assert stopped.args[0]["status"] == "interrupted"
    run_id = stopped.args[0]["run_id"]
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: panel.badge.status == "interrupted", timeout=WAIT_MS)
    assert panel.badge.text() == "↻ interrupted"
    done_before = len(read(path, "SELECT id FROM llm_calls WHERE run_id = ?", (run_id,)))
    assert [r["id"] for r in rows(panel)] == [r["id"] for r in read(
        path, "SELECT id FROM llm_calls WHERE run_id = ? ORDER BY id", (run_id,))]  # nothing left "running"

    click_run(qtbot, panel, run_id)
    assert panel.resume_button.isEnabled()
    with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as resumed:
        click(qtbot, panel.resume_button)
    assert resumed.args[0]["status"] == "completed" and resumed.args[0]["resumed_calls"] == done_before
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    keys = [r["step_key"] for r in read(path, "SELECT step_key FROM llm_calls WHERE run_id = ?", (run_id,))]
    assert len(keys) == len(set(keys)) == 16
    assert len(rows(panel)) == 16 and all(r["status"] == "ok" for r in rows(panel))
    assert panel.badge.text() == "✓ completed"
    assert "1·Round 1: generate ✔4" in plain(panel.timeline.phases.text())
    assert "2·Round 1: vote ✔12" in plain(panel.timeline.phases.text())


def test_the_call_detail_shows_the_fence_lines_and_the_raw_reply(qtbot, window, tmp_path, open_project):
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    put(qtbot, panel, small_rcp())
    summary = start(qtbot, window)
    assert summary["status"] == "completed"
    vote = next(r for r in rows(panel) if r["purpose"] == "vote")
    [stored] = read(path, "SELECT reply_text, request_json FROM llm_calls WHERE id = ?", (vote["id"],))
    fence = stored["request_json"]["fence"]["delimiter"]
    click_call(qtbot, panel, vote["id"])
    qtbot.waitUntil(lambda: panel.call_view.call_id == vote["id"], timeout=WAIT_MS)
    request = panel.call_view.request.toPlainText()
    assert f"<<<{fence}>>>" in request and f"<<<END-{fence}>>>" in request  # the fence lines, as sent
    assert "fresh for this call" in request and "System" in request and "User" in request
    assert panel.call_view.reply.toPlainText() == stored["reply_text"]
    assert "simulated panel" in panel.call_view.raw.toPlainText()
    summary_text = plain(panel.call_view.summary.text())
    assert f"{vote['agent_id']} · vote · ✔ ok" in summary_text and "tokens" in summary_text
    assert "cost $0 sim" in summary_text and "1 attempt" in summary_text
    assert panel.detail_tabs.currentWidget() is panel.call_view


def test_open_in_trace_inspector_shows_the_selected_call_there(qtbot, window, tmp_path, open_project):
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    put(qtbot, panel, small_rcp())
    assert start(qtbot, window)["status"] == "completed"
    vote = next(r for r in rows(panel) if r["purpose"] == "vote")
    click_call(qtbot, panel, vote["id"])
    assert panel.inspect_button.isEnabled()
    click(qtbot, panel.inspect_button)
    inspector = window.panels["traceInspectorPanel"]
    qtbot.waitUntil(lambda: inspector.detail.detail is not None and inspector.detail.detail.kind == "call"
                    and inspector.detail.detail.id == vote["id"], timeout=WAIT_MS)

    def selected() -> list[tuple]:
        return [(inspector.list.model.row(i.row())["_kind"], inspector.list.model.row(i.row())["id"])
                for i in inspector.list.view.selectionModel().selectedRows()]

    qtbot.waitUntil(lambda: selected() == [("call", vote["id"])], timeout=WAIT_MS)


def test_an_eta_under_a_second_reads_as_text(qtbot, window, tmp_path, open_project):
    open_project(empty_project(tmp_path))
    panel = panel_of(window)
    panel._on_run_progressed(RunProgress("r", "Round 1: vote", 30, 36, 0, 0.4))
    assert "&lt;1 s" in panel.progress_label.text()
    assert plain(panel.progress_label.text()) == "30/36 calls, 0 failed, ETA <1 s · Round 1: vote"
    panel._on_run_progressed(RunProgress("r", "<b>odd</b> phase", 1, 2, 1, 12.0))
    assert plain(panel.progress_label.text()) == "1/2 calls, 1 failed, ETA 12 s · <b>odd</b> phase"


def test_a_run_whose_every_call_fails_ends_failed_in_red_with_its_reason(qtbot, window, tmp_path, open_project):
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    with FakeLLMServer(default=Reply(status=500, error_message="the model crashed")) as server:
        doc = small_rcp(providers={"sim": {"model": "openai/fake-model", "api_base": server.base_url,
                                           "max_retries": 0, "max_concurrency": 4}})
        put(qtbot, panel, doc)
        summary = start(qtbot, window)
    assert summary["status"] == "failed" and summary["failed_calls"] == summary["calls"] > 0
    assert summary["error"].startswith("every call failed")
    qtbot.waitUntil(lambda: panel.badge.status == "failed", timeout=WAIT_MS)
    assert panel.badge.text() == "✖ failed" and "border: 2px solid #b3261e" in panel.badge.styleSheet()
    assert "every call failed" in plain(panel.calls_heading.text())
    assert "✖ Run failed" in plain(panel.progress_label.text()) and "every call failed" in plain(
        panel.progress_label.text())
    [run] = [r for r in panel._run_rows if r["id"] == summary["run_id"]]
    table = panel.runs_table
    status = table.proxy.index(0, 2)
    assert status.data() == "✖ failed" and status.data(Qt.ItemDataRole.ForegroundRole).color() == QColor("#b3261e")
    shown = rows(panel)
    assert shown and all(r["status"] == "error" for r in shown)
    assert all(r["cost"] == "unknown" for r in shown)  # never $0
    headers = [panel.calls_table.proxy.headerData(c, Qt.Orientation.Horizontal)
               for c in range(panel.calls_table.proxy.columnCount())]
    col, agent_col = headers.index("Status"), headers.index("Agent")
    assert panel.calls_table.proxy.index(0, col).data(Qt.ItemDataRole.ForegroundRole).color() == QColor(RED)
    assert panel.calls_table.proxy.index(0, agent_col).data(Qt.ItemDataRole.ForegroundRole).color() == QColor(GREY)
    assert run["error"].startswith("every call failed")

    # A failed call's detail: its error, and what the server sent back.
    click_call(qtbot, panel, shown[0]["id"])
    qtbot.waitUntil(lambda: panel.call_view.call_id == shown[0]["id"], timeout=WAIT_MS)
    assert panel.call_view.error.isVisible() and "Error" in panel.call_view.error.text()
    assert panel.call_view.request.toPlainText().count("User") >= 1


def test_calls_are_listed_in_their_order_while_calls_end_out_of_order(qtbot, window, tmp_path, open_project,
                                                                     monkeypatch):
    # Four calls in flight at once, each sleeping a different time: they end (and are recorded,
    # and read back) out of the order they started in. The timeline lists the recorded calls by
    # their id, then the calls still in flight, at every moment of the run.
    original = AgentRouter._simulate
    counter = itertools.count()

    def uneven(self, call, name):
        time.sleep((0.12, 0.0, 0.06, 0.03)[next(counter) % 4])
        return original(self, call, name)

    monkeypatch.setattr(AgentRouter, "_simulate", uneven)
    open_project(empty_project(tmp_path))
    panel = panel_of(window)
    put(qtbot, panel, small_rcp(dispatch="concurrent"))
    seen: list[list[dict]] = []
    panel.timeline.rows_changed.connect(lambda: seen.append(rows(panel)))
    summary = start(qtbot, window)
    assert summary["status"] == "completed"
    assert any(sum(r["id"] is None for r in shown) > 1 for shown in seen)  # calls were in flight together
    for shown in seen:
        ids = [r["id"] for r in shown if r["id"] is not None]
        assert ids == sorted(ids), ids
        flying = [r["id"] is None for r in shown]
        assert flying == sorted(flying), [r["id"] for r in shown]  # the calls in flight come last
    final = [r["id"] for r in rows(panel)]
    assert len(final) == 16 and final == sorted(final)


def test_start_shows_the_new_run_never_the_previous_runs_calls(qtbot, window, tmp_path, open_project, monkeypatch):
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    put(qtbot, panel, small_rcp(dispatch="sequential"))
    first = start(qtbot, window)["run_id"]
    old = {r["id"] for r in read(path, "SELECT id FROM llm_calls WHERE run_id = ?", (first,))}
    vote = next(r for r in rows(panel) if r["purpose"] == "vote")
    click_call(qtbot, panel, vote["id"])
    qtbot.waitUntil(lambda: panel.call_view.call_id == vote["id"], timeout=WAIT_MS)

    gate = threading.Event()
    slow_sim(monkeypatch, gate=gate, hold_from=3)  # the new run's third call waits for the gate
    shown: list[set] = []
    panel.timeline.rows_changed.connect(lambda: shown.append({r["id"] for r in rows(panel)}))
    at_start: list = []  # (run id, the calls shown, the call detailed), as the run starts
    window.runs.started.connect(lambda run_id: at_start.append(
        (run_id, {r["id"] for r in rows(panel)}, panel.call_view.call_id)))
    try:
        with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as finished:
            click(qtbot, panel.start_button)
            # At once: the previous run's calls and its selected call are gone.
            assert not {r["id"] for r in rows(panel)} & old and panel.call_view.call_id is None
            qtbot.waitUntil(lambda: [r["status"] for r in rows(panel)] == ["ok", "ok", "running"], timeout=WAIT_MS)
            second = panel._shown_run
            assert second != first
            # The runs list is re-read in the background: the new run is selected once it is in.
            qtbot.waitUntil(lambda: (panel.selected_run() or {}).get("id") == second, timeout=WAIT_MS)
            stored = {r["id"] for r in read(path, "SELECT id FROM llm_calls WHERE run_id = ?", (second,))}
            assert {r["id"] for r in rows(panel)} - {None} <= stored
            gate.set()
    finally:
        gate.set()
    assert finished.args[0]["run_id"] == second
    [(started, calls_then, detail_then)] = at_start
    assert started == second and not calls_then & old and detail_then is None
    assert shown and all(not ids & old for ids in shown)  # never, not for one refresh
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    assert len(rows(panel)) == 16 and not {r["id"] for r in rows(panel)} & old
