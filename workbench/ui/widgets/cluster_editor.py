"""The form of one cluster: its name, theta, weight, reference mark and description.

A thin view: it parses what is typed (a number, or empty for the global theta) and says so
inline when it is not a number; the panel checks the whole panel with the typed value in place
(:func:`~workbench.core.project.panel_check.check_panel`), shows the issues with
:meth:`ClusterEditor.show_issues`, and writes a field when its editing is finished
(``committed``) and nothing is wrong with it.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QFormLayout, QLabel, QLineEdit, QVBoxLayout, QWidget

from workbench.ui.widgets.field_check import FieldMessage, mark, worst

FIELDS = ("name", "theta", "weight", "description")


def field_cell(parent: QWidget, field: QWidget, message: FieldMessage) -> QWidget:
    """``field`` with its message under it, as one form cell."""
    cell = QWidget(parent)
    layout = QVBoxLayout(cell)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(1)
    layout.addWidget(field)
    layout.addWidget(message)
    return cell


def parse_number(text: str, *, blank: object = ...) -> tuple[bool, object]:
    """(True, the number) or (True, ``blank``) for empty text when allowed, else (False, None)."""
    text = text.strip()
    if not text and blank is not ...:
        return True, blank
    try:
        return True, float(text)
    except ValueError:
        return False, None


class ClusterEditor(QWidget):
    edited = Signal(str)  # a field's text changed (the panel re-checks)
    committed = Signal(str)  # a field's editing finished (the panel writes it, if it is right)
    reference_toggled = Signal(bool)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("clusterEditor")
        self.cluster: dict | None = None
        self.dirty: set[str] = set()
        self.heading = QLabel(self)
        self.heading.setTextFormat(Qt.TextFormat.RichText)
        self.name = QLineEdit(self)
        self.name.setObjectName("clusterName")
        self.theta = QLineEdit(self)
        self.theta.setObjectName("clusterTheta")
        self.set_project_theta(None)
        self.weight = QLineEdit(self)
        self.weight.setObjectName("clusterWeight")
        self.weight.setToolTip("This cluster's weight in a weighted resonance ratio (a positive number; used when "
                               "the project's RCP runs are weighted).")
        self.reference = QCheckBox("Reference cluster (C+)", self)
        self.reference.setObjectName("clusterReference")
        self.reference.setToolTip("The cluster whose approval decides positive against negative polar. "
                                  "When none is marked, a run takes the first cluster.")
        self.description = QLineEdit(self)
        self.description.setObjectName("clusterDescription")
        self.description.setPlaceholderText("what this cluster stands for (never sent to a model)")
        self.inputs = {"name": self.name, "theta": self.theta, "weight": self.weight, "description": self.description}
        self.messages = {f: FieldMessage(self) for f in (*FIELDS, "agents")}
        for f, widget in self.inputs.items():
            widget.textEdited.connect(lambda _t, f=f: self._on_edited(f))
            widget.editingFinished.connect(lambda f=f: self._on_editing_finished(f))
        self.reference.clicked.connect(lambda *_a: self.reference_toggled.emit(self.reference.isChecked()))

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 0)
        layout.setSpacing(3)
        layout.addWidget(self.heading)
        form = QFormLayout()
        form.setContentsMargins(0, 0, 0, 0)
        form.setVerticalSpacing(3)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow("Name", field_cell(self, self.name, self.messages["name"]))
        form.addRow("θ", field_cell(self, self.theta, self.messages["theta"]))
        form.addRow("Weight", field_cell(self, self.weight, self.messages["weight"]))
        form.addRow("", self.reference)
        form.addRow("Notes", field_cell(self, self.description, self.messages["description"]))
        layout.addLayout(form)
        layout.addWidget(self.messages["agents"])
        layout.addStretch(1)

    def set_project_theta(self, theta: object) -> None:
        """The project's θ, which an empty θ here means (set beside τ in the panel's settings)."""
        value = _fmt(theta) if isinstance(theta, (int, float)) else "θ"
        self.theta.setPlaceholderText(f"the project's: {value}")
        self.theta.setToolTip("The share of this cluster's votes an artifact needs for the cluster to approve it, "
                              f"in (0, 1]. Empty: the project's θ ({value}), set above the clusters.")

    # ----- loading -------------------------------------------------------------------------
    def load(self, cluster: dict | None, agents: int = 0, *, keep_typing: bool = False) -> None:
        """Show ``cluster`` (a ``clusters`` row). ``keep_typing``: fields being edited keep their text."""
        same = cluster is not None and self.cluster is not None and cluster["id"] == self.cluster["id"]
        self.cluster = cluster
        if not (same and keep_typing):
            self.dirty = set()
        if cluster is None:
            self.heading.setText("")
            return
        self.heading.setText(f"<b>Cluster {html.escape(cluster['name'])}</b> · {agents} agent{'s' if agents != 1 else ''}")
        values = {"name": cluster["name"], "theta": "" if cluster["theta"] is None else _fmt(cluster["theta"]),
                  "weight": _fmt(cluster["weight"]), "description": cluster.get("description") or ""}
        for f, text in values.items():
            if f not in self.dirty and self.inputs[f].text() != text:
                self.inputs[f].setText(text)
                self.inputs[f].setCursorPosition(0)  # a long description shows its beginning
        self.reference.setChecked(bool(cluster["is_reference"]))

    # ----- what is typed ---------------------------------------------------------------------
    def typed(self) -> dict:
        """The fields being edited that parse, as values for a ``clusters`` row."""
        out: dict = {}
        for f in self.dirty:
            ok, value = self.parsed(f)
            if ok:
                out[f] = value
        return out

    def parsed(self, field: str) -> tuple[bool, object]:
        text = self.inputs[field].text()
        if field == "theta":
            return parse_number(text, blank=None)
        if field == "weight":
            return parse_number(text)
        if field == "name":
            return bool(text.strip()), text.strip() or None
        return True, text

    def show_issues(self, issues: list) -> None:
        """Issues of this cluster (each with ``field``, ``level``, ``message``), inline."""
        by_field: dict[str, list] = {}
        for issue in issues:
            by_field.setdefault(issue.field if issue.field in self.messages else "agents", []).append(issue)
        for f, label in self.messages.items():
            found = list(by_field.get(f, []))
            if f in self.inputs and f in self.dirty and not self.parsed(f)[0]:
                found = [_Local("a cluster needs a name" if f == "name"
                                else f"{'θ' if f == 'theta' else f.capitalize()}: not a number")]
            level = worst([i.level for i in found])
            label.show_message(level, " ".join(i.message for i in found if i.level == level))
            if f in self.inputs:
                mark(self.inputs[f], level)

    def has_error(self, field: str) -> bool:
        return self.messages[field].level == "error"

    # ----- slots -----------------------------------------------------------------------------
    def _on_edited(self, field: str) -> None:
        self.dirty.add(field)
        self.edited.emit(field)

    def _on_editing_finished(self, field: str) -> None:
        if field in self.dirty:
            self.committed.emit(field)


class _Local:
    level = "error"

    def __init__(self, message: str):
        self.message = message


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else str(value)
