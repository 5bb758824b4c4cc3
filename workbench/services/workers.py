"""Background work for the GUI: jobs on a Qt thread pool, with callbacks, cancellation and a registry.

Nothing slow runs on the GUI thread. A job is a plain function ``fn(cancel: threading.Event)``;
it runs on the pool's own threads and its result comes back through one queued signal of the
pool, so every callback runs on the GUI thread. Workers never touch widgets. The pool keeps a
reference to every running worker and can cancel and wait for all of them, which the main
window does on close and the test suite checks after every test.

Why no QObject (and no QRunnable) per job: a per-job signals object had to be deleted once its
result was delivered, and ``deleteLater`` on it crashed intermittently inside ``~QObject``
(the wrapper's last reference went with the connection's own lambda during the destructor).
One pool-level signal and plain Python callbacks have nothing to delete.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import shiboken6
from PySide6.QtCore import QObject, QThreadPool, Signal, Slot


@dataclass(frozen=True)
class JobError:
    """A failed job: ``message`` is for the user, ``details`` (the traceback) for the disclosure."""

    message: str
    details: str
    exception: BaseException


class Callbacks:
    """A signal-like list of callbacks, called on the GUI thread. A callback that is a method of
    a Qt object already deleted is skipped, as Qt drops a connection to a deleted receiver."""

    def __init__(self) -> None:
        self._callbacks: list[Callable] = []

    def connect(self, callback: Callable) -> None:
        self._callbacks.append(callback)

    def emit(self, *args: object) -> None:
        for callback in self._callbacks:
            receiver = getattr(callback, "__self__", None)
            if isinstance(receiver, QObject) and not shiboken6.isValid(receiver):
                continue
            try:
                callback(*args)
            except Exception:  # as a Qt slot's would be: reported, and the next callbacks still run
                sys.excepthook(*sys.exc_info())


class WorkerSignals:
    """What a job reports: ``finished(value)`` or ``failed(JobError)``, then ``done()``."""

    def __init__(self) -> None:
        self.finished = Callbacks()
        self.failed = Callbacks()
        self.done = Callbacks()


class Worker:
    """One job, run by the pool through Qt's own functor runnable (which Qt deletes itself)."""

    def __init__(self, name: str, fn: Callable[[threading.Event], object], report: Callable):
        self.name = name
        self.cancel_event = threading.Event()
        self.signals = WorkerSignals()
        self._fn = fn
        self._report = report

    def run(self) -> None:  # runs on a pool thread
        try:
            value, ok = self._fn(self.cancel_event), True
        except BaseException as exc:  # reported to the GUI, never raised into Qt
            value, ok = JobError(str(exc) or type(exc).__name__, traceback.format_exc(), exc), False
        self._report(self, value, ok)
        with _live_lock:
            _live.discard(self)


_live_lock = threading.Lock()
_live: set[Worker] = set()


def live_workers() -> list[str]:
    """Names of the workers still running in this process (the test suite asserts none)."""
    with _live_lock:
        return sorted(w.name for w in _live)


class WorkerPool(QObject):
    """Runs jobs off the GUI thread. Create it on the GUI thread."""

    _result = Signal(object, object, bool)  # (worker, value, ok), emitted from a pool thread

    def __init__(self, parent: QObject | None = None, max_threads: int = 4):
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(max_threads)
        self._running: set[Worker] = set()
        self._result.connect(self._deliver)

    def start(self, name: str, fn: Callable[[threading.Event], object],
              on_finished: Callable[[object], None] | None = None,
              on_failed: Callable[[JobError], None] | None = None, *, priority: int = 0) -> Worker:
        """Run ``fn`` on the pool; of the jobs waiting for a thread, higher ``priority`` goes first."""
        worker = Worker(name, fn, self._result.emit)
        if on_finished:
            worker.signals.finished.connect(on_finished)
        if on_failed:
            worker.signals.failed.connect(on_failed)
        self._running.add(worker)
        with _live_lock:
            _live.add(worker)
        self._pool.start(worker.run, priority)
        return worker

    @Slot(object, object, bool)
    def _deliver(self, worker: Worker, value: object, ok: bool) -> None:
        self._running.discard(worker)
        signals = worker.signals
        (signals.finished if ok else signals.failed).emit(value)
        signals.done.emit()

    def cancel_all(self) -> None:
        for worker in list(self._running):
            worker.cancel_event.set()

    def wait(self, timeout_ms: int = 10_000) -> bool:
        """Block until every job has ended (on quit only). True if they all did."""
        return self._pool.waitForDone(timeout_ms)

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        self.cancel_all()
        return self.wait(timeout_ms)
