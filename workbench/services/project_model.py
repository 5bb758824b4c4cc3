"""The one project model every panel shares.

Panels never call each other: they listen to this model's signals and refresh what concerns
them. Opening, creating, migrating, copying and writing run on worker threads; the model only
adopts the result on the GUI thread. It also notices writes made by other processes (the MCP
server, the CLI) through SQLite's ``data_version`` and reports them as changes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from workbench.core.project.changes import Changes
from workbench.core.errors import WorkbenchError
from workbench.core.project.store import Store
from workbench.services.workers import JobError, WorkerPool


class ProjectModel(QObject):
    opened = Signal(object)  # the new Store
    closed = Signal()
    changed = Signal(object)  # Changes
    failed = Signal(str, str)  # message for the user, details for the disclosure
    busy_changed = Signal(bool)

    POLL_MS = 400  # how soon writes from other processes show up

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.workers = WorkerPool(self)
        self._store: Store | None = None
        self._seen_version: int | None = None
        self._jobs = 0
        self._poll = QTimer(self)
        self._poll.setInterval(self.POLL_MS)
        self._poll.timeout.connect(self._on_poll)

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
        self._run(f"open {Path(path).name}", lambda _c: Store.open(path), self._adopt)

    def open_prepared(self, path: Path | str, prepare: Callable[[Path], object]) -> None:
        """Run ``prepare(path)`` off the GUI thread (e.g. build the demo), then open ``path``."""

        def job(_cancel: threading.Event) -> Store:
            prepare(Path(path))
            return Store.open(path)

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
            if changes:
                self.changed.emit(changes)
            if on_done:
                on_done(changes)  # type: ignore[arg-type]

        self._run(name, job, finished)

    def close(self) -> None:
        if self._store is None:
            return
        self._poll.stop()
        self._store.close_connection()
        self._store = None
        self._seen_version = None
        self.closed.emit()

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Cancel and wait for every job, then close (the window's closeEvent calls this)."""
        ok = self.workers.shutdown(timeout_ms)
        self.close()
        return ok

    # ----- internals ---------------------------------------------------------------------
    def _require_store(self) -> Store:
        if self._store is None:
            raise WorkbenchError("No project is open.")
        return self._store

    def _run(self, name: str, fn: Callable[[threading.Event], object], on_finished: Callable) -> None:
        self._jobs += 1
        if self._jobs == 1:
            self.busy_changed.emit(True)

        def done() -> None:
            self._jobs -= 1
            if self._jobs == 0:
                self.busy_changed.emit(False)

        worker = self.workers.start(name, fn, on_finished, self._on_job_failed)
        worker.signals.done.connect(done)

    def _adopt(self, store: object) -> None:
        assert isinstance(store, Store)
        if self._store is not None:
            self.close()
        self._store = store
        self._seen_version = store.data_version()
        self._poll.start()
        self.opened.emit(store)

    def _on_job_failed(self, error: JobError) -> None:
        if isinstance(error.exception, WorkbenchError):
            self.failed.emit(error.message, "")
        else:
            self.failed.emit(f"Something went wrong: {error.message}", error.details)

    def _on_poll(self) -> None:
        if self._store is None:
            return
        try:
            version = self._store.data_version()
        except Exception as exc:  # the file vanished or the disk failed: say so once
            self._poll.stop()
            self.failed.emit(f"The project file can no longer be read: {exc}", "")
            return
        if version != self._seen_version:
            self._seen_version = version
            self.changed.emit(Changes.everything())
