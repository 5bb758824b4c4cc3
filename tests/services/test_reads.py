"""The Reader: newest result wins, bursts coalesce, the GUI thread never reads, failures keep the
previous data, and the "updating" signal fires only for slow reads. Plus read_page, which is
plain Python. No wall-clock assertions: blocking is done with threading.Events, and every wait
has a timeout."""

from __future__ import annotations

import threading

import pytest

from workbench.services.reads import PageQuery, Reader, read_page
from workbench.services.workers import WorkerPool

WAIT_MS = 10_000
BLOCK_S = 10  # a gate a test forgets to open still ends


@pytest.fixture
def pool(qapp):
    pool = WorkerPool(max_threads=4)
    yield pool
    assert pool.shutdown(WAIT_MS)


@pytest.fixture
def gates():
    """Events that block reads; all opened at teardown so no worker outlives the test."""
    made: list[threading.Event] = []

    def gate() -> threading.Event:
        made.append(threading.Event())
        return made[-1]

    yield gate
    for event in made:
        event.set()


class Log:
    """Records what ran where, and what the GUI thread was given."""

    def __init__(self):
        self.ran: list[object] = []
        self.on_main: list[bool] = []
        self.applied: list[object] = []
        self.failed: list[str] = []
        self.lock = threading.Lock()

    def fn(self, value, gate: threading.Event | None = None, error: Exception | None = None):
        def read(_cancel: threading.Event):
            with self.lock:
                self.ran.append(value)
                self.on_main.append(threading.current_thread() is threading.main_thread())
            if gate is not None:
                gate.wait(BLOCK_S)
            if error is not None:
                raise error
            return value

        return read

    def load(self, reader: Reader, value, gate=None, error=None, **kw) -> int:
        return reader.load(self.fn(value, gate, error), self.applied.append,
                           on_failed=lambda e: self.failed.append(e.message), **kw)


def idle(reader: Reader):
    return lambda: not reader.loading


def test_a_stale_result_is_dropped_and_only_the_newest_applied(qtbot, pool, gates):
    reader, log, a = Reader(pool), Log(), gates()
    log.load(reader, "A", gate=a)
    qtbot.waitUntil(lambda: log.ran == ["A"], timeout=WAIT_MS)
    log.load(reader, "B")
    a.set()  # A ends after B was asked for
    qtbot.waitUntil(idle(reader), timeout=WAIT_MS)
    assert log.applied == ["B"]
    assert log.ran == ["A", "B"]


def test_a_newer_load_cancels_the_running_one(qtbot, pool, gates):
    reader, seen, a = Reader(pool), [], gates()

    def slow(cancel: threading.Event):
        seen.append(cancel)
        a.wait(BLOCK_S)
        return "A"

    reader.load(slow, lambda v: None)
    qtbot.waitUntil(lambda: bool(seen), timeout=WAIT_MS)
    assert not seen[0].is_set()
    reader.load(lambda _c: "B", lambda v: None)
    assert seen[0].is_set()
    a.set()
    qtbot.waitUntil(idle(reader), timeout=WAIT_MS)


def test_a_burst_of_fifty_loads_costs_two_reads(qtbot, pool, gates):
    reader, log, first = Reader(pool), Log(), gates()
    log.load(reader, 0, gate=first)
    qtbot.waitUntil(lambda: log.ran == [0], timeout=WAIT_MS)
    for i in range(1, 50):
        log.load(reader, i)
    assert reader.generation == 50
    first.set()
    qtbot.waitUntil(idle(reader), timeout=WAIT_MS)
    assert log.ran == [0, 49]  # the first, then only the newest
    assert log.applied == [49]


def test_the_gui_thread_never_runs_a_read(qtbot, pool):
    reader, log = Reader(pool), Log()
    for i in range(5):
        log.load(reader, i)
        qtbot.waitUntil(idle(reader), timeout=WAIT_MS)
    assert log.on_main and not any(log.on_main)
    assert log.applied == [0, 1, 2, 3, 4]


