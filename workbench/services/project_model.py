"""The one project model every panel shares.

Panels never call each other: they listen to this model's signals and refresh what concerns
them. Opening, creating, migrating, copying and writing run on worker threads; the model only
adopts the result on the GUI thread, and the GUI thread never touches SQLite.

Changes are announced precisely. A write made through :meth:`ProjectModel.write` announces the
:class:`Changes` it returns. Writes made elsewhere (the MCP server, the CLI, this process's run
thread) are found by a :class:`ProjectWatch` thread: a cheap ``PRAGMA data_version`` first, then
the per-table change counters. Both paths go through
:meth:`_announce`, which keeps the counters already announced, so the same commit is never
announced twice and a commit from outside names only the tables that moved.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from workbench.core.errors import WorkbenchError
from workbench.core.project.changes import Changes
from workbench.core.project.store import Store
from workbench.services.project_watch import ProjectWatch
from workbench.services.workers import JobError, WorkerPool


class ProjectModel(QObject):
    opened = Signal(object)  # the new Store
    closed = Signal()
    changed = Signal(object)  # Changes
    failed = Signal(str, str)  # message for the user, details for the disclosure
    busy_changed = Signal(bool)
    # "Open in Trace Inspector" from any panel: a RecordRef. Panels never call each other; the
    # Trace Inspector listens, and the window brings its dock forward.
    reveal_requested = Signal(object)

    POLL_MS = 400  # how soon writes from other processes show up

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.workers = WorkerPool(self)  # opening, writing, copying
        # The panels' reads have a pool of their own: a read waiting on another program's lock
        # (up to the busy timeout) never holds back a write the user asked for.
        self.reads = WorkerPool(self, max_threads=2)
        self._store: Store | None = None
        self._watch: ProjectWatch | None = None
        self._stopped: list[ProjectWatch] = []  # watches told to stop, waited for on shutdown
        self._announced: dict[str, int] = {}  # each table's change counter, as last announced
        self._jobs = 0

    # ----- state -------------------------------------------------------------------------
    @property
    def store(self) -> Store | None:
        return self._store

    @property
    def path(self) -> Path | None:
        return self._store.path if self._store else None

    @property
    def busy(self) -> bool:
        return self._jobs > 0

    # ----- commands (all asynchronous) ---------------------------------------------------
    def open(self, path: Path | str) -> None:
        """Open ``path``. The panels may read it at once; its full integrity check runs just
        after (writes wait for it), and a damaged file is then closed with a message."""
        self._run(f"open {Path(path).name}", lambda _c: Store.open(path, check_later=True), self._adopt)

    def open_prepared(self, path: Path | str, prepare: Callable[[Path], object]) -> None:
        """Run ``prepare(path)`` off the GUI thread (e.g. build the demo), then open ``path``."""

        def job(_cancel: threading.Event) -> Store:
            prepare(Path(path))
            return Store.open(path, check_later=True)

        self._run(f"open {Path(path).name}", job, self._adopt)

    def create(self, path: Path | str, name: str | None = None, *, overwrite: bool = False) -> None:
        self._run(f"create {Path(path).name}", lambda _c: Store.create(path, name, overwrite=overwrite), self._adopt)

    def save_as(self, dest: Path | str, *, overwrite: bool = False) -> None:
        """Copy the project with the backup API, then continue working in the copy."""
        store = self._require_store()

        def job(_cancel: threading.Event) -> Store:
            try:
                copied = store.backup_to(dest, overwrite=overwrite)
            finally:
                store.close_connection()
            return Store.open(copied)

        self._run(f"save as {Path(dest).name}", job, self._adopt)

    def write(self, name: str, fn: Callable[[Store], Changes],
              on_done: Callable[[Changes], None] | None = None) -> None:
        """Run ``fn(store)`` off the GUI thread; the Changes it returns are announced."""
        store = self._require_store()

        def job(_cancel: threading.Event) -> Changes:
            try:
                return fn(store)
            finally:
                store.close_connection()

        def finished(changes: object) -> None:
            if isinstance(changes, Changes):
                self._announce(changes)
            if on_done:
                on_done(changes)  # type: ignore[arg-type]

        self._run(name, job, finished)

    def reveal(self, ref) -> None:
        """Ask for ``ref`` (a :class:`~workbench.core.project.refs.RecordRef`) to be shown."""
        self.reveal_requested.emit(ref)

    def close(self) -> None:
        if self._store is None:
            return
        self._stop_watching()
        self._store.close_connection()
        self._store = None
        self._announced = {}
        self.closed.emit()

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Cancel and wait for every job, then close (the window's closeEvent calls this)."""
        self.reads.cancel_all()
        ok = self.workers.shutdown(timeout_ms)
        self.close()
        ok = self.reads.shutdown(timeout_ms) and ok
        for watch in self._stopped:
            ok = watch.stop(timeout_ms / 1000) and ok
        self._stopped = []
        return ok

    # ----- internals ---------------------------------------------------------------------
    def _require_store(self) -> Store:
        if self._store is None:
            raise WorkbenchError("No project is open.")
        return self._store

    def _run(self, name: str, fn: Callable[[threading.Event], object], on_finished: Callable,
             on_failed: Callable[[JobError], None] | None = None) -> None:
        self._jobs += 1
        if self._jobs == 1:
            self.busy_changed.emit(True)

        def done() -> None:
            self._jobs -= 1
            if self._jobs == 0:
                self.busy_changed.emit(False)

        worker = self.workers.start(name, fn, on_finished, on_failed or self._on_job_failed)
        worker.signals.done.connect(done)

    def _adopt(self, store: object) -> None:
        assert isinstance(store, Store)
        if self._store is not None:
            self.close()
        self._store = store
        watch = self._watch = ProjectWatch(store, self.POLL_MS / 1000, self)
        watch.started.connect(self._on_watch_started)
        watch.changed.connect(self._on_watch_changed)
        watch.failed.connect(self._on_watch_failed)
        watch.start()
        self.opened.emit(store)
        if not store.checked:
            self._run(f"check {store.path.name}", lambda _c: store.check(), lambda _r: None,
                      lambda error: self._on_check_failed(store, error))

    def _on_check_failed(self, store: Store, error: JobError) -> None:
        if store is self._store:  # a damaged file: nothing was written to it; close it, say why
            self.close()
        self._on_job_failed(error)

    def _stop_watching(self) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.started.disconnect(self._on_watch_started)
            watch.changed.disconnect(self._on_watch_changed)
            watch.failed.disconnect(self._on_watch_failed)
            if not watch.stop():
                self._stopped = [w for w in self._stopped if not w.stop()] + [watch]

    def _on_job_failed(self, error: JobError) -> None:
        if isinstance(error.exception, WorkbenchError):
            self.failed.emit(error.message, "")
        else:
            self.failed.emit(f"Something went wrong: {error.message}", error.details)

    def _on_watch_started(self, counters: dict) -> None:
        self._announced = {**counters, **self._announced}

    def _on_watch_changed(self, changes: Changes) -> None:
        self._announce(changes)

    def _on_watch_failed(self, message: str) -> None:
        # The file vanished or the disk failed: said once (a lock is not a failure; see watch).
        self.failed.emit(f"The project file can no longer be read: {message}", "")

    def _announce(self, changes: Changes) -> None:
        """Emit ``changed`` for what is new in ``changes``: a write made here and the watcher's
        later sight of the same commit are announced once, whichever arrives first."""
        if changes.counters:
            fresh = frozenset(t for t in changes.tables
                              if t not in changes.counters or changes.counters[t] > self._announced.get(t, -1))
            for table, seq in changes.counters.items():
                self._announced[table] = max(seq, self._announced.get(table, -1))
            if fresh != changes.tables:
                changes = Changes(fresh, tuple(k for k in changes.keys if k[0] in fresh), changes.runs,
                                  {t: changes.counters[t] for t in fresh if t in changes.counters},
                                  changes.external)
        if changes:
            self.changed.emit(changes)
