"""Fitting a panel to the room its dock gives.

A dock holds its panel in a scroll area (``MainWindow._scroller``): a dock smaller than the
panel's minimum size scrolls it. Two things made docks scroll at any size:

- a word-wrapped label in the panel's own layout (the base panel's summary line) makes the whole
  layout "height-for-width", and a resizable scroll area then gives the panel its *preferred*
  height (every chart and list at full size), not its minimum: :func:`unwrap_summary` puts that
  line in a box that keeps its height-for-width to itself;
- a panel that picks its layout from its own size can stick, since its minimum size may hold it
  larger than the dock: :func:`room` is the size the dock gives (the scroll area's viewport), and
  :class:`RoomWatch` reports it whenever it changes.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QSize
from PySide6.QtWidgets import QLabel, QScrollArea, QWidget


class WrappedLine(QWidget):
    """A word-wrapped label whose height follows its width without reporting height-for-width
    to the layout it sits in."""

    def __init__(self, label: QLabel, parent: QWidget):
        super().__init__(parent)
        self.label = label
        self._height = 0

    def adopt(self) -> None:
        """Hold the label (once it has left its layout). No layout of its own: a layout would
        set this box's minimum size from the label's."""
        self.label.setParent(self)
        self.label.show()

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt API)
        return False

    def _wanted(self) -> int:
        width = max(self.width(), 120)
        return self.label.heightForWidth(width) if self.label.wordWrap() else self.label.sizeHint().height()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(self.label.sizeHint().width(), self._wanted())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(0, self._wanted())

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self.label.setGeometry(self.rect())
        wanted = self._wanted()
        if wanted != self._height:
            self._height = wanted
            self.updateGeometry()


def unwrap_summary(panel: QWidget) -> WrappedLine | None:
    """The base panel's summary line (``panelSummary``) in a :class:`WrappedLine`, in place."""
    heading = panel.findChild(QLabel, "panelSummary")
    layout = panel.layout()
    header = layout.itemAt(0).layout() if layout is not None and layout.count() else None
    if heading is None or header is None or header.indexOf(heading) < 0:
        return None
    box = WrappedLine(heading, panel)
    header.replaceWidget(heading, box)
    box.adopt()
    return box


def room(panel: QWidget) -> QSize:
    """The room the dock gives ``panel``: its scroll area's viewport, or the panel's own size."""
    parent = panel.parentWidget()
    area = parent.parentWidget() if parent is not None else None
    if isinstance(area, QScrollArea) and area.widget() is panel:
        return area.viewport().size()
    return panel.size()


class RoomWatch(QObject):
    """Calls ``fit()`` when the room of ``panel`` may have changed: the panel resized or shown,
    or (in a dock) the scroll area's viewport resized, also while the panel keeps its size."""

    def __init__(self, panel: QWidget, fit: Callable[[], None]):
        super().__init__(panel)
        self.panel, self.fit = panel, fit
        self._viewport: QWidget | None = None
        panel.installEventFilter(self)
        self._follow_parent()

    def _follow_parent(self) -> None:
        parent = self.panel.parentWidget()
        if parent is self._viewport:
            return
        if self._viewport is not None:
            self._viewport.removeEventFilter(self)
        self._viewport = parent
        if parent is not None:
            parent.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        kind = event.type()
        if watched is self.panel:
            if kind == QEvent.Type.ParentChange:
                self._follow_parent()
                self.fit()
            elif kind in (QEvent.Type.Resize, QEvent.Type.Show):
                self.fit()
        elif watched is self._viewport and kind == QEvent.Type.Resize:
            self.fit()
        return False