def test_cleanup_runs_on_the_worker_thread_after_fn_even_when_it_fails(qtbot, pool):
    reader, log, threads = Reader(pool), Log(), []

    def cleanup():
        threads.append(threading.current_thread())

    log.load(reader, "ok", cleanup=cleanup)
    qtbot.waitUntil(idle(reader), timeout=WAIT_MS)
    log.load(reader, "bad", error=RuntimeError("boom"), cleanup=cleanup)
    qtbot.waitUntil(idle(reader), timeout=WAIT_MS)
    assert len(threads) == 2 and threading.main_thread() not in threads
    assert log.applied == ["ok"] and log.failed == ["boom"]


def test_a_failure_is_reported_and_nothing_is_applied(qtbot, pool):
    import sqlite3

    reader, log = Reader(pool), Log()
    log.load(reader, "first")
    qtbot.waitUntil(idle(reader), timeout=WAIT_MS)
    log.load(reader, "second", error=sqlite3.OperationalError("database is locked"))
    qtbot.waitUntil(idle(reader), timeout=WAIT_MS)
    assert log.applied == ["first"]  # the panel keeps what it had
    assert log.failed == ["database is locked"]


def test_a_stale_failure_is_dropped_too(qtbot, pool, gates):
    reader, log, a = Reader(pool), Log(), gates()
    log.load(reader, "A", gate=a, error=RuntimeError("old"))
    qtbot.waitUntil(lambda: log.ran == ["A"], timeout=WAIT_MS)
    log.load(reader, "B")
    a.set()
    qtbot.waitUntil(idle(reader), timeout=WAIT_MS)
    assert log.failed == [] and log.applied == ["B"]


def test_busy_is_signalled_only_after_the_delay(qtbot, pool, gates):
    reader, log, a = Reader(pool, busy_delay_ms=0), Log(), gates()
    states: list[bool] = []
    reader.busy_changed.connect(states.append)
    with qtbot.waitSignal(reader.busy_changed, timeout=WAIT_MS):
        log.load(reader, "slow", gate=a)
    assert reader.busy and states == [True]
    a.set()
    qtbot.waitUntil(lambda: not reader.busy, timeout=WAIT_MS)
    assert states == [True, False]


def test_fast_reads_never_flicker_busy(qtbot, pool):
    reader, log = Reader(pool, busy_delay_ms=60_000), Log()
    states: list[bool] = []
    reader.busy_changed.connect(states.append)
    for i in range(3):
        log.load(reader, i)
    qtbot.waitUntil(idle(reader), timeout=WAIT_MS)
    assert states == [] and log.applied == [2]


def test_busy_stays_on_across_a_coalesced_reload(qtbot, pool, gates):
    reader, log, a, b = Reader(pool, busy_delay_ms=0), Log(), gates(), gates()
    states: list[bool] = []
    reader.busy_changed.connect(states.append)
    log.load(reader, "A", gate=a)
    qtbot.waitUntil(lambda: reader.busy, timeout=WAIT_MS)
    log.load(reader, "B", gate=b)
    a.set()
    qtbot.waitUntil(lambda: log.ran == ["A", "B"], timeout=WAIT_MS)
    assert states == [True]  # the stale end did not turn the mark off
    b.set()
    qtbot.waitUntil(idle(reader), timeout=WAIT_MS)
    assert states == [True, False] and log.applied == ["B"]


def test_shutdown_applies_nothing_and_starts_nothing(qtbot, pool, gates):
    reader, log, a = Reader(pool), Log(), gates()
    log.load(reader, "A", gate=a)
    qtbot.waitUntil(lambda: log.ran == ["A"], timeout=WAIT_MS)
    log.load(reader, "B")
    reader.shutdown()
    assert log.load(reader, "C") == -1
    a.set()
    qtbot.waitUntil(idle(reader), timeout=WAIT_MS)
    assert log.ran == ["A"] and log.applied == [] and not reader.busy


def test_a_callback_may_load_again(qtbot, pool):
    reader, log = Reader(pool), Log()

    def chain(value):
        log.applied.append(value)
        if value == "first":
            log.load(reader, "second")

    reader.load(log.fn("first"), chain)
    qtbot.waitUntil(lambda: log.applied == ["first", "second"], timeout=WAIT_MS)
    qtbot.waitUntil(idle(reader), timeout=WAIT_MS)


