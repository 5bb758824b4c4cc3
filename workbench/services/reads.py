"""Reads for panels, off the GUI thread: a ``Reader`` per panel, and the paging vocabulary.

Panels must never wait on SQLite. With the rollback journal a reader blocks while a writer
commits (up to the 15 s busy timeout), so a read on the GUI thread would freeze the window.
A panel therefore hands its read to a ``Reader``: the read runs on a WorkerPool thread with its
own connection and returns a plain view model; the GUI thread only applies it.

Three rules keep that cheap and correct:

- **Newest wins.** Every ``load`` bumps a generation; a result whose generation is no longer
  the newest is dropped, never applied, so a slow old read cannot overwrite a newer one.
- **Coalescing.** While a read is in flight a new ``load`` does not start a second worker: it
  cancels the running one (its ``threading.Event``) and becomes the one read that is due. When
  the running read ends (its result dropped), exactly that newest request starts. A burst of 50
  change notifications costs at most two background reads, and one panel holds at most one
  pool thread.
- **Paced when the data moves.** A read asked for because the project changed (``paced=True``)
  starts no sooner than ``REST_FACTOR`` times the previous read's duration after it ended. With
  the rollback journal every read holds the file against the writer's commit: during a live run
  of 200 calls/s the panels re-reading back to back kept the runner waiting on its commits. A
  read the person asked for (a click, a filter) is never paced.
- **Quiet while waiting.** ``busy_changed(True)`` is emitted only once the newest data has been
  due for longer than ``busy_delay_ms``, so fast reads never flicker an "updating" mark. On
  failure (the project stayed locked, say) the previous data stays and ``on_failed`` is told.

The paging part (``PageQuery``, ``RowSource``, ``read_page``) is plain Python: the SQL side
implements ``count``/``fetch`` with ORDER BY / LIKE / LIMIT / OFFSET, and the UI's paged table
calls ``read_page`` through a Reader. Only QtCore is imported here (services never import
QtWidgets).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from PySide6.QtCore import QObject, QTimer, Signal

from workbench.services.workers import JobError, Worker, WorkerPool

log = logging.getLogger(__name__)

REST_FACTOR = 3.0  # a paced reader reads at most a quarter of the time
MAX_REST_S = 2.0  # however slow its last read, a change shows within this much more

ReadFn = Callable[[threading.Event], object]


@dataclass
class _Request:
    generation: int
    fn: ReadFn
    on_done: Callable[[Any], None]
    on_failed: Callable[[JobError], None] | None
    cleanup: Callable[[], None] | None
    paced: bool = False  # asked for by a change, not by the person: may wait for the rest to end
    ended: bool = False  # its result (or failure) has reached the GUI thread
    began: float = 0.0  # time.monotonic() when it started on a worker


class Reader(QObject):
    """Runs a panel's reads in the background; only the newest result is ever applied.

    Create it on the GUI thread (a panel owns it: ``Reader(pool, parent=panel)``). Every
    callback runs on the GUI thread. ``fn(cancel)`` runs on a pool thread, so it must use only
    connections it opens on that thread (``Store.db`` is per thread) and must close them: pass
    ``cleanup=store.close_connection``, which runs on the same worker thread after ``fn``, even
    when ``fn`` raised. ``fn`` should check ``cancel.is_set()`` between queries and may return
    early (anything) when it is set: a cancelled read's result is dropped anyway.
    """

    busy_changed = Signal(bool)

    def __init__(self, pool: WorkerPool, parent: QObject | None = None, *,
                 name: str = "read", busy_delay_ms: int = 250, priority: int = 0):
        super().__init__(parent)
        self._pool = pool
        self._priority = priority  # of its reads among the pool's waiting jobs
        self._name = name
        self._generation = 0
        self._current: _Request | None = None  # the read on a worker now
        self._worker: Worker | None = None
        self._pending: _Request | None = None  # the newest request, due when _current ends
        self._busy = False
        self._closed = False
        self._busy_timer = QTimer(self)
        self._busy_timer.setSingleShot(True)
        self._busy_timer.setInterval(max(0, busy_delay_ms))
        self._busy_timer.timeout.connect(self._on_busy_timeout)
        self._rest_until = 0.0  # time.monotonic() before which a paced read waits
        self._rest = QTimer(self)
        self._rest.setSingleShot(True)
        self._rest.timeout.connect(self._on_rested)

    # ----- state -------------------------------------------------------------------------
    @property
    def generation(self) -> int:
        """The newest request's number; only its result can be applied."""
        return self._generation

    @property
    def busy(self) -> bool:
        """True once the newest data has been due for longer than the delay."""
        return self._busy

    @property
    def loading(self) -> bool:
        """True while a read runs or one is due (whether or not its result will be applied).
        False inside ``on_done``/``on_failed`` unless a newer load is due."""
        return self._pending is not None or (self._current is not None and not self._current.ended)

    # ----- commands ----------------------------------------------------------------------
    def load(self, fn: ReadFn, on_done: Callable[[Any], None], *,
             on_failed: Callable[[JobError], None] | None = None,
             cleanup: Callable[[], None] | None = None, paced: bool = False) -> int:
        """Ask for ``fn``'s result; ``on_done(result)`` runs only if no newer load came since.
        ``paced``: the project changed (not the person asking), so the read may wait for the
        reader's rest after its previous read (see the module's notes).

        Returns the request's generation. After ``shutdown`` nothing starts (returns -1).
        """
        if self._closed:
            return -1
        self._generation += 1
        request = _Request(self._generation, fn, on_done, on_failed, cleanup, paced)
        if not self._busy and not self._busy_timer.isActive():
            self._busy_timer.start()
        if self._current is not None:
            self._worker.cancel_event.set()  # type: ignore[union-attr]
            self._pending = request  # replaces any earlier due request: it is stale too
        else:
            self._start_or_rest(request)
        return request.generation

    def cancel(self) -> None:
        """Apply nothing that is running or due (e.g. the project closed)."""
        self._generation += 1
        self._pending = None
        self._rest.stop()
        if self._worker is not None:
            self._worker.cancel_event.set()
        self._settle()

    def shutdown(self) -> None:
        """Cancel and accept no more loads. The pool waits for the running worker on close."""
        self.cancel()
        self._closed = True

    # ----- internals ---------------------------------------------------------------------
    def _start_or_rest(self, request: _Request) -> None:
        wait = self._rest_until - time.monotonic()
        if request.paced and wait > 0:
            self._pending = request
            if not self._rest.isActive():
                self._rest.start(max(1, round(wait * 1000)))
            return
        self._rest.stop()
        self._pending = None
        self._start(request)

    def _on_rested(self) -> None:
        request, self._pending = self._pending, None
        if request is not None and self._current is None and not self._closed:
            self._start(request)

    def _start(self, request: _Request) -> None:
        request.began = time.monotonic()

        def job(cancel: threading.Event) -> object:
            try:
                return request.fn(cancel)
            finally:
                if request.cleanup is not None:
                    request.cleanup()

        self._current = request
        self._worker = self._pool.start(f"{self._name} #{request.generation}", job,
                                        self._on_finished, self._on_failed, priority=self._priority)
        # Queued: delivered after finished/failed, on the GUI thread, never before we return.
        self._worker.signals.done.connect(self._on_done)

    def _take_newest(self) -> _Request | None:
        """The ending request, if its result may be applied: the newest, not cancelled."""
        request = self._current
        if request is not None:
            request.ended = True
        if self._closed or request is None or request.generation != self._generation:
            return None  # stale: a newer request is due, or all were cancelled
        self._settle()
        if self._worker is not None and self._worker.cancel_event.is_set():
            return None  # cancelled from outside (the pool is shutting down): maybe partial
        return request

    def _on_finished(self, value: object) -> None:
        request = self._take_newest()
        if request is not None:
            request.on_done(value)

    def _on_failed(self, error: JobError) -> None:
        request = self._take_newest()
        if request is None:
            return
        if request.on_failed is not None:
            request.on_failed(error)
        else:
            log.warning("%s failed: %s\n%s", self._name, error.message, error.details)

    def _on_done(self) -> None:
        if self._current is not None:
            now = time.monotonic()
            self._rest_until = now + min(MAX_REST_S, REST_FACTOR * (now - self._current.began))
        self._current = self._worker = None
        request, self._pending = self._pending, None
        if request is not None and not self._closed:
            self._start_or_rest(request)

    def _on_busy_timeout(self) -> None:
        if self.loading:
            self._set_busy(True)

    def _settle(self) -> None:
        self._busy_timer.stop()
        self._set_busy(False)

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busy_changed.emit(busy)


