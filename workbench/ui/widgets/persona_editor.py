"""Tune a simulated agent's persona: one row per SimPersona parameter, validated before writing.

The form is built from :class:`~workbench.core.sim.persona.SimPersona` itself (its fields, their
descriptions and ranges), so a new knob appears here without a change. Numbers in [0, 1] get a
slider and a text box; the text box takes any text, so a value out of range is not silently
clamped: Apply checks the whole persona with SimPersona and either writes ``agents.params_json``
through ``ProjectModel.write`` (off the GUI thread) or names the field that is wrong, inline,
and writes nothing.
"""

from __future__ import annotations

import html
import types
import typing
from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from workbench.core.project.changes import Changes
from workbench.core.project.store import Store
from workbench.services.project_model import ProjectModel

ERROR = "#b3261e"
OK = "#2e7d32"
SLIDER_STEPS = 100


def persona_fields() -> dict[str, dict]:
    """Each SimPersona field: its kind ("unit", "int", "choice", "bool"), default, choices, help."""
    from workbench.core.sim.persona import UNIT_FIELDS, SimPersona

    out = {}
    for name, info in SimPersona.model_fields.items():
        kind, choices = "int", ()
        annotation, optional = info.annotation, False
        if typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(None) in typing.get_args(annotation):
            # A parameter that may be left unset (SPEC §8's skill): an empty box leaves it unset.
            annotation, optional = next(a for a in typing.get_args(annotation) if a is not type(None)), True
        if name in UNIT_FIELDS:
            kind = "unit"
        elif annotation is bool:
            kind = "bool"
        elif typing.get_origin(annotation) is typing.Literal:
            kind, choices = "choice", typing.get_args(annotation)
        elif annotation is float:
            kind = "float"
        out[name] = {"kind": kind, "default": info.default, "choices": choices, "help": info.description or "",
                     "optional": optional}
    return out


def _label(name: str) -> str:
    return name.replace("_", " ").capitalize()


class _UnitField(QWidget):
    """A slider over [0, 1] and a text box that also accepts what the slider cannot show."""

    edited = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.slider = QSlider(Qt.Orientation.Horizontal, self)
        self.slider.setRange(0, SLIDER_STEPS)
        self.text = QLineEdit(self)
        self.text.setFixedWidth(self.text.fontMetrics().horizontalAdvance("0.000") + 24)
        self.text.setAlignment(Qt.AlignmentFlag.AlignRight)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.slider, 1)
        layout.addWidget(self.text)
        self.slider.valueChanged.connect(self._on_slider_moved)
        self.text.textEdited.connect(self._on_text_edited)

    def set_value(self, value: object) -> None:
        self.text.setText(_fmt(value))
        self._sync_slider()

    def value(self) -> object:
        return _number(self.text.text())

    def _on_slider_moved(self, position: int) -> None:
        if self.slider.signalsBlocked():
            return
        self.text.setText(_fmt(position / SLIDER_STEPS))
        self.edited.emit()

    def _on_text_edited(self, _text: str) -> None:
        self._sync_slider()
        self.edited.emit()

    def _sync_slider(self) -> None:
        value = self.value()
        if isinstance(value, float) and 0.0 <= value <= 1.0:
            self.slider.blockSignals(True)
            self.slider.setValue(round(value * SLIDER_STEPS))
            self.slider.blockSignals(False)


