"""RecordTable, the small lists' table: columns fitted to the rows, but only for a table in view."""

from __future__ import annotations

from workbench.ui.widgets.record_table import RecordTable

COLUMNS = [("key", "Key"), ("why", "Why unclassified")]
LONG = "no vote was cast on it: every voter's call failed before it could answer"


def test_a_hidden_table_fits_its_columns_when_it_shows_not_at_each_refresh(qtbot):
    table = RecordTable(COLUMNS)
    qtbot.addWidget(table)
    table.resize(900, 300)
    measured: list[bool] = []
    original = table.view.resizeColumnsToContents
    table.view.resizeColumnsToContents = lambda: (measured.append(True), original())[1]
    table.set_rows([{"key": "r1-a1", "why": LONG}])  # hidden (a tab behind another): not measured
    assert measured == []
    table.show()
    qtbot.waitUntil(lambda: measured == [True], timeout=5000)
    assert table.view.columnWidth(0) < table.view.columnWidth(1)  # fitted: the long reason is wider
    table.set_rows([{"key": f"r1-a{i}", "why": LONG} for i in range(3)])  # in view: measured at once
    assert measured == [True, True]
