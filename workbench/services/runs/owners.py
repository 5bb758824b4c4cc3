"""Which process runs a run: recorded when a run starts, checked when a project opens.

Kept apart from the runner (which brings the run-config models and the agents) so that the GUI
can look for runs left "running" by a dead process as soon as a project opens, cheaply.
"""

from __future__ import annotations

import os
import socket

from workbench.core.project import runs
from workbench.core.project.store import Store


def owner() -> dict:
    return {"host": socket.gethostname(), "pid": os.getpid()}


def owner_alive(info: dict | None) -> bool:
    if not info or info.get("host") != socket.gethostname():
        return bool(info)  # another machine's run: assume it may still be going
    try:
        os.kill(int(info["pid"]), 0)
    except (ProcessLookupError, ValueError, TypeError):
        return False
    except PermissionError:
        return True
    return True


def mark_stale_runs(store: Store) -> int:
    """Runs left "running" by a process that is gone become "interrupted" (resumable)."""
    return runs.mark_stale_runs(store, owner_alive)
