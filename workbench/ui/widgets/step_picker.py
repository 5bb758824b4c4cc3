"""The Protocol Editor's two rows of choices: which protocol and which saved set to start from,
then which step (each marked ✎ when edited, ✖ when its template is not valid) and Revert.

It only lists and reports what is chosen (its signals fire on a person's choice, never while it
is being filled); the panel owns the drafts and decides what a choice does.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QGridLayout, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QWidget

DEFAULTS = None  # the set combo's item for the protocol's default templates


class StepPicker(QWidget):
    protocol_chosen = Signal(str)
    set_chosen = Signal(object)  # a set's name, or DEFAULTS
    step_chosen = Signal(str)
    revert_wanted = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._filling = False
        layout = QGridLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        self.protocol_combo = _combo(self, "editorProtocol", "The protocol whose prompts are edited: every "
                                     "registered protocol, plugins included")
        self.set_combo = _combo(self, "editorSet", "Start from the protocol's default templates, or from a prompt "
                                "set saved in the project (its newest version)")
        self.step_combo = _combo(self, "editorStep", "The step whose template is edited (✎: edited, ✖: not valid)")
        self.revert_button = QPushButton("Revert step", self)
        self.revert_button.setObjectName("editorRevert")
        self.revert_button.setToolTip("Put the step's default template back")
        self.protocol_combo.activated.connect(lambda _i: self._report(self.protocol_chosen, self.protocol_combo))
        self.set_combo.activated.connect(lambda _i: self._report(self.set_chosen, self.set_combo))
        self.step_combo.activated.connect(lambda _i: self._report(self.step_chosen, self.step_combo))
        self.revert_button.clicked.connect(self.revert_wanted)
        top = QHBoxLayout()
        top.addWidget(self.protocol_combo, 3)
        top.addWidget(QLabel("From", self))
        top.addWidget(self.set_combo, 2)
        steps = QHBoxLayout()
        steps.addWidget(self.step_combo, 1)
        steps.addWidget(self.revert_button)
        layout.addWidget(QLabel("Protocol", self), 0, 0)
        layout.addLayout(top, 0, 1)
        layout.addWidget(QLabel("Step", self), 1, 0)
        layout.addLayout(steps, 1, 1)
        layout.setColumnStretch(1, 1)

    def _report(self, signal, combo: QComboBox) -> None:
        if not self._filling:
            signal.emit(combo.currentData())

    def _fill(self, combo: QComboBox, items, current) -> None:
        """``items`` ((text, data, tooltip or None), ...) in ``combo``, ``current`` chosen; no signal."""
        self._filling = True
        try:
            if [(combo.itemText(i), combo.itemData(i)) for i in range(combo.count())] != [i[:2] for i in items]:
                combo.clear()
                for text, data, tip in items:
                    combo.addItem(text, data)
                    if tip:
                        combo.setItemData(combo.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
            combo.setCurrentIndex(max(combo.findData(current), 0))
        finally:
            self._filling = False

    def set_protocols(self, protocols, failures, current: str) -> None:
        """``protocols``: (name, label); ``failures``: plugins not loaded, (name, source, error)."""
        self._fill(self.protocol_combo, [(label, name, None) for name, label in protocols], current)
        tip = "The protocol whose prompts are edited: every registered protocol, plugins included"
        if failures:
            tip += ". Not loaded: " + "; ".join(f"{name} ({source}): {error}" for name, source, error in failures)
        self.protocol_combo.setToolTip(tip)

    def set_steps(self, steps, current: str, edited: set[str], bad: str | None) -> None:
        """``steps``: (name, description); ``edited``: the steps that differ from their default;
        ``bad``: the step whose template the last check refused."""
        self._fill(self.step_combo, [(f"{'✖ ' if name == bad else ''}{'✎ ' if name in edited else ''}{name} — "
                                      f"{description}", name, description) for name, description in steps], current)

    def set_sets(self, names, current) -> None:
        """``names``: (name, newest version's sha256) of the protocol's sets; ``current``: the one loaded."""
        items = [("the default templates", DEFAULTS, None)] + [(f"{n} @{sha[:8]}", n, None) for n, sha in names]
        self._fill(self.set_combo, items, current)
        if current is DEFAULTS:
            self.set_combo.setCurrentIndex(0)


def _combo(parent: QWidget, name: str, tip: str) -> QComboBox:
    combo = QComboBox(parent)
    combo.setObjectName(name)
    combo.setToolTip(tip)
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(8)
    combo.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
    return combo
