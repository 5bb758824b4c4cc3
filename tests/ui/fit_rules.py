"""The fit rules of issue 26 (UI.md), measured as ../shared/tools/window_fit.py measures them.

Copied from that tool (its whole_rows, collapsed, dock_shown, clipping and skip_for_clipping,
trimmed; the tool itself is not part of the product and the tests do not import it), so that a
test can fail on what the tool reports: a list holding at least 8 rows that shows fewer than 8
whole rows (5 at 150 %), a chart smaller than 400×300 px (400×240 at 150 %), a widget drawn
smaller than its minimum size hint.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractScrollArea,
    QAbstractSpinBox,
    QComboBox,
    QDockWidget,
    QFocusFrame,
    QHeaderView,
    QListView,
    QMenu,
    QRubberBand,
    QScrollArea,
    QScrollBar,
    QSizeGrip,
    QSizePolicy,
    QSplitter,
    QTabBar,
    QTableView,
    QTreeView,
    QWidget,
)

RULES = {1.0: {"rows": 8, "plot_h": 300, "plot_w": 400}, 1.5: {"rows": 5, "plot_h": 240, "plot_w": 400}}
SKIP_TYPES = (QScrollBar, QSizeGrip, QRubberBand, QMenu, QFocusFrame, QHeaderView)


def dock_of(widget: QWidget) -> QDockWidget | None:
    while widget is not None and not isinstance(widget, QDockWidget):
        widget = widget.parentWidget()
    return widget


def dock_shown(dock: QDockWidget) -> bool:
    """Qt keeps a dock behind a tab "visible", moved off the window's top-left corner."""
    if not dock.isVisible():
        return False
    g = dock.geometry()
    return dock.isFloating() or (g.right() >= 0 and g.bottom() >= 0)


def collapsed(widget: QWidget) -> bool:
    """Inside a splitter pane collapsed to nothing, or placed wholly outside its parent."""
    child, parent = widget, widget.parentWidget()
    while parent is not None and not child.isWindow():
        if isinstance(parent, QSplitter):
            horizontal = parent.orientation() == Qt.Orientation.Horizontal
            if (child.width() if horizontal else child.height()) == 0:
                return True
        g = child.geometry()
        if (g.x() >= parent.width() or g.y() >= parent.height() or g.x() + max(g.width(), 1) <= 0
                or g.y() + max(g.height(), 1) <= 0):
            return True
        child, parent = parent, parent.parentWidget()
    return False


def shown(widget: QWidget) -> bool:
    if not widget.isVisible() or collapsed(widget):
        return False
    dock = dock_of(widget)
    return dock is None or dock_shown(dock)


def whole_rows(view: QAbstractItemView) -> int:
    """Rows whose whole height lies inside the view's viewport."""
    height = view.viewport().height()
    model, root = view.model(), view.rootIndex()
    if model.rowCount(root) == 0 or height <= 0:
        return 0
    count = 0
    if isinstance(view, QTreeView):
        index = view.indexAt(QPoint(1, 1))
        if not index.isValid():
            index = model.index(0, 0, root)
        while index.isValid() and count < 2000:
            rect = view.visualRect(index)
            if rect.top() >= height:
                break
            if rect.height() > 0 and rect.top() >= 0 and rect.bottom() < height:
                count += 1
            index = view.indexBelow(index)
        return count
    column, first = 0, 0
    if isinstance(view, QTableView):
        columns = [c for c in range(model.columnCount(root)) if not view.isColumnHidden(c)]
        column, first = (columns[0] if columns else 0), max(view.rowAt(0), 0)
    elif isinstance(view, QListView):
        column = view.modelColumn()
        top = view.indexAt(QPoint(1, 1))
        first = top.row() if top.isValid() else 0
    for row in range(first, min(model.rowCount(root), first + 2000)):
        if isinstance(view, QTableView) and view.isRowHidden(row):
            continue
        rect = view.visualRect(model.index(row, column, root))
        if rect.top() >= height:
            break
        if rect.height() > 0 and rect.top() >= 0 and rect.bottom() < height:
            count += 1
    return count


def skip_for_clipping(widget: QWidget) -> bool:
    """Scroll machinery, a scroll area's content (it scrolls), viewports, popups, Qt's own parts."""
    if isinstance(widget, SKIP_TYPES) or widget.isWindow() or widget.objectName().startswith("qt_"):
        return True
    parent = widget.parentWidget()
    if isinstance(parent, (QAbstractSpinBox, QComboBox, QTabBar)):
        return True
    if isinstance(parent, QAbstractScrollArea) and parent.viewport() is widget:
        return True
    grand = parent.parentWidget() if parent is not None else None
    return isinstance(grand, QScrollArea) and grand.widget() is widget


def clipped(widget: QWidget) -> bool:
    """Drawn smaller than its minimum size hint (bounded by its maximum; a wrapped label's
    height for the width it has)."""
    hint = widget.minimumSizeHint()
    if not hint.isValid():
        return False
    policy, ignored = widget.sizePolicy(), QSizePolicy.Policy.Ignored
    need_w = min(hint.width(), widget.maximumWidth()) if policy.horizontalPolicy() != ignored else 0
    need_h = min(hint.height(), widget.maximumHeight()) if policy.verticalPolicy() != ignored else 0
    if need_h > 0 and widget.hasHeightForWidth():
        need_h = min(need_h, max(widget.heightForWidth(widget.width()), 0))
    return (need_w > 0 and widget.width() < need_w) or (need_h > 0 and widget.height() < need_h)


def offenders(scope: QWidget, zoom: float) -> list[str]:
    """What breaks the rules in ``scope`` as shown now, one line each."""
    import pyqtgraph

    rules = RULES[zoom]
    found, counted = [], set()
    for view in scope.findChildren(QAbstractItemView):
        if isinstance(view, QHeaderView) or not shown(view) or view.model() is None:
            continue
        if view.model().rowCount(view.rootIndex()) >= 8 and whole_rows(view) < rules["rows"]:
            counted.add(id(view))
            found.append(f"{_where(view)}: {whole_rows(view)} whole rows")
    for plot in scope.findChildren(pyqtgraph.GraphicsView):
        if shown(plot) and (plot.width() < rules["plot_w"] or plot.height() < rules["plot_h"]):
            counted.add(id(plot))
            found.append(f"{_where(plot)}: {plot.width()}x{plot.height()} px")
    for widget in [scope, *scope.findChildren(QWidget)]:
        if id(widget) not in counted and shown(widget) and not skip_for_clipping(widget) and clipped(widget):
            found.append(f"{_where(widget)}: {widget.width()}x{widget.height()} px, "
                         f"min {widget.minimumSizeHint().width()}x{widget.minimumSizeHint().height()}")
    return found


def _where(widget: QWidget) -> str:
    dock = dock_of(widget)
    title = dock.windowTitle().replace("&&", "&") if dock is not None else "window"
    name = widget.objectName() or type(widget).__name__
    return f"{title} › {name} ({type(widget).__name__})"
