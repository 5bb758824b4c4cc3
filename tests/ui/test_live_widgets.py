"""The widgets that change many times a second during a live run: a growing table keeps its rows
in place, and a contained label's new text never re-lays out the window."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QLabel, QMainWindow, QSizePolicy, QVBoxLayout, QWidget

from workbench.ui.widgets.contained import Contained
from workbench.ui.widgets.record_table import RecordTable

COLUMNS = (("id", "#"), ("status", "Status"))


class LayoutRequests(QObject):
    """Counts the layout requests that reach ``widget``."""

    def __init__(self, widget: QWidget):
        super().__init__(widget)
        self.count = 0
        widget.installEventFilter(self)

    def eventFilter(self, _obj, event) -> bool:  # noqa: N802 (Qt API)
        self.count += event.type() == QEvent.Type.LayoutRequest
        return False


def test_a_growing_table_inserts_the_new_rows_and_keeps_the_selection(qtbot):
    table = RecordTable(COLUMNS, grows=True)
    qtbot.addWidget(table)
    resets, inserted = [], []
    table.model.modelReset.connect(lambda: resets.append(1))
    table.model.rowsInserted.connect(lambda _p, first, last: inserted.append((first, last)))
    table.set_rows([{"id": 1, "status": "running"}])
    assert resets == [1]  # the first rows: a reset
    table.view.selectRow(0)
    table.set_rows([{"id": 1, "status": "ok"}, {"id": 2, "status": "running"}, {"id": 3, "status": "running"}])
    assert resets == [1] and inserted == [(1, 2)]
    assert [i.row() for i in table.view.selectionModel().selectedRows()] == [0]
    assert table.model.row(0)["status"] == "ok"  # the row that changed shows its new values
    table.set_rows([{"id": 1, "status": "ok"}])
    assert table.visible_rows() == 1 and resets == [1]

    plain = RecordTable(COLUMNS)  # every other table: a new length is a new list
    qtbot.addWidget(plain)
    plain.set_rows([{"id": 1, "status": "ok"}])
    plain.model.modelReset.connect(lambda: resets.append(2))
    plain.set_rows([{"id": 1, "status": "ok"}, {"id": 2, "status": "ok"}])
    assert resets == [1, 2]


def test_a_contained_label_changes_without_re_laying_out_the_window_until_it_needs_more_room(qtbot):
    window = QMainWindow()
    qtbot.addWidget(window)
    body = QWidget()
    layout = QVBoxLayout(body)
    counter = QLabel("1/1000 calls")  # as the Live Run's progress line and calls heading are
    heading = QLabel("a short heading")
    heading.setWordWrap(True)
    for label in (counter, heading):
        label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    layout.addWidget(Contained(counter, body))
    box = Contained(heading, body)
    layout.addWidget(box)
    layout.addStretch(1)  # the labels get the height they ask for, no more
    window.setCentralWidget(body)
    window.resize(300, 200)
    window.show()
    qtbot.waitExposed(window)
    qtbot.wait(50)  # the first layout settles
    requests = LayoutRequests(window)
    for n in range(2, 40):
        counter.setText(f"{n * 37}/1000 calls, ETA {n} s")
        heading.setText(f"run {n}: {n} calls")
        qtbot.wait(1)
    assert requests.count == 0
    one_line = box.height()
    heading.setText("a heading long enough to wrap onto a second line in a window this narrow, and a third")
    qtbot.waitUntil(lambda: box.height() > one_line, timeout=5000)  # the room it needs, given
    assert heading.height() == box.height() >= heading.heightForWidth(box.width())
