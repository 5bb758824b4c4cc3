"""Issue 26 part B: nothing of the last project stays after File ▸ New Project; Start goes only for
a valid configuration (and says why not); an empty project opens on where to start, not on an
error; τ set in Clusters & Agents is the τ of the run Live Run starts."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QComboBox, QLabel, QLineEdit, QPlainTextEdit, QTextEdit, QWidget

from tests.ui.conftest import WAIT_MS
from tests.ui.live_run_helpers import RUN_MS, click, empty_project, panel_of, read, type_into
from workbench.core.project import _sql
from workbench.core.project.store import Store
from workbench.ui import prompts


@pytest.fixture(scope="module")
def full_demo(tmp_path_factory):
    """The demo with every sample's runs in it (RCP, ARM, CONS, findings, the Echo scenario)."""
    from workbench.core.project.demo import build_demo
    from workbench.services.runs.demo_runs import populate

    return build_demo(tmp_path_factory.mktemp("switch") / "demo.rwb", populate=populate)


def demo_words(path) -> set[str]:
    """What only the demo can have put on screen: its run ids and labels, its saved configurations'
    names, its clusters' and personas' words."""
    store = Store.open(path)
    try:
        words = {r["id"] for r in _sql.query(store, "SELECT id FROM runs")}
        words |= {r["label"] for r in _sql.query(store, "SELECT label FROM runs") if len(r["label"] or "") >= 8}
        words |= {r["name"] for r in _sql.query(store, "SELECT name FROM protocol_configs")}
        words |= {r["name"] for r in _sql.query(store, "SELECT name FROM clusters") if len(r["name"]) >= 6}
    finally:
        store.close_connection()
    return words | {"≈ 36 calls", "Restored", "Loss detected"}


def shown_texts(panel: QWidget) -> list[str]:
    """Every text the panel shows: labels, fields, combo items and every cell of its item views."""
    texts: list[str] = []
    for w in panel.findChildren(QWidget):
        if not w.isVisibleTo(panel):
            continue
        if isinstance(w, QLabel):
            texts.append(w.text())
        elif isinstance(w, QLineEdit):
            texts.append(w.text())
        elif isinstance(w, (QPlainTextEdit, QTextEdit)):
            texts.append(w.toPlainText())
        elif isinstance(w, QComboBox):
            texts += [w.itemText(i) for i in range(w.count())]
        elif isinstance(w, QAbstractItemView) and w.model() is not None:
            model = w.model()
            texts += [str(model.index(r, c).data(Qt.ItemDataRole.DisplayRole) or "")
                      for r in range(min(model.rowCount(), 200)) for c in range(model.columnCount())]
    return texts


def test_new_project_clears_every_panel(qtbot, window, tmp_path, full_demo, open_project, monkeypatch):
    open_project(full_demo)
    words = demo_words(full_demo)
    panels = window.panels
    before = {name: "\n".join(shown_texts(p)) for name, p in panels.items()}
    assert any(w in before["liveRunPanel"] for w in words)  # the demo was on screen
    live = panel_of(window)
    assert live.start_button.isEnabled() and live.estimate_label.text()

    new = tmp_path / "fresh.rwb"
    monkeypatch.setattr(prompts, "new_project_path", lambda *_a, **_k: new)
    with qtbot.waitSignal(window.model.opened, timeout=WAIT_MS):
        window.new_project()
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not live.editor.pending, timeout=WAIT_MS)

    for name, panel in panels.items():
        shown = "\n".join(shown_texts(panel))
        left = sorted(w for w in words if w in shown)
        assert not left, f"{name} still shows the last project's {left}"
    # Live Run: no estimate, no progress line, and Start off, saying why.
    assert not live.start_button.isEnabled()
    assert "No configuration yet" in live.start_button.toolTip()
    assert "No configuration yet" in live.estimate_label.text() and live.progress_label.text() == ""
    assert live.runs_table.model.rowCount() == 0 and not live.timeline.rows
    anchors = panels["anchorsPanel"]
    assert not anchors.narration.isVisible() and anchors.story() == "" and anchors.run_box.count() == 0


def test_an_empty_project_opens_on_where_to_start_and_no_error(qtbot, window, tmp_path, open_project):
    open_project(empty_project(tmp_path))
    clusters = window.panels["clustersPanel"]
    qtbot.waitUntil(lambda: clusters.view is not None, timeout=WAIT_MS)
    start = clusters.start_here
    assert "Start here" in start.text() and start.isVisibleTo(clusters)
    assert "template" in start.text() and "provider" in start.text()
    # No red: not one error in the checks, nor on screen.
    assert clusters.issues == []
    errors = [m for m in (clusters.tau_message, clusters.panel_message, clusters.message) if m.level == "error"]
    assert not errors and "error" not in clusters.status.text()
    assert not any("must not be empty" in t for t in shown_texts(clusters))
    live = panel_of(window)
    assert not live.start_button.isEnabled() and "No configuration yet" in live.editor.status.text()
    assert "must" not in live.editor.status.text()


