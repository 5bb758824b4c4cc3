"""The Trace Inspector's filter bar: one drop-down per column of the record list.

Each drop-down offers the values the project holds (``records.Facets``, read off the GUI thread)
and says which filter it is in every item ("Agent: alpha"), so a narrow dock still reads. The
bar emits a :class:`~workbench.core.project.records.RecordFilter`; the list turns it into SQL with
parameters.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.core.project.records import (
    AUDIT_FILTERS,
    KINDS,
    QUALITY_FILTERS,
    SCORE_FILTERS,
    VALIDITIES,
    Facets,
    RecordFilter,
)
from workbench.core.protocols.shared.tiers import TIERS
from workbench.core.protocols.shared.tiers import label as tier_label

# Every kind of record the list holds (records.KINDS), as the kind filter and column name it. A
# protocol's own kinds (a plugin's) are "protocol record"s; the detail names the protocol's kind.
KIND_LABELS = {"call": "call", "trace": "trace", "vote": "vote", "ballot": "ballot", "finding": "finding",
               "finding_vote": "finding vote", "protocol_record": "protocol record"}
VALIDITY_GLYPHS = {"ok": "✓", "invalid": "⚠", "failed": "✖"}
AUDIT_LABELS = {"ok": "✓ ok", "suspect": "? suspect", "wrong": "✗ wrong", "audited": "any verdict",
                "unaudited": "not audited"}
QUALITY_LABELS = {"any": "⚑ any flag", "template_echo": "⚑ template echo", "cut_at_cap": "⚑ cut at cap",
                  "rubber_stamp": "⚑ rubber stamp"}
# An artifact against its run's known answer (SPEC §8): the calls that wrote it and the votes on it.
SCORE_LABELS = {"correct": "✓ correct", "incorrect": "✗ incorrect", "unscorable": "? unscorable",
                "scored": "any verdict", "unscored": "no known answer"}
# (field, name shown in each item), in the order of the grid.
FIELDS = (("kind", "Kind"), ("run", "Run"), ("batch", "Batch"), ("protocol", "Protocol"),
          ("agent", "Agent"), ("round_phase", "Round/phase"), ("provider", "Provider"), ("tier", "Tier"),
          ("flag", "Flag"), ("validity", "Validity"), ("simulated", "Sim/real"), ("audit", "Audit"),
          ("quality", "Quality"), ("score", "Score"))
COLUMNS = 4


class FilterBar(QWidget):
    changed = Signal(object)  # RecordFilter

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.filters = RecordFilter()
        self.combos: dict[str, QComboBox] = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        row = QHBoxLayout()
        self.toggle = QToolButton(self)
        self.toggle.setObjectName("filtersToggle")
        self.toggle.setCheckable(True)
        self.toggle.setChecked(True)
        self.toggle.setAutoRaise(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.DownArrow)
        self.toggle.setToolTip("Show or hide the filters (they stay applied)")
        self.toggle.toggled.connect(self._on_toggled)
        self.toggle.clicked.connect(self._on_clicked)
        self._chosen = False  # the user folded or unfolded the filters: fold() leaves them so
        self.clear_button = QPushButton("Clear filters", self)
        self.clear_button.setObjectName("clearFilters")
        self.clear_button.clicked.connect(self.clear)
        self.search_mode = QLabel(self)
        self.search_mode.setObjectName("searchMode")
        row.addWidget(self.toggle)
        row.addStretch(1)
        row.addWidget(self.clear_button)
        layout.addLayout(row)
        self.grid_box = QWidget(self)
        grid = QGridLayout(self.grid_box)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(4)
        grid.setVerticalSpacing(2)
        for field, name in FIELDS:
            combo = QComboBox(self)
            combo.setObjectName(f"filter_{field}")
            combo.setToolTip(f"Show only the records of one {name.lower()}")
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(6)
            combo.addItem(f"{name}: any", None)
            combo.activated.connect(lambda _i, f=field: self._on_activated(f))
            self.combos[field] = combo
        self.grid = grid
        self._columns = 0
        self._lay_out(COLUMNS)
        layout.addWidget(self.grid_box)
        self._fill_fixed()
        self._show_count()

    def _lay_out(self, columns: int) -> None:
        """The drop-downs in ``columns`` columns (fewer in a narrow dock, more in a wide one)."""
        if columns == self._columns:
            return
        for c in range(max(self._columns, columns)):
            self.grid.setColumnStretch(c, 1 if c < columns else 0)
        self._columns = columns
        for i, (field, _name) in enumerate(FIELDS):
            self.grid.addWidget(self.combos[field], i // columns, i % columns)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        # As many columns as fit (a drop-down needs about 170 px), so the grid never asks the
        # dock for more width than it has.
        self._lay_out(max(2, min(6, self.width() // 170)))

    def fold(self, folded: bool) -> None:
        """Fold the drop-downs (a short dock) or unfold them, unless the user chose; folded
        filters stay applied and the toggle says how many are active."""
        if not self._chosen:
            self.toggle.setChecked(not folded)

    @property
    def folded(self) -> bool:
        return not self.toggle.isChecked()

    def _on_clicked(self, _checked: bool) -> None:
        self._chosen = True

    def _on_toggled(self, shown: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)
        self.grid_box.setVisible(shown)

    def _show_count(self) -> None:
        active = self.filters.active()
        self.toggle.setText(f"Filters · {len(active)} active" if active else "Filters")
        self.clear_button.setEnabled(bool(active))

    # ----- values ------------------------------------------------------------------------------
    def _fill_fixed(self) -> None:
        self._set_items("tier", [(tier_label(t), t) for t in TIERS])
        self._set_items("validity", [(f"{VALIDITY_GLYPHS[v]} {v}", v) for v in VALIDITIES])
        self._set_items("simulated", [("SIM (simulated)", True), ("real", False)])
        self._set_items("audit", [(AUDIT_LABELS[a], a) for a in AUDIT_FILTERS])
        self._set_items("quality", [(QUALITY_LABELS[q], q) for q in QUALITY_FILTERS],
                        tips=["calls and votes with any reply quality flag",
                              "replies that repeat the prompt's own template text",
                              "replies cut at the output token cap",
                              "votes of a voter who voted the same on 5 or more items"])
        self._set_items("score", [(SCORE_LABELS[v], v) for v in SCORE_FILTERS],
                        tips=["calls and votes whose artifact's answer is the known one",
                              "calls and votes whose artifact's answer is not the known one",
                              "calls and votes whose artifact gives no answer that can be read",
                              "calls and votes on an artifact scored against a known answer",
                              "calls and votes of runs whose question has no known answer"])
        self._set_items("kind", [(KIND_LABELS[k], k) for k in KINDS])

    def set_facets(self, facets: Facets, counts: dict[str, int] | None = None) -> None:
        """Offer what the project holds now; a value chosen before stays chosen."""
        counts = counts or {}
        self._set_items("kind", [(f"{KIND_LABELS[k]} ({counts[k]:,})" if k in counts else KIND_LABELS[k], k)
                                 for k in KINDS])
        from workbench.ui.widgets.run_names import run_titles, run_tooltip

        # By label, protocol, status and start time, as every list names a run (the id in the tooltip).
        if facets.run_rows:
            self._set_items("run", list(zip(run_titles(facets.run_rows), (r.id for r in facets.run_rows))),
                            tips=[run_tooltip(r) for r in facets.run_rows])
        else:
            self._set_items("run", [(f"{label or rid} · {protocol}", rid) for rid, label, protocol in facets.runs],
                            tips=[rid for rid, _, _ in facets.runs])
        self._set_items("batch", [(name or bid, bid) for bid, name in facets.batches])
        self._set_items("protocol", [(p, p) for p in facets.protocols])
        self._set_items("agent", [(a, a) for a in facets.agents])
        self._set_items("round_phase", [(f"round {n}", ("round", n)) for n in facets.rounds]
                        + [(p, ("phase", p)) for p in facets.phases])
        self._set_items("provider", [(p, p) for p in facets.providers])
        self._set_items("flag", [(f, f) for f in facets.flags], tips=list(facets.flags))

    def _set_items(self, field: str, items: list[tuple[str, object]], tips: list[str] | None = None) -> None:
        combo = self.combos[field]
        current = combo.currentData()
        name = dict(FIELDS)[field]
        wanted = [(f"{name}: any", None)] + [(f"{name}: {text}", data) for text, data in items]
        if current is not None and all(data != current for _, data in wanted):
            wanted.append((combo.currentText(), current))  # a chosen value the project no longer has
        if [(combo.itemText(i), combo.itemData(i)) for i in range(combo.count())] == wanted:
            return
        combo.blockSignals(True)
        combo.clear()
        for i, (text, data) in enumerate(wanted):
            combo.addItem(text, data)
            if tips and 0 < i <= len(tips):
                combo.setItemData(i, tips[i - 1], 3)  # Qt.ToolTipRole
        combo.setCurrentIndex(max(0, _index_of(combo, current)) if current is not None else 0)
        combo.blockSignals(False)

    # ----- the filter ---------------------------------------------------------------------------
    def set_filters(self, filters: RecordFilter, *, emit: bool = False) -> None:
        """Show ``filters`` (adding an item for a value not offered yet, e.g. a run just revealed)."""
        self.filters = filters
        self._show_count()
        values = {f: getattr(filters, f) for f, _ in FIELDS if f != "round_phase"}
        values["round_phase"] = (("round", filters.round) if filters.round is not None
                                 else ("phase", filters.phase) if filters.phase else None)
        for field, value in values.items():
            combo = self.combos[field]
            combo.blockSignals(True)
            index = _index_of(combo, value) if value is not None else 0
            if index < 0:
                combo.addItem(f"{dict(FIELDS)[field]}: {value}", value)
                index = combo.count() - 1
            combo.setCurrentIndex(index)
            combo.blockSignals(False)
        if emit:
            self.changed.emit(filters)

    def clear(self) -> None:
        self.set_filters(RecordFilter(), emit=True)

    def choose(self, field: str, value: object) -> None:
        """Pick ``value`` in one drop-down, as a user would (tests and links use it)."""
        combo = self.combos[field]
        index = _index_of(combo, value)
        if index < 0:
            combo.addItem(f"{dict(FIELDS)[field]}: {value}", value)
            index = combo.count() - 1
        combo.setCurrentIndex(index)
        self._on_activated(field)

    def _on_activated(self, field: str) -> None:
        value = self.combos[field].currentData()
        if field == "round_phase":
            kind, v = value if value is not None else (None, None)
            filters = replace(self.filters, round=v if kind == "round" else None, phase=v if kind == "phase" else None)
        else:
            filters = replace(self.filters, **{field: value})
        if filters != self.filters:
            self.filters = filters
            self._show_count()
            self.changed.emit(filters)


def _index_of(combo: QComboBox, value: object) -> int:
    """The item holding ``value`` (compared in Python: tuples and booleans too), or -1."""
    for i in range(combo.count()):
        data = combo.itemData(i)
        if data == value and type(data) is type(value):
            return i
    return -1