class PersonaEditor(QWidget):
    applied = Signal(str)  # the agent id, once its parameters are written

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("personaEditor")
        self.model = model
        self.agent_id: str | None = None
        self._agent: dict | None = None
        self._provider: dict | None = None
        self.loaded: dict = {}  # the parameters as stored when the agent was loaded
        self.dirty = False
        self.fields: dict[str, dict] = {}  # filled, with the form, when the first agent is shown
        self.inputs: dict[str, QWidget] = {}
        # How Apply writes: commit(agent_id, stored, new, done) (the Clusters & Agents panel makes it
        # an undoable edit); None writes directly through the model. done(changes) when written.
        self.commit: Callable[[str, dict, dict, Callable[[Changes], None]], None] | None = None

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        top = QHBoxLayout()  # the heading, Apply and the message stay in view; the form scrolls
        self.heading = QLabel("Select an agent to tune its simulated persona.", self)
        self.heading.setTextFormat(Qt.TextFormat.RichText)
        self.heading.setWordWrap(True)
        top.addWidget(self.heading, 1)
        self.revert_button = QPushButton("Revert", self)
        self.revert_button.setToolTip("Show the parameters as stored in the project")
        self.revert_button.clicked.connect(self._on_revert_clicked)
        self.apply_button = QPushButton("Apply", self)
        self.apply_button.setToolTip("Check the parameters and save them to the project")
        self.apply_button.clicked.connect(self._on_apply_clicked)
        top.addWidget(self.revert_button)
        top.addWidget(self.apply_button)
        layout.addLayout(top)
        self.message = QLabel(self)
        self.message.setObjectName("personaMessage")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.hide()
        layout.addWidget(self.message)
        self.note = QLabel(self)
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color: palette(placeholder-text);")
        self.note.hide()
        layout.addWidget(self.note)

        self.form_box = QWidget(self)
        self.form_box.hide()
        self._scroll = QScrollArea(self)
        self._scroll.setWidgetResizable(True)
        self._scroll.setFrameShape(QFrame.Shape.NoFrame)
        self._scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        layout.addWidget(self._scroll, 1)
        self.load(None)

    def _build_form(self) -> None:
        """The rows, from SimPersona (imported now, not at start-up: it brings pydantic)."""
        self.fields = persona_fields()
        form = QFormLayout(self.form_box)
        form.setContentsMargins(0, 0, 4, 0)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        for name, spec in self.fields.items():
            widget = self._input(spec)
            widget.setObjectName(f"persona_{name}")
            widget.setToolTip(spec["help"])
            label = QLabel(_label(name), self.form_box)
            label.setToolTip(spec["help"])
            form.addRow(label, widget)
            self.inputs[name] = widget
        self._scroll.setWidget(self.form_box)  # once it has its rows, so the area sizes it right
        self.form_box.show()

    def _input(self, spec: dict) -> QWidget:
        kind = spec["kind"]
        if kind == "unit":
            widget = _UnitField(self.form_box)
            widget.edited.connect(self._on_edited)
        elif kind == "bool":
            widget = QCheckBox(self.form_box)
            widget.toggled.connect(self._on_edited)
        elif kind == "choice":
            widget = QComboBox(self.form_box)
            widget.addItems([str(c) for c in spec["choices"]])
            widget.activated.connect(self._on_edited)
        else:
            widget = QLineEdit(self.form_box)
            if spec.get("optional"):
                widget.setPlaceholderText("unset")
            widget.textEdited.connect(self._on_edited)
        return widget

    @property
    def agent(self) -> dict | None:
        """The ``agents`` row the form was loaded from."""
        return self._agent

    # ----- loading ---------------------------------------------------------------------------
    def load(self, agent: dict | None, provider: dict | None = None) -> None:
        """Show ``agent``'s stored parameters (an ``agents`` row); None shows nothing."""
        self.agent_id = agent["id"] if agent else None
        self._agent, self._provider = agent, provider
        # The agent's sampling overrides sit beside its persona (the agent editor shows them).
        self.loaded = {k: v for k, v in ((agent or {}).get("params_json") or {}).items() if k != "sampling"}
        if agent is not None and not self.fields:
            self._build_form()
        self.form_box.setEnabled(agent is not None)
        if agent is None:
            self.heading.setText("Select an agent to tune its simulated persona.")
            self.note.hide()
        else:
            self.heading.setText(f"<b>Simulated persona of {html.escape(str(agent['id']))}</b>")
            notes = []
            if provider is None or provider.get("model") != "sim":
                name = (provider or {}).get("name") or agent.get("provider") or "none"
                notes.append(f"This agent answers through provider “{name}”, not the simulated panel: these "
                             "parameters only matter while it uses a sim provider.")
            unknown = sorted(set(self.loaded) - set(self.fields))
            if unknown:
                notes.append("Unknown parameter(s) " + ", ".join(unknown) + " are refused by the simulated "
                             "panel and will be removed on Apply.")
            self.note.setText(" ".join(notes))
            self.note.setVisible(bool(notes))
        for name, spec in self.fields.items():
            self._set(name, self.loaded.get(name, spec["default"]))
        self.dirty = False
        self._show_message("")
        self._update_buttons()

    def _set(self, name: str, value: object) -> None:
        widget = self.inputs[name]
        widget.blockSignals(True)
        if isinstance(widget, _UnitField):
            widget.set_value(value)
        elif isinstance(widget, QCheckBox):
            widget.setChecked(bool(value))
        elif isinstance(widget, QComboBox):
            widget.clear()
            widget.addItems([str(c) for c in self.fields[name]["choices"]])
            index = widget.findText(str(value))
            if index < 0:  # a stored value the form does not offer: show it, Apply will refuse it
                widget.addItem(str(value))
                index = widget.count() - 1
            widget.setCurrentIndex(index)
        else:
            widget.setText(_fmt(value))
        widget.blockSignals(False)
        _target(widget).setStyleSheet("")

    # ----- reading the form ------------------------------------------------------------------
    def values(self) -> dict:
        """The form's parameters, as typed (not yet validated)."""
        out = {}
        for name, widget in self.inputs.items():
            if isinstance(widget, _UnitField):
                out[name] = widget.value()
            elif isinstance(widget, QCheckBox):
                out[name] = widget.isChecked()
            elif isinstance(widget, QComboBox):
                out[name] = widget.currentText()
            elif self.fields[name].get("optional") and not widget.text().strip():
                out[name] = None  # left unset
            else:
                out[name] = _number(widget.text(), integer=True)
        return out

    def set_value(self, name: str, value: object) -> None:
        """Put ``value`` in a field as if typed (tests and scripts)."""
        self._set(name, value)
        self._on_edited()

    def validate(self) -> tuple[dict | None, str | None, str]:
        """(parameters to store, None, "") or (None, the field at fault, a message naming it)."""
        from workbench.core.errors import InputError
        from workbench.core.sim.persona import SimPersona

        try:
            persona = SimPersona.from_params(self.values())
        except InputError as exc:
            field = exc.field.split(".")[0] if exc.field else None
            name = _label(field) if field in self.fields else (exc.field or "persona")
            return None, field, f"{name}: {exc.message}. Nothing was saved."
        return persona.model_dump(mode="json"), None, ""

    # ----- commands --------------------------------------------------------------------------
    def _on_edited(self, *_args) -> None:
        self.dirty = True
        for widget in self.inputs.values():
            _target(widget).setStyleSheet("")
        self._show_message("")
        self._update_buttons()

    def _on_revert_clicked(self) -> None:
        if self._agent is not None:
            self.load({**self._agent, "params_json": self.loaded}, self._provider)

    def _on_apply_clicked(self) -> None:
        agent_id = self.agent_id
        if agent_id is None or self.model.store is None:
            return
        params, field, message = self.validate()
        if params is None:
            if field in self.inputs:
                _target(self.inputs[field]).setStyleSheet(f"border: 2px solid {ERROR};")
            self._show_message(message, error=True)
            return

        def job(store: Store) -> Changes:
            from workbench.core.project.panel_edits import set_agent_params

            return set_agent_params(store, agent_id, params)

        def done(_changes: Changes) -> None:
            if self.agent_id == agent_id:
                self.loaded, self.dirty = params, False
                self._show_message(f"Saved the persona of {agent_id}.")
                self._update_buttons()
            self.applied.emit(agent_id)

        self.apply_button.setEnabled(False)
        if self.commit is not None:
            self.commit(agent_id, dict(self.loaded), params, done)
        else:
            self.model.write(f"tune persona of {agent_id}", job, done)

    def _update_buttons(self) -> None:
        store = self.model.store
        writable = store is not None and not store.read_only and self.agent_id is not None
        self.apply_button.setEnabled(writable and self.dirty)
        self.revert_button.setEnabled(self.agent_id is not None and self.dirty)

    def _show_message(self, text: str, *, error: bool = False) -> None:
        self.message.setText(("✖ " if error else "✔ ") + text if text else "")
        self.message.setStyleSheet(f"color: {ERROR if error else OK}; font-weight: bold;" if error
                                   else f"color: {OK};")
        self.message.setVisible(bool(text))


def _target(widget: QWidget) -> QWidget:
    """The widget that shows a field's value (and its error border)."""
    return widget.text if isinstance(widget, _UnitField) else widget


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value == value else str(value)
    return "" if value is None else str(value)


def _number(text: str, *, integer: bool = False) -> object:
    """The number typed, or the text itself (SimPersona then says what is wrong with it)."""
    text = text.strip()
    try:
        return int(text) if integer else float(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text
