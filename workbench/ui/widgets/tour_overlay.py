"""The guided tour's highlight: the window dimmed but for the target, which is outlined.

A transparent child of the main window over all of it, raised above the docks. It ignores the
mouse (the panels stay usable under it) and reads its colours from the current theme when it
paints, so a theme change needs only a repaint: the outline is the theme's accent colour over a
halo of the opposite brightness, so it reads on light and dark panels alike.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QWidget

from workbench.ui import theme

DIM = {"light": QColor(0, 0, 0, 80), "dark": QColor(0, 0, 0, 130)}
HALO = {"light": QColor(255, 255, 255, 230), "dark": QColor(0, 0, 0, 230)}  # behind the outline


class TourOverlay(QWidget):
    """Dims the window but for ``highlight`` (window coordinates) and outlines it."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        self.setObjectName("tourOverlay")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground, True)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.highlight: QRect | None = None

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt API)
        name = theme.current_theme()
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        dim = QPainterPath()
        dim.addRect(QRectF(self.rect()))
        if self.highlight is not None:
            hole = QPainterPath()
            hole.addRoundedRect(QRectF(self.highlight), 6, 6)
            dim = dim.subtracted(hole)
        painter.fillPath(dim, DIM.get(name, DIM["light"]))
        if self.highlight is not None:
            rect = QRectF(self.highlight).adjusted(1.5, 1.5, -1.5, -1.5)
            painter.setPen(QPen(HALO.get(name, HALO["light"]), 5))
            painter.drawRoundedRect(rect, 6, 6)
            painter.setPen(QPen(theme.colour("accent", name), 3))
            painter.drawRoundedRect(rect, 6, 6)
        painter.end()
