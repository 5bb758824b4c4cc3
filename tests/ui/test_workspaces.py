"""Workspaces, the fit at 1280×720 and 150 %, a layout that never creeps, presenter mode (issue 26).

Every test drives the window as a user does: the View ▸ Workspace actions and their keys, Live
Run's Start button, F11, the presenter controls, the zoom; the fit is measured as
../shared/tools/window_fit.py measures it (tests/ui/fit_rules.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, QSize, Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QDockWidget, QLabel, QTabBar, QTabWidget, QWidget

from tests.ui import fit_rules
from tests.ui.conftest import WAIT_MS
from workbench.core.project.refs import RecordRef
from workbench.services.project_model import ProjectModel
from workbench.ui import theme
from workbench.ui.main_window import MainWindow
from workbench.ui.settings import AppSettings
from workbench.ui.workspaces import LAYOUT_VERSION, WORKSPACES, Place, home_of

REPO = Path(__file__).resolve().parents[2]
SIZE = QSize(1280, 720)  # a laptop, and what most projectors show
KEYS = ("design", "run", "results", "audit", "teach")


@pytest.fixture(scope="module")
def built_demo(tmp_path_factory):
    """The demo `rwb gui --demo` opens, with its runs, built once."""
    from workbench.core.project.demo import build_demo
    from workbench.services.runs.demo_runs import populate

    return build_demo(tmp_path_factory.mktemp("workspaces") / "demo.rwb", populate=populate)


@pytest.fixture
def demo(built_demo, tmp_path, qtbot, window, open_project):
    """The window at 1280×720 on a copy of the demo."""
    window.resize(SIZE)
    qtbot.waitUntil(lambda: window.size() == SIZE, timeout=WAIT_MS)
    path = tmp_path / "demo.rwb"
    shutil.copy(built_demo, path)
    open_project(path)
    return window


def settle(qtbot, window, quiet: int = 3) -> None:
    """Reads done, and nothing on screen moving for ``quiet`` looks 40 ms apart."""
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    last, same = None, 0

    def still() -> bool:
        nonlocal last, same
        now = [(d.objectName(), d.geometry().getRect()) for d in window.findChildren(QDockWidget) if d.isVisible()]
        now += [w.size().toTuple() for w in window.findChildren(QWidget)
                if w.isVisible() and w.inherits("GraphicsView")]
        same = same + 1 if now == last else 0
        last = now
        return same >= quiet

    qtbot.waitUntil(lambda: qtbot.wait(40) or still(), timeout=WAIT_MS)


def dock_geometries(window) -> dict[str, tuple]:
    return {n: d.geometry().getRect() for n, d in window.docks.items() if fit_rules.dock_shown(d)}


def measure_everything(qtbot, window, zoom: float) -> list[str]:
    """The workspace as arranged, then every dock behind a tab and every tab page brought
    forward in turn (as a user would see them), then what was in front again."""
    found = fit_rules.offenders(window, zoom)
    for dock in [d for d in window.docks.values() if fit_rules.dock_shown(d) and not d.isFloating()]:
        for other in window.tabifiedDockWidgets(dock):
            if other.isVisible() and not fit_rules.dock_shown(other):
                other.raise_()
                settle(qtbot, window, 2)
                found += measure_tabs(qtbot, window, other, zoom)
        dock.raise_()
    return found + measure_tabs(qtbot, window, window, zoom)


def measure_tabs(qtbot, window, scope, zoom: float) -> list[str]:
    found = fit_rules.offenders(scope, zoom)
    for tabs in [t for t in scope.findChildren(QTabWidget) if fit_rules.shown(t)]:
        current = tabs.currentIndex()
        for i in range(tabs.count()):
            if i != current and tabs.isTabVisible(i) and tabs.isTabEnabled(i):
                tabs.setCurrentIndex(i)
                settle(qtbot, window, 2)
                found += [f"{tabs.tabText(i)}: {line}" for line in fit_rules.offenders(tabs.widget(i), zoom)]
        tabs.setCurrentIndex(current)
    return found


# ----- workspaces --------------------------------------------------------------------------------
def test_five_workspaces_by_action_and_ctrl_n_each_remember_their_arrangement(qtbot, window):
    actions = window.workspaces.actions
    assert [a.objectName() for a in actions.values()] == [f"workspace_{k}" for k in KEYS]
    menu = window.menuBar().findChild(QWidget, "workspaceMenu")
    assert all(a in menu.actions() for a in actions.values())  # View ▸ Workspace
    assert all(a in window.workspaces.bar.actions() for a in actions.values())  # the bar at the window's edge
    for number, key in enumerate(KEYS, start=1):
        qtbot.keyClick(window, Qt.Key(Qt.Key.Key_0 + number), Qt.KeyboardModifier.ControlModifier)
        assert window.workspaces.current == key and actions[key].isChecked()
        shown = {n for n, d in window.docks.items() if not d.isHidden()}
        if key == "teach":
            assert len(shown) == 1  # one panel at a time
        else:
            assert shown == set(window.workspaces.workspace.panels), key

    # Results: a panel closed, another floated; Design: a panel added from the View menu.
    actions["results"].trigger()
    window.docks["driftPanel"].close()
    window.docks["findingsPanel"].setFloating(True)
    actions["design"].trigger()
    window.docks["traceInspectorPanel"].toggleViewAction().trigger()
    assert not window.docks["traceInspectorPanel"].isHidden()
    actions["results"].trigger()  # its own arrangement, as it was left
    assert window.docks["driftPanel"].isHidden() and window.docks["findingsPanel"].isFloating()
    assert window.docks["traceInspectorPanel"].isHidden()
    actions["design"].trigger()
    assert not window.docks["traceInspectorPanel"].isHidden()

    # Reset: this workspace as it came; the others keep theirs.
    window.menus.reset_layout.trigger()
    assert window.docks["traceInspectorPanel"].isHidden() and not window.docks["clustersPanel"].isHidden()
    actions["results"].trigger()
    assert window.docks["driftPanel"].isHidden()
    window.menus.reset_layout.trigger()
    assert not window.docks["driftPanel"].isHidden() and not window.docks["findingsPanel"].isFloating()
    qtbot.wait(20)  # (stray tab bars are put away once the layout is applied)
    bars = [b for b in window.findChildren(QTabBar, options=Qt.FindChildOption.FindDirectChildrenOnly)
            if b.isVisible()]
    assert [b.count() for b in bars] == [5]  # the Results group's tabs, and no stray bar


def test_each_arrangement_is_saved_across_a_restart_and_an_old_layout_is_ignored(qtbot, window):
    window.workspaces.actions["results"].trigger()
    window.docks["anchorsPanel"].close()
    window.workspaces.actions["audit"].trigger()
    window.close()

    again = MainWindow(ProjectModel(), AppSettings())
    qtbot.addWidget(again)
    again.show()
    assert again.workspaces.current == "audit" and not again.docks["traceInspectorPanel"].isHidden()
    again.workspaces.actions["results"].trigger()
    assert again.docks["anchorsPanel"].isHidden() and not again.docks["quadrantPanel"].isHidden()
    again.close()

    # A layout saved by an older version (another set of docks) is ignored: the first start's.
    settings = QSettings(str(AppSettings()._s.fileName()), QSettings.Format.IniFormat)
    settings.setValue("workspaces/version", LAYOUT_VERSION - 1)
    settings.sync()
    third = MainWindow(ProjectModel(), AppSettings())
    qtbot.addWidget(third)
    third.show()
    assert third.workspaces.current == "results" and not third.docks["anchorsPanel"].isHidden()
    third.persist_layout = False
    third.close()


def test_a_panel_joins_a_workspace_in_one_line_and_links_go_to_the_workspace_that_shows_them(
        qtbot, demo, monkeypatch):
    window = demo
    # The declaration: a panel placed beside another is laid out there on Reset.
    import workbench.ui.workspaces as ws

    design = next(w for w in WORKSPACES if w.key == "design")
    wider = ws.Workspace(design.key, design.title, design.tip,
                         (*design.places, Place("findingsPanel", beside="clustersPanel", share=0.4)))
    monkeypatch.setattr(ws, "WORKSPACES", tuple(wider if w.key == "design" else w for w in WORKSPACES))
    window.workspaces.actions["design"].trigger()
    window.reset_layout()
    settle(qtbot, window)
    clusters, findings = window.docks["clustersPanel"].geometry(), window.docks["findingsPanel"].geometry()
    assert findings.left() > clusters.right() and findings.width() >= 0.3 * window.width()

    # "Open in Trace Inspector" (here, a point of the quadrant; any link reveals through the model).
    monkeypatch.undo()
    window.workspaces.actions["results"].trigger()
    run_id = window.panels["quadrantPanel"].data.run_id
    window.model.reveal(RecordRef("run", run_id, run_id))
    assert window.workspaces.current == "audit" and home_of("traceInspectorPanel").key == "audit"
    assert fit_rules.dock_shown(window.docks["traceInspectorPanel"])
    # In Teach, a link presents its target instead.
    window.workspaces.actions["teach"].trigger()
    window.model.reveal(RecordRef("run", run_id, run_id))
    assert window.workspaces.current == "teach" and window.workspaces.presented_panel() == "traceInspectorPanel"


# ----- the fit -----------------------------------------------------------------------------------
@pytest.mark.parametrize("zoom", [1.0, 1.5])
def test_every_workspace_fits_1280x720(qtbot, demo, zoom):
    """Every list holding 8 rows shows 8 whole rows (5 at 150 %), every chart is 400×300 px
    (400×240), nothing is drawn under its minimum size; Teach, for every panel it presents."""
    window = demo
    window.set_zoom(zoom)
    found = []
    for key in KEYS:
        window.workspaces.actions[key].trigger()
        settle(qtbot, window)
        panels = window.workspaces.order if key == "teach" else [None]
        for panel in panels:
            if panel is not None:
                window.workspaces.present(panel)
                settle(qtbot, window)
            found += [f"{key} {zoom:.0%}: {line}" for line in measure_everything(qtbot, window, zoom)]
    window.set_zoom(1.0)
    assert found == []


def test_zoom_reflows_and_its_reset_says_where_it_goes(qtbot, demo):
    window = demo
    window.workspaces.actions["audit"].trigger()
    settle(qtbot, window)
    assert window.menus.zoom_reset.text().replace("&", "") == "Reset Zoom to 100%"
    window.set_zoom(1.75)
    settle(qtbot, window)
    assert window.menus.zoom_reset.text().replace("&", "") == "Reset Zoom to 100% (now 175%)"
    inspector = window.panels["traceInspectorPanel"]
    view = inspector.list.view
    # The rows grew with the type (none cut), and the list still shows its rows.
    assert view.verticalHeader().defaultSectionSize() >= view.fontMetrics().height() + 4
    assert fit_rules.whole_rows(view) >= 5
    window.menus.zoom_reset.trigger()
    assert window.zoom == 1.0


# ----- a layout that never creeps ---------------------------------------------------------------
CREEP = r"""
import json, sys, time
from pathlib import Path
from PySide6.QtCore import QSettings, Qt
from PySide6.QtTest import QTest
from workbench.ui.app import create_application
app = create_application()
QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, sys.argv[2])
from workbench.services.project_model import ProjectModel
from workbench.ui.main_window import MainWindow
from workbench.ui.settings import AppSettings

