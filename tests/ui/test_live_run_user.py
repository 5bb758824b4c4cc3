"""Live Run from a user's seat, clicks and typing only: a template from the New menu, a name and a
new seed, saved as a JSON file that `rwb run` accepts unchanged; a simulated RCP run started,
watched, cancelled and resumed; a rate-limited provider's wait (429 and Retry-After) shown as it
happens; and `sample_runs/rcp-ollama.json` with no server (refused, in red, before any run exists)
and with a server that fails every call (the run ends failed, in red, with the reason)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading

from PySide6.QtCore import Qt

from tests.services.test_run_service import slow_sim
from tests.support.fake_llm_server import FakeLLMServer, Reply
from tests.ui.conftest import WAIT_MS
from tests.ui.live_run_helpers import (
    RUN_MS,
    SAMPLES,
    choose_template,
    click,
    click_call,
    click_menu,
    click_run,
    empty_project,
    open_document,
    panel_of,
    plain,
    read,
    rows,
    sample,
    start,
    type_into,
)
from workbench.ui import prompts


def test_save_a_template_as_a_file_rwb_run_accepts_then_start_watch_cancel_and_resume(
        qtbot, window, tmp_path, open_project, monkeypatch):
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    choose_template(qtbot, panel, "rcp-advocate-critic")
    editor = panel.editor
    type_into(qtbot, editor.name_edit, "Sunday trams")
    seed_before = editor.document()["seed"]
    click(qtbot, editor.new_seed_button)
    qtbot.waitUntil(lambda: editor.valid and editor.document()["seed"] != seed_before, timeout=WAIT_MS)
    assert editor.seed_edit.text() == str(editor.document()["seed"]) and editor.document()["label"] == "Sunday trams"
    click(qtbot, editor.dispatch_combo)  # sequential: one call at a time, so the cancel lands mid-run
    qtbot.keyClick(editor.dispatch_combo.view(), Qt.Key.Key_Down)
    qtbot.keyClick(editor.dispatch_combo.view(), Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: editor.valid and editor.document()["dispatch"] == "sequential", timeout=WAIT_MS)

    target = tmp_path / "sunday-trams.json"
    monkeypatch.setattr(prompts, "save_run_config_path", lambda *_a, **_k: target)
    click_menu(qtbot, panel.file_button, "Save as a JSON file…")
    assert json.loads(target.read_text()) == editor.document()
    out = subprocess.run([sys.executable, "-m", "workbench", "run", str(target), "--project", str(tmp_path / "cli.rwb")],
                         capture_output=True, text=True, timeout=120, cwd=SAMPLES.parent,
                         env={"PATH": "/usr/bin:/bin", "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1])["status"] == "completed"

    gate = threading.Event()
    slow_sim(monkeypatch, gate=gate, hold_from=4)
    click(qtbot, panel.start_button)
    qtbot.waitUntil(lambda: [r["status"] for r in rows(panel)] == ["ok"] * 3 + ["running"], timeout=WAIT_MS)
    # The progress line follows the runner's own progress events, which may land a moment after
    # the timeline's rows: wait for it (the run is held at the fourth call, so it cannot pass 3/6).
    qtbot.waitUntil(lambda: "3/6 calls, 0 failed" in plain(panel.progress_label.text()), timeout=WAIT_MS)
    assert panel.progress_bar.isVisible()
    assert "ETA" in plain(panel.progress_label.text())
    with qtbot.waitSignal(window.runs.finished, timeout=WAIT_MS) as stopped:
        click(qtbot, panel.cancel_button)
        gate.set()
    assert stopped.args[0]["status"] == "interrupted"
    run_id = stopped.args[0]["run_id"]
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    click_run(qtbot, panel, run_id)
    qtbot.waitUntil(panel.resume_button.isEnabled, timeout=WAIT_MS)
    with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as resumed:
        click(qtbot, panel.resume_button)
    assert resumed.args[0]["status"] == "completed" and resumed.args[0]["resumed_calls"] == stopped.args[0]["calls"]
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: len(rows(panel)) == 36 and panel.badge.text() == "✓ completed", timeout=WAIT_MS)
    keys = [r["step_key"] for r in read(path, "SELECT step_key FROM llm_calls WHERE run_id = ?", (run_id,))]
    assert len(keys) == len(set(keys)) == 36
    click_call(qtbot, panel, rows(panel)[10]["id"])  # a vote: its fenced request and raw reply
    qtbot.waitUntil(lambda: panel.call_view.call_id == rows(panel)[10]["id"], timeout=WAIT_MS)
    [stored] = read(path, "SELECT reply_text, request_json FROM llm_calls WHERE id = ?", (rows(panel)[10]["id"],))
    fence = stored["request_json"]["fence"]["delimiter"]
    assert f"<<<{fence}>>>" in panel.call_view.request.toPlainText()
    assert panel.call_view.reply.toPlainText() == stored["reply_text"]


def small_rcp(base_url: str, **provider) -> dict:
    doc = sample("rcp-ollama.json")
    doc["providers"]["local"].update({"api_base": base_url, **provider})
    doc["clusters"] = [{**c, "agents": c["agents"][:1]} for c in doc["clusters"]]  # 2 artifacts, 2 votes
    return doc


def artifact_or_vote(request) -> str:
    if "Answer in one or two short paragraphs" in request.messages[-1]["content"]:
        return "Closing the centre cuts traffic and noise; shops need deliveries."
    return "YES: a fair first step."


def test_a_429_wait_shows_as_it_happens_then_the_call_completes(qtbot, window, tmp_path, open_project, monkeypatch):
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    # The artifact and the votes in words of their own: a vote that only repeats the artifact is no vote.
    with FakeLLMServer(default=Reply(text=artifact_or_vote)) as server:
        server.enqueue(Reply(status=429, retry_after=2, error_message="slow down"))
        doc = small_rcp(server.base_url, model="openai/fake-model", max_retries=2)
        doc["dispatch"] = "sequential"
        open_document(qtbot, panel, monkeypatch, doc, tmp_path)
        with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as finished:
            click(qtbot, panel.start_button)
            qtbot.waitUntil(lambda: any(r["status"] == "waiting" for r in rows(panel)), timeout=RUN_MS)
            [waiting] = [r for r in rows(panel) if r["status"] == "waiting"]
            assert waiting["status_text"].startswith("⧗ retry") and "HTTP 429" in waiting["reason"]
            assert "retry after 2 s" in waiting["reason"]
            assert "1 waiting to retry" in plain(panel.calls_heading.text())
            assert "rate-limited (HTTP 429)" in plain(panel.progress_label.text())
            assert "⧗1" in plain(panel.timeline.phases.text())
    summary = finished.args[0]
    assert summary["status"] == "completed" and summary["failed_calls"] == 0
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    assert [r["attempts"] for r in rows(panel)][0] == 2 and all(r["status"] == "ok" for r in rows(panel))
    assert all(r["cost"] == "unknown" for r in rows(panel))  # a model with no known price: unknown, not $0


def test_rcp_ollama_with_no_server_is_refused_in_red_before_a_run_exists(qtbot, window, tmp_path, open_project,
                                                                         monkeypatch):
    with socket.socket() as s:  # a port where nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    open_document(qtbot, panel, monkeypatch, small_rcp(f"http://127.0.0.1:{port}"), tmp_path, "rcp-ollama.json")
    with qtbot.waitSignal(window.runs.failed, timeout=RUN_MS) as refused:
        click(qtbot, panel.start_button)
    assert "nothing answers" in refused.args[0]
    text = plain(panel.progress_label.text())
    assert text.startswith("✖ The run could not start: providers.local.api_base: nothing answers at")
    assert "#b3261e" in panel.progress_label.text() or "color:" in panel.progress_label.text()
    assert read(path, "SELECT count(*) AS n FROM runs")[0]["n"] == 0
    assert not window.runs.running and panel.start_button.isEnabled()


def test_rcp_ollama_with_a_server_that_fails_every_call_ends_failed_in_red(qtbot, window, tmp_path, open_project,
                                                                          monkeypatch):
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    with FakeLLMServer(default=Reply(status=500, error_message="model not loaded")) as server:
        open_document(qtbot, panel, monkeypatch, small_rcp(server.base_url, max_retries=0), tmp_path,
                      "rcp-ollama.json")
        summary = start(qtbot, window)
    assert summary["status"] == "failed" and summary["error"].startswith("every call failed")
    qtbot.waitUntil(lambda: panel.badge.status == "failed", timeout=WAIT_MS)
    assert panel.badge.text() == "✖ failed"
    assert "✖ Run failed" in plain(panel.progress_label.text()) and "every call failed" in plain(
        panel.progress_label.text())
    assert "every call failed" in plain(panel.calls_heading.text())
    assert rows(panel) and all(r["status"] == "error" for r in rows(panel))
    [run] = read(path, "SELECT status, error FROM runs")
    assert run["status"] == "failed" and run["error"].startswith("every call failed")