# ----- read_page: no Qt needed --------------------------------------------------------------
class ListSource:
    def __init__(self, n: int):
        self.n, self.counts = n, 0

    def count(self, query):
        self.counts += 1
        return self.n

    def fetch(self, query, offset, limit):
        return [(i,) for i in range(offset, min(self.n, offset + limit))]


def test_read_page_counts_only_when_the_window_is_full():
    source, cancel = ListSource(50), threading.Event()
    page = read_page(source, PageQuery(), 0, 200, cancel, count=True)
    assert (len(page.rows), page.total, page.exhausted, source.counts) == (50, 50, True, 0)
    source = ListSource(1000)
    page = read_page(source, PageQuery(), 0, 200, cancel, count=True)
    assert (len(page.rows), page.total, page.exhausted, source.counts) == (200, 1000, False, 1)
    page = read_page(source, PageQuery(), 200, 200, cancel, count=False)
    assert (page.offset, page.total, page.exhausted, source.counts) == (200, None, False, 1)
    page = read_page(source, PageQuery(), 900, 200, cancel, count=False)
    assert (len(page.rows), page.total, page.exhausted) == (100, 1000, True)


def test_read_page_skips_the_count_once_cancelled():
    source, cancel = ListSource(1000), threading.Event()
    cancel.set()
    assert read_page(source, PageQuery(), 0, 200, cancel, count=True) is None
    assert source.counts == 0


def test_a_read_cancelled_by_the_pool_is_not_applied(qtbot, pool, gates):
    reader, log, a = Reader(pool, busy_delay_ms=0), Log(), gates()
    log.load(reader, "partial", gate=a)
    qtbot.waitUntil(lambda: reader.busy, timeout=WAIT_MS)
    pool.cancel_all()  # the window is closing
    a.set()
    qtbot.waitUntil(idle(reader), timeout=WAIT_MS)
    assert log.applied == [] and not reader.busy


def test_not_loading_inside_the_callback_unless_a_newer_load_is_due(qtbot, pool):
    reader, seen = Reader(pool), []
    reader.load(lambda _c: 1, lambda v: seen.append(reader.loading))
    qtbot.waitUntil(lambda: seen == [False], timeout=WAIT_MS)
    qtbot.waitUntil(idle(reader), timeout=WAIT_MS)



def test_a_read_asked_for_by_a_change_rests_after_a_slow_read_and_one_asked_by_the_person_does_not(qtbot, monkeypatch):
    """A paced read waits REST_FACTOR x the previous read's time (on an injected clock); the
    newest paced request is the one that runs after the rest; a read the person asks for starts
    at once, rest or not."""
    from types import SimpleNamespace

    from workbench.services import reads as reads_module

    now = [100.0]
    monkeypatch.setattr(reads_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    pool = WorkerPool(max_threads=2)
    reader = Reader(pool)
    ran: list[str] = []
    results: list[str] = []

    def job(name, takes=0.0):
        def fn(_cancel):
            ran.append(name)
            now[0] += takes  # the read takes this long, on the injected clock
            return name
        return fn

    reader.load(job("slow", 0.2), results.append)
    qtbot.waitUntil(lambda: results == ["slow"] and reader._current is None, timeout=5000)
    reader.load(job("change 1"), results.append, paced=True)
    assert reader._current is None and reader._rest.isActive()  # resting: nothing started
    assert abs(reader._rest.interval() - reads_module.REST_FACTOR * 200) <= 1
    reader.load(job("change 2"), results.append, paced=True)
    qtbot.waitUntil(lambda: results[-1:] == ["change 2"], timeout=5000)
    assert ran == ["slow", "change 2"]  # the stale paced request never ran

    reader.load(job("slow again", 0.2), results.append)
    qtbot.waitUntil(lambda: results[-1:] == ["slow again"] and reader._current is None, timeout=5000)
    reader.load(job("click"), results.append)  # not paced: started at once
    assert reader._current is not None and not reader._rest.isActive()
    qtbot.waitUntil(lambda: results[-1:] == ["click"], timeout=5000)
    reader.shutdown()
    pool.shutdown()
