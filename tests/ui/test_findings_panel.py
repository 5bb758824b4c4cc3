"""The Findings panel: findings with their status and votes, live as agents vote from another
process; the challenged/pending queues; and the MCP server box starting and stopping a real
``rwb serve-mcp --http`` for the open project."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QPalette

from tests.ui.conftest import WAIT_MS
from workbench.core.project.findings import FindingsStore
from workbench.core.project.store import Store
from workbench.services.mcp.process import McpServerProcess, client_config, rwb_command
from workbench.ui import theme
from workbench.ui.panels.findings_panel import STATUS_STYLE

REPO = Path(__file__).resolve().parents[2]
SERVER_WAIT_MS = 30_000


def make_project(path: Path) -> Path:
    store = Store.create(path)
    findings = FindingsStore(store)
    findings.create_finding("commit e8f2a91 implements OAuth2 login", finding_id="f1")
    for agent, vote, confidence in (("scout", "confirm", 0.85), ("auditor", "challenge", 0.65),
                                    ("dev", "confirm", 0.95)):
        findings.submit_vote("f1", agent, vote, confidence, f"{agent} looked", client="gui")
    findings.create_finding("The Pro plan costs $19/month", finding_id="f2")
    findings.submit_vote("f2", "scout", "confirm", 0.9, client="gui")
    findings.create_finding("GET /api/v2/users returns 200", finding_id="f3")
    store.close_connection()
    return path


def vote_from_another_process(path: Path, *votes: tuple[str, str, str, float]) -> None:
    code = ("import sys\n"
            "from workbench.core.project.store import Store\n"
            "from workbench.core.project.findings import FindingsStore\n"
            f"s = Store.open({str(path)!r})\n"
            "f = FindingsStore(s)\n"
            f"for fid, agent, vote, c in {list(votes)!r}:\n"
            "    f.submit_vote(fid, agent, vote, c, 'from outside', client='outside-agent')\n"
            "s.close_connection()\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=REPO)


def panel_rows(panel) -> dict[str, dict]:
    model = panel.findings.model
    return {model.row(i)["id"]: model.row(i) for i in range(model.rowCount())}


def history_agents(panel) -> list[tuple[str, str]]:
    model = panel.history.model
    return [(model.row(i)["agent"], model.row(i)["client"]) for i in range(model.rowCount())]


def test_findings_show_status_with_colour_and_shape(qtbot, window, tmp_path, open_project):
    open_project(make_project(tmp_path / "p.rwb"))
    panel = window.panels["findingsPanel"]
    rows = panel_rows(panel)
    assert [rows[f]["status_label"] for f in ("f1", "f2", "f3")] == ["✖ challenged", "● confirmed", "○ pending"]
    assert rows["f1"]["score"] == "+0.383" and rows["f3"]["score"] == "—"
    model = panel.findings.model
    colours = {model.row(r)["id"]: model.data(model.index(r, 0), Qt.ItemDataRole.ForegroundRole).name()
               for r in range(model.rowCount())}
    assert colours == {"f1": theme.css("error"), "f2": theme.css("ok"), "f3": theme.css("muted")}
    # The current theme's colours, drawn anew after a switch: >= 4.5:1 on the table in both themes.
    for name in ("dark", "light"):
        window.set_theme(name)
        for r in range(model.rowCount()):
            shown = model.data(model.index(r, 0), Qt.ItemDataRole.ForegroundRole)
            assert shown == theme.colour(STATUS_STYLE[model.row(r)["status"]][1], name)
            for role in (QPalette.ColorRole.Base, QPalette.ColorRole.AlternateBase, QPalette.ColorRole.Window):
                assert theme.contrast(shown, window.palette().color(role)) >= 4.5, (name, shown.name())
    assert panel.queue_buttons["challenged"].text().endswith("1")
    assert "0 questions" in panel.cons_label.text()


def test_the_queues_narrow_the_table(qtbot, window, tmp_path, open_project):
    open_project(make_project(tmp_path / "p.rwb"))
    panel = window.panels["findingsPanel"]
    # Each queue is a query the database answers off the GUI thread.
    panel.queue_buttons["challenged"].click()
    qtbot.waitUntil(lambda: panel.visible_finding_ids() == ["f1"], timeout=WAIT_MS)
    panel.queue_buttons["pending"].click()
    qtbot.waitUntil(lambda: panel.visible_finding_ids() == ["f3"], timeout=WAIT_MS)
    panel.queue_buttons["all"].click()
    qtbot.waitUntil(lambda: sorted(panel.visible_finding_ids()) == ["f1", "f2", "f3"], timeout=WAIT_MS)


def test_selecting_a_finding_shows_who_voted_through_which_client(qtbot, window, tmp_path, open_project):
    open_project(make_project(tmp_path / "p.rwb"))
    panel = window.panels["findingsPanel"]
    assert panel.select_finding("f1")
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)  # the votes are read off the GUI thread
    assert history_agents(panel) == [("scout", "gui"), ("auditor", "gui"), ("dev", "gui")]
    model = panel.history.model
    assert [model.row(i)["vote_label"] for i in range(3)] == ["▲ confirm", "▼ challenge", "▲ confirm"]
    assert all(model.row(i)["counted_label"] == "✓" for i in range(3))
    assert "f1" in panel.history_label.text() and "k = 3" in panel.history_label.text()


def test_open_in_trace_inspector_shows_the_selected_finding(qtbot, window, tmp_path, open_project):
    from workbench.core.project.refs import RecordRef

    open_project(make_project(tmp_path / "p.rwb"))
    panel = window.panels["findingsPanel"]
    assert panel.select_finding("f2")
    with qtbot.waitSignal(window.model.reveal_requested, timeout=WAIT_MS) as blocker:
        panel.open_button.click()
    assert blocker.args == [RecordRef("finding", "f2")]
    inspector = window.panels["traceInspectorPanel"]
    qtbot.waitUntil(lambda: inspector.detail.detail is not None and inspector.detail.detail.id == "f2",
                    timeout=WAIT_MS)
    assert inspector.detail.claim.text() == "The Pro plan costs $19/month"


def test_votes_from_another_process_appear_without_reopening(qtbot, window, tmp_path, open_project):
    path = make_project(tmp_path / "p.rwb")
    open_project(path)
    panel = window.panels["findingsPanel"]
    panel.select_finding("f1")
    vote_from_another_process(path, ("f1", "auditor", "confirm", 0.8), ("f3", "dev", "challenge", 0.9))
    qtbot.waitUntil(lambda: panel_rows(panel)["f1"]["status_label"] == "● confirmed", timeout=WAIT_MS)
    assert panel_rows(panel)["f3"]["status_label"] == "✖ challenged"
    # The selection survives the refresh, and the history shows the new vote and its client.
    qtbot.waitUntil(lambda: ("auditor", "outside-agent") in history_agents(panel), timeout=WAIT_MS)
    counted = {panel.history.model.row(i)["id"]: panel.history.model.row(i)["counted_label"]
               for i in range(panel.history.model.rowCount())}
    assert counted[2] == "" and counted[max(counted)] == "✓"  # the auditor's first vote no longer counts


def test_the_server_box_starts_a_server_agents_can_vote_through_then_stops_it(qtbot, window, tmp_path,
                                                                                 open_project):
    path = make_project(tmp_path / "p.rwb")
    open_project(path)
    panel = window.panels["findingsPanel"]
    assert panel.start_button.isEnabled() and not panel.stop_button.isEnabled()
    stdio_only = json.loads(panel.snippet_text())["mcpServers"]
    assert list(stdio_only) == ["resonance-consensus"]

    with qtbot.waitSignal(panel.server.started, timeout=SERVER_WAIT_MS):
        panel.start_button.click()
    try:
        url, token = panel.url_field.text(), panel.token_field.text()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp") and len(token) >= 40
        assert not panel.start_button.isEnabled() and panel.stop_button.isEnabled()
        config = json.loads(panel.snippet_text())["mcpServers"]
        assert config["resonance-consensus"]["command"] == rwb_command()[0]
        assert Path(config["resonance-consensus"]["command"]).is_absolute()
        assert config["resonance-consensus"]["args"][-3:] == ["serve-mcp", "--project", str(path)]
        assert config["resonance-consensus-http"] == {
            "type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}
        panel.copy_button.click()
        assert QGuiApplication.clipboard().text() == panel.snippet_text()

        async def agent():
            with anyio.fail_after(30):
                async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
                    async with Client(streamable_http_client(url, http_client=http),
                                      client_info=types.Implementation(name="panel-agent", version="1")) as c:
                        result = await c.call_tool("submit_vote", {"finding_id": "f3", "agent": "dev",
                                                                   "vote_type": "confirm", "confidence": 0.9})
                        assert not result.is_error, result.content

        anyio.run(agent)
        qtbot.waitUntil(lambda: panel_rows(panel)["f3"]["status_label"] == "● confirmed", timeout=WAIT_MS)
        panel.select_finding("f3")
        qtbot.waitUntil(lambda: history_agents(panel) == [("dev", "panel-agent")], timeout=WAIT_MS)
    finally:
        with qtbot.waitSignal(panel.server.stopped, timeout=SERVER_WAIT_MS):
            panel.stop_button.click()
    assert not panel.server.running
    assert panel.url_field.text() == "" and panel.start_button.isEnabled()
    assert list(json.loads(panel.snippet_text())["mcpServers"]) == ["resonance-consensus"]


def test_closing_the_project_stops_its_server(qtbot, window, tmp_path, open_project):
    open_project(make_project(tmp_path / "p.rwb"))
    panel = window.panels["findingsPanel"]
    with qtbot.waitSignal(panel.server.started, timeout=SERVER_WAIT_MS):
        panel.start_server()
    window.action_close.trigger()
    assert not panel.server.running
    assert not panel.start_button.isEnabled() and not panel.stop_button.isEnabled()


def test_a_server_that_cannot_start_says_why(qtbot, tmp_path):
    bad = McpServerProcess(command=[sys.executable, "-c", "import sys; print('no such project', file=sys.stderr); "
                                                          "sys.exit(3)"])
    with qtbot.waitSignal(bad.failed, timeout=SERVER_WAIT_MS) as failed:
        bad.start(tmp_path / "missing.rwb")
    assert "stopped before it was ready (exit code 3)" in failed.args[0]
    assert "no such project" in failed.args[0]
    assert not bad.running


def test_the_client_config_has_both_forms():
    config = client_config("/p/x.rwb", "http://127.0.0.1:5/mcp", "tok", command=["/venv/bin/rwb"])
    assert config == {"mcpServers": {
        "resonance-consensus": {"command": "/venv/bin/rwb", "args": ["serve-mcp", "--project", "/p/x.rwb"]},
        "resonance-consensus-http": {"type": "http", "url": "http://127.0.0.1:5/mcp",
                                     "headers": {"Authorization": "Bearer tok"}}}}
    fallback = client_config("/p/x.rwb", command=["/usr/bin/python3", "-m", "workbench"])
    assert fallback["mcpServers"]["resonance-consensus"]["args"] == [
        "-m", "workbench", "serve-mcp", "--project", "/p/x.rwb"]


def test_the_gui_reads_the_ready_line_the_server_writes():
    from workbench.services.mcp import http as mcp_http
    from workbench.services.mcp import process as mcp_process

    assert mcp_process.READY_PREFIX == mcp_http.READY_PREFIX


# ----- review, re-research, an MCP client in another process -------------------------------------
def test_a_challenged_finding_moves_from_the_queue_to_resolved_when_a_reviewer_decides(qtbot, window, tmp_path,
                                                                                          open_project):
    open_project(make_project(tmp_path / "p.rwb"))
    panel = window.panels["findingsPanel"]
    window.docks["findingsPanel"].raise_()
    qtbot.mouseClick(panel.queue_buttons["challenged"], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.visible_finding_ids() == ["f1"], timeout=WAIT_MS)
    assert panel.select_finding("f1")
    qtbot.waitUntil(lambda: panel.review.finding_id == "f1" and panel.review.confirm_button.isEnabled(),
                    timeout=WAIT_MS)
    assert "to review" in panel.review.state.text()
    assert not panel.review.reject_button.isEnabled()  # a rejection needs its reason first
    qtbot.keyClicks(panel.review.reason, "the auditor found the commit reverted")
    qtbot.mouseClick(panel.review.reject_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.visible_finding_ids() == [], timeout=WAIT_MS)  # out of the queue
    qtbot.waitUntil(lambda: panel.queue_buttons["resolved"].text().endswith("1"), timeout=WAIT_MS)
    assert panel.queue_buttons["challenged"].text().endswith("0")
    qtbot.mouseClick(panel.queue_buttons["resolved"], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.visible_finding_ids() == ["f1"], timeout=WAIT_MS)
    assert panel_rows(panel)["f1"]["review_label"] == "✖ rejected: the auditor found the commit reverted"
    assert panel_rows(panel)["f1"]["status_label"] == "✖ challenged"  # the votes are left as they were
    # A confirmation needs no reason.
    qtbot.mouseClick(panel.queue_buttons["all"], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "f2" in panel.visible_finding_ids(), timeout=WAIT_MS)
    panel.select_finding("f2")
    qtbot.waitUntil(lambda: panel.review.finding_id == "f2", timeout=WAIT_MS)
    qtbot.mouseClick(panel.review.confirm_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel_rows(panel)["f2"]["review_label"] == "✓ confirmed by reviewer", timeout=WAIT_MS)
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)


def test_re_research_opens_a_new_simulated_run_on_the_finding(qtbot, window, tmp_path, open_project):
    from workbench.core.project.refs import RecordRef

    open_project(make_project(tmp_path / "p.rwb"))
    panel = window.panels["findingsPanel"]
    window.docks["findingsPanel"].raise_()
    panel.select_finding("f1")
    qtbot.waitUntil(lambda: panel.review.reresearch_button.isEnabled(), timeout=WAIT_MS)
    with qtbot.waitSignal(window.runs.finished, timeout=WAIT_MS * 3) as finished, \
            qtbot.waitSignal(window.model.reveal_requested, timeout=WAIT_MS * 3) as revealed:
        qtbot.mouseClick(panel.review.reresearch_button, Qt.MouseButton.LeftButton)
    summary = finished.args[0]
    assert summary["status"] == "completed" and revealed.args == [RecordRef("run", summary["run_id"])]
    assert panel.reresearch_run_id == summary["run_id"]
    # The run's three simulated agents voted on f1: its history shows them, client "run".
    qtbot.waitUntil(lambda: sum(client == "run" for _a, client in history_agents(panel)) == 3, timeout=WAIT_MS)
    store = Store.open(tmp_path / "p.rwb")
    try:
        assert FindingsStore(store).history("f1").votes_in_history == 6
    finally:
        store.close_connection()
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)


MCP_CLIENT = """
import sys, anyio, httpx2, mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
url, token, finding, agent, vote = sys.argv[1:6]
async def main():
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
            async with Client(streamable_http_client(url, http_client=http),
                              client_info=types.Implementation(name="outside-mcp-agent", version="2.1")) as c:
                r = await c.call_tool("submit_vote", {"finding_id": finding, "agent": agent, "vote_type": vote,
                                                      "confidence": 0.9, "reason": "checked from outside"})
                assert not r.is_error, r.content
