"""Resonance Echo strips, painted: an agent's verification history (pass ✓ / fail ✗, one mark
per check, in order) with its footer state (Stable, Degraded, Recovering) as a band beneath.

One widget, created once; :meth:`EchoTimeline.set_data` replaces what it shows and repaints.
Colour is always paired with a shape (a filled disc with a tick for a pass, a hollow square with
a cross for a fail; the state band carries its word), so it reads without colour too.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from workbench.ui import theme

STATE_COLOUR = {"Stable": "ok", "Degraded": "error", "Recovering": "warning"}


class EchoTimeline(QWidget):
    check_clicked = Signal(int)  # index into the checks given

    MARK = 14
    BAND = 16

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("echoTimeline")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMouseTracking(True)
        self._checks: list[tuple[bool, str]] = []  # (success, tooltip)
        self._states: list[tuple[float, str]] = []  # (share of the strip where it starts, state)
        self.selected: int | None = None

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(320, self.MARK + self.BAND + 22)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(120, self.MARK + self.BAND + 22)

    def set_data(self, checks: list[tuple[bool, str]], states: list[tuple[int, str]]) -> None:
        """``checks``: (passed, tooltip) in order; ``states``: (index of the check from which the
        state holds, state)."""
        self._checks = list(checks)
        n = max(len(self._checks), 1)
        self._states = [(min(i, n - 0.5) / n if i else 0.0, s) for i, s in states]
        if self.selected is not None and self.selected >= len(self._checks):
            self.selected = None
        self.update()

    def _x(self, i: int) -> float:
        n = max(len(self._checks), 1)
        step = (self.width() - 16) / n
        return 8 + step * (i + 0.5)

    def _index_at(self, x: float) -> int | None:
        if not self._checks:
            return None
        best = min(range(len(self._checks)), key=lambda i: abs(self._x(i) - x))
        return best if abs(self._x(best) - x) <= max(self.MARK, (self.width() - 16) / len(self._checks) / 2) else None

    def mousePressEvent(self, event) -> None:  # noqa: N802 (Qt API)
        i = self._index_at(event.position().x())
        if i is not None:
            self.selected = i
            self.update()
            self.check_clicked.emit(i)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 (Qt API)
        i = self._index_at(event.position().x())
        self.setToolTip(self._checks[i][1] if i is not None else "")

    def paintEvent(self, _event) -> None:  # noqa: N802 (Qt API)
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        text = pal.windowText().color()
        w, top = self.width(), 4
        mid = top + self.MARK / 2 + 2
        p.setPen(QPen(theme.colour("muted"), 1))
        p.drawLine(QPointF(8, mid), QPointF(w - 8, mid))
        if not self._checks:
            p.setPen(text)
            p.drawText(QRectF(8, top, w - 16, self.MARK + 4), Qt.AlignmentFlag.AlignCenter, "no check yet")
        r = self.MARK / 2
        for i, (ok, _tip) in enumerate(self._checks):
            x = self._x(i)
            colour = theme.colour("ok" if ok else "error")
            if ok:
                p.setPen(QPen(colour, 1.5))
                p.setBrush(colour)
                p.drawEllipse(QPointF(x, mid), r, r)
                p.setPen(QPen(pal.base().color(), 2))
                p.drawPolyline([QPointF(x - r * 0.5, mid), QPointF(x - r * 0.1, mid + r * 0.45),
                                QPointF(x + r * 0.55, mid - r * 0.45)])
            else:
                p.setPen(QPen(colour, 2))
                p.setBrush(pal.base().color())
                p.drawRect(QRectF(x - r, mid - r, 2 * r, 2 * r))
                p.drawLine(QPointF(x - r * 0.55, mid - r * 0.55), QPointF(x + r * 0.55, mid + r * 0.55))
                p.drawLine(QPointF(x - r * 0.55, mid + r * 0.55), QPointF(x + r * 0.55, mid - r * 0.55))
            if i == self.selected:
                p.setPen(QPen(theme.colour("accent"), 2, Qt.PenStyle.DashLine))
                p.setBrush(Qt.BrushStyle.NoBrush)
                p.drawRect(QRectF(x - r - 3, mid - r - 3, 2 * r + 6, 2 * r + 6))
        # The footer-state band.
        y = top + self.MARK + 8
        font = QFont(self.font())
        font.setPointSizeF(max(font.pointSizeF() * 0.85, 7))
        p.setFont(font)
        states = self._states or [(0.0, "Stable")]
        span = w - 16
        for k, (start, state) in enumerate(states):
            end = states[k + 1][0] if k + 1 < len(states) else 1.0
            rect = QRectF(8 + span * start, y, max(span * (end - start), 2), self.BAND)
            colour = QColor(theme.colour(STATE_COLOUR.get(state, "muted")))
            fill = QColor(colour)
            fill.setAlpha(60)
            p.setPen(QPen(colour, 1))
            p.setBrush(fill)
            p.drawRect(rect)
            p.setPen(text)
            p.drawText(rect.adjusted(3, 0, -2, 0), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                       p.fontMetrics().elidedText(state, Qt.TextElideMode.ElideRight, int(rect.width()) - 4))
        p.end()
