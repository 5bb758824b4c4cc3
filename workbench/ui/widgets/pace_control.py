"""Live Run's pace control: how fast a simulated run goes, for a room to follow (as fast as possible,
a delay before each call, or one phase at a time with Next phase). A thin shell over the run
service's :class:`~workbench.services.runs.pace.Pacer`; the runner does the pacing, and never for a
run that calls a real model (the control is then disabled, and says why).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QPushButton, QWidget

from workbench.services.runs.pace import PACES, STEP, Pace, Pacer

APPLIES = ("How fast a simulated run goes, for a room to follow: as fast as possible, a delay before each call, "
           "or one phase at a time (Next phase runs the next one). It can be changed while the run goes.")
NEVER = ("The pace applies to runs on the simulated panel only: a run that calls real models is never slowed "
         "(it would hold paid calls and their rate limits for nothing).")


class PaceControl(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._pacer: Callable[[], Pacer | None] = lambda: None
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(2)
        self.combo = QComboBox(self)
        self.combo.setObjectName("paceCombo")
        for pace in PACES:
            self.combo.addItem(f"Pace: {pace.text}")
        self.combo.activated.connect(self._on_chosen)
        self.next_button = QPushButton("Next phase ▸", self)
        self.next_button.setObjectName("nextPhase")
        self.next_button.setToolTip("Run the next phase of the run, then wait again")
        self.next_button.clicked.connect(self._on_next)
        self.next_button.hide()
        row.addWidget(self.combo)
        row.addWidget(self.next_button)
        self.update_state(running=False, applies=False)

    def attach(self, pacer: Callable[[], Pacer | None]) -> None:
        """Drive the run service's pacer, as ``pacer()`` gives it (it outlives the runs: the
        choice holds from run to run)."""
        self._pacer = pacer
        current = pacer()
        if current is not None:
            self.combo.setCurrentIndex(PACES.index(current.pace) if current.pace in PACES else 0)

    @property
    def pace(self) -> Pace:
        """The pace chosen."""
        return PACES[max(self.combo.currentIndex(), 0)]

    def update_state(self, *, running: bool, applies: bool) -> None:
        """``applies``: the run going (else the configuration edited) is on the simulated panel."""
        self.combo.setEnabled(applies)
        self.combo.setToolTip(APPLIES if applies else NEVER)
        step = self.pace.mode == STEP
        self.next_button.setVisible(step)
        self.next_button.setEnabled(step and running and applies)

    def _on_chosen(self, _index: int) -> None:
        pacer = self._pacer()
        if pacer is not None:
            pacer.set_pace(self.pace)
        self.next_button.setVisible(self.pace.mode == STEP)

    def _on_next(self) -> None:
        pacer = self._pacer()
        if pacer is not None:
            pacer.next_phase()


__all__ = ["PaceControl"]
