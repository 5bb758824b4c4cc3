"""The non-blocking notice area under the menu: a banner and a stack of messages.

Errors and warnings never open a modal dialog (a dialog blocks the user and hangs headless
tests). Each message has a "Details" disclosure for the raw error, and a close button.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtCore import QSize
from PySide6.QtWidgets import (QFrame, QHBoxLayout, QLabel, QPlainTextEdit,
                               QToolButton, QVBoxLayout, QWidget)

LEVEL_STYLE = {
    # Colour and a glyph, so the level reads without colour too.
    "error": ("#b3261e", "✖"),
    "warning": ("#b26a00", "▲"),
    "info": ("#1f5fa8", "●"),
}


class Notice(QFrame):
    dismissed = Signal(object)

    def __init__(self, level: str, text: str, details: str = "", *, closable: bool = True, parent=None):
        super().__init__(parent)
        self.level = level
        self.text = text
        colour, glyph = LEVEL_STYLE.get(level, LEVEL_STYLE["info"])
        self.setStyleSheet(f"Notice {{ border: 1px solid palette(mid); border-left: 4px solid {colour};"
                           " border-radius: 2px; }")

        row = QHBoxLayout()
        icon = QLabel(glyph, self)
        icon.setStyleSheet(f"color: {colour}; font-weight: bold;")
        row.addWidget(icon)
        self.label = QLabel(text, self)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        row.addWidget(self.label, 1)

        self.details = QPlainTextEdit(details, self)
        self.details.setReadOnly(True)
        self.details.setMaximumHeight(140)
        self.details.hide()
        if details:
            self.toggle = QToolButton(self)
            self.toggle.setText("Details")
            self.toggle.setCheckable(True)
            self.toggle.toggled.connect(self.details.setVisible)
            row.addWidget(self.toggle)
        if closable:
            close = QToolButton(self)
            close.setText("✕")
            close.setToolTip("Dismiss")
            close.clicked.connect(lambda: self.dismissed.emit(self))
            row.addWidget(close)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addLayout(row)
        layout.addWidget(self.details)


class NoticeArea(QWidget):
    """Holds the read-only/migration banner and the messages; hides itself when empty."""

    emptied = Signal(bool)  # True when nothing is left to show
    MAX_MESSAGES = 5

    def __init__(self, parent=None):
        super().__init__(parent)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(4, 2, 4, 2)
        self._layout.setSpacing(2)
        self.banner: Notice | None = None
        self.messages: list[Notice] = []

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        # Wrapped labels guess a narrow width and ask for several lines; ask for the height the
        # notices need at the width they really have.
        hint = super().sizeHint()
        width = self.width() if self.width() > 200 else (self.window().width() or 1000)
        if self.layout().hasHeightForWidth():
            hint.setHeight(self.layout().totalHeightForWidth(width))
        return hint

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self.updateGeometry()

    def set_banner(self, level: str | None, text: str = "") -> None:
        if self.banner is not None:
            self.banner.setParent(None)
            self.banner.deleteLater()
            self.banner = None
        if level:
            self.banner = Notice(level, text, closable=False, parent=self)
            self._layout.insertWidget(0, self.banner)
        self._changed()

    def add(self, level: str, text: str, details: str = "") -> Notice:
        notice = Notice(level, text, details, parent=self)
        notice.dismissed.connect(self._dismiss)
        self.messages.append(notice)
        self._layout.addWidget(notice)
        while len(self.messages) > self.MAX_MESSAGES:
            self._dismiss(self.messages[0])
        self._changed()
        return notice

    def clear_messages(self) -> None:
        for notice in list(self.messages):
            self._dismiss(notice)

    def _dismiss(self, notice: object) -> None:
        if notice in self.messages:
            self.messages.remove(notice)  # type: ignore[arg-type]
            notice.setParent(None)  # type: ignore[union-attr]
            notice.deleteLater()  # type: ignore[union-attr]
        self._changed()

    def _changed(self) -> None:
        self.emptied.emit(self.banner is None and not self.messages)
