"""A background thread that notices commits made by other programs to the open project.

It polls a :class:`ChangeWatcher` every ``interval`` seconds with its own read-only connection.
The thread is a plain Python thread on purpose: a Qt pool thread gets a fresh Python thread
state for every job, so a thread-local connection would be reopened on every poll, and
``PRAGMA data_version`` only means something on one connection kept open.

What it finds reaches the GUI thread as queued signals; a poll that waits on a writer's lock
delays the next poll, never the window.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Signal

from workbench.core.project.store import Store
from workbench.core.project.watch import ChangeWatcher


class ProjectWatch(QObject):
    """Watches one store until :meth:`stop`. Create it on the GUI thread."""

    started = Signal(object)  # the change counters when watching began (a dict)
    changed = Signal(object)  # Changes committed by other connections
    failed = Signal(str)  # the file can no longer be read

    def __init__(self, store: Store, interval_s: float = 0.4, parent: QObject | None = None):
        super().__init__(parent)
        self._store = store.reader()
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"rwb-watch {store.path.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, wait_s: float = 0.0) -> bool:
        """Stop polling; with ``wait_s``, wait that long for the thread to end. True if it did."""
        self._stop.set()
        if wait_s and self._thread.is_alive():
            self._thread.join(wait_s)
        return not self._thread.is_alive()

    def _run(self) -> None:  # the watch thread
        watcher = ChangeWatcher(self._store)
        try:
            self.started.emit(watcher.start())
            while not self._stop.wait(self._interval):
                changes = watcher.poll()
                if changes is not None and not self._stop.is_set():
                    self.changed.emit(changes)
        except Exception as exc:  # the file vanished or the disk failed: reported once, then stop
            if not self._stop.is_set():
                self.failed.emit(str(exc) or type(exc).__name__)
        finally:
            watcher.close()
