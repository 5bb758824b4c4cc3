"""The Quadrant panel: points at the engine's rates, regions labelled by the engine's tier, a live
what-if with no model call, click to reveal, saved variants, unclassified artifacts listed apart,
the ratio chart for n > 2, exports, and live updates while a run writes."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from PySide6.QtCore import Qt

from tests.core.test_quadrant_reads import rcp_config, run_config, three_clusters, weighted_3_to_1
from tests.ui.conftest import WAIT_MS
from workbench.core.project import _sql
from workbench.core.project.refs import RecordRef
from workbench.core.project.store import Store

TIERS = ("positive_consensus", "positive_polar", "negative_polar", "negative_consensus")


def project(tmp_path, *configs) -> tuple:
    path = tmp_path / "q.rwb"
    store = Store.create(path)
    ids = [run_config(store, data) for data in configs]
    states = {}
    for run_id in ids:
        for rnd in _sql.get(store, "runs", run_id)["summary_json"]["rounds"]:
            states.update({s["artifact"]: s for s in rnd["states"]})
    store.close_connection()
    return path, ids, states


def quadrant(window, qtbot, n_points: int | None = None):
    dock = window.docks["quadrantPanel"]
    dock.show()
    dock.raise_()
    panel = window.panels["quadrantPanel"]

    def drawn() -> bool:
        plot = panel._plot()
        return plot is not None and (n_points is None or len(plot.points) == n_points)

    qtbot.waitUntil(drawn, timeout=WAIT_MS)
    return panel, panel._plot()


def llm_calls(path) -> int:
    store = Store.open(path)
    try:
        return _sql.count(store, "llm_calls")
    finally:
        store.close_connection()


def test_points_sit_at_the_engines_cluster_rates(qtbot, window, tmp_path, open_project):
    from workbench.ui.plots.quadrant_plot import JITTER

    path, (run_id,), states = project(tmp_path, rcp_config())
    open_project(path)
    panel, plot = quadrant(window, qtbot, 6)
    assert type(plot).__name__ == "QuadrantPlot"
    keys = [panel.data.keys[row] for row in plot.points.rows]
    assert sorted(keys) == sorted(states)
    x = np.array([states[k]["cluster_rates"]["advocate"] for k in keys])  # the reference cluster
    y = np.array([states[k]["cluster_rates"]["critic"] for k in keys])
    assert np.array_equal(plot.points.x, x) and np.array_equal(plot.points.y, y)
    assert [TIERS[t] for t in plot.points.tier] == [states[k]["tier"] for k in keys]
    # drawn within the jitter of their rates, and every scatter item holds exactly those points
    assert np.all(np.hypot(plot.drawn_x - x, plot.drawn_y - y) <= JITTER + 1e-9)
    items = [item.getData() for item in plot._items.values()]
    drawn = sorted(zip(np.concatenate([d[0] for d in items]), np.concatenate([d[1] for d in items])))
    assert drawn == sorted(zip(plot.drawn_x, plot.drawn_y))
    kinds = {states[k]["persuasion_kind"] for k in keys}
    assert {(None, "accelerator", "mitigator")[v] for v in plot.points.kind} == kinds
    # size by the number of votes cast; hover text names the artifact and its tier
    assert plot.points.size.min() > 0
    text = panel._describe(int(plot.points.rows[0]))
    assert keys[0] in text and "score" in text


def test_weights_move_the_regions_and_tau_changes_tiers_without_a_model_call(qtbot, window, tmp_path,
                                                                             open_project):
    path, (run_id,), states = project(tmp_path, weighted_3_to_1())
    open_project(path)
    panel, plot = quadrant(window, qtbot, 6)
    regions = {r["rect"][0] >= 0.5 - 1e-9 and r["rect"][1] < 0.5: r for r in plot.regions}
    bottom_right = regions[True]  # advocate (C+) approves, critic does not
    assert bottom_right["tier"] == "positive_consensus" and "positive consensus" in bottom_right["text"]
    ref_only = [k for k in range(panel.data.m)
                if panel.result.approve[k, 0] and not panel.result.approve[k, 1]]
    assert ref_only, "the sample run has artifacts only the advocates approve"
    assert all(TIERS[panel.result.tier[k]] == "positive_consensus" for k in ref_only)
    calls = llm_calls(path)

    panel.whatif.tau_slider.setValue(80)  # as a user drags it: re-classified after the throttle
    qtbot.waitUntil(lambda: panel.settings.tau == 0.8, timeout=WAIT_MS)
    assert all(TIERS[panel.result.tier[k]] == "positive_polar" for k in ref_only)
    assert all(TIERS[panel.baseline.tier[k]] == "positive_consensus" for k in ref_only)  # the run's own
    # the side list says which changed, from which tier to which
    # (with tau 0.8 a critics-only artifact, rho 0.25, also leaves negative consensus for the polar band)
    moved = {panel.data.keys[k]: (TIERS[panel.baseline.tier[k]], TIERS[panel.result.tier[k]])
             for k in range(panel.data.m) if panel.baseline.tier[k] != panel.result.tier[k]}
    assert {panel.data.keys[k] for k in ref_only} <= set(moved)
    rows = [panel.changes_table.model.row(i) for i in range(panel.changes_table.model.rowCount())]
    assert sorted(r["key"] for r in rows) == sorted(moved)
    short = {"positive_consensus": "pos. consensus", "positive_polar": "pos. polar", "negative_polar": "neg. polar",
             "negative_consensus": "neg. consensus"}
    for r in rows:
        was, now = moved[r["key"]]
        assert short[was] in r["from"] and short[now] in r["to"]
    assert panel.tabs.tabText(0) == f"Tier changes ({len(moved)})"
    # the chart: those points changed style and are ringed; the region is relabelled
    changed = {panel.data.keys[int(plot.points.rows[i])] for i in np.nonzero(plot.points.changed)[0]}
    assert changed == set(moved)
    assert len(plot._rings.getData()[0]) == len(moved)
    regions = {r["rect"][0] >= 0.5 - 1e-9 and r["rect"][1] < 0.5: r for r in plot.regions}
    assert regions[True]["tier"] == "positive_polar"
    assert llm_calls(path) == calls  # no model was called

    panel.whatif.reset_button.click()
    assert panel.settings == panel.data.settings and panel.changes_table.model.rowCount() == 0


def test_clicking_a_point_reveals_the_artifact(qtbot, window, tmp_path, open_project):
    path, (run_id,), _states = project(tmp_path, rcp_config())
    open_project(path)
    panel, plot = quadrant(window, qtbot, 6)
    from PySide6.QtWidgets import QApplication

    for k in range(len(plot.points)):
        row = int(plot.points.rows[k])
        qtbot.wait(QApplication.doubleClickInterval() + 50)  # each click on its own, not a double click
        with qtbot.waitSignal(window.model.reveal_requested, timeout=WAIT_MS) as blocker:
            qtbot.mouseClick(plot.viewport(), Qt.MouseButton.LeftButton, pos=plot.view_pos(k))
        assert blocker.args == [RecordRef("artifact", int(panel.data.artifact_ids[row]), run_id)]

    # The last one clicked is open in the Trace Inspector (raised over the Quadrant): the call that
    # wrote the artifact, selected in the list, its reply (the artifact's text) in the detail.
    inspector = window.panels["traceInspectorPanel"]
    store = Store.open(path)
    try:
        call_id, text = _sql.tuples(store, "SELECT call_id, content FROM artifacts WHERE id = ?",
                                    (int(panel.data.artifact_ids[row]),))[0]
    finally:
        store.close_connection()
    qtbot.waitUntil(lambda: inspector.detail.detail is not None
                    and (inspector.detail.detail.kind, inspector.detail.detail.id) == ("call", call_id),
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: [(inspector.list.model.row(i.row())["_kind"], inspector.list.model.row(i.row())["id"])
                             for i in inspector.list.view.selectionModel().selectedRows()] == [("call", call_id)],
                    timeout=WAIT_MS)
    assert inspector.isVisible()
    assert text.split(".")[0] in inspector.detail.call_view.reply.toPlainText()


def test_save_as_new_classification_stores_a_variant_and_leaves_the_run(qtbot, window, tmp_path, open_project,
                                                                       monkeypatch):
    from workbench.ui import prompts

    path, (run_id,), _states = project(tmp_path, weighted_3_to_1())
    store = Store.open(path)
    before = (_sql.get(store, "runs", run_id), _sql.rows(store, "votes", "run_id = ?", (run_id,)),
              _sql.rows(store, "artifacts", "run_id = ?", (run_id,)))
    store.close_connection()
    open_project(path)
    panel, plot = quadrant(window, qtbot, 6)
    monkeypatch.setattr(prompts, "variant_label", lambda parent, suggested: "strict tau")
    panel.set_whatif(tau=0.8)
    expected = {panel.data.keys[k]: TIERS[panel.result.tier[k]] for k in range(panel.data.m)}
    panel.whatif.save_button.click()

    def saved() -> list:
        s = Store.open(path)
        try:
            return _sql.rows(s, "classification_variants")
        finally:
            s.close_connection()

    qtbot.waitUntil(lambda: len(saved()) == 1, timeout=WAIT_MS)
    row = saved()[0]
    assert (row["run_id"], row["round"], row["label"]) == (run_id, 1, "strict tau")
    assert row["settings_json"]["tau"] == 0.8 and row["settings_json"]["weights"] == {"advocate": 3.0, "critic": 1.0}
    assert {s["artifact"]: s["tier"] for s in row["states_json"]} == expected
    store = Store.open(path)
    after = (_sql.get(store, "runs", run_id), _sql.rows(store, "votes", "run_id = ?", (run_id,)),
             _sql.rows(store, "artifacts", "run_id = ?", (run_id,)))
    store.close_connection()
    assert after == before
    qtbot.waitUntil(lambda: panel.variants_table.model.rowCount() == 1, timeout=WAIT_MS)


def test_unclassified_artifacts_are_listed_with_why_and_never_drawn(qtbot, window, tmp_path, open_project):
    data = rcp_config()
    for cluster in data["clusters"]:
        for agent in cluster["agents"]:
            if agent["id"] != "a1":
                agent.setdefault("params", {})["malformed_rate"] = 1.0  # only a1's votes can be read
    path, _ids, _states = project(tmp_path, data)
    open_project(path)
    panel, plot = quadrant(window, qtbot)
    cast = panel.result.votes_cast
    assert (cast == 0).sum() == 1  # a1's own artifact: a1 never votes on it
    assert len(plot.points) == 5 and all(panel.data.authors[int(r)] != "a1" for r in plot.points.rows)
    table = panel.unclassified_table.model
    assert table.rowCount() == 1
    assert table.row(0)["author"] == "a1" and table.row(0)["why"] == "no vote cast: 5 unreadable replies"
    assert panel.tabs.tabText(1) == "Unclassified (1)"
    # a1's votes are the only ones, so one of the two rates is null on every other artifact: hollow, on the edge
    assert np.isnan(plot.points.y).all() or np.isnan(plot.points.x).any()
    # The run ended degraded: the panel says so above the chart, with the share missing.
    assert "degraded run:" in panel.info.text() and "of the expected votes are missing" in panel.info.text()


def test_more_than_two_clusters_get_the_resonance_ratio_chart(qtbot, window, tmp_path, open_project):
    path, (run_id,), states = project(tmp_path, three_clusters())
    open_project(path)
    panel, plot = quadrant(window, qtbot, 9)
    assert type(plot).__name__ == "RatioPlot"
    keys = [panel.data.keys[row] for row in plot.points.rows]
    assert np.allclose(plot.points.x, [states[k]["resonance_ratio"] for k in keys], atol=0)
    assert [TIERS[t] for t in plot.points.tier] == [states[k]["tier"] for k in keys]
    upper = plot.points.y >= 0.6 - 1e-9  # the lane of artifacts the reference cluster approved
    assert list(upper) == ["advocate" in states[k]["approval_set"] for k in keys]
    assert plot.low_line.value() == pytest.approx(0.4) and plot.high_line.value() == pytest.approx(0.6)
    tiers = {r["tier"] for r in plot.regions}
    assert tiers == set(TIERS)
    panel.set_whatif(weights=(2.0, 1.0, 1.0))  # weighted clusters: said on the axis
    assert "weighted resonance ratio" in plot.getPlotItem().getAxis("bottom").labelText


def test_every_chart_exports_png_svg_and_csv(qtbot, window, tmp_path, open_project, monkeypatch):
    from workbench.ui import prompts

    path, _ids, _states = project(tmp_path, rcp_config())
    open_project(path)
    panel, plot = quadrant(window, qtbot, 6)
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(prompts, "export_path", lambda parent, kind, start_dir="", name="": out / f"{name}.{kind}")
    for kind in ("png", "svg", "csv"):
        panel.export_button.export_actions[kind].trigger()
    files = {p.suffix: p for p in out.iterdir()}
    assert files[".png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in files[".svg"].read_text()
    lines = files[".csv"].read_text().splitlines()
    assert lines[0].startswith("artifact_id,key,round,author,author_cluster,rate_advocate,rate_critic")
    assert len(lines) == 1 + 6


def test_the_quadrant_follows_a_run_as_it_writes(qtbot, window, tmp_path, open_project):
    path = tmp_path / "live.rwb"
    Store.create(path).close_connection()
    open_project(path)
    panel = window.panels["quadrantPanel"]
    window.docks["quadrantPanel"].raise_()
    errors: list[BaseException] = []

    def run_elsewhere() -> None:  # another writer: the window sees it through its watcher
        store = Store.open(path)
        try:
            run_config(store, rcp_config(refinement_rounds=1))
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)
        finally:
            store.close_connection()

    thread = threading.Thread(target=run_elsewhere)
    thread.start()
    try:
        qtbot.waitUntil(lambda: panel._plot() is not None and len(panel._plot().points) == 12, timeout=WAIT_MS * 3)
    finally:
        thread.join(timeout=60)
    assert not errors
    assert panel.data.round_numbers == [1, 2]
    assert len(panel._plot().points.arrows) == 6  # each agent's move from round 1 to round 2
