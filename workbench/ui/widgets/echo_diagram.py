"""The restoration state machine (``echo.restore.STEPS``) drawn as a diagram: one box per state,
arrows in the protocol's order (``new_session`` only when required; ``verify`` branches to
``resume`` or ``escalate``), the states an episode went through outlined, the current one filled.

Created once; :meth:`EchoDiagram.set_state` changes what is highlighted and repaints.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPen, QPolygonF
from PySide6.QtWidgets import QSizePolicy, QWidget

from workbench.ui import theme

# One box per state of ``echo.restore.STEPS`` (tests/ui/test_anchors_diagram.py holds them equal;
# the engine is not imported here: the Echo package costs the window's start 190 ms).
LABELS = {"log": "1 Log", "read_seed": "2 Seed", "new_session": "3 New sess.", "inject": "4 Inject",
          "verify": "5 Verify", "resume": "6 Resume", "escalate": "7 Escalate"}
MAIN = ("log", "read_seed", "new_session", "inject", "verify")


class EchoDiagram(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("echoDiagram")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.visited: tuple[str, ...] = ()
        self.current: str | None = None

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(560, self._box_h() * 2 + 22)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(300, self._box_h() * 2 + 22)

    def _box_h(self) -> int:
        return self.fontMetrics().height() + 10

    def set_state(self, visited: list[str] | tuple[str, ...], current: str | None) -> None:
        self.visited, self.current = tuple(visited), current
        self.update()

    def _boxes(self) -> dict[str, QRectF]:
        h = self._box_h()
        n = len(MAIN) + 1
        gap = 14
        bw = (self.width() - 8 - gap * (n - 1)) / n
        out = {}
        for i, step in enumerate(MAIN):
            out[step] = QRectF(4 + i * (bw + gap), 4, bw, h)
        x = 4 + len(MAIN) * (bw + gap)
        out["resume"] = QRectF(x, 4, bw, h)
        out["escalate"] = QRectF(x, 4 + h + 12, bw, h)
        return out

    def paintEvent(self, _event) -> None:  # noqa: N802 (Qt API)
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        text, base = pal.windowText().color(), pal.base().color()
        accent, muted = theme.colour("accent"), theme.colour("muted")
        boxes = self._boxes()
        font = QFont(self.font())
        font.setPointSizeF(max(font.pointSizeF() * 0.9, 7))
        p.setFont(font)
        # Arrows first, under the boxes.
        order = [*MAIN, "resume"]
        for a, b in zip(order, order[1:]):
            self._arrow(p, boxes[a].right(), boxes[a].center().y(), boxes[b].left(), boxes[b].center().y(), muted)
        v, e = boxes["verify"], boxes["escalate"]
        self._arrow(p, v.center().x(), v.bottom(), e.left(), e.center().y(), muted, elbow=True)
        rs, inj = boxes["read_seed"], boxes["inject"]  # the shortcut when no new session is required
        y = rs.bottom() + 8
        p.setPen(QPen(muted, 1, Qt.PenStyle.DashLine))
        p.drawPolyline([QPointF(rs.center().x(), rs.bottom()), QPointF(rs.center().x(), y),
                        QPointF(inj.center().x(), y), QPointF(inj.center().x(), inj.bottom() + 4)])
        p.drawText(QRectF(rs.center().x() + 4, y, inj.center().x() - rs.center().x(), 14),
                   Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop, "same session")
        for step, rect in boxes.items():
            is_current, seen = step == self.current, step in self.visited
            bad = step == "escalate"
            colour = theme.colour("error") if bad and (seen or is_current) else accent
            if is_current:
                p.setPen(QPen(colour, 2.5))
                p.setBrush(colour)
                fg = base
            elif seen:
                p.setPen(QPen(colour, 2))
                fill = QColor(colour)
                fill.setAlpha(45)
                p.setBrush(fill)
                fg = text
            else:
                p.setPen(QPen(muted, 1, Qt.PenStyle.DotLine))
                p.setBrush(Qt.BrushStyle.NoBrush)
                fg = text
            p.drawRoundedRect(rect, 5, 5)
            p.setPen(fg)
            label = LABELS[step]
            p.drawText(rect.adjusted(3, 0, -3, 0), Qt.AlignmentFlag.AlignCenter,
                       p.fontMetrics().elidedText(label, Qt.TextElideMode.ElideRight, int(rect.width()) - 6))
        p.end()

    def _arrow(self, p: QPainter, x1: float, y1: float, x2: float, y2: float, colour: QColor, *,
               elbow: bool = False) -> None:
        p.setPen(QPen(colour, 1.4))
        p.setBrush(colour)
        if elbow:
            p.drawPolyline([QPointF(x1, y1), QPointF(x1, y2), QPointF(x2, y2)])
        else:
            p.drawLine(QPointF(x1, y1), QPointF(x2, y2))
        head = QPolygonF([QPointF(x2, y2), QPointF(x2 - 6, y2 - 3.5), QPointF(x2 - 6, y2 + 3.5)])
        p.drawPolygon(head)
