"""Start the GUI: one QApplication, one ProjectModel, one MainWindow."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication

from workbench.core.paths import APPLICATION, ORGANIZATION
from workbench.services.project_model import ProjectModel
from workbench.ui import theme, wheel_guard
from workbench.ui.main_window import MainWindow
from workbench.ui.settings import AppSettings

GIL_SWITCH_S = 0.0002


def create_application() -> QApplication:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    # Qt's data folder (QStandardPaths.AppDataLocation) derives from these two names, and so does
    # core.paths.app_data_dir(), where the settings and the demo live (tests/packaging checks both agree).
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    # INI files are plain text a user can read (AppSettings names its own file in the data folder).
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    # Panels read on worker threads. Every call from Qt into Python (a cell painted, a slot)
    # must take the GIL, and waits up to the switch interval for a busy worker to hand it over;
    # one paint of the window makes hundreds of such calls. With two busy Python threads beside
    # it, a paint of the whole window took 140 ms at 1 ms and 44 ms at 0.2 ms (5 ms, Python's
    # default, is worse still); the workers lose a few percent to the extra switches.
    sys.setswitchinterval(GIL_SWITCH_S)
    # Fusion, the bundled fonts (every glyph the UI draws) and the icon, before any widget exists;
    # the window then applies the remembered theme and zoom.
    theme.install(app)
    wheel_guard.install(app)  # a wheel over an unfocused slider, spin box or combo scrolls the page
    return app  # type: ignore[return-value]


def settle_memory() -> None:
    """Move what start-up allocated (modules, classes, widgets: long-lived) out of the garbage
    collector's sight: a full collection then scans only what came since, and a pause of
    15-20 ms in the window at a bad moment (opening a big project) becomes a few ms."""
    gc.collect()
    gc.freeze()


def run_app(file: str | None = None, *, demo: bool = False, exit_when_shown: bool = False) -> int:
    app = create_application()
    model = ProjectModel()
    window = MainWindow(model, AppSettings())
    window.show()
    settle_memory()

    if demo:
        from workbench.core.project.demo import demo_path
        from workbench.services.runs.demo_runs import ensure_full_demo

        window.model.open_prepared(demo_path(), ensure_full_demo)
    elif file:
        window.open_path(Path(file))

    if exit_when_shown:
        _exit_when_shown(window, model, opening=bool(demo or file))
    return app.exec()


def _exit_when_shown(window: MainWindow, model: ProjectModel, *, opening: bool) -> None:
    """For bench/startup.py: say when the window is up and when the project is open, then quit.
    A project can open before the window's first paint; it is then reported right after it."""
    window.persist_layout = False
    seen: list[str] = []

    def say(event: str) -> None:
        seen.append(event)
        print(event, flush=True)
        if event == "shown" and "opened-early" in seen:
            say("opened")
        elif event != "shown" or not opening:
            window.close()

    def opened(_store: object) -> None:
        if "shown" in seen:
            say("opened")
        else:
            seen.append("opened-early")

    def failed(message: str, _details: str) -> None:
        print(f"failed: {message}", flush=True)
        window.close()

    model.opened.connect(opened)
    model.failed.connect(failed)
    QTimer.singleShot(0, lambda: say("shown"))
