"""A widget whose content changes many times a second (a live counter, a progress line), kept
from re-laying out the whole window each time.

Every ``QLabel.setText`` asks its parent's layout to recompute, and that request climbs to the
main window, which lays out every dock again: 15 to 50 ms each time on the demo's window, many
times a second during a live run. :class:`Contained` hosts the widget without a layout, so the
request stops here; it asks its own layout for room again only when the least width or the
height the widget needs has changed (a heading that wraps to a second line), which is rare.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize
from PySide6.QtWidgets import QSizePolicy, QWidget


class Contained(QWidget):
    """Holds ``child`` (re-parented here) at its full size. Use ``child`` as before; put the
    Contained in the layout instead of it."""

    def __init__(self, child: QWidget, parent: QWidget | None = None):
        super().__init__(parent)
        self.child = child
        child.setParent(self)
        self.setSizePolicy(child.sizePolicy())
        self.setObjectName(f"{child.objectName() or 'widget'}Box")
        self._room = (0, 0)
        self._take(self._needed())

    def _needed(self) -> tuple[int, int]:
        """(the least width, the height) the child asks of the layout."""
        child = self.child
        if child.isHidden():
            return 0, 0
        least = child.minimumWidth()  # a width the child's layout would grant whatever its policy
        if child.sizePolicy().horizontalPolicy() != QSizePolicy.Policy.Ignored:
            least = max(least, child.minimumSizeHint().width())
        if child.hasHeightForWidth() and self.width() > 0:
            height = child.heightForWidth(self.width())
        else:
            height = child.sizeHint().height()
        return least, min(max(height, child.minimumHeight()), child.maximumHeight())  # a fixed height holds

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(max(self.child.sizeHint().width(), self._room[0]), self._room[1])

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(*self._room)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self.child.setGeometry(self.rect())
        self._recheck()

    def event(self, event) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.LayoutRequest:  # the child changed: does it need other room?
            self._recheck()
            return True
        return super().event(event)

    def _recheck(self) -> None:
        needed = self._needed()
        if needed != self._room:
            self._take(needed)
            self.updateGeometry()  # the one case the window's layout must hear about

    def _take(self, room: tuple[int, int]) -> None:
        self._room = room
        # Set, not only hinted: a layout reads only an explicit minimum for an "Ignored" policy.
        self.setMinimumWidth(room[0])
