"""The Reports tab: choose a run, read its report, export it (see :class:`ReportView`).

The run list is read off the GUI thread, when a project opens and when runs change; the newest
run is shown first, and a run chosen stays chosen while the list refreshes.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from workbench.services.reads import Reader
from workbench.ui.widgets.report_view import ReportView


class RunReports(QWidget):
    def __init__(self, model, parent: QWidget | None = None):
        super().__init__(parent)
        self.model = model
        self.runs = QComboBox(self)
        self.runs.setObjectName("reportRun")
        self.runs.setMinimumContentsLength(30)
        self.runs.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.view = ReportView(model, self)
        self._reader = Reader(model.reads, self, name="list runs for reports")
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Run", self))
        bar.addWidget(self.runs, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.view, 1)
        self.runs.currentIndexChanged.connect(lambda _i: self.view.set_run(self.runs.currentData()))
        model.opened.connect(lambda _store: self._list())
        model.closed.connect(self.runs.clear)
        model.changed.connect(lambda changes: self._list() if changes.touches("runs") else None)
        if model.store is not None:
            self._list()

    def show_run(self, run_id: str) -> None:
        index = self.runs.findData(run_id)
        if index >= 0:
            self.runs.setCurrentIndex(index)

    def shutdown(self) -> None:
        self._reader.shutdown()
        self.view.shutdown()

    def _list(self) -> None:
        if self.model.store is None:
            return
        reading = self.model.store.reader()

        def read(_cancel: threading.Event):
            from workbench.core.project.runs import run_list

            return run_list(reading)

        self._reader.load(read, self._on_listed, cleanup=reading.close_connection)

    def _on_listed(self, rows) -> None:
        chosen = self.runs.currentData()
        self.runs.blockSignals(True)
        self.runs.clear()
        from workbench.ui.widgets.run_names import run_titles, run_tooltip

        # By label, protocol, status and start time, as every list names a run.
        for row, title in zip(rows, run_titles(rows)):
            self.runs.addItem(title, row.id)
            self.runs.setItemData(self.runs.count() - 1, run_tooltip(row), Qt.ItemDataRole.ToolTipRole)
        self.runs.blockSignals(False)
        index = self.runs.findData(chosen) if chosen is not None else -1
        self.runs.setCurrentIndex(index if index >= 0 else (0 if rows else -1))
        if self.runs.currentData() != self.view.run_id:
            self.view.set_run(self.runs.currentData())
