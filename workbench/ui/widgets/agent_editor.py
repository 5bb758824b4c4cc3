"""The form of one agent: id, cluster, provider (and the provider's model), role, persona or
system prompt, and, below, its simulated-panel parameters (the :class:`PersonaEditor`).

A thin view like :class:`~workbench.ui.widgets.cluster_editor.ClusterEditor`: the panel checks
what is typed and writes each field when its editing is finished. The persona text is written
shortly after typing stops (and when the field loses focus); consecutive persona edits of one
agent make one undo step.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QGridLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from workbench.ui.widgets.cluster_editor import field_cell
from workbench.ui.widgets.field_check import FieldMessage, mark, worst
from workbench.ui.widgets.persona_editor import PersonaEditor
from workbench.ui.widgets.sampling_fields import SamplingFields

ROLES = ("", "alpha", "beta", "gamma", "silent", "scout", "auditor", "dev")
ROLE_HELP = ("ARM: alpha (deontological), beta (consequentialist), gamma (reconciler), silent (the baseline "
             "that never sees peers). Consensus Server: scout, auditor, dev. Empty for RCP and CONS.")
NO_PROVIDER = "(none)"
PERSONA_IDLE_MS = 700  # the persona is written this long after typing stops


class AgentEditor(QWidget):
    edited = Signal(str)  # a field's text changed
    committed = Signal(str)  # "id", "cluster", "provider", "role", "persona" or "sampling": write it

    def __init__(self, persona: PersonaEditor, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("agentEditor")
        self.agent: dict | None = None
        self.dirty: set[str] = set()
        self.heading = QLabel(self)
        self.heading.setTextFormat(Qt.TextFormat.RichText)
        self.id = QLineEdit(self)
        self.id.setObjectName("agentId")
        self.cluster = QComboBox(self)
        self.cluster.setObjectName("agentCluster")
        self.provider = QComboBox(self)
        self.provider.setObjectName("agentProvider")
        self.model_label = QLabel(self)
        self.model_label.setObjectName("agentModel")
        self.model_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.model_label.setStyleSheet("color: palette(placeholder-text);")
        self.role = QComboBox(self)
        self.role.setObjectName("agentRole")
        self.role.setEditable(True)
        self.role.addItems(list(ROLES))
        self.role.setToolTip(ROLE_HELP)
        self.persona_text = QPlainTextEdit(self)
        self.persona_text.setObjectName("agentPersona")
        self.persona_text.setPlaceholderText("Persona or system prompt: who this agent is, what it weighs…")
        self.persona_text.setTabChangesFocus(True)
        line = self.persona_text.fontMetrics().lineSpacing()
        self.persona_text.setFixedHeight(line * 3 + 12)
        self.sampling = SamplingFields(self, default_text="provider's")
        self.sampling.setObjectName("agentSampling")
        self.sampling.setToolTip("This agent's sampling: each key left at \"provider's\" takes the provider's value")
        self.messages = {f: FieldMessage(self) for f in ("id", "cluster", "provider", "role", "persona", "sampling",
                                                         "params")}
        self.inputs = {"id": self.id, "cluster": self.cluster, "provider": self.provider, "role": self.role,
                       "persona": self.persona_text, "sampling": self.sampling}
        self._models: dict[str, str] = {}  # provider name -> its model

        self.id.textEdited.connect(lambda _t: self._on_edited("id"))
        self.id.editingFinished.connect(lambda: self._on_finished("id"))
        self.cluster.activated.connect(lambda _i: self._on_picked("cluster"))
        self.provider.activated.connect(lambda _i: self._on_picked("provider"))
        self.provider.currentIndexChanged.connect(self._show_model)
        self.role.activated.connect(lambda _i: self._on_picked("role"))
        self.role.lineEdit().textEdited.connect(lambda _t: self._on_edited("role"))
        self.role.lineEdit().editingFinished.connect(lambda: self._on_finished("role"))
        self.persona_text.textChanged.connect(self._on_persona_typed)
        self.persona_text.installEventFilter(self)
        self._persona_timer = QTimer(self)
        self._persona_timer.setSingleShot(True)
        self._persona_timer.setInterval(PERSONA_IDLE_MS)
        self._persona_timer.timeout.connect(lambda: self._on_finished("persona"))
        self._sampling_timer = QTimer(self)
        self._sampling_timer.setSingleShot(True)
        self._sampling_timer.setInterval(PERSONA_IDLE_MS)
        self._sampling_timer.timeout.connect(lambda: self._on_finished("sampling"))
        self.sampling.edited.connect(self._on_sampling_typed)
        self._loading = False

        fields = QWidget(self)
        grid = QGridLayout(fields)  # compact: id and cluster share a row, the model sits by the provider
        grid.setContentsMargins(0, 0, 4, 0)
        grid.setHorizontalSpacing(6)
        grid.setVerticalSpacing(3)
        grid.addWidget(self.heading, 0, 0, 1, 4)
        grid.addWidget(QLabel("Id", fields), 1, 0)
        grid.addWidget(field_cell(fields, self.id, self.messages["id"]), 1, 1)
        grid.addWidget(QLabel("Cluster", fields), 1, 2)
        grid.addWidget(field_cell(fields, self.cluster, self.messages["cluster"]), 1, 3)
        grid.addWidget(QLabel("Provider", fields), 2, 0)
        grid.addWidget(field_cell(fields, self.provider, self.messages["provider"]), 2, 1)
        grid.addWidget(self.model_label, 2, 2, 1, 2, Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        grid.addWidget(QLabel("Role", fields), 3, 0)
        grid.addWidget(field_cell(fields, self.role, self.messages["role"]), 3, 1)
        grid.addWidget(QLabel("Persona", fields), 4, 0, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(field_cell(fields, self.persona_text, self.messages["persona"]), 4, 1, 1, 3)
        grid.addWidget(QLabel("Sampling", fields), 5, 0, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(field_cell(fields, self.sampling, self.messages["sampling"]), 5, 1, 1, 3)
        grid.addWidget(self.messages["params"], 6, 0, 1, 4)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)
        for row in (1, 2, 3):
            for col in (0, 2):
                item = grid.itemAtPosition(row, col)
                if item is not None and item.widget() is not None and isinstance(item.widget(), QLabel) \
                        and item.widget() is not self.model_label:
                    grid.setAlignment(item.widget(), Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(fields)
        self.fields_area = scroll

        self.persona = persona  # the simulated-panel parameters, under the agent's fields
        self.split = QSplitter(Qt.Orientation.Vertical, self)
        self.split.setChildrenCollapsible(False)
        self.split.addWidget(scroll)
        self.split.addWidget(persona)
        self.split.setStretchFactor(0, 1)
        self.split.setStretchFactor(1, 1)
        self.split.setSizes([fields.sizeHint().height(), 110])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.split)

    # ----- loading -------------------------------------------------------------------------
    def set_choices(self, clusters: list[dict], providers: dict[str, dict]) -> None:
        """The clusters an agent can be in and the providers it can call through."""
        self._models = {name: p.get("model") or "" for name, p in providers.items()}
        for combo, items in ((self.cluster, [(c["name"], c["id"]) for c in clusters]),
                             (self.provider, [(NO_PROVIDER, None)] + [(n, n) for n in sorted(providers)])):
            current = combo.currentData()
            if [(combo.itemText(i), combo.itemData(i)) for i in range(combo.count())] == items:
                continue
            combo.blockSignals(True)
            combo.clear()
            for text, data in items:
                combo.addItem(text, data)
            combo.setCurrentIndex(max(combo.findData(current), 0))
            combo.blockSignals(False)
        self._show_model()

    def load(self, agent: dict | None, *, keep_typing: bool = False) -> None:
        same = agent is not None and self.agent is not None and agent.get("id") == self.agent.get("id")
        if not (same and keep_typing):
            self.flush()
            self.dirty = set()
        self.agent = agent
        if agent is None:
            self.heading.setText("")
            return
        self._loading = True
        try:
            self.heading.setText(f"<b>Agent {html.escape(str(agent['id']))}</b>")
            if "id" not in self.dirty and self.id.text() != agent["id"]:
                self.id.setText(agent["id"])
            self._select(self.cluster, agent["cluster_id"])
            self._select(self.provider, agent["provider"])
            if "role" not in self.dirty and self.role.currentText() != (agent["role"] or ""):
                self.role.setCurrentText(agent["role"] or "")
            if "persona" not in self.dirty and self.persona_text.toPlainText() != (agent["persona"] or ""):
                self.persona_text.setPlainText(agent["persona"] or "")
            if "sampling" not in self.dirty and self.sampling.values() != stored_sampling(agent):
                self.sampling.set_values(stored_sampling(agent))
        finally:
            self._loading = False
        self._show_model()

    def _select(self, combo: QComboBox, data: object) -> None:
        combo.blockSignals(True)
        combo.setCurrentIndex(max(combo.findData(data), 0))
        combo.blockSignals(False)

    def _show_model(self, *_args) -> None:
        name = self.provider.currentData()
        model = self._models.get(name) if name else None
        self.model_label.setText(f"model: {model}" if model else "no provider: choose one")

    # ----- what is typed ---------------------------------------------------------------------
    def value(self, field: str) -> object:
        if field == "id":
            return self.id.text().strip()
        if field in ("cluster", "provider"):
            return self.inputs[field].currentData()
        if field == "role":
            return self.role.currentText().strip() or None
        if field == "sampling":
            return self.sampling.values()
        return self.persona_text.toPlainText()

    def typed(self) -> dict:
        """The fields being edited, as values for an ``agents`` row."""
        return {f: self.value(f) for f in self.dirty}

    def show_issues(self, issues: list) -> None:
        by_field: dict[str, list] = {}
        for issue in issues:
            by_field.setdefault(issue.field if issue.field in self.messages else "params", []).append(issue)
        for f, label in self.messages.items():
            found = by_field.get(f, [])
            level = worst([i.level for i in found])
            label.show_message(level, " ".join(i.message for i in found if i.level == level))
            if f in self.inputs:
                mark(self.inputs[f], level)

    def has_error(self, field: str) -> bool:
        return self.messages[field].level == "error"

    def flush(self) -> None:
        """Write a persona still waiting for its timer (before the form shows another agent)."""
        if self._persona_timer.isActive():
            self._persona_timer.stop()
            self._on_finished("persona")
        if self._sampling_timer.isActive():
            self._sampling_timer.stop()
            self._on_finished("sampling")

    # ----- slots -----------------------------------------------------------------------------
    def _on_edited(self, field: str) -> None:
        self.dirty.add(field)
        self.edited.emit(field)

    def _on_finished(self, field: str) -> None:
        if field in self.dirty:
            self.committed.emit(field)

    def _on_picked(self, field: str) -> None:
        self.dirty.add(field)
        self.edited.emit(field)
        self.committed.emit(field)

    def _on_persona_typed(self) -> None:
        if self._loading or self.agent is None:
            return
        self._on_edited("persona")
        self._persona_timer.start()

    def _on_sampling_typed(self) -> None:
        if self._loading or self.agent is None:
            return
        self._on_edited("sampling")
        self._sampling_timer.start()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if watched is self.persona_text and event.type() == QEvent.Type.FocusOut:
            self.flush()
        return super().eventFilter(watched, event)


def stored_sampling(agent: dict | None) -> dict:
    """An ``agents`` row's sampling overrides (kept in its ``params_json``)."""
    return dict(((agent or {}).get("params_json") or {}).get("sampling") or {})
