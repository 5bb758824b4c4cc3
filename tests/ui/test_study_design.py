"""Designing and running a study in the Studies panel (issue 29): a two-arm study built through the
form (base: a simulated RCP configuration; arm θ 0.67 as a row of the changes table), run from the
view, gives the forest plot the difference and CI ``rwb study report --format json`` prints; a bad
arm shows the CLI's own message and Run stays disabled; a rule-only arm is estimated at 0 calls;
the JSON and the rows follow each other; a study file saved loads back; an arm's run opens in the
Quadrant."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from tests.cli.test_study_cli import base, rwb
from tests.ui.conftest import WAIT_MS
from workbench.core.project.store import Store


@pytest.fixture
def designer(tmp_path, window, qtbot, open_project):
    """The Studies panel of an open empty project, on its Design page, the base read from a file."""
    project = tmp_path / "p.rwb"
    Store.create(project).close_connection()
    open_project(project)
    dock = window.docks["studyPanel"]
    dock.show()
    dock.raise_()
    panel = window.panels["studyPanel"]
    panel.pages.setCurrentWidget(panel.design)
    (tmp_path / "base.json").write_text(json.dumps(base()))
    panel.design.load_base_file(tmp_path / "base.json")
    return project, panel, panel.design


def settled(qtbot, design) -> None:
    qtbot.waitUntil(lambda: not design.pending and design.check is not None, timeout=WAIT_MS)


def arms_cells(design, column: int) -> dict[str, str]:
    t = design.arms_table
    return {t.item(r, 0).text(): t.item(r, column).text() for r in range(t.rowCount())}


def add_theta_arm(qtbot, design, value: str = "0.67") -> None:
    """A second arm, named and changed through the form as a person does it."""
    qtbot.mouseClick(design.add_arm_button, Qt.MouseButton.LeftButton)
    design.arms_table.item(1, 0).setText("theta 0.67")
    qtbot.mouseClick(design.add_change_button, Qt.MouseButton.LeftButton)
    design.changes_table.cellWidget(0, 0).setEditText("/theta")
    design.changes_table.item(0, 1).setText(value)


def test_a_study_built_in_the_view_runs_and_its_forest_plot_is_the_reports(designer, qtbot, capsys, window,
                                                                           tmp_path):
    project, panel, design = designer
    design.replicates.setValue(3)
    add_theta_arm(qtbot, design)
    # The row made the arm's JSON (a merge patch), shown beside it.
    assert json.loads(design.json_edit.toPlainText()) == {"name": "theta 0.67", "set": {"theta": 0.67}}
    settled(qtbot, design)
    assert design.valid, design.message.text()
    # The estimate is the CLI's (rwb study run --estimate of the same document); the rule-only arm: 0 calls.
    (tmp_path / "designed.json").write_text(json.dumps(design.document()))
    code, out, err = rwb(capsys, "study", "run", str(tmp_path / "designed.json"), "--estimate")
    assert code == 0, err
    estimate = json.loads(out)
    assert arms_cells(design, 3) == {a["name"]: f"{a['calls']:,}" for a in estimate["arms"]}
    assert arms_cells(design, 3)["theta 0.67"] == "0" and estimate["arms"][0]["calls"] > 0
    assert design.check["warnings"] == estimate["warnings"]
    assert "re-classifies" in design.arms_table.item(1, 3).toolTip()
    assert design.run_button.isEnabled()
    assert any("unanimity" in w or "0.67" in w for w in design.check["warnings"])
    assert "0.67" in design.warnings.toPlainText() and "Warnings (" in design.side.tabText(1)

    with qtbot.waitSignal(window.studies.finished, timeout=WAIT_MS * 4) as signal:
        qtbot.mouseClick(design.run_button, Qt.MouseButton.LeftButton)
    summary = signal.args[0]
    assert summary["status"] == "completed" and summary["runs"] == summary["planned"] == 6
    assert arms_cells(design, 6) == {"as configured": "3 / 3", "theta 0.67": "3 / 3"}

    code, out, err = rwb(capsys, "study", "report", summary["study_id"], "--project", str(project), "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    panel.pages.setCurrentIndex(0)
    qtbot.waitUntil(lambda: panel.forest is not None and panel.view is not None
                    and panel.view["study"] == summary["study_id"] and not panel.reader.loading
                    and bool(panel.forest.rows), timeout=WAIT_MS)
    metric = panel.metric_combo.currentData()
    compared = [c for c in report["comparisons"] if c["metric"] == metric and c["arm"] == "theta 0.67"]
    assert len(compared) == 1
    (row,) = panel.forest.rows
    assert (row.arm, row.diff, row.low, row.high) == ("theta 0.67", compared[0]["diff"], *compared[0]["ci95"])

    # From the arm to its runs in the Quadrant: the window shows the Quadrant on that run.
    panel.select_arm("as configured")
    first = panel.runs_table.proxy.index(0, 2).data()
    qtbot.mouseClick(panel.quadrant_button, Qt.MouseButton.LeftButton)
    quadrant = window.panels["quadrantPanel"]
    qtbot.waitUntil(lambda: quadrant.run_combo.currentData() == first and not quadrant.reader.loading,
                    timeout=WAIT_MS)
    assert quadrant.isVisible()


def test_a_bad_arm_shows_the_clis_message_and_run_is_disabled(designer, qtbot, capsys, tmp_path):
    _project, _panel, design = designer
    add_theta_arm(qtbot, design, value="0.67")
    settled(qtbot, design)
    assert design.valid
    # A setting the base lacks: the CLI refuses it, naming the arm; the view says the same line.
    design.json_edit.setPlainText(json.dumps({"name": "theta 0.67", "set": {"thetta": 0.67}}))
    assert design.changes_table.cellWidget(0, 0).currentText() == "/thetta"  # the rows follow the JSON
    settled(qtbot, design)
    assert not design.valid and not design.run_button.isEnabled()
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(design.document()))
    code, _out, err = rwb(capsys, "study", "run", str(path), "--estimate")
    assert code == 2
    shown = design.message.text()
    assert shown.startswith("arms[1] (theta 0.67)") and shown in err
    # A value of the wrong type for the setting: refused in the form, naming the arm and the path.
    design.json_edit.setPlainText(json.dumps({"name": "theta 0.67", "set": {"theta": 0.67}}))
    design.changes_table.item(0, 1).setText("two thirds")
    settled(qtbot, design)
    assert not design.run_button.isEnabled()
    assert design.message.text().startswith("arms[1] (theta 0.67): /theta: a number expected")


def test_a_path_through_a_list_is_a_json_patch_and_a_saved_study_loads_back(designer, qtbot, tmp_path):
    _project, _panel, design = designer
    qtbot.mouseClick(design.add_arm_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(design.add_change_button, Qt.MouseButton.LeftButton)
    picker = design.changes_table.cellWidget(0, 0)
    assert picker.findText("/clusters/1/agents/0/params/stance") >= 0  # the base's settings to pick from
    picker.setEditText("clusters/1/agents/0/params/stance")
    design.changes_table.item(0, 1).setText("0.2")
    arm = json.loads(design.json_edit.toPlainText())
    assert arm["patch"] == [{"op": "replace", "path": "/clusters/1/agents/0/params/stance", "value": 0.2}]
    settled(qtbot, design)
    assert design.valid, design.message.text()
    assert int(arms_cells(design, 3)["arm 2"].replace(",", "")) > 0  # it changes a prompt: it makes calls
    path = tmp_path / "designed.json"
    assert design.save_file(path)
    design.load_file(path)
    assert design.document() == json.loads(path.read_text())
    assert [design.arms_table.item(r, 0).text() for r in range(2)] == ["as configured", "arm 2"]


def test_cancel_leaves_the_study_resumable_and_resume_finishes_it(designer, qtbot, window, capsys):
    project, panel, design = designer
    design.replicates.setValue(4)
    add_theta_arm(qtbot, design)
    settled(qtbot, design)
    with qtbot.waitSignal(window.studies.finished, timeout=WAIT_MS * 4) as signal:
        qtbot.mouseClick(design.run_button, Qt.MouseButton.LeftButton)
        assert design.cancel_button.isEnabled() and not design.run_button.isEnabled()
        qtbot.mouseClick(design.cancel_button, Qt.MouseButton.LeftButton)  # before its first result is stored
    stopped = signal.args[0]
    assert stopped["runs"] < stopped["planned"] == 8
    assert "Resume" in design.message.text()
    panel.pages.setCurrentIndex(0)
    qtbot.waitUntil(lambda: panel.view is not None and panel.view["study"] == stopped["study_id"]
                    and panel.resume_button.isEnabled(), timeout=WAIT_MS)
    with qtbot.waitSignal(window.studies.finished, timeout=WAIT_MS * 4) as signal:
        qtbot.mouseClick(panel.resume_button, Qt.MouseButton.LeftButton)
    finished = signal.args[0]
    assert finished["study_id"] == stopped["study_id"]
    assert finished["status"] == "completed" and finished["runs"] == 8
    code, out, err = rwb(capsys, "study", "report", stopped["study_id"], "--project", str(project), "--format", "json")
    assert code == 0, err
    assert all(a["runs"] == 4 for a in json.loads(out)["arms"])
    qtbot.waitUntil(lambda: not panel.resume_button.isEnabled(), timeout=WAIT_MS)
