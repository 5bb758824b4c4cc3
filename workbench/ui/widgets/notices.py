"""The one non-blocking message area, laid over the window's bottom right corner, and the
session's message history.

Errors and warnings never open a modal dialog (a dialog blocks the user and hangs headless
tests). Each message has a "Details" disclosure for the raw error, and a close button.

The area never changes the window's size nor moves a dock: it lies over the docks
(:class:`NoticeOverlay`) and shows the newest messages first in a scroll area of bounded height
(about three one-line messages), so a burst of notices scrolls inside it. Info messages leave by
themselves after a while; warnings and errors stay until dismissed. Every notice of the session, dismissed or
not, stays in :attr:`NoticeArea.history`, which the Message History window lists with its time,
level and details.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from PySide6.QtCore import QEvent, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.ui import theme

# A glyph and a word with every colour, so the level reads without colour too.
LEVELS = {"error": ("✖", "Error"), "warning": ("▲", "Warning"), "info": ("●", "Info")}
HISTORY_LIMIT = 2000  # a session's notices kept for the history (the oldest go first)


@dataclass(frozen=True)
class NoticeRecord:
    level: str
    text: str
    details: str = ""
    kind: str = "message"  # or "banner" (the read-only/migration line of the open project)
    time: datetime = field(default_factory=datetime.now)

    def as_text(self) -> str:
        head = f"{self.time:%H:%M:%S}  {LEVELS.get(self.level, LEVELS['info'])[1]}  {self.text}"
        return head + ("\n" + self.details if self.details else "")


class Notice(QFrame):
    dismissed = Signal(object)

    def __init__(self, level: str, text: str, details: str = "", *, closable: bool = True, parent=None):
        super().__init__(parent)
        self.level = level if level in LEVELS else "info"
        self.text = text
        glyph, word = LEVELS[self.level]

        row = QHBoxLayout()
        self.icon = QLabel(glyph, self)
        self.icon.setToolTip(word)
        self.icon.setAccessibleName(word)
        row.addWidget(self.icon, 0, Qt.AlignmentFlag.AlignTop)
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
            row.addWidget(self.toggle, 0, Qt.AlignmentFlag.AlignTop)
        if closable:
            close = QToolButton(self)
            close.setText("✕")
            close.setToolTip("Dismiss")
            close.setAccessibleName("Dismiss")
            close.clicked.connect(lambda: self.dismissed.emit(self))
            row.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 3, 6, 3)
        layout.addLayout(row)
        layout.addWidget(self.details)
        self._restyle()

    def _restyle(self) -> None:
        self._styled_for = theme.current_theme()
        colour = theme.css(self.level)
        self.setStyleSheet(f"Notice {{ border: 1px solid palette(mid); border-left: 4px solid {colour};"
                           " border-radius: 2px; background: palette(base); }")
        self.icon.setStyleSheet(f"color: {colour}; font-weight: bold;")

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self._styled_for != theme.current_theme():
            self._restyle()  # the theme changed: its colours follow


class NoticeArea(QFrame):
    """Holds the read-only/migration banner and the messages (newest first); hides itself (through
    ``emptied``) when nothing is left to show."""

    emptied = Signal(bool)  # True when nothing is left to show
    added = Signal(object)  # a NoticeRecord, for the history window
    history_requested = Signal()
    MAX_MESSAGES = 5  # on screen; the history keeps them all
    VISIBLE_ROWS = 3  # one-line messages shown before the area scrolls
    INFO_LIFETIME_MS = 12_000  # an info message's time on screen (0: until dismissed)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.banner: Notice | None = None
        self.messages: list[Notice] = []
        self.history: list[NoticeRecord] = []

        self._list = QWidget(self)
        self._layout = QVBoxLayout(self._list)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(2)
        self._layout.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.scroll = QScrollArea(self)
        self.scroll.setObjectName("noticeScroll")
        self.scroll.setWidget(self._list)
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

        self.history_button = QToolButton(self)
        self.history_button.setObjectName("historyButton")
        self.history_button.setText("History…")
        self.history_button.setToolTip("Every message of this session, with its time and details")
        self.history_button.clicked.connect(self.history_requested)
        self.clear_button = QToolButton(self)
        self.clear_button.setText("Dismiss all")
        self.clear_button.clicked.connect(self.clear_messages)
        outer = QHBoxLayout(self)
        outer.setContentsMargins(4, 2, 4, 2)
        outer.setSpacing(4)
        outer.addWidget(self.scroll, 1)
        outer.addWidget(self.history_button, 0, Qt.AlignmentFlag.AlignTop)
        outer.addWidget(self.clear_button, 0, Qt.AlignmentFlag.AlignTop)
        self._cap_height()

    # ----- size: bounded, whatever is shown ------------------------------------------------
    def max_height(self) -> int:
        """The tallest the area gets: VISIBLE_ROWS one-line messages (it scrolls beyond)."""
        row = max(self.fontMetrics().lineSpacing(), self.history_button.sizeHint().height()) + 10
        return self.VISIBLE_ROWS * row + 6

    def _cap_height(self) -> None:
        self.setMaximumHeight(self.max_height())
        self.updateGeometry()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        # The height the messages need at the width they really have, never above the cap.
        width = self.scroll.viewport().width() if self.scroll.viewport().width() > 200 else \
            max((self.window().width() or 1000) - 220, 300)
        layout = self._list.layout()
        content = layout.totalHeightForWidth(width) if layout.hasHeightForWidth() else layout.sizeHint().height()
        height = min(max(content, self.history_button.sizeHint().height()) + 4, self.max_height())
        return QSize(super().sizeHint().width(), height)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(200, self.history_button.sizeHint().height() + 4)

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # zoomed: the cap follows the text's height
            self._cap_height()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            self.updateGeometry()

    # ----- content -------------------------------------------------------------------------
    def set_banner(self, level: str | None, text: str = "") -> None:
        if self.banner is not None:
            self.banner.setParent(None)
            self.banner.deleteLater()
            self.banner = None
        if level:
            # Dismissable: it lies over the panels (the title and status bar keep "[read-only]").
            self.banner = Notice(level, text, parent=self._list)
            self.banner.dismissed.connect(lambda _n: self.set_banner(None))
            self._layout.insertWidget(0, self.banner)
            self._remember(NoticeRecord(level, text, kind="banner"))
        self._changed()

    def add(self, level: str, text: str, details: str = "") -> Notice:
        notice = Notice(level, text, details, parent=self._list)
        notice.dismissed.connect(self._dismiss)
        self.messages.append(notice)
        self._layout.insertWidget(1 if self.banner is not None else 0, notice)  # newest on top
        while len(self.messages) > self.MAX_MESSAGES:
            self._dismiss(self.messages[0])
        self._remember(NoticeRecord(notice.level, text, details))
        self.scroll.verticalScrollBar().setValue(0)
        self._changed()
        self._expire_later(notice)
        return notice

    def clear_messages(self) -> None:
        for notice in list(self.messages):
            self._dismiss(notice)

    def _remember(self, record: NoticeRecord) -> None:
        self.history.append(record)
        del self.history[:-HISTORY_LIMIT]
        self.added.emit(record)

    def _dismiss(self, notice: object) -> None:
        if notice in self.messages:
            self.messages.remove(notice)  # type: ignore[arg-type]
            notice.setParent(None)  # type: ignore[union-attr]
            notice.deleteLater()  # type: ignore[union-attr]
        self._changed()

    def _changed(self) -> None:
        self.clear_button.setVisible(bool(self.messages))
        self.updateGeometry()
        self.emptied.emit(self.banner is None and not self.messages)

    def _expire_later(self, notice: Notice) -> None:
        """An info message leaves the area by itself (it stays in the history): an overlay of
        past "run completed" lines would cover the panels run after run."""
        if self.INFO_LIFETIME_MS > 0 and notice.level == "info":
            timer = QTimer(notice)  # dies with the notice: nothing fires for a dismissed one
            timer.setSingleShot(True)
            timer.timeout.connect(lambda: self._dismiss(notice))
            timer.start(self.INFO_LIFETIME_MS)


class NoticeOverlay(QFrame):
    """The message area laid over the window's bottom right corner, above the status bar, as a
    toast: it never takes room from the docks, so a notice arriving or dismissed moves no dock
    and costs no relayout of the window (the relayout was a live run's longest stall).
    ``room()`` gives the part of the window it may cover (the docks' part)."""

    MARGIN = 8
    MAX_WIDTH = 640

    def __init__(self, area: NoticeArea, window: QWidget, room):
        super().__init__(window)
        self.setObjectName("noticeOverlay")
        self.area, self._room = area, room
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(1, 1, 1, 1)
        layout.addWidget(area)
        window.installEventFilter(self)
        self.hide()

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if event.type() in (QEvent.Type.Resize, QEvent.Type.LayoutRequest) and self.isVisible():
            self.place()
        return False

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange and self.isVisible():
            self.place()

    def show_if(self, shown: bool) -> None:
        self.setVisible(shown)
        if shown:
            self.place()
            self.raise_()

    def place(self) -> None:
        """In the room's bottom right corner, as tall as its messages (the area caps it)."""
        room = self._room()
        width = max(min(self.MAX_WIDTH, int(room.width() * 0.6)), min(320, room.width()))
        self.area.setFixedWidth(width - 2)  # the messages wrap at this width: their height follows
        height = min(self.area.sizeHint().height(), self.area.max_height()) + 2
        self.setGeometry(room.right() + 1 - width - self.MARGIN, room.bottom() + 1 - height - self.MARGIN,
                         width, height)


class MessageHistoryWindow(QWidget):
    """Every notice of the session, newest first, with its time, level and details (a window of
    its own, not modal; it follows the area as notices arrive)."""

    def __init__(self, area: NoticeArea, parent: QWidget | None = None):
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("messageHistory")
        self.setWindowTitle("Message History")
        self.area = area
        self.tree = QTreeWidget(self)
        self.tree.setHeaderLabels(["Time", "Level", "Message"])
        self.tree.setRootIsDecorated(False)
        self.tree.setAlternatingRowColors(True)
        self.tree.setUniformRowHeights(True)
        self.tree.currentItemChanged.connect(self._on_current_changed)
        self.details = QPlainTextEdit(self)
        self.details.setReadOnly(True)
        self.details.setPlaceholderText("Select a message to see its details.")
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(self.tree)
        split.addWidget(self.details)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        self.copy_button = QPushButton("Copy All", self)
        self.copy_button.setToolTip("Copy every message, with its time, level and details, as text")
        self.copy_button.clicked.connect(self._on_copy_clicked)
        row = QHBoxLayout()
        self.count_label = QLabel(self)
        row.addWidget(self.count_label, 1)
        row.addWidget(self.copy_button)
        layout = QVBoxLayout(self)
        layout.addWidget(split, 1)
        layout.addLayout(row)
        for record in area.history:
            self._on_added(record)
        area.added.connect(self._on_added)
        self.resize(760, 420)

    def records(self) -> list[NoticeRecord]:
        """The records listed, newest first."""
        return [self.tree.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole)
                for i in range(self.tree.topLevelItemCount())]

    def _on_added(self, record: NoticeRecord) -> None:
        glyph, word = LEVELS.get(record.level, LEVELS["info"])
        kind = " (banner)" if record.kind == "banner" else ""
        item = QTreeWidgetItem([f"{record.time:%H:%M:%S}", f"{glyph} {word}{kind}",
                                record.text + ("  [details]" if record.details else "")])
        item.setData(0, Qt.ItemDataRole.UserRole, record)
        item.setToolTip(2, record.text)
        item.setForeground(1, theme.colour(record.level))
        self.tree.insertTopLevelItem(0, item)
        while self.tree.topLevelItemCount() > HISTORY_LIMIT:
            self.tree.takeTopLevelItem(self.tree.topLevelItemCount() - 1)
        self.count_label.setText(f"{self.tree.topLevelItemCount()} message(s) this session")

    def _on_current_changed(self, item: QTreeWidgetItem | None, _previous=None) -> None:
        record = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None
        self.details.setPlainText("" if record is None else record.as_text())

    def _on_copy_clicked(self) -> None:
        QGuiApplication.clipboard().setText("\n".join(r.as_text() for r in reversed(self.records())))

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            for i in range(self.tree.topLevelItemCount()):
                item = self.tree.topLevelItem(i)
                item.setForeground(1, theme.colour(item.data(0, Qt.ItemDataRole.UserRole).level))
