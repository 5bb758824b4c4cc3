"""The paged table over 100,000 fake rows: it holds only the windows it showed, sorts and filters
in the source, drops late windows of an older query, keeps its rows (and the GUI responsive)
while the source is blocked as by a writer's lock, and reports failures without losing rows.
Blocking uses threading.Events; every wait has a timeout; no wall-clock assertions."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from PySide6.QtCore import QModelIndex, QPoint, Qt, QTimer

from tests.ui.conftest import WAIT_MS
from workbench.services.reads import PageQuery
from workbench.services.workers import WorkerPool
from workbench.ui.widgets.paged_table import PagedTable, PagedTableModel

COLUMNS = [("id", "ID"), ("name", "Name"), ("group", "Group")]
WINDOW = 200
N = 100_000
BLOCK_S = 10


class FakeSource:
    """An in-memory list that answers like the SQL side: ORDER BY, LIKE, LIMIT/OFFSET.

    ``gate`` (set by default) blocks every read while cleared, as a writer's lock would.
    ``fail`` makes the next reads raise like a project that stayed locked."""

    def __init__(self, n: int = N):
        self.rows = [(i, f"item {i:06d}", f"g{i % 7}") for i in range(n)]
        self.calls: list[tuple] = []
        self.gate = threading.Event()
        self.gate.set()
        self.fail: Exception | None = None
        self.on_main: list[bool] = []
        self._sorted: dict[PageQuery, list] = {}
        self._lock = threading.Lock()

    def _select(self, query: PageQuery) -> list:
        with self._lock:
            if query not in self._sorted:
                rows = [r for r in self.rows if query.filter_text in r[1]]
                if query.sort_key:
                    col = [k for k, _ in COLUMNS].index(query.sort_key)
                    rows.sort(key=lambda r: r[col], reverse=query.descending)
                elif query.descending:
                    rows.reverse()
                self._sorted[query] = rows
            return self._sorted[query]

    def _enter(self, call: tuple) -> None:
        self.calls.append(call)
        self.on_main.append(threading.current_thread() is threading.main_thread())
        self.gate.wait(BLOCK_S)
        if self.fail is not None:
            raise self.fail

    def count(self, query):
        self._enter(("count", query))
        return len(self._select(query))

    def fetch(self, query, offset, limit):
        self._enter(("fetch", query, offset, limit))
        return self._select(query)[offset:offset + limit]

    def fetches(self) -> list[tuple]:
        return [c for c in self.calls if c[0] == "fetch"]

    def changed(self) -> None:
        self._sorted.clear()


@pytest.fixture
def pool(qapp):
    pool = WorkerPool(max_threads=4)
    yield pool
    assert pool.shutdown(WAIT_MS)


@pytest.fixture
def source():
    src = FakeSource()
    yield src
    src.gate.set()  # no worker outlives the test


@pytest.fixture
def model(qtbot, pool):
    model = PagedTableModel(COLUMNS, pool, window=WINDOW, busy_delay_ms=0)
    yield model
    model.reader.shutdown()


@pytest.fixture
def table(qtbot, pool):
    table = PagedTable(COLUMNS, pool, window=WINDOW, row_key=lambda r: r[0], busy_delay_ms=0)
    qtbot.addWidget(table)
    table.resize(600, 400)
    table.show()
    yield table
    table.shutdown()


def idle(model):
    return lambda: not model.reader.loading


def show_first(qtbot, target, source, query=None):
    model = target.model if isinstance(target, PagedTable) else target
    with qtbot.waitSignal(model.first_rows_shown, timeout=WAIT_MS):
        target.set_source(source, query=query)
    qtbot.waitUntil(idle(model), timeout=WAIT_MS)


def scroll_to_bottom(qtbot, table):
    bar = table.view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=WAIT_MS)  # the view has laid the rows out
    bar.setValue(bar.maximum())


def test_only_the_first_window_is_loaded_and_fetch_more_adds_the_next(qtbot, model, source):
    show_first(qtbot, model, source)
    assert model.rowCount() == WINDOW <= WINDOW and model.total == N
    assert source.fetches() == [("fetch", PageQuery(), 0, WINDOW)]
    assert model.canFetchMore(QModelIndex())

    model.fetchMore(QModelIndex())
    model.fetchMore(QModelIndex())  # asked twice while one read runs: one window, not two
    qtbot.waitUntil(lambda: model.rowCount() == 2 * WINDOW, timeout=WAIT_MS)
    qtbot.waitUntil(idle(model), timeout=WAIT_MS)
    assert model.rowCount() == 2 * WINDOW
    assert model.index(WINDOW, 0).data() == str(WINDOW)
    # It asked the source for exactly the rows it holds, and counted once.
    assert [c[2:] for c in source.fetches()] == [(0, WINDOW), (WINDOW, WINDOW)]
    assert sum(1 for c in source.calls if c[0] == "count") == 1


def test_the_view_fetches_the_next_window_when_scrolled_to_the_bottom(qtbot, table, source):
    show_first(qtbot, table, source)
    qtbot.waitUntil(lambda: table.view.verticalScrollBar().maximum() > 0, timeout=WAIT_MS)
    qtbot.wait(50)  # let the view's fetch-more check after its layout run: it must not need more
    assert table.rows_loaded == WINDOW
    assert table.count_label.text() == f"{WINDOW:,} of {N:,} rows"
    scroll_to_bottom(qtbot, table)
    qtbot.waitUntil(lambda: table.rows_loaded == 2 * WINDOW, timeout=WAIT_MS)
    qtbot.waitUntil(idle(table.model), timeout=WAIT_MS)
    assert table.count_label.text() == f"{2 * WINDOW:,} of {N:,} rows"
    assert [c[2:] for c in source.fetches()] == [(0, WINDOW), (WINDOW, WINDOW)]


def test_a_short_list_is_counted_without_a_count_query(qtbot, model):
    small = FakeSource(30)
    show_first(qtbot, model, small)
    assert model.rowCount() == 30 and model.total == 30
    assert not model.canFetchMore(QModelIndex())
    assert [c[0] for c in small.calls] == ["fetch"]


def test_clicking_a_header_sorts_in_the_source(qtbot, table, source):
    show_first(qtbot, table, source)
    header = table.view.horizontalHeader()
    pos = QPoint(header.sectionViewportPosition(0) + 5, header.height() // 2)
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    qtbot.waitUntil(lambda: table.model.query.sort_key == "id", timeout=WAIT_MS)
    qtbot.waitUntil(idle(table.model), timeout=WAIT_MS)
    first = table.model.query
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=pos)  # again: the other way
    qtbot.waitUntil(lambda: table.model.query != first, timeout=WAIT_MS)
    qtbot.waitUntil(idle(table.model), timeout=WAIT_MS)
    queries = [c[1] for c in source.fetches()]
    assert {(q.sort_key, q.descending) for q in queries[1:]} == {("id", False), ("id", True)}
    want = N - 1 if table.model.query.descending else 0
    assert table.model.index(0, 0).data() == str(want)
    assert table.rows_loaded == WINDOW  # a reset, not rows sorted in memory


def test_typing_a_filter_queries_the_source(qtbot, table, source):
    show_first(qtbot, table, source)
    qtbot.keyClicks(table.filter, "00042")
    qtbot.waitUntil(lambda: table.model.query.filter_text == "00042", timeout=WAIT_MS)
    qtbot.waitUntil(idle(table.model), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: table.model.total == 11, timeout=WAIT_MS)  # 000042 and 000420..000429
    assert source.fetches()[-1][1].filter_text == "00042"
    assert all("00042" in table.model.row(i)[1] for i in range(table.rows_loaded))
    assert len(source.fetches()) <= 3  # the first window, then the burst of five keys coalesced
    assert table.count_label.text() == "11 rows"


def test_late_windows_of_an_older_query_are_dropped(qtbot, model, source):
    show_first(qtbot, model, source)
    resets: list[int] = []
    model.modelReset.connect(lambda: resets.append(model.rowCount()))
    source.gate.clear()
    model.fetchMore(QModelIndex())  # window 2 of the natural order, blocked
    qtbot.waitUntil(lambda: len(source.fetches()) == 2, timeout=WAIT_MS)
    model.sort(0, Qt.SortOrder.DescendingOrder)  # a new query while the old window is out
    model.set_query(PageQuery("id", True, "9"))
    source.gate.set()
    qtbot.waitUntil(lambda: model.query.filter_text == "9" and model.total is not None
                    and model.row(0)[0] == 99999, timeout=WAIT_MS)
    qtbot.waitUntil(idle(model), timeout=WAIT_MS)
    assert model.rowCount() == WINDOW  # the old window was never appended
    assert resets == [WINDOW]  # one reset: the newest query's first window
    assert all("9" in model.row(i)[1] for i in range(model.rowCount()))
    assert [c[1] for c in source.fetches()][-1] == PageQuery("id", True, "9")
    assert len(source.fetches()) == 3  # the intermediate sort never ran


def test_reads_never_run_on_the_gui_thread(qtbot, table, source):
    show_first(qtbot, table, source)
    scroll_to_bottom(qtbot, table)
    qtbot.waitUntil(lambda: table.rows_loaded == 2 * WINDOW, timeout=WAIT_MS)
    table.refresh()
    qtbot.waitUntil(idle(table.model), timeout=WAIT_MS)
    assert len(source.on_main) >= 4 and not any(source.on_main)


def test_a_blocked_source_keeps_the_gui_responsive_and_the_rows(qtbot, table, source):
    show_first(qtbot, table, source)
    assert not table.mark.isVisible()
    before = [table.model.row(i) for i in range(table.rows_loaded)]
    ticks: list[int] = []
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start()
    try:
        source.gate.clear()  # a writer holds the lock
        table.refresh()
        qtbot.waitUntil(lambda: table.mark.isVisible() and len(ticks) >= 10, timeout=WAIT_MS)
        assert table.mark.text() == "updating…"
        assert [table.model.row(i) for i in range(table.rows_loaded)] == before
        source.gate.set()  # the writer commits
        qtbot.waitUntil(lambda: not table.mark.isVisible(), timeout=WAIT_MS)
        qtbot.waitUntil(idle(table.model), timeout=WAIT_MS)
    finally:
        timer.stop()
    assert table.rows_loaded == WINDOW


def test_a_failure_is_reported_and_the_rows_stay(qtbot, table, source):
    show_first(qtbot, table, source)
    before = [table.model.row(i) for i in range(table.rows_loaded)]
    source.fail = sqlite3.OperationalError("database is locked")
    with qtbot.waitSignal(table.model.failed, timeout=WAIT_MS) as failed:
        table.refresh()
    assert failed.args[0] == "database is locked"
    assert [table.model.row(i) for i in range(table.rows_loaded)] == before
    assert table.mark.isVisible() and table.mark.text().startswith("⚠")
    assert "database is locked" in table.mark.toolTip()
    assert not table.model.canFetchMore(QModelIndex())  # no retry loop on a failing source
    source.fail = None
    table.refresh()
    qtbot.waitUntil(lambda: not table.mark.isVisible(), timeout=WAIT_MS)
    qtbot.waitUntil(idle(table.model), timeout=WAIT_MS)
    assert table.model.canFetchMore(QModelIndex())


def test_refresh_rereads_the_loaded_range_and_keeps_the_selected_record(qtbot, table, source):
    show_first(qtbot, table, source)
    table.model.fetchMore(QModelIndex())
    qtbot.waitUntil(lambda: table.rows_loaded == 2 * WINDOW, timeout=WAIT_MS)
    qtbot.waitUntil(idle(table.model), timeout=WAIT_MS)
    table.view.selectRow(5)
    table.view.scrollTo(table.model.index(100, 0), table.view.ScrollHint.PositionAtTop)
    top = table.view.rowAt(0)
    resets: list[int] = []
    table.model.modelReset.connect(lambda: resets.append(1))

    source.rows[:0] = [(-i, f"new {i}", "g") for i in range(1, 4)]  # three rows arrive on top
    source.changed()
    with qtbot.waitSignal(table.model.refreshed, timeout=WAIT_MS):
        table.refresh()
    qtbot.waitUntil(idle(table.model), timeout=WAIT_MS)
    assert source.fetches()[-1][2:] == (0, 2 * WINDOW)  # the loaded range, in one read
    assert table.rows_loaded == 2 * WINDOW and resets == []
    selected = [i.row() for i in table.view.selectionModel().selectedRows()]
    assert [table.model.row(r)[0] for r in selected] == [5]  # the same record, now at row 8
    assert table.model.row(table.view.rowAt(0))[0] == top  # the same record stays on top
    assert table.count_label.text() == f"{2 * WINDOW:,} of {N + 3:,} rows"


def test_copy_selected_rows_as_text(qtbot, table, source):
    show_first(qtbot, table, source)
    table.view.selectRow(1)
    assert table.as_text().splitlines() == ["ID\tName\tGroup", "1\titem 000001\tg1"]
    table.view.clearSelection()
    assert len(table.as_text().splitlines()) == 1 + WINDOW  # every loaded row


def test_first_rows_shown_once_per_query_and_decorate(qtbot, model, source):
    shown: list[int] = []
    model.first_rows_shown.connect(lambda: shown.append(model.rowCount()))
    model.decorate = lambda row, key, role: "tip" if role == Qt.ItemDataRole.ToolTipRole else None
    show_first(qtbot, model, source)
    model.refresh()
    qtbot.waitUntil(idle(model), timeout=WAIT_MS)
    model.set_query(PageQuery(filter_text="item 00001"))
    qtbot.waitUntil(lambda: len(shown) == 2, timeout=WAIT_MS)
    qtbot.waitUntil(idle(model), timeout=WAIT_MS)
    assert shown == [WINDOW, 10]
    assert model.index(0, 1).data(Qt.ItemDataRole.ToolTipRole) == "tip"


def test_clearing_the_source_empties_the_table(qtbot, table, source):
    show_first(qtbot, table, source)
    table.set_source(None)
    assert table.rows_loaded == 0 and table.count_label.text() == ""
    assert not table.model.canFetchMore(QModelIndex())
    qtbot.waitUntil(idle(table.model), timeout=WAIT_MS)


def test_reaching_the_bottom_during_a_refresh_fetches_after_it(qtbot, model, source):
    show_first(qtbot, model, source)
    source.gate.clear()
    model.refresh()
    qtbot.waitUntil(lambda: len(source.fetches()) == 2, timeout=WAIT_MS)
    model.fetchMore(QModelIndex())  # the view at the bottom: remembered, not a second read now
    assert len(source.fetches()) == 2
    source.gate.set()
    qtbot.waitUntil(lambda: model.rowCount() == 2 * WINDOW, timeout=WAIT_MS)
    qtbot.waitUntil(idle(model), timeout=WAIT_MS)
    assert [c[2:] for c in source.fetches()] == [(0, WINDOW), (0, WINDOW), (WINDOW, WINDOW)]


def test_rows_may_be_dicts_or_dataclasses(qtbot, model):
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Item:
        id: int
        name: str
        group: str

    class Mixed:
        def count(self, query):
            return 2

        def fetch(self, query, offset, limit):
            return [{"id": 1, "name": "one", "group": None}, Item(2, "two", "g")][offset:offset + limit]

    show_first(qtbot, model, Mixed())
    cells = [[model.index(r, c).data() for c in range(3)] for r in range(2)]
    assert cells == [["1", "one", ""], ["2", "two", "g"]]
