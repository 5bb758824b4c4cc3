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
    window.show_panel("liveRunPanel")  # (the Run workspace)
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
    """Put ``doc`` in the editor as a user would (written to a JSON file, opened through Save ▸
    Open a JSON or YAML file…), and wait until it is found valid."""
    import tempfile

    import pytest

    folder = Path(tempfile.mkdtemp(prefix="rwb-live-run-"))
    try:
        with pytest.MonkeyPatch.context() as mp:
            open_document(qtbot, panel, mp, doc, folder)
    finally:
        for f in folder.iterdir():
            f.unlink()
        folder.rmdir()


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


# ----- as a user does it: menus, files, rows ------------------------------------------------------
def click_menu(qtbot, button, text: str) -> None:
    """Click ``button`` (a tool button with a pop-up menu) and then the menu's item ``text``,
    with the mouse, as a user does (the menu's own event loop runs meanwhile)."""
    from PySide6.QtCore import QTimer
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    menu = button.menu()
    clicked: list[str] = []

    def pick() -> None:
        popup = QApplication.activePopupWidget()
        if popup is not menu or not menu.isVisible():
            QTimer.singleShot(20, pick)
            return
        [action] = [a for a in menu.actions() if a.text() == text]
        QTest.mouseClick(menu, Qt.MouseButton.LeftButton, pos=menu.actionGeometry(action).center())
        clicked.append(text)

    QTimer.singleShot(0, pick)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(clicked) and not menu.isVisible(), timeout=WAIT_MS)


def choose_template(qtbot, panel, key: str) -> None:
    """New ▸ From template: … in Live Run, by clicks."""
    from workbench.core.runs.templates import TEMPLATES

    click_menu(qtbot, panel.new_button, f"From template: {TEMPLATES[key].name}")
    wait_valid(qtbot, panel)


def open_config_file(qtbot, panel, monkeypatch, path: Path) -> None:
    """Save ▸ Open a JSON or YAML file…, the file chooser answering ``path``."""
    from workbench.ui import prompts

    monkeypatch.setattr(prompts, "open_run_config_path", lambda *_a, **_k: path)
    click_menu(qtbot, panel.file_button, "Open a JSON or YAML file…")


def open_document(qtbot, panel, monkeypatch, doc: dict, tmp_path: Path, name: str = "config.json") -> None:
    """Put ``doc`` in the editor as a user would: written to a file, opened from the Save menu."""
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2))
    open_config_file(qtbot, panel, monkeypatch, path)
    wait_valid(qtbot, panel)


def click_run(qtbot, panel, run_id: str) -> None:
    """Click ``run_id``'s row in the runs table."""
    table = panel.runs_table
    qtbot.waitUntil(lambda: any(table.model.row(table.proxy.mapToSource(table.proxy.index(r, 0)).row())["id"]
                                == run_id for r in range(table.proxy.rowCount())), timeout=WAIT_MS)
    for r in range(table.proxy.rowCount()):
        index = table.proxy.index(r, 0)
        if table.model.row(table.proxy.mapToSource(index).row())["id"] == run_id:
            table.view.scrollTo(index)
            rect = table.view.visualRect(index)
            qtbot.mouseClick(table.view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
            return


def click_call(qtbot, panel, call_id: int) -> None:
    """Click the timeline's row of the call ``call_id``."""
    table = panel.calls_table
    for r in range(table.proxy.rowCount()):
        index = table.proxy.index(r, 0)
        if table.model.row(table.proxy.mapToSource(index).row())["id"] == call_id:
            table.view.scrollTo(index)
            qtbot.mouseClick(table.view.viewport(), Qt.MouseButton.LeftButton, pos=table.view.visualRect(index).center())
            return
    raise AssertionError(f"no call {call_id} in the timeline")


def click(qtbot, widget) -> None:
    """Click ``widget`` as a user does: a check box or a radio button on its box (in a wide panel
    the widget runs far past its label, and a click there toggles nothing)."""
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QCheckBox, QRadioButton

    if isinstance(widget, (QCheckBox, QRadioButton)):
        qtbot.mouseClick(widget, Qt.MouseButton.LeftButton, pos=QPoint(widget.height() // 2, widget.height() // 2))
    else:
        qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def type_into(qtbot, widget, text: str) -> None:
    """Click into ``widget``, select what it holds and type ``text`` over it (lines end with Return)."""
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)
    widget.setFocus()
    qtbot.keyClick(widget, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(widget, Qt.Key.Key_Delete)
    for n, line in enumerate(text.split("\n")):
        if n:
            qtbot.keyClick(widget, Qt.Key.Key_Return)
        if line:
            qtbot.keyClicks(widget, line)
