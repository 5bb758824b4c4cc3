"""A batch's conductor decisions, each recorded for its own run once the batch ends.

The decisions are written after the loop over the batch's runs has moved on (the project model's
writer runs them later): each write must carry its own run's choice, option and reason, not the
last run's (a late-bound closure gave every run the last decision).
"""

from __future__ import annotations

from tests.ui.conftest import WAIT_MS
from tests.ui.live_run_helpers import empty_project, panel_of
from workbench.core.project import escalations


def test_each_run_of_a_batch_gets_its_own_decision(qtbot, window, tmp_path, open_project, monkeypatch):
    open_project(empty_project(tmp_path))
    panel = panel_of(window)
    qtbot.waitUntil(lambda: panel.model.store is not None, timeout=WAIT_MS)
    writes, recorded = [], []
    monkeypatch.setattr(panel.model, "write", lambda name, fn, on_done=None: writes.append(fn))
    monkeypatch.setattr(escalations, "record_decision",
                        lambda store, run_id, **kw: recorded.append((run_id, kw["choice"], kw["option"],
                                                                     kw["reason"])))
    panel._decisions = {"run-a": ("override", "bikes", "cheaper"), "run-b": ("accept", "", "as proven")}

    panel._record_decisions({"runs": [{"run_id": "run-a", "status": "completed"},
                                      {"run_id": "run-b", "status": "completed"}]})
    for fn in writes:  # only now, as the writer does, after the loop has ended
        fn(None)

    assert recorded == [("run-a", "override", "bikes", "cheaper"), ("run-b", "accept", None, "as proven")]
    assert panel._decisions == {}
