"""UI test set-up: settings in a temp folder, and a main window over a fresh ProjectModel."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings

from workbench.services.project_model import ProjectModel
from workbench.ui.main_window import MainWindow
from workbench.ui.settings import AppSettings

WAIT_MS = 10_000  # every wait has a timeout: a hung wait fails the test instead of CI


@pytest.fixture(autouse=True)
def isolated_settings(qapp, tmp_path):
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    qapp.setOrganizationName("RWB Tests")
    qapp.setApplicationName("RWB Tests")
    yield


@pytest.fixture
def window(qtbot):
    win = MainWindow(ProjectModel(), AppSettings())
    qtbot.addWidget(win)
    win.show()
    yield win
    win.close()


@pytest.fixture
def open_project(qtbot, window):
    """Open ``path`` in the window and wait until the model has adopted it and every panel has
    read it (panels read off the GUI thread)."""

    def _open(path):
        with qtbot.waitSignal(window.model.opened, timeout=WAIT_MS):
            window.open_path(path)
        qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
        return window.model.store

    return _open