# ----- paging: plain Python, shared by the paged table and the SQL side ----------------------
@dataclass(frozen=True)
class PageQuery:
    """What a long list shows: sort column key (None: the source's natural order), direction,
    and filter text (matched by the source, e.g. ``LIKE '%text%'`` over its text columns)."""

    sort_key: str | None = None
    descending: bool = False
    filter_text: str = ""


class RowSource(Protocol):
    """A long list the database can page. Both methods run on worker threads, one call at a
    time but not always on the same thread: use the thread's own connection (``store.db``)
    and let the Reader's ``cleanup`` close it."""

    def count(self, query: PageQuery) -> int:
        """How many rows match ``query``."""

    def fetch(self, query: PageQuery, offset: int, limit: int) -> Sequence[object]:
        """At most ``limit`` matching rows from ``offset``, in ``query``'s order: tuples in
        column order, dicts keyed by column key, or objects with those attributes. Add a
        tie-breaker (e.g. ``, id``) to ORDER BY so windows neither repeat nor skip rows."""


@dataclass(frozen=True)
class Page:
    """A window of rows read from a source, and what it tells about the whole list."""

    offset: int
    rows: list
    total: int | None  # counted or inferred; None when not asked and not inferable
    exhausted: bool  # no rows follow these


def read_page(source: RowSource, query: PageQuery, offset: int, limit: int,
              cancel: threading.Event, *, count: bool) -> Page | None:
    """Fetch one window; count the matches only when asked and when the window does not already
    tell the total (a short window ends the list, which is the common case for small lists).
    Returns None when cancelled before the count: the caller drops cancelled reads anyway."""
    rows = list(source.fetch(query, offset, limit))
    end = offset + len(rows)
    if len(rows) < limit:
        return Page(offset, rows, end, True)
    if not count:
        return Page(offset, rows, None, False)
    if cancel.is_set():
        return None
    total = max(source.count(query), end)
    return Page(offset, rows, total, False)
