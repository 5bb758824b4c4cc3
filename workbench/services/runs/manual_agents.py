"""A person playing an agent (or the CONS conductor), for the GUI.

:class:`QtManualAgents` implements :class:`~workbench.services.runs.agents.ManualAgents`. The runner
calls :meth:`QtManualAgents.ask` on one of its own threads; ``ask`` announces the call with
``asked`` (a queued signal: the GUI shows the prompt) and blocks that thread on a per-call slot
until the GUI calls :meth:`answer` with the call's key, or until the run's cancel event is set
(then ``withdrawn`` tells the GUI to take the prompt down, and ``ask`` returns None).
Nothing here touches a widget; the GUI never blocks on this object.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Signal

from workbench.core.protocols.shared.steps import AgentCall

POLL_S = 0.05  # how often a waiting call looks at the cancel event


@dataclass
class _Slot:
    call: AgentCall
    ready: threading.Event = field(default_factory=threading.Event)
    text: str | None = None


class QtManualAgents(QObject):
    asked = Signal(object)  # AgentCall: a person must answer it
    answered = Signal(str)  # the call's key: the answer went to the run
    withdrawn = Signal(str)  # the call's key: the run was cancelled before anyone answered

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._lock = threading.Lock()
        self._slots: dict[str, _Slot] = {}

    # ----- the runner's side (any thread) ----------------------------------------------------
    def ask(self, call: AgentCall, cancel: threading.Event) -> str | None:
        slot = _Slot(call)
        with self._lock:
            self._slots[call.key] = slot
        self.asked.emit(call)
        try:
            while not slot.ready.wait(POLL_S):
                if cancel.is_set():
                    break
        finally:
            with self._lock:
                self._slots.pop(call.key, None)
        if not slot.ready.is_set():
            self.withdrawn.emit(call.key)
            return None
        return slot.text

    # ----- the GUI's side --------------------------------------------------------------------
    def answer(self, key: str, text: str) -> bool:
        """Give the waiting call ``key`` its reply. False when nothing waits under that key
        (it was answered already, or its run was cancelled)."""
        with self._lock:
            slot = self._slots.get(key)
            if slot is None or slot.ready.is_set():
                return False
            slot.text = text
            slot.ready.set()
        self.answered.emit(key)
        return True

    def pending(self) -> list[AgentCall]:
        """The calls waiting for a person, oldest first."""
        with self._lock:
            return [s.call for s in self._slots.values() if not s.ready.is_set()]