anyio.run(main)
"""


def test_an_mcp_vote_made_from_another_process_appears_in_the_panel(qtbot, window, tmp_path, open_project):
    path = make_project(tmp_path / "p.rwb")
    open_project(path)
    panel = window.panels["findingsPanel"]
    window.docks["findingsPanel"].raise_()
    panel.select_finding("f3")
    with qtbot.waitSignal(panel.server.started, timeout=SERVER_WAIT_MS):
        qtbot.mouseClick(panel.start_button, Qt.MouseButton.LeftButton)
    try:
        assert "no client has called a tool yet" in panel.clients_label.text()
        # The client runs in its own process; the server in another: the GUI sees the file change.
        subprocess.run([sys.executable, "-c", MCP_CLIENT, panel.url_field.text(), panel.token_field.text(),
                        "f3", "scout", "challenge"], check=True, timeout=60, cwd=REPO)
        qtbot.waitUntil(lambda: panel_rows(panel)["f3"]["status_label"] == "✖ challenged", timeout=WAIT_MS)
        qtbot.waitUntil(lambda: history_agents(panel) == [("scout", "outside-mcp-agent")], timeout=WAIT_MS)
        assert panel.history.model.row(0)["reason"] == "checked from outside"
        # The clients seen: by this server (its stderr line) and as voters in the project.
        qtbot.waitUntil(lambda: "outside-mcp-agent 2.1" in panel.clients_label.text(), timeout=WAIT_MS)
        qtbot.waitUntil(lambda: "outside-mcp-agent (1 vote" in panel.clients_label.text(), timeout=WAIT_MS)
    finally:
        with qtbot.waitSignal(panel.server.stopped, timeout=SERVER_WAIT_MS):
            qtbot.mouseClick(panel.stop_button, Qt.MouseButton.LeftButton)
    assert not panel.server.running and "This server" not in panel.clients_label.text()


def test_the_reports_tab_lists_the_runs_and_shows_the_chosen_runs_report(qtbot, window, tmp_path, open_project,
                                                                         monkeypatch):
    from tests.support.report_runs import run_sample
    from workbench.core.project.export import to_markdown
    from workbench.core.project.store import Store

    path = make_project(tmp_path / "p.rwb")
    store = Store.open(path)
    try:
        run_sample(store, "rcp", monkeypatch)
    finally:
        store.close_connection()
    open_project(path)
    panel = window.panels["findingsPanel"]
    assert [panel.tabs.tabText(i) for i in range(panel.tabs.count())] == ["Findings", "CONS", "Reports"]
    assert panel.tabs.widget(2) is panel.reports_slot
    panel.tabs.setCurrentIndex(2)
    reports = panel.reports
    qtbot.waitUntil(lambda: reports.runs.count() > 0 and reports.view.markdown != "", timeout=WAIT_MS)
    run_id = reports.runs.currentData()
    store = Store.open(path)
    try:
        expected = to_markdown(store, run_id)
    finally:
        store.close_connection()
    assert reports.view.run_id == run_id and reports.view.markdown == expected
