"""The guided tour's card: a step's title and text, "Step k of n", Back / Next / Leave tour.

A plain child widget of the main window (not a dialog): it never blocks the window and never
hangs a headless test. Its text wraps and, when the room is short (a small window, a large
zoom), scrolls inside the card instead of being cut off. The keys of ``TOUR_KEYS`` work while
the card or one of its buttons has the focus (it takes it at each step), so arrow keys keep
their usual meaning in the panels' tables.
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFont, QKeySequence, QShortcut
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

from workbench.ui import theme
from workbench.ui.tour_steps import TOUR_KEYS, TourStep

MIN_BODY_LINES = 3  # the text's least height when it must scroll


class TourCard(QFrame):
    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.setObjectName("tourCard")
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.title = QLabel(self)
        self.title.setObjectName("tourTitle")
        self.title.setWordWrap(True)
        self.body = QLabel(self)
        self.body.setObjectName("tourText")
        self.body.setWordWrap(True)
        self.body.setTextFormat(Qt.TextFormat.RichText)  # one short paragraph a sentence
        self.body.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.scroll = QScrollArea(self)
        self.scroll.setObjectName("tourTextScroll")
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setWidgetResizable(True)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setWidget(self.body)
        self.counter = QLabel(self)
        self.counter.setObjectName("tourCounter")
        self.demo_button = QPushButton("Open the demo project", self)
        self.demo_button.setObjectName("tourDemo")
        self.demo_button.setToolTip("Open the bundled demo project (simulated agents, no network) to follow the tour")
        self.demo_button.hide()
        self.back_button = QPushButton("← Back", self)
        self.back_button.setObjectName("tourBack")
        self.next_button = QPushButton("Next →", self)
        self.next_button.setObjectName("tourNext")
        self.next_button.setDefault(True)  # drawn as the one to press
        self.leave_button = QPushButton("Leave tour", self)
        self.leave_button.setObjectName("tourLeave")
        self.leave_button.setToolTip("Close the tour; Help ▸ Tour resumes it at this step")
        for button in (self.back_button, self.next_button, self.leave_button, self.demo_button):
            button.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

        buttons = QHBoxLayout()
        buttons.setSpacing(6)
        buttons.addWidget(self.counter, 1)
        buttons.addWidget(self.leave_button)
        buttons.addWidget(self.back_button)
        buttons.addWidget(self.next_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 12, 14, 12)
        layout.setSpacing(8)
        layout.addWidget(self.title)
        layout.addWidget(self.scroll)
        layout.addWidget(self.demo_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addLayout(buttons)

        targets = {"Next tour step": self.next_button, "Previous tour step": self.back_button,
                   "Leave the tour": self.leave_button}
        self.shortcuts = []
        for what, key in TOUR_KEYS:
            shortcut = QShortcut(QKeySequence(key), self)
            shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            button = targets[what]
            shortcut.activated.connect(lambda b=button: b.click() if b.isEnabled() and b.isVisible() else None)
            self.shortcuts.append(shortcut)
        self._title_font()
        self.restyle(theme.current_theme())

    # ----- content -------------------------------------------------------------------------------
    def set_step(self, step: TourStep, index: int, count: int) -> None:
        self.title.setText(step.title)
        self.body.setText("".join(f"<p style='margin: 0 0 6px 0'>{escape(s)}</p>" for s in step.sentences))
        self.counter.setText(f"Step {index + 1} of {count}")
        self.back_button.setEnabled(index > 0)
        last = index == count - 1
        self.next_button.setText("Finish" if last else "Next →")
        self.next_button.setToolTip("End the tour" if last else "The next step (→)")
        self.scroll.verticalScrollBar().setValue(0)

    def restyle(self, name: str) -> None:
        """Colours of ``name``'s theme (set again on a theme change: the sheet holds colours)."""
        colours = theme.PALETTES.get(name, theme.PALETTES[theme.DEFAULT_THEME])
        accent, muted = theme.css("accent", name), theme.css("muted", name)
        self.setStyleSheet(
            f"QFrame#tourCard {{ background: {colours['Base']}; border: 2px solid {accent}; border-radius: 8px; }}"
            f"QFrame#tourCard QLabel {{ color: {colours['Text']}; background: transparent; }}"
            f"QLabel#tourTitle {{ color: {accent}; }}"
            f"QLabel#tourCounter {{ color: {muted}; }}"
            "QScrollArea#tourTextScroll, QScrollArea#tourTextScroll > QWidget > QWidget "
            "{ background: transparent; border: none; }")

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # zoomed: the title follows the body's size
            self._title_font()

    def _title_font(self) -> None:
        font = QFont(self.font())
        font.setBold(True)
        size = font.pointSizeF() if font.pointSizeF() > 0 else 10.0
        font.setPointSizeF(size * 1.2)
        self.title.setFont(font)

    # ----- size ----------------------------------------------------------------------------------
    def preferred_width(self) -> int:
        """About 62 average characters a line: short enough to read aloud at a glance."""
        return max(340, min(600, self.fontMetrics().averageCharWidth() * 62))

    def fit(self, width: int, max_height: int) -> None:
        """Take ``width`` and the height the text needs, at most ``max_height``: beyond it the
        text scrolls in the card (never cut off)."""
        layout = self.layout()
        margins = layout.contentsMargins()
        self.setFixedWidth(width)
        inner = self.contentsRect().width() - margins.left() - margins.right()  # inside the border
        body_height = self.body.heightForWidth(inner)
        self.scroll.setFixedHeight(max(body_height, 1))
        layout.activate()
        needed = layout.totalHeightForWidth(width) if layout.hasHeightForWidth() else layout.sizeHint().height()
        if needed > max_height:
            least = self.body.fontMetrics().lineSpacing() * MIN_BODY_LINES
            self.scroll.setFixedHeight(max(body_height - (needed - max_height), least))
            layout.activate()
            needed = min(max_height, layout.totalHeightForWidth(width) if layout.hasHeightForWidth()
                         else layout.sizeHint().height())
        self.setFixedHeight(needed)
