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

What a panel never gives up, whatever its dock's size, is its lists' rows and its charts' size
(UI.md: 8 rows and 300 px at 1280×720; 5 rows and 240 px at 150 %): :class:`RowFloor` keeps each
list's minimum height at the rows it should show, and the charts hold ``plots.style.PLOT_MIN``. A
dock with less room scrolls its panel (or the panel folds a side pane away); nothing is cut.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QScrollArea,
    QSplitter,
    QTableView,
    QTreeView,
    QWidget,
)

from workbench.ui import theme

ROWS = 8  # rows a list shows, when it holds them, at the normal type size (UI.md)
LEAST_ROWS = 5  # ... and at any zoom (the same room holds fewer rows of larger type)
FEW_ROWS = 3  # the room a short or empty list keeps


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
        self._follow()

    def event(self, event) -> bool:
        # The label's new text (or type size) asks its parent, this box, to lay out again.
        if event.type() == QEvent.Type.LayoutRequest:
            self._follow()
        return super().event(event)

    def _follow(self) -> None:
        wanted = self._wanted()
        if wanted != self._height:
            self._height = wanted
            self.updateGeometry()


def wrapped(label: QLabel, parent: QWidget) -> WrappedLine:
    """``label`` (word-wrapped, not yet in a layout) in a :class:`WrappedLine`, whose least
    height is the label's at the width it has: in a splitter, which reads its panes' least sizes
    and not their height for width, the lines of a wrapped label then take room, not the chart's."""
    box = WrappedLine(label, parent)
    box.adopt()
    return box


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
            elif kind in (QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.FontChange):
                self.fit()
        elif watched is self._viewport and kind == QEvent.Type.Resize:
            self.fit()
        return False


def rows_to_show(zoom: float) -> int:
    """The rows a list holding enough of them shows: ROWS at the normal size, fewer of larger
    type (the same height), never fewer than LEAST_ROWS."""
    return max(LEAST_ROWS, int(ROWS / max(zoom, 1e-6) + 1e-9))


class RowFloor(QObject):
    """Keeps ``view``'s minimum height at the whole rows it should show: as many as it holds, up to
    :func:`rows_to_show` (FEW_ROWS at least), with its header, frame and a horizontal scroll bar.
    It follows the rows (their number and height) and the type size."""

    def __init__(self, view: QAbstractItemView, least: int = FEW_ROWS):
        super().__init__(view)
        self.view, self.least = view, least
        self._model = None
        self._line = view.fontMetrics().height()  # the type the rows were sized for
        view.installEventFilter(self)
        if isinstance(view, QTableView):
            header = view.verticalHeader()
            # Made before a zoom and first shown after it: its rows hold the type it has now.
            header.setDefaultSectionSize(max(header.defaultSectionSize(), self._line + 8))
            header.sectionResized.connect(self._on_rows_changed)
        self._follow_model()
        self.update()

    def _follow_model(self) -> None:
        model = self.view.model()
        if model is self._model:
            return
        self._model = model
        if model is not None:
            for signal in (model.rowsInserted, model.rowsRemoved, model.modelReset, model.layoutChanged):
                signal.connect(self._on_rows_changed)

    def _on_rows_changed(self, *_args) -> None:
        try:
            self.update()
        except RuntimeError:  # the view is being destroyed (its model empties as it goes)
            pass

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange, QEvent.Type.Show):
            self._follow_model()
            self._follow_type()
            self.update()
        return False

    def _follow_type(self) -> None:
        """A table's rows and columns grow and shrink with its type (zoom, presenter mode): Qt
        keeps the sizes they were given, and larger type would be cut in them (the columns keep
        the proportions the user gave them)."""
        line = self.view.fontMetrics().height()
        ratio, self._line = line / max(self._line, 1), line
        if ratio == 1.0:
            return
        if isinstance(self.view, QTableView):
            rows = self.view.verticalHeader()
            rows.setDefaultSectionSize(round(rows.defaultSectionSize() * ratio))
        if isinstance(self.view, QTableView):
            header = self.view.horizontalHeader()
        elif isinstance(self.view, QTreeView):
            header = self.view.header()
        else:
            return
        last = header.count() - 1
        for i in range(header.count()):
            if header.isSectionHidden(i) or (i == last and header.stretchLastSection()):
                continue
            if header.sectionResizeMode(i) in (QHeaderView.ResizeMode.Interactive, QHeaderView.ResizeMode.Fixed):
                header.resizeSection(i, round(header.sectionSize(i) * ratio))

    def wanted(self) -> int:
        model = self.view.model()
        count = model.rowCount(self.view.rootIndex()) if model is not None else 0
        return max(min(count, rows_to_show(theme.current_zoom())), self.least)

    def update(self) -> None:
        view = self.view
        rows = self.wanted()
        height = self._row_height(rows) * rows + 2 * view.frameWidth() + 2
        header = getattr(view, "horizontalHeader", None) or getattr(view, "header", None)
        if header is not None and not header().isHidden():
            height += header().sizeHint().height()
        if view.horizontalScrollBarPolicy() != Qt.ScrollBarPolicy.ScrollBarAlwaysOff:
            height += view.horizontalScrollBar().sizeHint().height()
        if height != view.minimumHeight():
            view.setMinimumHeight(height)
            # A splitter keeps the sizes it has until it is resized, even below its panes' new
            # minimums (larger type while hidden): it shares its room again now.
            parent = view.parentWidget()
            while parent is not None and not parent.isWindow():
                if isinstance(parent, QSplitter):
                    parent.refresh()
                parent = parent.parentWidget()

    def _row_height(self, rows: int) -> int:
        view, model = self.view, self.view.model()
        count = model.rowCount(view.rootIndex()) if model is not None else 0
        if isinstance(view, QTableView):
            heights = [view.verticalHeader().sectionSize(r) for r in range(min(count, rows))]
            return max(heights + [view.verticalHeader().defaultSectionSize()])
        if count and view.sizeHintForRow(0) > 0:
            return max(view.sizeHintForRow(r) for r in range(min(count, rows)))
        return view.fontMetrics().height() + 8


def hold_rows(root: QWidget) -> list[RowFloor]:
    """A :class:`RowFloor` for every list inside ``root`` that has none yet (a drop-down's popup
    list aside: it is a window of its own)."""
    floors = []
    for view in root.findChildren(QAbstractItemView):
        if isinstance(view, QHeaderView) or view.window() is not root.window() or view.property("rowFloor"):
            continue
        view.setProperty("rowFloor", True)
        floors.append(RowFloor(view))
    return floors
