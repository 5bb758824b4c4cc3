"""What the Live Run tests share: the panel, a project, a configuration put in the editor, a run
started from it and waited for (every wait with a timeout)."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt

from tests.ui.conftest import WAIT_MS
from workbench.core.project import _sql
from workbench.core.project.store import Store

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"
RUN_MS = 60_000  # a whole run (the Echo template makes 122 calls; litellm's first import takes seconds)


def panel_of(window):
    return window.panels["liveRunPanel"]


def sample(name: str) -> dict:
    return json.loads((SAMPLES / name).read_text())


def template(key: str) -> dict:
    from workbench.core.runs.templates import TEMPLATES

    return TEMPLATES[key].run_config()


def empty_project(tmp_path: Path, name: str = "live.rwb") -> Path:
    path = tmp_path / name
    Store.create(path, "Live Run tests").close_connection()
    return path


def read(path: Path, sql: str, params: tuple = ()) -> list[dict]:
    store = Store.open(path)
    try:
        return _sql.query(store, sql, params)
    finally:
        store.close_connection()


def wait_valid(qtbot, panel) -> None:
    """The editor's document has been checked and is valid (the models run off the GUI thread)."""
    qtbot.waitUntil(lambda: panel.editor.valid, timeout=WAIT_MS)


def put(qtbot, panel, doc: dict) -> None:
    """Put ``doc`` in the editor as a new configuration, and wait until it is found valid."""
    panel.source._new(doc)
    wait_valid(qtbot, panel)


def start(qtbot, window, *, timeout: int = RUN_MS) -> dict:
    """Click Start and wait for the run (or batch) to end; returns its summary."""
    panel = panel_of(window)
    qtbot.waitUntil(panel.start_button.isEnabled, timeout=WAIT_MS)
    with qtbot.waitSignal(window.runs.finished, timeout=timeout) as finished:
        qtbot.mouseClick(panel.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    return finished.args[0]


def rows(panel) -> list[dict]:
    """The timeline's rows as shown."""
    table = panel.calls_table
    return [table.model.row(table.proxy.mapToSource(table.proxy.index(r, 0)).row())
            for r in range(table.proxy.rowCount())]


def plain(html: str) -> str:
    """Rich text as it reads on screen."""
    from PySide6.QtGui import QTextDocument

    doc = QTextDocument()
    doc.setHtml(html)
    return doc.toPlainText()
