"""The window's type follows its type scale (the zoom, times presenter mode's), everywhere.

Two kinds of widget keep the size their type had when they were made, whatever the window's
font becomes (Qt's font propagation passes them by):

- a widget given a font of its own (``setFont``: a bold heading, a monospace box, a larger
  claim): its point size is scaled by the change of scale, from the size it had at scale 1;
- a widget with a stylesheet (its colour, say): Qt's stylesheet style fixed its font when the
  sheet was set. It is given its parent's font, then its sheet again.

The menu bar and the status bar keep the zoom's type in presenter mode (``MainWindow``), so they
and what they hold are left alone.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QWidget

BASE_PT = "rwbBasePointSize"  # a widget's own point size at scale 1


def follow(window: QWidget, old: float, new: float, skip: tuple[QWidget, ...] = ()) -> None:
    """Bring every widget of ``window`` (but those in ``skip`` and theirs) from scale ``old`` to ``new``."""
    if old == new:
        return
    skipped = set(skip)
    for widget in window.findChildren(QWidget):  # parents before their children
        if widget.isWindow() or _inside(widget, skipped, window):
            continue
        sheet = widget.styleSheet()
        if widget.testAttribute(Qt.WidgetAttribute.WA_SetFont):
            font = QFont(widget.font())
            base = widget.property(BASE_PT)
            if base is None:
                base = font.pointSizeF() / old
                widget.setProperty(BASE_PT, base)
            if base > 0:
                font.setPointSizeF(round(float(base) * new, 2))
                widget.setFont(font)
        elif sheet and "font-size" not in sheet and widget.parentWidget() is not None:
            parent_font = widget.parentWidget().font()
            widget.setProperty(BASE_PT, parent_font.pointSizeF() / new)
            widget.setFont(parent_font)
            widget.setStyleSheet(sheet)


def remember(window: QWidget, scale: float) -> None:
    """Note the scale-1 size of every widget of ``window`` with a font of its own, before the
    next change (a widget that sets its own font on a font change would otherwise be measured
    after it did)."""
    for widget in window.findChildren(QWidget):
        if widget.testAttribute(Qt.WidgetAttribute.WA_SetFont) and widget.property(BASE_PT) is None:
            widget.setProperty(BASE_PT, widget.font().pointSizeF() / scale)


def _inside(widget: QWidget, skipped: set, window: QWidget) -> bool:
    parent = widget
    while parent is not None and parent is not window:
        if parent in skipped:
            return True
        parent = parent.parentWidget()
    return False
