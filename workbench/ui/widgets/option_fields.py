"""A protocol's options as form fields, built from its declaration's config model (SPEC §7).

The run configuration form (``run_config_editor``) shows each protocol's own options (the fields
its declared ``config`` adds to the shared ones) on a page of their own. The page is made here,
from the model: a whole number with its bounds is a spin box, a number a decimal spin box, a
yes/no a check box, a choice (``Literal``) a drop-down, a text a line, a list of texts one line
each, and a nested model (ARM's ``arm``) its fields in turn, under its key. A field of any other
shape (a mapping, a list of objects) gets no widget: the form leaves its value in the document
as it is, and "Show JSON" edits it. So a plugin's protocol gets a page with no code in the GUI.

The label is the field's name in words ("refinement_rounds" → "Refinement rounds"); its
description, when the model gives one, is the tooltip.
"""

from __future__ import annotations

import math
import types
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLineEdit,
    QPlainTextEdit,
    QSpinBox,
    QWidget,
)

if TYPE_CHECKING:  # pydantic comes with the first protocol page, not with the window
    from pydantic import BaseModel

INT_RANGE = (-1_000_000_000, 1_000_000_000)  # a bound a whole number's model does not give
FLOAT_RANGE = (-1_000_000.0, 1_000_000.0)
DEFAULT_CHOICE = "(default)"
MAX_DEPTH = 3  # nested models followed (ARM: arm → budgets → r1)

# How a field's widget value becomes the document's value (see :func:`value_of`).
SCALAR, LINES, OPTIONAL = "scalar", "lines", "optional"


@dataclass(frozen=True)
class OptionField:
    path: tuple[str, ...]  # where the value sits in the document ("arm", "fap_threshold")
    label: str
    tip: str
    widget: QWidget
    kind: str  # SCALAR, LINES (a list of texts, one a line) or OPTIONAL (empty or "(default)": no key)
    default: Any


def label_of(name: str) -> str:
    return name.replace("_", " ").strip().capitalize()


def option_fields(model: type[BaseModel], skip: typing.Collection[str] = (), prefix: tuple[str, ...] = (),
                  defaults: BaseModel | None = None, depth: int = 0) -> list[OptionField]:
    """A field for each of ``model``'s fields that has a widget (``skip``: names left out: the
    shared fields of every run, or those a protocol's own page shows)."""
    out: list[OptionField] = []
    from pydantic import BaseModel

    for name, info in model.model_fields.items():
        if name in skip:
            continue
        path = (*prefix, name)
        default = _default(info, defaults, name)
        annotation, optional = _unwrapped(info.annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if depth < MAX_DEPTH:
                inner = default if isinstance(default, BaseModel) else None
                out += option_fields(annotation, (), path, inner, depth + 1)
            continue
        made = _widget(annotation, info.metadata, optional)
        if made is None:
            continue
        widget, kind = made
        # A field of a nested model says whose it is, but for the protocol's own key (ARM's "arm").
        label = f"{label_of(path[-2])} · {label_of(name)}" if depth > 1 else label_of(name)
        out.append(OptionField(path, label, info.description or "", widget, kind, default))
    return out


def _default(info, defaults: BaseModel | None, name: str) -> Any:
    if defaults is not None:
        return getattr(defaults, name, None)
    if info.is_required():  # no default: the widget starts empty
        return None
    return info.get_default(call_default_factory=True)


def _unwrapped(annotation: Any) -> tuple[Any, bool]:
    """``annotation`` without ``Optional`` (and whether it had it) and without ``Annotated``."""
    optional = False
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        annotation = args[0] if len(args) == 1 else annotation
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation, optional


def _bounds(metadata: list, low: float, high: float) -> tuple[float, float, bool]:
    """The range a number's constraints give (``Ge``/``Gt``, ``Le``/``Lt``), and whether one did."""
    given = False
    for m in metadata:  # annotated_types' Ge, Gt, Le, Lt, as pydantic keeps them
        for attr in ("ge", "gt"):
            if isinstance(getattr(m, attr, None), (int, float)):
                low, given = float(getattr(m, attr)), True
        for attr in ("le", "lt"):
            if isinstance(getattr(m, attr, None), (int, float)):
                high, given = float(getattr(m, attr)), True
    return low, high, given


def _widget(annotation: Any, metadata: list, optional: bool) -> tuple[QWidget, str] | None:
    if annotation is bool:
        return QCheckBox(), SCALAR
    if annotation is int:
        low, high, _ = _bounds(metadata, *INT_RANGE)
        box = QSpinBox()
        box.setRange(int(max(low, INT_RANGE[0])), int(min(high, INT_RANGE[1])))
        return box, SCALAR
    if annotation is float:
        low, high, given = _bounds(metadata, *FLOAT_RANGE)
        box = QDoubleSpinBox()
        box.setRange(max(low, FLOAT_RANGE[0]), min(high, FLOAT_RANGE[1]))
        small = given and high - low <= 2
        box.setDecimals(3 if small else 2)
        box.setSingleStep(0.05 if small else 1.0)
        return box, SCALAR
    if typing.get_origin(annotation) is Literal:
        box = QComboBox()
        if optional:
            box.addItem(DEFAULT_CHOICE, None)
        for value in typing.get_args(annotation):
            box.addItem(str(value), value)
        return box, OPTIONAL if optional else SCALAR
    if annotation is str:
        return QLineEdit(), OPTIONAL if optional else SCALAR
    item = (typing.get_args(annotation) or (None,))[0]
    if typing.get_origin(annotation) in (list, tuple) and _unwrapped(item)[0] is str:
        box = QPlainTextEdit()
        box.setPlaceholderText("One a line")
        box.setTabChangesFocus(True)
        box.setFixedHeight(int(box.fontMetrics().lineSpacing() * 2.2 + 10))
        return box, LINES
    return None


def shown_value(field: OptionField, value: Any) -> Any:
    """What the widget shows for the document's ``value`` (a list as lines)."""
    if field.kind == LINES:
        return "\n".join(str(v) for v in value or [])
    return value


def value_of(field: OptionField, raw: Any) -> tuple[Any, bool]:
    """The document's value for the widget's ``raw`` one, and whether the key is to be removed."""
    if field.kind == LINES:
        return [x.strip() for x in str(raw).splitlines() if x.strip()], False
    if field.kind == OPTIONAL and (raw is None or raw == ""):
        return None, True
    if isinstance(raw, float) and not math.isfinite(raw):
        return None, True
    return raw, False


# ----- the widgets every form of the run configuration uses ----------------------------------------
def double_box(low: float, high: float, step: float = 0.05, decimals: int = 2) -> QDoubleSpinBox:
    box = QDoubleSpinBox()
    box.setRange(low, high)
    box.setSingleStep(step)
    box.setDecimals(decimals)
    return box


def int_box(low: int, high: int) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    return box


def text_box(lines: float, placeholder: str) -> QPlainTextEdit:
    box = QPlainTextEdit()
    box.setPlaceholderText(placeholder)
    box.setTabChangesFocus(True)
    box.setFixedHeight(int(box.fontMetrics().lineSpacing() * lines + 10))
    return box


def form_layout(parent: QWidget) -> QFormLayout:
    form = QFormLayout(parent)
    form.setContentsMargins(6, 4, 6, 4)
    form.setVerticalSpacing(3)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    return form
