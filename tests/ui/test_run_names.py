"""Runs you can tell apart, on screen (issue 26): every list and picker of runs names a run by its
label, protocol, status and start time; call numbers start at 1 in each run."""

from __future__ import annotations

import re

from PySide6.QtCore import Qt

from tests.services.test_run_service import demo_project
from tests.ui.conftest import WAIT_MS
from tests.ui.live_run_helpers import panel_of, rows, start

TIME = re.compile(r"(\d\d \w\w\w )?\d\d:\d\d:\d\d")  # the day too, unless it is today


def test_two_runs_of_one_configuration_read_apart_and_number_their_calls_from_one(qtbot, window, tmp_path,
                                                                                   open_project):
    open_project(demo_project(tmp_path))
    live = panel_of(window)
    first = start(qtbot, window)["run_id"]
    second = start(qtbot, window)["run_id"]
    qtbot.waitUntil(lambda: live.timeline.rows and all(r["n"] is not None for r in rows(live)), timeout=WAIT_MS)
    # The second run's calls: numbered 1, 2, 3... though their records' ids go on from the first run's.
    shown = rows(live)
    assert live._shown_run == second
    assert [r["n"] for r in shown] == list(range(1, len(shown) + 1)) and shown[0]["id"] > len(shown)
    table = live.calls_table
    assert table.proxy.headerData(0, Qt.Orientation.Horizontal) == "#"
    assert table.proxy.index(0, 0).data() in (1, "1")

    # The runs table: the label first (never a bare id), the id last and in the tooltip.
    runs = live.runs_table
    names = [runs.proxy.index(r, 0).data() for r in range(runs.proxy.rowCount())]
    assert len(names) == len(set(names)) == 2 and all("Resonant consensus" in n or "RCP" in n for n in names)
    assert all(TIME.search(n) for n in names) and not any(n.startswith("rcp-") for n in names)
    tip = runs.proxy.index(0, 0).data(Qt.ItemDataRole.ToolTipRole)
    assert second in tip or first in tip

    # The quadrant's run picker: distinct entries, each with label, protocol, status and start time.
    quadrant = window.panels["quadrantPanel"]
    def items() -> list[str]:
        return [quadrant.run_combo.itemText(i) for i in range(quadrant.run_combo.count())]

    # (the end of the second run reaches the quadrant with the project's next poll)
    qtbot.waitUntil(lambda: len(items()) == 2 and all("completed" in i for i in items()), timeout=WAIT_MS)
    items = items()
    assert len(items) == len(set(items))
    for item in items:
        assert " · RCP · " in item and "completed" in item and TIME.search(item), item
    ids = {quadrant.run_combo.itemData(i) for i in range(quadrant.run_combo.count())}
    assert {first, second} <= ids
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
