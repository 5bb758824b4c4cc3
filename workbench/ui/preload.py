"""Modules the window imports on a worker thread once it is up, so that nothing waits for them
later: pyqtgraph and the plots (160 ms), which a panel's first chart would otherwise import on the
GUI thread, and the run machinery (runner, simulated panel, RCP engine, reports: 60 ms), which the
first run would. Imported on the GUI thread in the middle of a live run, they stalled the window
(PySide's import hook also reads each new module's source there).

Importing creates no Qt object, so it is safe off the GUI thread. ``then`` is called on the import
thread once everything is in: emit a signal from it (the window makes its charts then). litellm
is never among these: a ``sim`` run never loads it.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable

PLOT_MODULES = ("workbench.ui.plots.quadrant_plot", "workbench.ui.plots.ratio_plot", "workbench.ui.plots.drift_plot",
                "workbench.ui.plots.convergence_plot", "workbench.ui.plots.roc_plot")
RUN_MODULES = ("workbench.services.runs.runner", "workbench.core.sim", "workbench.core.protocols.rcp.classify",
               "workbench.core.protocols.rcp.run", "workbench.core.project.export", "workbench.core.report_md")
MODULES = PLOT_MODULES + RUN_MODULES
_started = threading.Event()
imported = threading.Event()  # set once the background import has ended (whatever its outcome)
_lock = threading.Lock()
_waiting: list[Callable[[], None]] = []


def import_in_background(then: Callable[[], None] | None = None) -> None:
    """Import :data:`MODULES` on a daemon thread (once per process), then call ``then`` (at once
    when they already are)."""
    with _lock:
        done = imported.is_set()
        if then is not None and not done:
            _waiting.append(then)
        start = not _started.is_set()
        _started.set()
    if done and then is not None:
        _call(then)
    if start:
        threading.Thread(target=_run, name="rwb-preload", daemon=True).start()


def _run() -> None:
    try:
        for name in MODULES:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - whoever needs it imports it again and sees the error there
                pass
    finally:
        with _lock:
            imported.set()
            callbacks = list(_waiting)
            _waiting.clear()
        for callback in callbacks:
            _call(callback)


def _call(callback: Callable[[], None]) -> None:
    try:
        callback()
    except RuntimeError:  # its window was closed meanwhile (a deleted Qt object): nothing to warm
        pass
