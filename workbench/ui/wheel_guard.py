"""The mouse wheel never edits a value while you scroll: a wheel over a slider, a spin box or a
combo box that does not have focus scrolls the page around it, never the value (scrolling the
agent editor once moved Strictness from 0.4 to 0.16 unnoticed).

Each such widget is adopted as the application's style polishes it (:func:`install`, from
``ui/app.py``, hooks ``theme.on_polish``): it gets focus only by a click or Tab (``StrongFocus``,
so a wheel never focuses it) and the guard's event filter. A wheel event over one without focus
goes to the scroll area it sits in, which moves the page (with no scroll area around it, Qt passes
the wheel on to its parents). Once clicked, the wheel changes its value as usual.

Why a filter on each guarded widget and not one on the application: an application filter is a
call into Python for every event of every widget. Making the window took 28,000 of them, 0.2 s of
its start-up (bench/startup.py), and every paint and queued signal of a live run paid one too.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QAbstractSlider,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QScrollBar,
    QWidget,
)

GUARDED = (QAbstractSlider, QAbstractSpinBox, QComboBox)


def _is_value(widget: QObject) -> bool:
    """A widget whose value a wheel would change (a scroll bar is for scrolling: left alone)."""
    return isinstance(widget, GUARDED) and not isinstance(widget, QScrollBar)


class WheelGuard(QObject):
    def adopt(self, widget: QWidget) -> None:
        """Guard ``widget`` if a wheel would change its value (again: Qt keeps one filter)."""
        if _is_value(widget):
            widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # a wheel never gives it focus
            widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.Wheel and not watched.hasFocus():
            area = _scroll_area_around(watched)
            if area is not None:  # the page it sits on scrolls
                QApplication.sendEvent(area.viewport(), event)
            else:  # no page to scroll: left to the parents, as Qt passes on a wheel nobody took
                event.ignore()
            return True  # never the value
        return False


def _scroll_area_around(widget: QWidget) -> QAbstractScrollArea | None:
    """The nearest scroll area ``widget`` sits in (a spin box in a table's cell: the table)."""
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QAbstractScrollArea) and not _is_value(parent):
            return parent
        parent = parent.parentWidget()
    return None


_guard: WheelGuard | None = None


def install(app: QApplication) -> WheelGuard:
    """Guard every such widget of ``app``, existing and future. Idempotent."""
    from workbench.ui import theme

    global _guard
    if _guard is None:
        _guard = WheelGuard(app)
        theme.on_polish(_guard.adopt)
        for widget in app.allWidgets():  # already polished
            _guard.adopt(widget)
    return _guard


def guarded(widget: QWidget) -> bool:
    """Whether the wheel over ``widget`` leaves its value alone until it has focus."""
    return _guard is not None and _is_value(widget)


__all__ = ["GUARDED", "WheelGuard", "guarded", "install"]
