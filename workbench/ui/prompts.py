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


# ----- Clusters & Agents ---------------------------------------------------------------------------
def confirm(parent: QWidget, title: str, text: str, ok: str = "OK") -> bool:
    """Ask before an edit that replaces or removes much (it stays undoable)."""
    from PySide6.QtWidgets import QMessageBox

    box = QMessageBox(QMessageBox.Icon.Question, title, text, QMessageBox.StandardButton.Cancel, parent)
    button = box.addButton(ok, QMessageBox.ButtonRole.AcceptRole)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    return box.clickedButton() is button


def choose_run(parent: QWidget, runs: list[tuple[str, str]]) -> str | None:
    """One run of ``runs`` ((id, what to show) pairs), or None."""
    from PySide6.QtWidgets import QInputDialog

    labels = [label for _id, label in runs]
    label, ok = QInputDialog.getItem(parent, "Import panel from a run",
                                     "The run whose panel (providers, clusters, agents) to copy:", labels, 0, False)
    return runs[labels.index(label)][0] if ok and label in labels else None


def edit_provider(parent: QWidget, workers, provider: dict | None = None, taken: set[str] | None = None):
    """The provider dialog: a :class:`~workbench.ui.dialogs.provider_dialog.ProviderEdit`, or None."""
    from PySide6.QtWidgets import QDialog

    from workbench.ui.dialogs.provider_dialog import ProviderDialog

    dialog = ProviderDialog(workers, provider, taken, parent)
    try:
        return dialog.edit() if dialog.exec() == QDialog.DialogCode.Accepted else None
    finally:
        dialog.deleteLater()


RUN_CONFIG_FILTER = "Run configurations (*.json *.yaml *.yml);;All files (*)"


def open_run_config_path(parent: QWidget, start_dir: str = "") -> Path | None:
    """A run configuration (JSON or YAML, as ``rwb run`` reads) to load into Live Run."""
    path, _ = QFileDialog.getOpenFileName(parent, "Open run configuration", start_dir, RUN_CONFIG_FILTER)
    return Path(path) if path else None


def save_run_config_path(parent: QWidget, start_dir: str = "", name: str = "run.json") -> Path | None:
    """Where to save a run configuration as JSON (the dialog asks before replacing a file)."""
    start = str(Path(start_dir) / name) if start_dir else name
    path, _ = QFileDialog.getSaveFileName(parent, "Save run configuration", start, "JSON (*.json);;All files (*)")
    if not path:
        return None
    return Path(path) if Path(path).suffix else Path(path).with_suffix(".json")


# ----- Plots (Quadrant, Drift & Convergence) --------------------------------------------------------
EXPORT_FILTERS = {"png": "PNG image (*.png)", "svg": "SVG vector image (*.svg)", "csv": "CSV table (*.csv)",
                  "md": "Markdown report (*.md)", "html": "HTML report (*.html)", "jsonl": "JSON Lines records (*.jsonl)"}


def export_path(parent: QWidget, kind: str, start_dir: str = "", name: str = "plot") -> Path | None:
    """Where to export a plot (png, svg, csv) or a run (md, html, jsonl, csv) as ``kind``; the
    dialog asks before replacing."""
    start = str(Path(start_dir) / f"{name}.{kind}") if start_dir else f"{name}.{kind}"
    path, _ = QFileDialog.getSaveFileName(parent, f"Export {kind.upper()}", start,
                                          f"{EXPORT_FILTERS[kind]};;All files (*)")
    if not path:
        return None
    return Path(path) if Path(path).suffix else Path(path).with_suffix(f".{kind}")


def variant_label(parent: QWidget, suggested: str) -> str | None:
    """The label of a what-if classification saved from the Quadrant, or None."""
    from PySide6.QtWidgets import QInputDialog

    text, ok = QInputDialog.getText(parent, "Save as new classification",
                                    "A label for this classification (the run itself is not changed):",
                                    text=suggested)
    return text.strip() if ok and text.strip() else None
