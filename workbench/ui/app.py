"""Start the GUI: one QApplication, one ProjectModel, one MainWindow."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication

from workbench.services.project_model import ProjectModel
from workbench.ui.main_window import APP_NAME, MainWindow
from workbench.ui.settings import AppSettings


def create_application() -> QApplication:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName(APP_NAME)
    app.setApplicationName(APP_NAME)
    # INI files are plain text a user can read, and tests can redirect them to a temp folder.
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    return app  # type: ignore[return-value]


def run_app(file: str | None = None, *, demo: bool = False, exit_when_shown: bool = False) -> int:
    app = create_application()
    model = ProjectModel()
    window = MainWindow(model, AppSettings())
    window.show()

    if demo:
        from workbench.core.project.demo import demo_path, ensure_demo

        window.model.open_prepared(demo_path(), ensure_demo)
    elif file:
        window.open_path(Path(file))

    if exit_when_shown:
        _exit_when_shown(window, model, opening=bool(demo or file))
    return app.exec()


def _exit_when_shown(window: MainWindow, model: ProjectModel, *, opening: bool) -> None:
    """For bench/startup.py: say when the window is up and when the project is open, then quit."""
    window.persist_layout = False

    def shown() -> None:
        print("shown", flush=True)
        if not opening or model.store is not None:
            window.close()

    def opened(_store: object) -> None:
        print("opened", flush=True)
        window.close()

    def failed(message: str, _details: str) -> None:
        print(f"failed: {message}", flush=True)
        window.close()

    model.opened.connect(opened)
    model.failed.connect(failed)
    QTimer.singleShot(0, shown)
