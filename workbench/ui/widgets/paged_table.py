"""A table over a very long list (100,000+ rows) that only ever holds the rows it has shown.

``RecordTable`` takes every row up front and sorts and filters them in a proxy: fine for a few
hundred rows, not for a run's 200,000 calls. Here the database does the work instead:

- the model holds the windows loaded so far; ``canFetchMore``/``fetchMore`` (driven by the view
  as the user scrolls) read the next ``window`` rows off the GUI thread and append them with
  ``beginInsertRows``, so showing 40 rows never builds 60,000 objects;
- a header click or the filter box makes a new ``PageQuery`` that the source runs (ORDER BY,
  LIKE), and the first window of the answer replaces the rows (a model reset). The old rows
  stay until then, so the table never goes blank while the database is locked;
- every read goes through one ``Reader``: a newer query drops any late window of an older one,
  and a burst of requests costs at most two reads;
- ``refresh()`` (after a change notification) re-reads the loaded range in place, keeping the
  scroll position and, given ``row_key``, the selected records and the top visible record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from PySide6.QtCore import QAbstractTableModel, QItemSelection, QItemSelectionModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from workbench.services.reads import Page, PageQuery, Reader, RowSource, read_page
from workbench.services.workers import JobError, WorkerPool
from workbench.ui.widgets.updating_mark import UpdatingMark

_NO_INDEX = QModelIndex()
MAX_COLUMN_PX = 360  # a fitted column is never wider: long text is elided, its tooltip shows it
FIT_ROWS = 25  # rows measured to fit the columns (each measured cell calls into Python)


class PagedTableModel(QAbstractTableModel):
    """Columns are (key, header) pairs. Rows are tuples (in column order), dicts (by column key)
    or objects such as dataclasses (attributes named by the column keys)."""

    first_rows_shown = Signal()  # once per query, when its first window is in the model
    total_changed = Signal()  # the matching-row count (or the loaded count) changed
    refreshing = Signal()  # a refresh is about to replace the loaded rows in place
    refreshed = Signal()
    failed = Signal(str, str)  # message, details; the rows shown stay

    def __init__(self, columns: Sequence[tuple[str, str]], pool: WorkerPool, *, window: int = 200,
                 busy_delay_ms: int = 250, name: str = "paged read", parent=None):
        super().__init__(parent)
        self._columns = list(columns)
        self.window = window
        # A list's windows go before other reads waiting for a thread: they are what the user
        # scrolls, and what a project shows first.
        self.reader = Reader(pool, self, name=name, busy_delay_ms=busy_delay_ms, priority=1)
        self.decorate: Callable[[object, str, int], object] | None = None  # like RecordModel's
        self._source: RowSource | None = None
        self._cleanup: Callable[[], None] | None = None
        self._query = PageQuery()
        self._serial = 0  # bumped by every new query or source
        self._shown_serial = -1  # the query whose rows the model holds
        self._rows: list = []
        self._total: int | None = None
        self._exhausted = True
        self._stalled = False  # the last read failed: no fetchMore until a refresh or new query
        # The view asked for more while a refresh ran: an in-place refresh changes no geometry,
        # so the view would not ask again and a user at the bottom would be stuck.
        self._more_wanted = False

    # ----- state -------------------------------------------------------------------------
    @property
    def query(self) -> PageQuery:
        return self._query

    @property
    def total(self) -> int | None:
        return self._total

    @property
    def rows_loaded(self) -> int:
        return len(self._rows)

    def row(self, index: int) -> tuple | dict:
        return self._rows[index]

    def key_of(self, column: int) -> str:
        return self._columns[column][0]

    # ----- commands ----------------------------------------------------------------------
    def set_source(self, source: RowSource | None, *, query: PageQuery | None = None,
                   cleanup: Callable[[], None] | None = None) -> None:
        """Show ``source`` (None: nothing). ``cleanup`` runs on the worker thread after each
        read, e.g. ``store.close_connection``."""
        self._source, self._cleanup = source, cleanup
        self._query = query or self._query
        self._serial += 1
        if source is None:
            self.reader.cancel()
            self.beginResetModel()
            self._rows, self._total, self._exhausted, self._shown_serial = [], None, True, self._serial
            self.endResetModel()
            self.total_changed.emit()
        else:
            self._load_from_top()

    def set_query(self, query: PageQuery) -> None:
        if query != self._query:
            self._query = query
            self._serial += 1
            self._load_from_top()

    def refresh(self) -> None:
        """Re-read the loaded range (at least one window) of the current query."""
        self._load_from_top()

    # ----- Qt model API ------------------------------------------------------------------
    def rowCount(self, parent=_NO_INDEX) -> int:  # noqa: N802 (Qt API)
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=_NO_INDEX) -> int:  # noqa: N802 — Qt's method name
        return 0 if parent.isValid() else len(self._columns)

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row = self._rows[index.row()]
        key = self._columns[index.column()][0]
        if role == Qt.ItemDataRole.DisplayRole:
            if isinstance(row, dict):
                value = row.get(key)
            else:
                value = row[index.column()] if isinstance(row, tuple) else getattr(row, key, None)
            return "" if value is None else str(value)
        if self.decorate is not None:
            return self.decorate(row, key, role)
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):  # noqa: N802 — Qt's method name
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self._columns[section][1]
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Server-side: the source re-runs the query in the new order (column -1: natural)."""
        if 0 <= column < len(self._columns):
            key, descending = self._columns[column][0], order == Qt.SortOrder.DescendingOrder
        else:
            key, descending = None, False
        self.set_query(replace(self._query, sort_key=key, descending=descending))

    def canFetchMore(self, parent=_NO_INDEX) -> bool:  # noqa: N802 — Qt's method name
        if parent.isValid() or self._source is None or self._stalled:
            return False
        if self._shown_serial != self._serial or self._exhausted:
            return False
        return self._total is None or len(self._rows) < self._total

    def fetchMore(self, parent=_NO_INDEX) -> None:  # noqa: N802 — Qt's method name
        """Ask for the next window; never blocks. While a read runs, remember the wish."""
        if not self.canFetchMore(parent):
            return
        if self.reader.loading:
            self._more_wanted = True
            return
        source, query, serial, offset = self._source, self._query, self._serial, len(self._rows)
        self.reader.load(lambda cancel: read_page(source, query, offset, self.window, cancel, count=False),
                         lambda page: self._on_window(serial, page),
                         on_failed=self._on_failed, cleanup=self._cleanup)

    # ----- internals ---------------------------------------------------------------------
    def _load_from_top(self) -> None:
        if self._source is None:
            return
        self._stalled = False
        source, query, serial = self._source, self._query, self._serial
        limit = max(len(self._rows), self.window) if self._shown_serial == serial else self.window
        self.reader.load(lambda cancel: read_page(source, query, 0, limit, cancel, count=True),
                         lambda page: self._on_first(serial, page),
                         on_failed=self._on_failed, cleanup=self._cleanup)

    def _on_first(self, serial: int, page: Page | None) -> None:
        if page is None or serial != self._serial:
            return
        self._exhausted, self._total = page.exhausted, page.total
        if serial != self._shown_serial:  # a new query: its first window replaces the rows
            self.beginResetModel()
            self._rows, self._shown_serial = list(page.rows), serial
            self.endResetModel()
            self._more_wanted = False
            self.total_changed.emit()
            self.first_rows_shown.emit()
        else:
            self.refreshing.emit()
            self._replace_in_place(page.rows)
            self.total_changed.emit()
            self.refreshed.emit()
            if self._more_wanted:
                self._more_wanted = False
                self.fetchMore(_NO_INDEX)

    def _replace_in_place(self, rows: list) -> None:
        """Same positions, new contents: views keep their scroll position and selection."""
        old, new = len(self._rows), len(rows)
        if new < old:
            self.beginRemoveRows(_NO_INDEX, new, old - 1)
            del self._rows[new:]
            self.endRemoveRows()
        common = min(old, new)
        self._rows[:common] = rows[:common]
        if common:
            self.dataChanged.emit(self.index(0, 0), self.index(common - 1, len(self._columns) - 1))
        if new > old:
            self.beginInsertRows(_NO_INDEX, old, new - 1)
            self._rows.extend(rows[old:])
            self.endInsertRows()

    def _on_window(self, serial: int, page: Page | None) -> None:
        if page is None or serial != self._shown_serial or page.offset != len(self._rows):
            return  # a window of an older query or range: never applied
        if page.rows:
            self.beginInsertRows(_NO_INDEX, len(self._rows), len(self._rows) + len(page.rows) - 1)
            self._rows.extend(page.rows)
            self.endInsertRows()
        self._exhausted = page.exhausted
        if page.exhausted or (self._total or 0) < len(self._rows):  # the list changed meanwhile
            self._total = len(self._rows)
        self._more_wanted = False  # the inserted rows make the view check again itself
        self.total_changed.emit()

    def _on_failed(self, error: JobError) -> None:
        self._stalled = True
        self._more_wanted = False
        self.failed.emit(error.message, error.details)


