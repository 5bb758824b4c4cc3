"""The Help menu's windows: About (versions), the protocol notes, and the keyboard shortcuts.

All three are ordinary windows, not modal dialogs: they never block the main window (and never
hang a headless test). The shortcut list is generated from the window's actions, so it cannot
drift from what the keys really do.
"""

from __future__ import annotations

import platform
import re
from html import escape
from importlib import metadata
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QAction, QDesktopServices, QGuiApplication, QKeySequence, QTextCursor, QTextDocument
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QMenu,
    QMenuBar,
    QPushButton,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

import workbench
from workbench.core.paths import resources_dir

DISTRIBUTION = "resonance-workbench"
# Help ▸ Protocol Notes is a page written for users (what each protocol measures and how to read it),
# shipped with the resources; docs/protocols.md is the developers' account of the engines.
PROTOCOL_NOTES = resources_dir() / "help" / "protocols.md"


# ----- versions --------------------------------------------------------------------------------
def litellm_version() -> str:
    """litellm's installed version and the project's pin, from package metadata: litellm itself
    is not imported (it takes seconds)."""
    try:
        installed = metadata.version("litellm")
    except metadata.PackageNotFoundError:
        installed = "not installed"
    try:
        pins = [r for r in metadata.requires(DISTRIBUTION) or () if re.match(r"litellm\b", r)]
    except metadata.PackageNotFoundError:
        pins = []
    pin = re.sub(r"^litellm\s*", "", pins[0].split(";")[0]).strip() if pins else ""
    return f"{installed} (pinned {pin})" if pin else installed


def versions() -> list[tuple[str, str]]:
    import PySide6
    from PySide6.QtCore import qVersion

    from workbench.core.project.versions import sqlite_version

    return [("Resonance Workbench", workbench.__version__),
            ("Python", f"{platform.python_version()} ({platform.python_implementation()})"),
            ("Qt", qVersion()),
            ("PySide6", PySide6.__version__),
            ("SQLite", sqlite_version()),
            ("litellm", litellm_version()),
            ("Platform", f"{platform.system()} {platform.release()} ({QGuiApplication.platformName()})")]


