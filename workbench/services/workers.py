"""Background work for the GUI: QRunnables with signals, cancellation and a registry.

Nothing slow runs on the GUI thread. A job is a plain function ``fn(cancel: threading.Event)``;
it runs on the pool's own threads and reports back through a signals object that the pool (the
caller) owns, so results arrive as queued signals on the GUI thread. Workers never touch
widgets. The pool keeps a reference to every running worker and can cancel and wait for all of
them, which the main window does on close and the test suite checks after every test.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, Slot


@dataclass(frozen=True)
class JobError:
    """A failed job: ``message`` is for the user, ``details`` (the traceback) for the disclosure."""

    message: str
    details: str
    exception: BaseException


class WorkerSignals(QObject):
    """Lives on the GUI thread. The worker emits from its own thread; the connections to this
    object's slots are therefore queued, and the callbacks always run on the GUI thread."""

    finished = Signal(object)  # the job's return value
    failed = Signal(object)  # a JobError
    done = Signal()  # after finished or failed, always
    _result = Signal(object, bool)  # emitted from the worker thread

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._result.connect(self._deliver)

    @Slot(object, bool)
    def _deliver(self, value: object, ok: bool) -> None:
        (self.finished if ok else self.failed).emit(value)
        self.done.emit()


class Worker(QRunnable):
    def __init__(self, name: str, fn: Callable[[threading.Event], object], signals: WorkerSignals):
        super().__init__()
        self.setAutoDelete(False)  # the pool's registry owns the Python object
        self.name = name
        self.cancel_event = threading.Event()
        self.signals = signals
        self._fn = fn

    def run(self) -> None:  # runs on a pool thread
        try:
            value, ok = self._fn(self.cancel_event), True
        except BaseException as exc:  # reported to the GUI, never raised into Qt
            value, ok = JobError(str(exc) or type(exc).__name__, traceback.format_exc(), exc), False
        with _live_lock:
            _live.discard(self)
        self.signals._result.emit(value, ok)


_live_lock = threading.Lock()
_live: set[Worker] = set()


def live_workers() -> list[str]:
    """Names of the workers still running in this process (the test suite asserts none)."""
    with _live_lock:
        return sorted(w.name for w in _live)


class WorkerPool(QObject):
    """Runs jobs off the GUI thread. Create it on the GUI thread."""

    def __init__(self, parent: QObject | None = None, max_threads: int = 4):
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(max_threads)
        self._signals: dict[Worker, WorkerSignals] = {}

    def start(self, name: str, fn: Callable[[threading.Event], object],
              on_finished: Callable[[object], None] | None = None,
              on_failed: Callable[[JobError], None] | None = None, *, priority: int = 0) -> Worker:
        """Run ``fn`` on the pool; of the jobs waiting for a thread, higher ``priority`` goes first."""
        signals = WorkerSignals(self)
        if on_finished:
            signals.finished.connect(on_finished)
        if on_failed:
            signals.failed.connect(on_failed)
        worker = Worker(name, fn, signals)
        signals.done.connect(lambda w=worker: self._forget(w))
        self._signals[worker] = signals
        with _live_lock:
            _live.add(worker)
        self._pool.start(worker, priority)
        return worker

    def _forget(self, worker: Worker) -> None:
        signals = self._signals.pop(worker, None)
        if signals is not None:
            signals.deleteLater()

    def cancel_all(self) -> None:
        for worker in list(self._signals):
            worker.cancel_event.set()

    def wait(self, timeout_ms: int = 10_000) -> bool:
        """Block until every job has ended (on quit only). True if they all did."""
        return self._pool.waitForDone(timeout_ms)

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        self.cancel_all()
        return self.wait(timeout_ms)