class PagedTable(QWidget):
    """A filter box, a "1,234 of 200,000 rows" count and a quiet updating mark over the table."""

    def __init__(self, columns: Sequence[tuple[str, str]], pool: WorkerPool, *,
                 row_key: Callable[[object], object] | None = None, window: int = 200,
                 placeholder: str = "Filter…", busy_delay_ms: int = 250, name: str = "paged read",
                 parent=None):
        super().__init__(parent)
        self.row_key = row_key
        self.model = PagedTableModel(columns, pool, window=window, busy_delay_ms=busy_delay_ms, name=name,
                                     parent=self)
        self.filter = QLineEdit(self)
        self.filter.setPlaceholderText(placeholder)
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._on_filter_changed)
        self.count_label = QLabel(self)
        self.count_label.setObjectName("rowCount")
        self.mark = UpdatingMark(self)
        self.mark.watch(self.model.reader)

        self.view = QTableView(self)
        self.view.setModel(self.model)
        header = self.view.horizontalHeader()
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # natural order until asked
        self.view.setSortingEnabled(True)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setAlternatingRowColors(True)
        self.view.setWordWrap(False)
        self.view.verticalHeader().hide()
        self.view.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.view.verticalHeader().setDefaultSectionSize(self.view.fontMetrics().height() + 8)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        copy = QAction("Copy as text", self.view)
        copy.setShortcut(QKeySequence.StandardKey.Copy)
        copy.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        copy.triggered.connect(self.copy_to_clipboard)
        self.view.addAction(copy)

        top = QHBoxLayout()
        top.addWidget(self.filter, 1)
        top.addWidget(self.count_label)
        top.addWidget(self.mark)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.view)

        self.model.total_changed.connect(self._on_total_changed)
        self.model.first_rows_shown.connect(self._fit_columns)
        self.model.refreshing.connect(self._on_refreshing)
        self.model.refreshed.connect(self._on_refreshed)
        self.model.failed.connect(self._on_failed)
        self._kept: tuple[set, object] = (set(), None)
        self._fitted = False  # columns are fitted to the first rows of a source, once

    @property
    def rows_loaded(self) -> int:
        return self.model.rows_loaded

    def set_source(self, source: RowSource | None, *, query: PageQuery | None = None,
                   cleanup: Callable[[], None] | None = None) -> None:
        self._fitted = False
        self.model.set_source(source, query=query, cleanup=cleanup)
        q = self.model.query  # show the query it runs; the no-op set_query calls are dropped
        self.filter.setText(q.filter_text)
        keys = [self.model.key_of(c) for c in range(self.model.columnCount())]
        column = keys.index(q.sort_key) if q.sort_key in keys else -1
        order = Qt.SortOrder.DescendingOrder if q.descending else Qt.SortOrder.AscendingOrder
        self.view.horizontalHeader().setSortIndicator(column, order)

    def refresh(self) -> None:
        self.model.refresh()

    def _fit_columns(self) -> None:
        """Fit the columns to the first rows of a new source (not to later queries: a column
        the user widened stays so), no column wider than ``MAX_COLUMN_PX``."""
        if self._fitted or self.model.rowCount() == 0:
            return
        self._fitted = True
        # Measured here from the texts, not with resizeColumnsToContents: Qt's measure asks
        # Python for every role of every cell, 20-30 ms that the window would wait.
        metrics, header = self.view.fontMetrics(), self.view.horizontalHeader()
        rows = range(min(FIT_ROWS, self.model.rowCount()))
        pad = 2 * self.view.style().pixelMetric(self.view.style().PixelMetric.PM_FocusFrameHMargin) + 16
        for column in range(self.model.columnCount() - 1):  # the last one stretches
            texts = [str(self.model.headerData(column, Qt.Orientation.Horizontal))]
            texts += [self.model.data(self.model.index(r, column)) or "" for r in rows]
            width = max(metrics.horizontalAdvance(t) for t in texts) + pad
            header.resizeSection(column, min(width, MAX_COLUMN_PX))

    def shutdown(self) -> None:
        """Cancel reads (the panel is closing); the pool waits for the running one."""
        self.model.reader.shutdown()

    def as_text(self) -> str:
        """Selected rows (or every loaded row) as tab-separated text with a header line."""
        selected = sorted({i.row() for i in self.view.selectionModel().selectedRows()})
        rows = selected or range(self.model.rowCount())
        cols = range(self.model.columnCount())
        lines = ["\t".join(str(self.model.headerData(c, Qt.Orientation.Horizontal)) for c in cols)]
        lines += ["\t".join(self.model.index(r, c).data() or "" for c in cols) for r in rows]
        return "\n".join(lines)

    def copy_to_clipboard(self) -> None:
        QGuiApplication.clipboard().setText(self.as_text())

    # ----- slots -------------------------------------------------------------------------
    def _on_filter_changed(self, text: str) -> None:
        self.model.set_query(replace(self.model.query, filter_text=text.strip()))

    def _on_total_changed(self) -> None:
        loaded, total = self.model.rows_loaded, self.model.total
        if total is None:
            self.count_label.setText(f"{loaded:,} rows" if loaded else "")
        elif loaded >= total:
            self.count_label.setText(f"{total:,} row{'s' if total != 1 else ''}")
        else:
            self.count_label.setText(f"{loaded:,} of {total:,} rows")
        self.mark.clear_failure()

    def _on_failed(self, message: str, _details: str) -> None:
        self.mark.show_failure(message)

    def _on_refreshing(self) -> None:
        if self.row_key is None:
            return
        model, key = self.model, self.row_key
        selected = {key(model.row(i.row())) for i in self.view.selectionModel().selectedRows()}
        top = self.view.rowAt(0)
        self._kept = (selected, key(model.row(top)) if top >= 0 else None)

    def _on_refreshed(self) -> None:
        selected, top_key = self._kept
        self._kept = (set(), None)
        if self.row_key is None or (not selected and top_key is None):
            return
        where = {self.row_key(self.model.row(i)): i for i in range(self.model.rowCount())}
        selection = QItemSelection()
        last = self.model.columnCount() - 1
        for k in selected:
            if k in where:
                selection.select(self.model.index(where[k], 0), self.model.index(where[k], last))
        flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        self.view.selectionModel().select(selection, flags)
        if top_key in where:
            self.view.scrollTo(self.model.index(where[top_key], 0), QAbstractItemView.ScrollHint.PositionAtTop)
