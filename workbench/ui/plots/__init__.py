"""The plots (pyqtgraph), imported only when a panel first draws one: pyqtgraph and these modules
take 160 ms to import, which the window's start-up does not pay.

:func:`import_in_background` pays it on a worker thread once the window is up, so the first plot
a live run draws does not stall the window for that long. Importing creates no Qt object, so it
is safe off the GUI thread; the plots themselves are still made on the GUI thread.
"""

from __future__ import annotations

import importlib
import threading

MODULES = ("workbench.ui.plots.quadrant_plot", "workbench.ui.plots.ratio_plot", "workbench.ui.plots.drift_plot",
           "workbench.ui.plots.convergence_plot", "workbench.ui.plots.roc_plot")
_started = threading.Event()
imported = threading.Event()  # set once the background import has ended (whatever its outcome)


def import_in_background() -> None:
    """Import the plot modules on a daemon thread (once per process)."""
    if _started.is_set():
        return
    _started.set()

    def run() -> None:
        try:
            for name in MODULES:
                importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the panel's own import will raise it where it is seen
            pass
        finally:
            imported.set()

    threading.Thread(target=run, name="rwb-import-plots", daemon=True).start()
