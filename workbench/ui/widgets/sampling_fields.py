"""The five sampling keys as a compact row of fields: temperature, top_p, max_tokens, seed, stop.

Each field may be left at "default" (unset: the provider's value for an agent, the server's own
for a provider). Used by the provider dialog and by the agent editor in Clusters & Agents; the
values are checked by the run configuration's models when saved (``SamplingFields`` in
``core/runs/providers.py``).
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDoubleSpinBox, QGridLayout, QLabel, QLineEdit, QSpinBox, QWidget

from workbench.core.limits import MAX_OUTPUT_TOKENS

DEFAULT_TEXT = "default"
STOP_SEPARATOR = " | "


class SamplingFields(QWidget):
    """``values()`` gives only the keys set; ``set_values(d)`` shows a dict's keys."""

    edited = Signal()

    def __init__(self, parent: QWidget | None = None, *, default_text: str = DEFAULT_TEXT):
        super().__init__(parent)
        self.temperature = QDoubleSpinBox(self)
        self.temperature.setObjectName("samplingTemperature")
        self.temperature.setRange(-0.05, 2.0)  # the bottom step is "default" (unset)
        self.temperature.setSingleStep(0.05)
        self.temperature.setDecimals(2)
        self.temperature.setSpecialValueText(default_text)
        self.temperature.setToolTip("temperature, 0 to 2")
        self.top_p = QDoubleSpinBox(self)
        self.top_p.setObjectName("samplingTopP")
        self.top_p.setRange(0.0, 1.0)  # 0 is "default": top_p must be above 0
        self.top_p.setSingleStep(0.05)
        self.top_p.setDecimals(2)
        self.top_p.setSpecialValueText(default_text)
        self.top_p.setToolTip("top_p, above 0 and at most 1")
        self.max_tokens = QSpinBox(self)
        self.max_tokens.setObjectName("samplingMaxTokens")
        self.max_tokens.setRange(0, MAX_OUTPUT_TOKENS)
        self.max_tokens.setSpecialValueText(default_text)
        self.max_tokens.setToolTip("max_tokens: an output cap; each call kind's own cap applies too, the smaller wins")
        self.seed = QLineEdit(self)
        self.seed.setObjectName("samplingSeed")
        self.seed.setPlaceholderText(default_text)
        self.seed.setToolTip("seed: sent only when set (the run seed is never sent)")
        self.stop = QLineEdit(self)
        self.stop.setObjectName("samplingStop")
        self.stop.setPlaceholderText(f"{default_text} (up to 4, separated by{STOP_SEPARATOR.rstrip()})")
        self.stop.setToolTip("stop strings, up to 4, separated by ' | '")
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(6)
        grid.setVerticalSpacing(4)
        for n, (label, widget) in enumerate((("Temperature", self.temperature), ("Top p", self.top_p),
                                             ("Max tokens", self.max_tokens), ("Seed", self.seed))):
            row, column = divmod(n, 2)
            text = QLabel(label, self)
            text.setBuddy(widget)
            grid.addWidget(text, row, column * 2)
            grid.addWidget(widget, row, column * 2 + 1)
        stop_label = QLabel("Stop", self)
        stop_label.setBuddy(self.stop)
        grid.addWidget(stop_label, 2, 0)
        grid.addWidget(self.stop, 2, 1, 1, 3)
        for spin in (self.temperature, self.top_p, self.max_tokens):
            spin.valueChanged.connect(lambda *_: self.edited.emit())
        for line in (self.seed, self.stop):
            line.textEdited.connect(lambda *_: self.edited.emit())

    def values(self) -> dict:
        """The keys set (a seed that is not a whole number is passed on as text, to be refused)."""
        out: dict = {}
        if self.temperature.value() >= 0:
            out["temperature"] = round(self.temperature.value(), 2)
        if self.top_p.value() > 0:
            out["top_p"] = round(self.top_p.value(), 2)
        if self.max_tokens.value() > 0:
            out["max_tokens"] = self.max_tokens.value()
        seed = self.seed.text().strip()
        if seed:
            out["seed"] = int(seed) if seed.lstrip("-").isdigit() else seed
        stops = [s for s in (part.strip() for part in self.stop.text().split(STOP_SEPARATOR.strip())) if s]
        if stops:
            out["stop"] = [s.replace("\\n", "\n") for s in stops]
        return out

    def set_values(self, values: dict | None) -> None:
        v = values or {}
        self.temperature.setValue(float(v["temperature"]) if v.get("temperature") is not None else -0.05)
        self.top_p.setValue(float(v["top_p"]) if v.get("top_p") is not None else 0.0)
        self.max_tokens.setValue(int(v["max_tokens"]) if v.get("max_tokens") is not None else 0)
        self.seed.setText(str(v["seed"]) if v.get("seed") is not None else "")
        self.stop.setText(STOP_SEPARATOR.join(s.replace("\n", "\\n") for s in v.get("stop") or ()))
