"""Every protocol runs to completion from the GUI alone, offline, on the simulated panel: RCP, ARM,
the Consensus Server's findings, CONS (its conductor answered through the decision form) and
RCP wrapped in Resonance Echo, each started from its template; and an ARM batch from the form
(2 questions × 1 provider mix × 1 replicate), cancelled and resumed as a batch."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt

from tests.services.test_run_service import slow_sim
from tests.ui.conftest import WAIT_MS
from tests.ui.live_run_helpers import (
    RUN_MS,
    click,
    click_menu,
    click_run,
    empty_project,
    panel_of,
    read,
    rows,
    start,
    type_into,
    wait_valid,
)
from workbench.ui.widgets.config_source import templates


def choose(qtbot, panel, key: str) -> None:
    """Pick the template from Live Run's New menu, by clicks."""
    [choice] = [t for t in templates() if t.key == key]
    click_menu(qtbot, panel.new_button, f"From template: {choice.name}")


@pytest.mark.parametrize("key, protocol", [("rcp-advocate-critic", "rcp"), ("rcp-weighted-3", "rcp"),
                                           ("arm-mesh", "arm"), ("findings-crew", "findings"),
                                           ("rcp-echo", "rcp")])
def test_each_protocol_completes_from_its_template(qtbot, window, tmp_path, open_project, key, protocol):
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    choose(qtbot, panel, key)
    wait_valid(qtbot, panel)
    summary = start(qtbot, window)
    assert summary["status"] == "completed", summary.get("error")
    assert summary["calls"] > 0
    if key != "rcp-echo":  # Echo's template has an agent that hits its context wall, by design
        assert summary["failed_calls"] == 0
    [run] = read(path, "SELECT protocol, status, simulated FROM runs")
    assert run == {"protocol": protocol, "status": "completed", "simulated": 1}
    assert len(rows(panel)) == summary["calls"] and panel.badge.text() == "✓ completed"
    if key == "rcp-echo":  # Echo's records are there too
        assert read(path, "SELECT count(*) AS n FROM echo_anchors")[0]["n"] > 0


def test_cons_from_its_template_with_the_conductor_deciding_in_the_form(qtbot, window, tmp_path, open_project):
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    choose(qtbot, panel, "cons-five")
    wait_valid(qtbot, panel)
    type_into(qtbot, panel.editor.fields[("min_voters",)], "6")  # five voters: insufficient evidence, escalated
    wait_valid(qtbot, panel)
    assert panel.editor.document()["min_voters"] == 6
    form = panel.decision_form
    with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as finished:
        click(qtbot, panel.start_button)
        qtbot.waitUntil(lambda: form.isVisible() and form.decide_button.isEnabled(), timeout=WAIT_MS)
        assert "insufficient_evidence" in panel.prompt_box.heading.text()
        qtbot.keyClicks(form.reason, "Five reviewers agree; good enough for a pilot.")
        qtbot.mouseClick(form.decide_button, Qt.MouseButton.LeftButton)
    summary = finished.args[0]
    assert summary["status"] == "completed" and summary["cons"]["verdict"] == "INSUFFICIENT_EVIDENCE"
    assert summary["cons"]["humanDecision"].startswith("ACCEPT the INSUFFICIENT_EVIDENCE verdict")
    qtbot.waitUntil(lambda: read(path, "SELECT decision_note FROM cons_escalations")[0]["decision_note"]
                    == "Five reviewers agree; good enough for a pilot.", timeout=WAIT_MS)


def arm_batch(qtbot, panel) -> None:
    choose(qtbot, panel, "arm-mesh")
    wait_valid(qtbot, panel)
    editor = panel.editor
    click(qtbot, editor.batch_check)
    assert editor.batch_check.isChecked()
    type_into(qtbot, editor.questions_edit, "Should an agent refuse a legal but harmful order?\n"
                                            "Should a reconciler ever overrule both peers?")
    type_into(qtbot, editor.mixes_edit, "uniform: *=sim")
    type_into(qtbot, editor.fields[("batch", "replicates")], "1")
    wait_valid(qtbot, panel)
    assert "a batch of 2 run(s)" in editor.check.message


def test_an_arm_batch_runs_to_completion_from_the_gui(qtbot, window, tmp_path, open_project):
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    arm_batch(qtbot, panel)
    started: list[str] = []
    window.runs.started.connect(started.append)
    summary = start(qtbot, window)
    assert summary["status"] == "completed" and summary["batch_id"].startswith("batch-")
    assert len(summary["runs"]) == summary["planned_runs"] == 2
    assert summary["calls"] == sum(s["calls"] for s in summary["runs"]) > 0
    stored = read(path, "SELECT id, status, batch_id, label FROM runs ORDER BY rowid")
    assert [r["status"] for r in stored] == ["completed", "completed"]
    assert {r["batch_id"] for r in stored} == {summary["batch_id"]}
    assert started == [r["id"] for r in stored]  # each run of the batch was shown as it began
    # Each run keeps the configured label, then says where it sits in the batch.
    assert [r["label"].split(" · ")[1] for r in stored] == ["Q1", "Q2"]
    assert all(r["label"].startswith("ARM mesh with a silent baseline (simulated) · ") for r in stored)
    assert panel.selected_run()["id"] == stored[-1]["id"] and panel.selected_run()["batch_id"] == summary["batch_id"]
    assert "Batch " + summary["batch_id"] + " completed: 2 of 2 runs" in panel.progress_label.text()


def test_a_batch_cancelled_in_its_first_run_resumes_as_a_batch(qtbot, window, tmp_path, open_project, monkeypatch):
    gate = threading.Event()
    slow_sim(monkeypatch, gate=gate, hold_from=3)
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    arm_batch(qtbot, panel)
    click(qtbot, panel.start_button)
    qtbot.waitUntil(lambda: any(r["status"] == "running" for r in rows(panel)), timeout=WAIT_MS)
    with qtbot.waitSignal(window.runs.finished, timeout=WAIT_MS) as stopped:
        click(qtbot, panel.cancel_button)
        gate.set()
    assert stopped.args[0]["status"] == "interrupted" and stopped.args[0]["batch_id"]
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    assert [r["status"] for r in read(path, "SELECT status FROM runs ORDER BY rowid")] == ["interrupted"] * 2
    click_run(qtbot, panel, read(path, "SELECT id FROM runs ORDER BY rowid")[0]["id"])
    assert panel.resume_button.isEnabled() and panel.resume_button.text() == "⟳ Resume batch"
    with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as resumed:
        click(qtbot, panel.resume_button)
    assert resumed.args[0]["status"] == "completed" and resumed.args[0]["batch_id"] == stopped.args[0]["batch_id"]
    assert [r["status"] for r in read(path, "SELECT status FROM runs ORDER BY rowid")] == ["completed"] * 2