def test_start_is_disabled_until_the_configuration_is_valid(qtbot, window, tmp_path, open_project):
    from tests.ui.live_run_helpers import template

    open_project(empty_project(tmp_path))
    live = panel_of(window)
    assert not live.start_button.isEnabled()
    from tests.ui.live_run_helpers import put

    doc = template("rcp-advocate-critic")
    put(qtbot, live, doc)
    assert live.start_button.isEnabled() and live.start_button.toolTip().startswith("Start")
    type_into(qtbot, live.editor.fields[("tau",)], "0.4")
    qtbot.waitUntil(lambda: live.editor.check is not None and not live.editor.check.ok and not live.editor.pending,
                    timeout=WAIT_MS)
    assert not live.start_button.isEnabled()
    assert "tau: must be greater than 0.5" in live.start_button.toolTip()
    assert "not valid yet" in live.estimate_label.toolTip()
    type_into(qtbot, live.editor.fields[("tau",)], "0.7")
    qtbot.waitUntil(live.start_button.isEnabled, timeout=WAIT_MS)


def test_tau_set_in_clusters_and_agents_reaches_the_run_live_run_starts(qtbot, window, tmp_path, open_project):
    from tests.services.test_run_service import demo_project

    path = demo_project(tmp_path)
    open_project(path)
    live = panel_of(window)
    qtbot.waitUntil(lambda: live.editor.valid, timeout=WAIT_MS)
    assert live.editor.document()["tau"] == 0.6 and not live.editor.fields[("tau",)].isEnabled()
    assert "the project's" in live.editor.settings_note.text()
    clusters = window.panels["clustersPanel"]
    clusters.tabs.setCurrentIndex(0)
    type_into(qtbot, clusters.tau, "0.7")
    clusters.tau.editingFinished.emit()
    qtbot.waitUntil(lambda: read(path, "SELECT value_json FROM settings WHERE key = 'rcp.tau'")
                    == [{"value_json": 0.7}], timeout=WAIT_MS)
    # Live Run follows at once: its form shows 0.7, and the run it starts uses it.
    qtbot.waitUntil(lambda: live.editor.document().get("tau") == 0.7 and live.editor.valid, timeout=WAIT_MS)
    assert live.editor.fields[("tau",)].value() == 0.7 and "τ 0.7" in live.editor.settings_note.text()
    assert live.config_combo.currentText() == "Resonant consensus: downtown cars (RCP)"  # not "(unsaved)"
    with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as finished:
        click(qtbot, live.start_button)
    [run] = read(path, "SELECT config_json FROM runs WHERE id = ?", (finished.args[0]["run_id"],))
    config = run["config_json"] if isinstance(run["config_json"], dict) else json.loads(run["config_json"])
    assert config["tau"] == 0.7
    # The project's θ is in sight, and a cluster without its own reads it.
    assert clusters.theta.text() == "0.5"
    thetas = [clusters.clusters.model.row(r)["theta"] for r in range(clusters.clusters.model.rowCount())]
    assert all(t == "0.5 (project)" or isinstance(t, float) for t in thetas) and "global" not in thetas
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)


def test_a_file_that_sets_its_own_tau_wins_and_says_so(qtbot, window, tmp_path, open_project):
    from tests.services.test_run_service import demo_project
    from tests.ui.live_run_helpers import put, template

    open_project(demo_project(tmp_path))
    live = panel_of(window)
    qtbot.waitUntil(lambda: live.editor.valid, timeout=WAIT_MS)
    put(qtbot, live, {**template("rcp-advocate-critic"), "tau": 0.8})
    assert live.editor.document()["tau"] == 0.8 and live.editor.fields[("tau",)].isEnabled()
    note = live.editor.settings_note.text()
    assert "sets its own τ 0.8" in note and "its values win" in note


def test_the_projects_theta_is_set_beside_tau_refused_inline_when_wrong(qtbot, window, tmp_path, open_project):
    from tests.services.test_run_service import demo_project

    path = demo_project(tmp_path)
    open_project(path)
    clusters = window.panels["clustersPanel"]
    live = panel_of(window)
    qtbot.waitUntil(lambda: clusters.view is not None and live.editor.valid, timeout=WAIT_MS)
    for bad, said in (("abc", "θ: not a number"), ("0", "θ must be greater than 0"), ("1.5", "got 1.5")):
        type_into(qtbot, clusters.theta, bad)
        clusters.theta.editingFinished.emit()
        assert said in clusters.tau_message.text() and clusters.tau_message.level == "error"
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    assert read(path, "SELECT value_json FROM settings WHERE key = 'rcp.theta'") == []  # nothing written
    type_into(qtbot, clusters.theta, "0.55")
    clusters.theta.editingFinished.emit()
    qtbot.waitUntil(lambda: read(path, "SELECT value_json FROM settings WHERE key = 'rcp.theta'")
                    == [{"value_json": 0.55}], timeout=WAIT_MS)
    assert not clusters.tau_message.isVisibleTo(clusters)
    qtbot.waitUntil(lambda: live.editor.document().get("theta") == 0.55, timeout=WAIT_MS)
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
