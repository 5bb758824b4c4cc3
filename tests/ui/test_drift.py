"""The Drift & Convergence panel: a corpus trace's stored confidences on the slope chart, gate
markers, convergence against the shared-prior line, a sim batch with known contamination (grouped
means with deterministic bootstrap intervals, the ROC and its AUC checked by hand against the
stored values), exports, and live updates while an ARM run writes."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from tests.core.test_quadrant_reads import GATE_FILE, SAMPLES, make_contamination_batch, run_config
from tests.ui.conftest import WAIT_MS
from workbench.core.project import _sql
from workbench.core.project.arm_import import import_arm_file
from workbench.core.project.store import Store


def drift_panel(window, qtbot, mode: str = "run"):
    dock = window.docks["driftPanel"]
    dock.show()
    dock.raise_()
    panel = window.panels["driftPanel"]
    if mode != panel.mode:
        panel.set_mode(mode)
    figure = (lambda: panel.run_figure) if mode == "run" else (lambda: panel.batch_figure)
    qtbot.waitUntil(lambda: figure() is not None and not panel.reader.loading, timeout=WAIT_MS)
    return panel


def imported(tmp_path, corpus_dir, name: str) -> tuple[Path, str, dict]:
    path = tmp_path / "d.rwb"
    store = Store.create(path)
    source = corpus_dir / "traces" / name
    run_id = import_arm_file(store, source).run_id
    store.close_connection()
    return path, run_id, json.loads(source.read_text())


def test_the_slope_chart_shows_a_corpus_traces_stored_confidences(qtbot, window, tmp_path, open_project,
                                                                  corpus_dir):
    path, run_id, source = imported(tmp_path, corpus_dir, GATE_FILE)
    open_project(path)
    panel = drift_panel(window, qtbot)
    figure = panel.run_figure
    assert panel.run.run_id == run_id
    for role in ("alpha", "beta", "gamma"):
        stored = (source["r1"][role]["confidence"], source["r2"][role]["confidence"])
        assert figure.slope.data[role] == stored
        xs, ys = figure.slope.lines[role].getData()
        assert list(ys) == list(stored)  # drawn where the file says
    silent = source["r1"]["silent"]["confidence"]
    assert list(figure.slope.silent.getData()[1]) == [silent]
    # gamma's drift is against the silent baseline; alpha's against its own round 1
    assert figure.delta.deltas["gamma"] == source["r2"]["gamma"]["confidence"] - silent
    assert figure.delta.deltas["alpha"] == source["r2"]["alpha"]["confidence"] - source["r1"]["alpha"]["confidence"]
    # the +0.04 bands start at each agent's reference
    x0 = figure.slope.bands.opts["y0"]
    assert sorted(x0) == sorted([source["r1"]["alpha"]["confidence"], source["r1"]["beta"]["confidence"], silent])
    # the polarity gate fired in this file: marked on gamma and said in words
    assert "polarity gate" in figure.slope.labels["gamma"].toHtml()
    assert "polarity gate fired" in panel.run_info.text()
    # convergence: the file's own Jaccard, against the 0.40 shared-prior line
    assert figure.convergence.values["jaccard"] == source["convergence"]
    assert "shared priors" in panel.run_info.text()


def test_clicking_a_slope_point_opens_its_trace_in_the_trace_inspector(qtbot, window, tmp_path, open_project,
                                                                      corpus_dir):
    from PySide6.QtCore import Qt

    from workbench.core.project.refs import RecordRef

    path, run_id, source = imported(tmp_path, corpus_dir, GATE_FILE)
    open_project(path)
    panel = drift_panel(window, qtbot)
    figure = panel.run_figure
    qtbot.waitUntil(lambda: figure.isVisible() and figure.width() > 200, timeout=WAIT_MS)
    x, y, trace_id, words = next(p for p in figure.slope.points if p[3].startswith("γ round 2"))
    scene = figure.slope.plot.getViewBox().mapViewToScene(pg_point(x, y))
    with qtbot.waitSignal(window.model.reveal_requested, timeout=WAIT_MS) as blocker:
        qtbot.mouseClick(figure.viewport(), Qt.MouseButton.LeftButton, pos=figure.mapFromScene(scene))
    assert blocker.args == [RecordRef("trace", trace_id, run_id)]
    inspector = window.panels["traceInspectorPanel"]
    qtbot.waitUntil(lambda: inspector.detail.detail is not None and inspector.detail.detail.id == trace_id,
                    timeout=WAIT_MS)
    assert inspector.detail.detail.record["role"] == "gamma" and inspector.detail.detail.record["round_no"] == 2
    assert inspector.detail.claim.text() == source["r2"]["gamma"]["claim"]
    assert inspector.isVisible()
    # the run as a whole: the list narrows to it
    window.docks["driftPanel"].raise_()
    with qtbot.waitSignal(window.model.reveal_requested, timeout=WAIT_MS) as blocker:
        panel.open_button.click()
    assert blocker.args == [RecordRef("run", run_id)]
    qtbot.waitUntil(lambda: inspector.filters.run == run_id, timeout=WAIT_MS)


def pg_point(x: float, y: float):
    from PySide6.QtCore import QPointF

    return QPointF(x, y)


def test_fap_is_marked_on_the_agent_it_fired_on(qtbot, window, tmp_path, open_project, corpus_dir):
    path, _run_id, source = imported(tmp_path, corpus_dir, "arm-v071-run-FAP-test-007.json")
    open_project(path)
    panel = drift_panel(window, qtbot)
    assert source["r2"]["beta"]["drift_score"]["confidence_delta"] > 0.04
    assert "FAP" in panel.run_figure.slope.labels["beta"].toHtml()
    assert "FAP" not in panel.run_figure.slope.labels["alpha"].toHtml()
    assert "FAP fired" in panel.run_info.text()


def hand_auc(store: Store, run_ids: list[str]) -> tuple[float, float]:
    """The AUC of mean alpha/beta drift and of Jaccard, from the stored values, by counting pairs."""
    scores, jaccard, labels = [], [], []
    for run_id in run_ids:
        rows = _sql.query(store, "SELECT round_no, role, confidence, ok FROM traces WHERE run_id = ? AND is_current = 1",
                          (run_id,))
        conf = {(r["round_no"], r["role"]): r["confidence"] for r in rows if r["ok"]}
        deltas = [conf[(2, role)] - conf[(1, role)] for role in ("alpha", "beta")]
        scores.append(sum(deltas) / 2)
        run = _sql.get(store, "runs", run_id)
        jaccard.append(run["provenance_json"]["upstream"]["convergence"])
        agents = run["config_json"]["clusters"][0]["agents"]
        labels.append(any(a["params"].get("contaminated") for a in agents))

    def mann_whitney(values):
        pos = [v for v, y in zip(values, labels) if y]
        neg = [v for v, y in zip(values, labels) if not y]
        return sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg) / (len(pos) * len(neg))

    return mann_whitney(scores), mann_whitney(jaccard)


def test_a_batch_with_known_contamination_has_its_auc_and_deterministic_intervals(qtbot, window, tmp_path,
                                                                                  open_project):
    from workbench.core import stats
    from workbench.ui.panels.drift_panel import BOOT_SEED

    path = tmp_path / "batch.rwb"
    store = Store.create(path)
    ids = make_contamination_batch(store, runs=8)
    drift_auc, jaccard_auc = hand_auc(store, ids)
    store.close_connection()
    open_project(path)
    panel = drift_panel(window, qtbot, "batch")
    assert [r.run_id for r in panel.batch.runs] == ids
    assert panel.rocs["drift"].auc == pytest.approx(drift_auc, abs=1e-12)
    assert panel.rocs["jaccard"].auc == pytest.approx(jaccard_auc, abs=1e-12)
    assert panel.batch_figure.roc.aucs["drift"] == pytest.approx(drift_auc, abs=1e-12)
    assert (panel.rocs["drift"].n_pos, panel.rocs["drift"].n_neg) == (4, 4)
    xs, ys = panel.batch_figure.roc.curves["drift"].getData()
    assert list(xs) == panel.rocs["drift"].fpr and list(ys) == panel.rocs["drift"].tpr

    # grouped means with 95% bootstrap intervals, the same on every draw
    panel.group_combo.setCurrentIndex(panel.group_combo.findData("contamination"))
    panel._draw_batch()
    table = panel.means_table.model
    first = [table.row(i) for i in range(table.rowCount())]
    assert [r["group"] for r in first] == ["contaminated", "clean"]
    panel._draw_batch()
    assert [table.row(i) for i in range(table.rowCount())] == first
    deltas = {"contaminated": [], "clean": []}
    for run in panel.batch.runs:
        deltas["contaminated" if run.contaminated else "clean"] += [a.delta for a in run.agents.values()]
    expected = stats.grouped_means(deltas, seed=BOOT_SEED)
    assert [r["ci"] for r in first] == [f"[{s.low:+.4f}, {s.high:+.4f}]" for s in expected]
    assert "Replicate-to-replicate spread" in panel.spread_label.text()
    # by role: one group per role
    panel.group_combo.setCurrentIndex(panel.group_combo.findData("role"))
    panel._draw_batch()
    assert sorted(table.row(i)["group"] for i in range(table.rowCount())) == ["alpha", "beta", "gamma"]


def test_drift_charts_export_png_svg_and_csv(qtbot, window, tmp_path, open_project, corpus_dir, monkeypatch):
    from workbench.ui import prompts

    path, run_id, _source = imported(tmp_path, corpus_dir, GATE_FILE)
    open_project(path)
    panel = drift_panel(window, qtbot)
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(prompts, "export_path", lambda parent, kind, start_dir="", name="": out / f"{name}.{kind}")
    for kind in ("png", "svg", "csv"):
        panel.export_button.export_actions[kind].trigger()
    files = {p.suffix: p for p in out.iterdir()}
    assert files[".png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in files[".svg"].read_text()
    lines = files[".csv"].read_text().splitlines()
    assert lines[0].startswith("run_id,label,question,mix,replicate,contaminated,role,cr1,cr2")
    assert len(lines) == 1 + 3 and all(line.startswith(run_id) for line in lines[1:])


def test_the_drift_panel_follows_an_arm_run_as_it_writes(qtbot, window, tmp_path, open_project):
    path = tmp_path / "live.rwb"
    Store.create(path).close_connection()
    open_project(path)
    panel = window.panels["driftPanel"]
    window.docks["driftPanel"].raise_()
    errors: list[BaseException] = []

    def run_elsewhere() -> None:
        store = Store.open(path)
        try:
            run_config(store, json.loads((SAMPLES / "arm-sim.json").read_text()))
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)
        finally:
            store.close_connection()

    thread = threading.Thread(target=run_elsewhere)
    thread.start()
    try:
        qtbot.waitUntil(lambda: panel.run is not None and panel.run.status == "completed"
                        and panel.run_figure is not None, timeout=WAIT_MS * 3)
    finally:
        thread.join(timeout=60)
    assert not errors
    assert set(panel.run_figure.slope.data) == {"alpha", "beta", "gamma"}
    assert all(cr2 is not None for _cr1, cr2 in panel.run_figure.slope.data.values())
    assert panel.run.convergence["jaccard"].source == "stored"
