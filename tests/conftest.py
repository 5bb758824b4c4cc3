"""Suite-wide set-up: headless Qt, no network imports, a data folder of its own, and no worker left
running."""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from pathlib import Path

import pytest

# Before anything can create a QApplication or import litellm.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS = REPO_ROOT.parent / "shared" / "corpus" / "arm-protocol"


@pytest.fixture
def corpus_dir() -> Path:
    if not (CORPUS / "traces").is_dir():
        pytest.skip(f"the ARM corpus is absent: expected it at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session", autouse=True)
def session_data_folder(tmp_path_factory):
    """Nothing the suite runs writes into the user's data folder (core.paths.app_data_dir: the
    demo, the GUI's settings), not even a session or module fixture; subprocesses inherit it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RWB_DATA_DIR", str(tmp_path_factory.getbasetemp() / "rwb-data" / "session"))
        mp.delenv("RWB_DEMO_PATH", raising=False)
        yield


_data_folders = itertools.count()


@pytest.fixture(autouse=True)
def isolated_data_folder(tmp_path_factory, monkeypatch):
    """Each test its own data folder (made only if something writes there): settings such as the
    recent files or the zoom never leak from one test into the next."""
    monkeypatch.setenv("RWB_DATA_DIR", str(tmp_path_factory.getbasetemp() / "rwb-data" / str(next(_data_folders))))


@pytest.fixture(autouse=True)
def no_worker_left_running():
    """Fail any test that leaves a worker (ours, or a Python thread) running."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 2.0  # a finished worker may still be leaving its run()
    while True:
        workers = sys.modules.get("workbench.services.workers")
        ours = workers.live_workers() if workers else []
        threads = [t for t in threading.enumerate()
                   if t not in before and t.is_alive() and not isinstance(t, threading._DummyThread)]
        if not ours and not threads:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"test left workers running: {ours} threads: {[t.name for t in threads]}")
        time.sleep(0.02)
