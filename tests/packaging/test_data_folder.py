"""The CLI's data folder (core.paths.app_data_dir, computed without Qt) is the one the GUI's Qt
names: QStandardPaths' AppDataLocation for the application's organisation and name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QStandardPaths

from workbench.core import paths


@pytest.fixture
def app_names(qapp):
    """The names ui/app.py gives the application (the UI tests rename it), restored afterwards."""
    before = qapp.organizationName(), qapp.applicationName()
    qapp.setOrganizationName(paths.ORGANIZATION)
    qapp.setApplicationName(paths.APPLICATION)
    yield
    qapp.setOrganizationName(before[0])
    qapp.setApplicationName(before[1])


def qt_app_data() -> Path:
    return Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation))


@pytest.mark.parametrize("xdg", [None, "absolute", "relative"])
def test_the_data_folder_is_the_one_qt_names(app_names, monkeypatch, tmp_path, xdg):
    monkeypatch.delenv("RWB_DATA_DIR")
    if xdg is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share") if xdg == "absolute" else "share")
    assert paths.app_data_dir() == qt_app_data()


def test_rwb_data_dir_overrides_the_folder_and_the_suite_never_uses_the_real_one(monkeypatch, tmp_path,
                                                                                  tmp_path_factory):
    # tests/conftest.py gives every test a data folder of its own under pytest's temporary folder.
    assert paths.app_data_dir().is_relative_to(tmp_path_factory.getbasetemp())
    monkeypatch.setenv("RWB_DATA_DIR", str(tmp_path / "data"))
    assert paths.app_data_dir() == tmp_path / "data"
    assert paths.settings_file() == tmp_path / "data" / "settings.ini"


def test_the_demo_lives_in_the_data_folder_unless_rwb_demo_path_says_otherwise(monkeypatch, tmp_path):
    from workbench.core.project.demo import demo_path

    assert demo_path() == paths.app_data_dir() / "demo.rwb"
    monkeypatch.setenv("RWB_DEMO_PATH", str(tmp_path / "mine.rwb"))
    assert demo_path() == tmp_path / "mine.rwb"


def test_the_gui_keeps_its_settings_in_the_data_folder(qapp, monkeypatch, tmp_path):
    from workbench.ui.settings import AppSettings

    monkeypatch.setenv("RWB_DATA_DIR", str(tmp_path / "data"))
    settings = AppSettings()
    settings.add_recent(tmp_path / "study.rwb")
    settings._s.sync()
    assert (tmp_path / "data" / "settings.ini").is_file()
    assert AppSettings().recent_files() == [tmp_path / "study.rwb"]


def test_the_data_folder_is_found_without_qt():
    code = ("import sys; from workbench.core.project.demo import demo_path; demo_path(); "
            "print(sorted(m for m in sys.modules if m.startswith(('PySide6', 'shiboken'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