class AboutWindow(QWidget):
    """The versions of everything that matters for a bug report, and the open project's path."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("aboutWindow")
        self.setWindowTitle("About Resonance Workbench")
        self.label = QLabel(self)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.label.setOpenExternalLinks(False)
        self.label.setWordWrap(True)
        copy = QPushButton("Copy", self)
        copy.setToolTip("Copy the versions and the project's path as text (for a bug report)")
        copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.as_text()))
        close = QPushButton("Close", self)
        close.clicked.connect(self.close)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(copy)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.label, 1)
        layout.addLayout(buttons)
        self._rows: list[tuple[str, str]] = []
        self._project = ""

    def refresh(self, project_path: Path | None) -> None:
        self._rows = versions()
        self._project = str(project_path) if project_path else "none open"
        rows = "".join(f"<tr><td><b>{escape(k)}</b></td><td>&nbsp;&nbsp;{escape(v)}</td></tr>" for k, v in self._rows)
        self.label.setText(
            "<h2>Resonance Workbench</h2>"
            "<p>A workbench for multi-agent LLM consensus protocols.</p>"
            f"<table>{rows}</table>"
            f"<p><b>Open project:</b> {escape(self._project)}</p>")

    def as_text(self) -> str:
        return "\n".join(f"{k}: {v}" for k, v in self._rows) + f"\nOpen project: {self._project}"


# ----- the protocol notes ----------------------------------------------------------------------
class ProtocolsWindow(QWidget):
    """The protocol notes for users, rendered: what each protocol measures and how to read it."""

    def __init__(self, parent: QWidget | None = None, path: Path = PROTOCOL_NOTES):
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("protocolsWindow")
        self.setWindowTitle("Protocol Notes")
        self.path = path
        self.browser = QTextBrowser(self)
        self.browser.setOpenLinks(False)  # headings have no anchors in Qt's Markdown: see _on_link
        self.browser.anchorClicked.connect(self._on_link)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.browser)
        self.resize(900, 700)
        self.reload()

    def reload(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            text = (f"# Protocol notes\n\nThe notes could not be read ({exc.strerror or exc}): the workbench's "
                    "installation may be incomplete. Reinstalling it puts them back.")
        # Literal "<reference>" in the notes is text, not HTML (as HTML it swallows what follows).
        features = QTextDocument.MarkdownFeature
        self.browser.document().setMarkdown(text, features.MarkdownDialectGitHub | features.MarkdownNoHTML)

    def go_to(self, fragment: str) -> bool:
        """Scroll to the heading whose GitHub-style anchor is ``fragment`` (the Contents' links)."""
        block = self.browser.document().begin()
        while block.isValid():
            if block.blockFormat().headingLevel() > 0 and heading_anchor(block.text()) == fragment:
                cursor = QTextCursor(block)
                self.browser.setTextCursor(cursor)
                self.browser.verticalScrollBar().setValue(self.browser.verticalScrollBar().maximum())
                self.browser.ensureCursorVisible()  # from the bottom: the heading lands on top
                return True
            block = block.next()
        return False

    def _on_link(self, url: QUrl) -> None:
        if url.scheme() in ("http", "https", "mailto"):
            QDesktopServices.openUrl(url)
        elif url.path() == "" and url.fragment():
            self.go_to(url.fragment())
        elif url.path().endswith(".md"):  # another of the docs: shown here
            target = (self.path.parent / url.path()).resolve()
            if target.is_file():
                self.path = target
                self.setWindowTitle(f"Notes: {target.name}")
                self.reload()
                if url.fragment():
                    self.go_to(url.fragment())


def heading_anchor(text: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


# ----- keyboard shortcuts ----------------------------------------------------------------------
def _label(action: QAction) -> str:
    return action.text().replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("…").rstrip(".")


def keys_text(action: QAction) -> str:
    return ", ".join(k.toString(QKeySequence.SequenceFormat.NativeText) for k in action.shortcuts() if not k.isEmpty())


def shortcut_rows(menu_bar: QMenuBar, others: list[tuple[str, QAction]] = ()) -> list[tuple[str, str, str]]:
    """(where, action, keys) for every action with a shortcut: the menus' first, in menu order,
    then ``others`` (actions of the panels), each with where it lives."""
    rows: list[tuple[str, str, str]] = []

    def walk(menu: QMenu, where: str) -> None:
        for action in menu.actions():
            if action.menu() is not None:
                walk(action.menu(), f"{where} ▸ {_label(action)}")
            elif keys_text(action):
                rows.append((where, _label(action), keys_text(action)))

    for top in menu_bar.actions():
        if top.menu() is not None:
            walk(top.menu(), _label(top))
    rows += [(where, _label(a), keys_text(a)) for where, a in others if keys_text(a)]
    return rows


class ShortcutsWindow(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("shortcutsWindow")
        self.setWindowTitle("Keyboard Shortcuts")
        self.tree = QTreeWidget(self)
        self.tree.setHeaderLabels(["Menu", "Action", "Keys"])
        self.tree.setRootIsDecorated(False)
        self.tree.setAlternatingRowColors(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tree)
        self.resize(560, 520)

    def fill(self, rows: list[tuple[str, str, str]]) -> None:
        self.tree.clear()
        for where, text, keys in rows:
            self.tree.addTopLevelItem(QTreeWidgetItem([where, text, keys]))
        for column in range(3):
            self.tree.resizeColumnToContents(column)

    def rows(self) -> list[tuple[str, str, str]]:
        return [tuple(self.tree.topLevelItem(i).text(c) for c in range(3))  # type: ignore[misc]
                for i in range(self.tree.topLevelItemCount())]
