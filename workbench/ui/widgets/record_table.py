"""A table of records that a user can sort, filter and copy as text.

Every table in the workbench uses this, so they all behave the same: click a header to sort,
type in the filter box to narrow the rows (any column matches), Ctrl+C or the context menu
copies the selected rows (or all visible rows) as tab-separated text with a header line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLineEdit, QTableView, QVBoxLayout, QWidget

RESIZE_ROWS = 25  # rows measured to fit the columns


class RecordModel(QAbstractTableModel):
    """Rows are dicts; columns are (key, header) pairs."""

    def __init__(self, columns: Sequence[tuple[str, str]], parent=None, *, grows: bool = False):
        super().__init__(parent)
        self._columns = list(columns)
        self._rows: list[dict] = []
        self.decorate: Callable[[dict, str, int], object] | None = None  # optional role hook
        # A list that grows while it is watched (a live run's calls): rows added or dropped at
        # its end are inserted or removed, not a reset, which would re-lay out and re-measure the
        # whole table for each new call (a 1,000-call run stalled the window for 20 ms a time).
        self.grows = grows

    def set_rows(self, rows: list[dict]) -> bool:
        """Show ``rows``. Returns whether the model was reset: a list of the same length (or,
        for a model that ``grows``, any non-empty list shown over a non-empty one) is updated
        in place (only the rows that differ are repainted), so a live refresh keeps the
        selection and scroll position and costs nothing where nothing changed."""
        rows = list(rows)
        old = len(self._rows)
        if rows and (len(rows) == old or (self.grows and old)):
            common = min(old, len(rows))
            changed = [i for i in range(common) if self._rows[i] != rows[i]]
            if len(rows) < old:
                self.beginRemoveRows(QModelIndex(), len(rows), old - 1)
                self._rows = rows
                self.endRemoveRows()
            elif len(rows) > old:
                self.beginInsertRows(QModelIndex(), old, len(rows) - 1)
                self._rows = rows
                self.endInsertRows()
            self._rows = rows
            if changed:
                self.dataChanged.emit(self.index(changed[0], 0), self.index(changed[-1], len(self._columns) - 1))
            return False
        self.beginResetModel()
        self._rows = rows
        self.endResetModel()
        return True

    def row(self, index: int) -> dict:
        return self._rows[index]

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 (Qt API)
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802 — Qt's method name
        return 0 if parent.isValid() else len(self._columns)

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        key = self._columns[index.column()][0]
        value = self._rows[index.row()].get(key)
        if role == Qt.ItemDataRole.DisplayRole:
            return "" if value is None else str(value)
        if role == Qt.ItemDataRole.UserRole:  # the sort key keeps numbers numeric
            return value if isinstance(value, (int, float)) else ("" if value is None else str(value).lower())
        if self.decorate is not None:
            return self.decorate(self._rows[index.row()], key, role)
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):  # noqa: N802 — Qt's method name
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self._columns[section][1]
        return None


class RecordTable(QWidget):
    def __init__(self, columns: Sequence[tuple[str, str]], placeholder: str = "Filter…", parent=None, *,
                 grows: bool = False):
        super().__init__(parent)
        self.model = RecordModel(columns, self, grows=grows)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.proxy.setFilterKeyColumn(-1)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)

        self.filter = QLineEdit(self)
        self.filter.setPlaceholderText(placeholder)
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self.proxy.setFilterFixedString)

        self.view = QTableView(self)
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(-1, Qt.SortOrder.AscendingOrder)  # keep the given order until asked
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setAlternatingRowColors(True)
        self.view.setWordWrap(False)
        self.view.verticalHeader().hide()
        self.view.verticalHeader().setDefaultSectionSize(self.view.fontMetrics().height() + 8)
        self.view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        # Fit columns to the first rows only: measuring a cell calls into Python for each role
        # (20 ms for 100 rows of 9 columns; "the rows in view", precision 0, was slower still).
        self.view.horizontalHeader().setResizeContentsPrecision(RESIZE_ROWS)
        self.view.horizontalHeader().setStretchLastSection(True)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        copy = QAction("Copy as text", self.view)
        copy.setShortcut(QKeySequence.StandardKey.Copy)
        copy.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        copy.triggered.connect(self.copy_to_clipboard)
        self.view.addAction(copy)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.filter)
        layout.addWidget(self.view)
        self._fit_due = False  # rows came while hidden: the columns are fitted when it shows

    def set_rows(self, rows: list[dict]) -> None:
        measured = min(self.model.rowCount(), RESIZE_ROWS)
        if self.model.set_rows(rows) or measured < min(len(rows), RESIZE_ROWS):  # new rows among the measured
            self._fit_columns()

    def _fit_columns(self) -> None:
        # A table nobody sees (a tab behind another) is measured when it shows, not at each
        # refresh of a live run: measuring calls into Python for every cell of the first rows.
        if self.isVisible():
            self._fit_due = False
            self.view.resizeColumnsToContents()
        else:
            self._fit_due = True

    def showEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        if self._fit_due:
            self._fit_columns()

    def visible_rows(self) -> int:
        return self.proxy.rowCount()

    def as_text(self) -> str:
        """Selected rows (or every visible row) as tab-separated text with a header line."""
        selected = sorted({i.row() for i in self.view.selectionModel().selectedRows()})
        rows = selected or range(self.proxy.rowCount())
        cols = range(self.proxy.columnCount())
        lines = ["\t".join(str(self.proxy.headerData(c, Qt.Orientation.Horizontal)) for c in cols)]
        for r in rows:
            lines.append("\t".join(str(self.proxy.index(r, c).data() or "") for c in cols))
        return "\n".join(lines)

    def copy_to_clipboard(self) -> None:
        QGuiApplication.clipboard().setText(self.as_text())
