"""The study view (issue 29): a user sees the numbers ``rwb study report --format json`` prints (the
arms' estimates and CIs, the comparisons, the forest plot's differences and intervals, the
warnings), the view is read again only when studies or their results change, and an arm's run
opens in the Trace Inspector."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from tests.cli.test_study_cli import rwb, write_study
from tests.ui.conftest import WAIT_MS
from workbench.core.project.changes import Changes
from workbench.ui.panels.study_panel import interval, number


@pytest.fixture
def studied(tmp_path, capsys):
    """A project holding one three-arm study (a rule-only arm among them), and its report as the
    CLI prints it."""
    project = tmp_path / "p.rwb"
    code, out, err = rwb(capsys, "study", "run", str(write_study(tmp_path)), "--project", str(project), "--quiet")
    assert code == 0, err
    study_id = out.strip().splitlines()[0]
    code, out, err = rwb(capsys, "study", "report", study_id, "--project", str(project), "--format", "json")
    assert code == 0, err
    return project, study_id, json.loads(out)


def study_panel(window, qtbot):
    dock = window.docks["studyPanel"]
    dock.show()
    dock.raise_()
    panel = window.panels["studyPanel"]
    qtbot.waitUntil(lambda: panel.forest is not None and panel.view is not None and not panel.reader.loading,
                    timeout=WAIT_MS)
    return panel


def table(records) -> dict[str, dict]:
    """The arms table as a user reads it: each row's cells as shown, by arm."""
    proxy, out = records.proxy, {}
    headers = [proxy.headerData(c, Qt.Orientation.Horizontal) for c in range(proxy.columnCount())]
    for r in range(proxy.rowCount()):
        cells = {h: proxy.index(r, c).data() for c, h in enumerate(headers)}
        out[cells["Arm"]] = cells
    return out


def test_the_view_shows_the_numbers_the_cli_prints(window, qtbot, open_project, studied):
    project, _study_id, report = studied
    open_project(project)
    panel = study_panel(window, qtbot)
    metric = panel.metric_combo.currentData()
    assert metric == report["comparisons"][0]["metric"] == "positive_consensus_share"
    shown = table(panel.arms_table)
    assert list(shown) == [a["name"] for a in report["arms"]]
    for arm in report["arms"]:
        m = arm["metrics"][metric]
        assert shown[arm["name"]]["Mean"] == number(m["mean"]) and shown[arm["name"]]["95% CI"] == interval(m["ci95"])
        assert shown[arm["name"]]["n"] == str(m["n"]) and shown[arm["name"]]["Runs"] == str(arm["runs"])
    compared = [c for c in report["comparisons"] if c["metric"] == metric]
    assert len(compared) == 2
    for c in compared:
        row = shown[c["arm"]]
        assert (row["Diff vs baseline"], row["Diff 95% CI"], row["p"], row["p (Holm)"], row["Pairs"]) == (
            number(c["diff"]), interval(c["ci95"]), number(c["p"]), number(c["p_holm"]), str(c["pairs"]))
    # The forest plot draws each arm's difference and its interval exactly as the report gives them.
    drawn = {r.arm: (r.diff, r.low, r.high) for r in panel.forest.rows}
    assert drawn == {c["arm"]: (c["diff"], *c["ci95"]) for c in compared}
    xs, _ys = panel.forest.points.getData()
    assert sorted(xs.tolist()) == sorted(c["diff"] for c in compared)
    bars = panel.forest.bars.opts  # each interval's bar runs from its low end to its high end
    ends = sorted(v for pair in zip((bars["x"] - bars["left"]).tolist(), (bars["x"] + bars["right"]).tolist())
                  for v in pair)
    assert ends == pytest.approx(sorted(v for c in compared for v in c["ci95"]))
    assert shown["theta 0.67"]["Calls"] == "0" and int(shown["theta 0.67"]["Reused"]) > 0
    # Another metric: the table and the plot follow it.
    other = panel.metric_combo.findData("unclassified_share")
    panel.metric_combo.setCurrentIndex(other)
    panel.metric_combo.activated.emit(other)
    again = {c["arm"]: c["diff"] for c in report["comparisons"] if c["metric"] == "unclassified_share"}
    assert {r.arm: r.diff for r in panel.forest.rows} == again
    # The warnings, every one the CLI prints, and their count on the status line.
    assert report["warnings"], "the 0.67 arm is unanimity with three voters: a guardrail says so"
    text = panel.warnings.text()
    assert all(w.replace("'", "&#x27;").replace('"', "&quot;")[:60] in text for w in report["warnings"])
    assert f"{len(report['warnings'])} warning" in panel.status.text()


def test_it_reads_again_only_when_studies_or_their_results_change(window, qtbot, open_project, studied):
    project, _study_id, _report = studied
    open_project(project)
    panel = study_panel(window, qtbot)
    count = panel.refresh_count
    window.model._announce(Changes.of("votes"))
    window.model._announce(Changes.of("runs"))
    qtbot.wait(50)
    assert not panel.reader.loading and panel.refresh_count == count
    window.model._announce(Changes.of("study_results"))
    qtbot.waitUntil(lambda: panel.refresh_count == count + 1, timeout=WAIT_MS)


def test_an_arms_run_opens_in_the_trace_inspector(window, qtbot, open_project, studied):
    project, _study_id, _report = studied
    open_project(project)
    panel = study_panel(window, qtbot)
    panel.select_arm("theta 0.67")
    runs = panel.runs_table
    assert runs.proxy.rowCount() == 3
    assert {runs.proxy.index(r, 4).data() for r in range(3)} == {"re-classified (no call)"}
    first = runs.proxy.index(0, 2).data()
    with qtbot.waitSignal(window.model.reveal_requested, timeout=WAIT_MS) as signal:
        panel.open_button.click()
    assert signal.args[0].kind == "run" and signal.args[0].id == first
    qtbot.waitUntil(lambda: window.workspaces.current == "audit", timeout=WAIT_MS)