def pump(seconds, until=lambda: False):
    end = time.monotonic() + seconds
    while time.monotonic() < end and not until():
        app.processEvents(); time.sleep(0.005)
    return until()

def docks(w):
    return {n: list(d.geometry().getRect()) for n, d in w.docks.items()
            if d.isVisible() and d.geometry().right() >= 0 and d.geometry().bottom() >= 0}

def opened(w):
    w.open_path(Path(sys.argv[1]))
    assert pump(60, lambda: w.model.store is not None and w.reads_idle())
    pump(0.3)

out = {}
w = MainWindow(ProjectModel(), AppSettings()); w.showMaximized()
opened(w)
w.workspaces.actions["run"].trigger(); pump(0.3)
out["window"] = [w.width(), w.height()]
out["before"], out["bar"] = docks(w), w.statusBar().height()
panel, finished = w.panels["liveRunPanel"], []
w.runs.finished.connect(finished.append)
for i in range(20):
    assert pump(20, panel.start_button.isEnabled), f"Start stayed disabled before run {i + 1}"
    QTest.mouseClick(panel.start_button, Qt.MouseButton.LeftButton)
    assert pump(60, lambda: len(finished) > i and not w.runs.running), f"run {i + 1} did not end"
    pump(20, w.reads_idle)
pump(0.3)
out["runs"], out["notices"] = len(finished), len(w.notices.messages)
out["after"], out["bar_after"] = docks(w), w.statusBar().height()
w.notices.clear_messages(); pump(0.2)
out["dismissed"] = docks(w)
w.close(); pump(0.2)  # saves the window's geometry and every workspace's arrangement
again = MainWindow(ProjectModel(), AppSettings()); again.show()
opened(again)
out["workspace"], out["restarted"] = again.workspaces.current, docks(again)
out["maximised"] = again.isMaximized()
again.persist_layout = False; again.close()
print(json.dumps(out))
"""


def test_twenty_runs_and_a_restart_leave_every_dock_where_it_was(built_demo, tmp_path):
    """20 runs started from Live Run, each leaving its notice, on a 1280×720 screen with the
    window maximised; then a restart restoring the window's geometry and state (a process of its
    own: the test process's offscreen screen is smaller)."""
    config = tmp_path / "screen.json"
    config.write_text(json.dumps({"synchronousWindowSystemEvents": True, "windowFrameMargins": False,
                                  "screens": [{"name": "projector", "x": 0, "y": 0, "width": 1280, "height": 720,
                                               "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    path = tmp_path / "demo.rwb"
    shutil.copy(built_demo, path)
    env = {**os.environ, "QT_QPA_PLATFORM": f"offscreen:configfile={config}"}
    run = subprocess.run([sys.executable, "-c", CREEP, str(path), str(tmp_path / "settings")], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["window"] == [1280, 720] and out["runs"] == 20 and out["notices"] > 0
    before = out["before"]
    assert before and out["bar_after"] == out["bar"]
    for state in ("after", "dismissed", "restarted"):
        assert out[state].keys() == before.keys(), state
        for name, rect in before.items():
            assert all(abs(a - b) <= 2 for a, b in zip(rect, out[state][name])), (state, name, rect, out[state][name])
    assert out["workspace"] == "run" and out["maximised"]


# ----- presenter mode ----------------------------------------------------------------------------
def test_presenter_mode_shows_one_panel_in_large_type_and_high_contrast(qtbot, demo):
    window = demo
    window.workspaces.actions["results"].trigger()
    window.docks["driftPanel"].raise_()
    settle(qtbot, window)
    window.menus.presenter.trigger()  # F11: the panel in front, presented
    settle(qtbot, window)
    assert window.workspaces.current == "teach" and window.menus.presenter.isChecked()
    shown = [n for n, d in window.docks.items() if not d.isHidden()]
    assert shown == ["driftPanel"]
    dock = window.docks["driftPanel"]
    assert dock.width() >= 0.95 * window.width() and window.presenter_bar.isVisible()
    assert not window.workspaces.bar.isVisible()  # the panel has the window's width

    def smallest_type(panel) -> float:
        return min(w.font().pointSizeF() for w in [panel, *panel.findChildren(QLabel)] if w.isVisible())

    panel = window.panels["driftPanel"]
    assert smallest_type(panel) >= theme.PRESENTER_PT
    pal = window.palette()
    assert pal.color(QPalette.ColorRole.Window).name() == theme.HIGH_CONTRAST[window.theme_name]["Window"]
    for tier in theme.TIERS[window.theme_name].values():  # the tier colours hold on it
        assert theme.contrast(tier, pal.color(QPalette.ColorRole.Base).name()) >= 3.0

    # The zoom multiplies presenter mode's type, and the layout follows.
    window.set_zoom(1.5)
    settle(qtbot, window)
    assert smallest_type(panel) >= theme.PRESENTER_PT * 1.5 - 0.01
    assert fit_rules.offenders(dock, 1.5) == []
    window.set_zoom(1.0)

    # The presenter controls: next, previous, which panel, exit.
    bar = window.presenter_bar
    order = window.workspaces.order
    at = order.index("driftPanel")
    qtbot.mouseClick(bar.next_button, Qt.MouseButton.LeftButton)
    assert window.workspaces.presented_panel() == order[(at + 1) % len(order)]
    qtbot.mouseClick(bar.previous_button, Qt.MouseButton.LeftButton)
    assert window.workspaces.presented_panel() == "driftPanel"
    bar.panel_combo.activated.emit(bar.panel_combo.findData("clustersPanel"))
    assert [n for n, d in window.docks.items() if not d.isHidden()] == ["clustersPanel"]
    qtbot.mouseClick(bar.exit_button, Qt.MouseButton.LeftButton)
    assert window.workspaces.current == "results" and not window.presenting
    assert window.font().pointSizeF() < theme.PRESENTER_PT and window.workspaces.bar.isVisible()
    assert window.palette().color(QPalette.ColorRole.Window).name() == theme.PALETTES[window.theme_name]["Window"]


def test_both_themes_have_a_high_contrast_variant_that_reads_on_a_projector():
    for name in theme.PALETTES:
        colours = theme.colours_of(name, high_contrast=True)
        for text, background in theme.BODY_TEXT:
            assert theme.contrast(colours[text], colours[background]) >= theme.MIN_BODY_CONTRAST, (name, text)
        assert theme.contrast(colours["Text"], colours["Base"]) >= 15  # higher than the theme's own
        for value in theme.TIERS[name].values():
            for background in ("Window", "Base"):
                assert theme.contrast(value, colours[background]) >= 3.0, (name, value, background)
