"""The CONS threshold what-if: move the verdict thresholds and see which verdicts would change.

Every question's stored ballots are judged again by the CONS engine, once at the question's own
thresholds and once at the ones set here (off the GUI thread; no model is called). The rows
whose verdict would change come first, marked ⇄ and in the warning colour.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QSpinBox,
    QWidget,
)

from workbench.ui import theme
from workbench.ui.widgets.record_table import RecordTable

COLUMNS = (("changed_label", "Change"), ("before", "Verdict now"), ("after", "With these thresholds"),
           ("consensus", "actualConsensus"), ("question", "Question"))  # the verdicts first: never clipped
VERDICT_COLOUR = {"PROVEN": "ok", "REFUTED": "error", "CONTESTED": "warning", "INSUFFICIENT_EVIDENCE": "muted",
                  "undecided": "info"}
SCALE = 100  # the sliders move in hundredths


class _ThresholdRow:
    """A slider and a spin box that move together, 0.01 .. 1.00."""

    def __init__(self, parent: QWidget, name: str, tip: str, on_change):
        self.label = QLabel(name, parent)
        self.slider = QSlider(Qt.Orientation.Horizontal, parent)
        self.slider.setObjectName(f"{name.split()[0].lower()}Slider")
        self.slider.setRange(1, SCALE)
        self.slider.setSingleStep(1)
        self.slider.setPageStep(5)
        self.slider.setToolTip(tip)
        self.spin = QDoubleSpinBox(parent)
        self.spin.setRange(0.01, 1.0)
        self.spin.setSingleStep(0.01)
        self.spin.setDecimals(2)
        self.spin.setToolTip(tip)
        self.slider.valueChanged.connect(lambda v: self.spin.setValue(v / SCALE))
        self.spin.valueChanged.connect(lambda v: self.slider.setValue(round(v * SCALE)))
        self.spin.valueChanged.connect(lambda _v: on_change())

    def value(self) -> float:
        return round(self.spin.value(), 2)

    def set_value(self, value: float) -> None:
        self.spin.setValue(value)


class ConsWhatIf(QWidget):
    """Controls and the table of verdicts; the host computes (``recompute_requested``)."""

    recompute_requested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("consWhatIf")
        self._own: tuple[float, float, int] | None = None
        self._quiet = False
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        controls = QWidget(self)
        grid = QGridLayout(controls)
        grid.setContentsMargins(0, 0, 0, 0)
        self.consensus = _ThresholdRow(controls, "Consensus threshold",
                                       "actualConsensus = A / (A + B) a verdict needs (consensusThreshold)",
                                       self._on_moved)
        self.count = _ThresholdRow(controls, "Count threshold",
                                   "share of voters accepting the leading option that also suffices (4 of 5 = 0.8)",
                                   self._on_moved)
        for row, t in enumerate((self.consensus, self.count)):
            grid.addWidget(t.label, row, 0)
            grid.addWidget(t.slider, row, 1)
            grid.addWidget(t.spin, row, 2)
        self.min_voters = QSpinBox(controls)
        self.min_voters.setObjectName("minVotersSpin")
        self.min_voters.setRange(1, 99)
        self.min_voters.setToolTip("fewer non-abstaining voters: INSUFFICIENT_EVIDENCE")
        self.min_voters.valueChanged.connect(self._on_moved)
        grid.addWidget(QLabel("Min voters", controls), 2, 0)
        grid.addWidget(self.min_voters, 2, 2)
        self.reset_button = QPushButton("Reset to the question's", controls)
        self.reset_button.setToolTip("Put back the selected question's own thresholds")
        self.reset_button.clicked.connect(self.reset)
        grid.addWidget(self.reset_button, 3, 0, 1, 3)
        self.summary = QLabel("", controls)
        self.summary.setObjectName("whatIfSummary")
        self.summary.setWordWrap(True)
        grid.addWidget(self.summary, 4, 0, 1, 3)
        grid.setRowStretch(5, 1)
        grid.setColumnStretch(1, 1)
        controls.setMinimumWidth(260)
        controls.setMaximumWidth(380)
        layout.addWidget(controls)
        self.table = RecordTable(COLUMNS, "Filter questions…", self)
        self.table.setObjectName("whatIfTable")
        self.table.model.decorate = _decorate
        layout.addWidget(self.table, 1)
        self.set_own(0.8, 0.8, 3)

    # ----- values ----------------------------------------------------------------------------
    def thresholds(self) -> tuple[float, float, int]:
        return self.consensus.value(), self.count.value(), self.min_voters.value()

    def set_own(self, consensus: float, count: float, min_voters: int) -> None:
        """The selected question's own thresholds: where the controls start and reset to."""
        first = self._own is None
        self._own = (consensus, count, min_voters)
        if first:
            self.reset()

    def reset(self) -> None:
        if self._own is None:
            return
        self._quiet = True
        try:
            self.consensus.set_value(self._own[0])
            self.count.set_value(self._own[1])
            self.min_voters.setValue(self._own[2])
        finally:
            self._quiet = False
        self._on_moved()

    def _on_moved(self) -> None:
        if not self._quiet:
            self.recompute_requested.emit()

    # ----- results -----------------------------------------------------------------------------
    def show_changes(self, changes) -> None:
        """``changes``: cons_view.Change rows, for the thresholds now set."""
        rows = []
        for c in sorted(changes, key=lambda c: (not c.changed, c.question.created_at)):
            rows.append({
                "id": c.question.id, "changed": c.changed, "changed_label": "⇄ changes" if c.changed else "",
                "question": f"{c.question.label}: {c.question.question}",
                "before": c.before.verdict or "—", "after": c.after.verdict or "—",
                "consensus": "—" if c.after.actual_consensus is None else f"{c.after.actual_consensus:.3f}",
                "reason": c.after.reason, "before_reason": c.before.reason})
        self.table.set_rows(rows)
        n = sum(c.changed for c in changes)
        consensus, count, voters = self.thresholds()
        self.summary.setText(
            f"At {consensus:.2f} / {count:.2f} / {voters}: {n} of {len(changes)} verdict{'s' * (len(changes) != 1)} "
            f"would change. From the stored ballots; no model is called.")

    def changed_rows(self) -> list[dict]:
        model = self.table.model
        return [model.row(r) for r in range(model.rowCount()) if model.row(r)["changed"]]


def _decorate(row: dict, key: str, role: int) -> object:
    if role == Qt.ItemDataRole.ForegroundRole:
        if key == "changed_label":
            return theme.colour("warning")
        if key in ("before", "after"):
            return theme.colour(VERDICT_COLOUR.get(row[key], "muted"))
    if role == Qt.ItemDataRole.ToolTipRole:
        if key == "after":
            return row["reason"]
        if key == "before":
            return row["before_reason"]
        if key == "question":
            return row["question"]
    if role == Qt.ItemDataRole.FontRole and key == "after" and row["changed"]:
        from PySide6.QtGui import QFont

        font = QFont()
        font.setBold(True)
        return font
    return None
