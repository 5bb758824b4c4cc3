"""Every modal prompt of the workbench, in one module that tests patch.

A test that waits on a real dialog hangs CI, so nothing else in the UI opens a modal dialog.
Errors and warnings go to the non-blocking notice area instead.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget

from workbench.core.project.files import with_suffix

PROJECT_FILTER = "Workbench projects (*.rwb);;All files (*)"


def open_project_path(parent: QWidget, start_dir: str = "") -> Path | None:
    path, _ = QFileDialog.getOpenFileName(parent, "Open project", start_dir, PROJECT_FILTER)
    return Path(path) if path else None


def new_project_path(parent: QWidget, start_dir: str = "") -> Path | None:
    """The dialog itself asks before replacing an existing file."""
    path, _ = QFileDialog.getSaveFileName(parent, "New project", start_dir, PROJECT_FILTER)
    return with_suffix(path) if path else None


def save_as_path(parent: QWidget, start_dir: str = "") -> Path | None:
    path, _ = QFileDialog.getSaveFileName(parent, "Save project as", start_dir, PROJECT_FILTER)
    return with_suffix(path) if path else None


def import_arm_paths(parent: QWidget, start_dir: str = "") -> list[Path]:
    paths, _ = QFileDialog.getOpenFileNames(parent, "Import ARM traces", start_dir,
                                            "ARM traces (*.json);;All files (*)")
    return [Path(p) for p in paths]
