"""The status bar's parts: labels that elide instead of widening the window, and the progress of
the long action under way (a run, an import, opening or copying a project) with its Cancel."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtGui import QFontMetrics, QPainter
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QSizePolicy, QWidget

from workbench.ui.widgets.contained import Contained


class ElidedLabel(QLabel):
    """A one-line label that shows "…" where its text does not fit, so a long path never makes
    the status bar (and so the window) wider. The full text is its tooltip."""

    def __init__(self, text: str = "", parent: QWidget | None = None, *,
                 mode: Qt.TextElideMode = Qt.TextElideMode.ElideMiddle):
        super().__init__(text, parent)
        self._mode = mode
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setTextFormat(Qt.TextFormat.PlainText)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt API)
        super().setText(text)
        self.setToolTip(text)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(40, super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(self.fontMetrics().horizontalAdvance(self.text()) + 8, super().sizeHint().height())

    def paintEvent(self, _event) -> None:  # noqa: N802 (Qt API)
        painter = QPainter(self)
        rect = self.contentsRect()
        shown = QFontMetrics(self.font()).elidedText(self.text(), self._mode, rect.width())
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(rect, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), shown)


class QuietProgressBar(QProgressBar):
    """A progress bar that paints with the window's next paint, never at once.

    ``QProgressBar.setValue`` calls ``repaint()`` whenever the bar moves by a chunk, and a
    repaint paints, there and then, everything waiting to be painted in the whole window
    (plots included): 15 to 60 ms inside the slot that reported progress, several times a
    second during a live run. With updates off for the moment of the call the repaint is
    skipped, and turning them back on schedules an ordinary ``update()``.
    """

    def setValue(self, value: int) -> None:  # noqa: N802 (Qt API)
        if value == self.value():
            return
        self.setUpdatesEnabled(False)
        try:
            super().setValue(value)
        finally:
            self.setUpdatesEnabled(True)  # queues update(): painted with the rest of the window


class JobStatus(QWidget):
    """A compact progress bar, the job's words beside it (what, how far, the ETA: never clipped
    inside the bar), and a Cancel button shown only when the job can be cancelled."""

    cancel_clicked = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("jobStatus")
        self.bar = QuietProgressBar(self)
        self.bar.setObjectName("jobProgress")
        self.bar.setTextVisible(False)
        self.bar.setFixedWidth(140)
        self.bar.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.label = ElidedLabel("", self, mode=Qt.TextElideMode.ElideRight)
        self.label.setObjectName("jobText")
        self.label.setMinimumWidth(120)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setObjectName("jobCancel")
        self.cancel_button.clicked.connect(self.cancel_clicked)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        layout.addWidget(self.bar, 0, Qt.AlignmentFlag.AlignVCenter)
        layout.addWidget(Contained(self.label, self), 1)  # its words change with every step of the job
        layout.addWidget(self.cancel_button, 0, Qt.AlignmentFlag.AlignVCenter)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self._fit_bar()
        self.cancel_button.hide()
        self.hide()

    def _fit_bar(self) -> None:
        # The bar's height follows the text (zoom), so the status bar never clips it.
        self.bar.setFixedHeight(max(self.fontMetrics().height() + 4, 14))

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fit_bar()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        hint = super().sizeHint()
        return QSize(min(hint.width(), 520), hint.height())

    def show_progress(self, text: str, done: int = 0, total: int = 0, *, cancellable: bool = False,
                      tooltip: str = "") -> None:
        """``total`` 0 shows a busy bar (how far is unknown)."""
        self.bar.setRange(0, max(total, 0))
        if total > 0:
            self.bar.setValue(min(done, total))
        self.bar.setFormat(text)  # also the bar's accessible text
        self.label.setText(text)
        # Room for the words (up to a point): the project's path and the providers elide first.
        # It grows in steps and never shrinks during a job, so the counts ticking up do not
        # re-lay out the window at every step.
        need = min(self.label.fontMetrics().horizontalAdvance(text) + 8, 380)
        if need > self.label.minimumWidth():
            self.label.setMinimumWidth(min(-(-need // 40) * 40, 380))
        self.cancel_button.setVisible(cancellable)
        self.cancel_button.setToolTip(tooltip)
        self.show()

    def finish(self) -> None:
        self.cancel_button.hide()
        self.label.setMinimumWidth(120)
        self.hide()

    @property
    def text(self) -> str:
        return self.label.text()
