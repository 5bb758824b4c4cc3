"""The pace of a simulated run, for a room to follow: as fast as possible (the default), a delay
before each call, or step by step, one phase at a time on a button (Qt-free).

The window's :class:`~workbench.services.runs.service.RunService` holds one :class:`Pacer`; Live
Run's pace control sets its mode, and its Next button calls :meth:`Pacer.next_phase`. The
:class:`~workbench.services.runs.runner.Runner` asks it before each call (:meth:`Pacer.before_call`)
and before each phase that has calls to make (:meth:`Pacer.before_phase`). Only a run whose every
agent answers through the simulated panel is paced (:meth:`Pacer.begin`): a run that calls real
models is never slowed, whatever the control says.

Time is read from an injected ``clock() -> seconds`` and waited out through an injected
``sleep(seconds, cancel) -> cancelled`` (as :mod:`workbench.services.llm.limits` does), so a test
runs a 2 s pace on a fake clock in no time at all. The mode may change while a run waits: a wait
notices within :data:`POLL_S`, and switching to "fast" lets every waiting call and phase go.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from workbench.services.llm.limits import Clock, Sleep, event_sleep

FAST, DELAY, STEP = "fast", "delay", "step"
DELAYS_S = (0.25, 0.5, 1.0, 2.0)  # the delays Live Run offers, per call
POLL_S = 0.1  # how soon a wait notices a change of mode (or Next)


@dataclass(frozen=True)
class Pace:
    """One setting of the control: ``mode`` is fast, delay (``delay_s`` before each call) or step."""

    mode: str = FAST
    delay_s: float = 0.0

    @property
    def text(self) -> str:
        if self.mode == DELAY:
            return f"{self.delay_s:g} s a call"
        return "one phase at a time" if self.mode == STEP else "as fast as possible"


PACES = (Pace(), *(Pace(DELAY, d) for d in DELAYS_S), Pace(STEP))


class Pacer:
    """Holds calls and phases of the run in progress to the chosen :class:`Pace`. Thread-safe:
    the control sets it from the GUI thread while the run's threads wait in it."""

    def __init__(self, *, clock: Clock = time.monotonic, sleep: Sleep = event_sleep):
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._pace = Pace()
        self._active = False  # the run in progress is simulated: it may be paced
        self._next_slot: float | None = None  # when the next call may go (delay mode)
        self._permits = 0  # phases that may start (step mode); Start itself gives the first
        self._waiting = False  # a phase waits for Next now
        self.holds = 0  # how many times a phase began to wait for Next (the GUI's tests count them)
        self._wake = threading.Event()  # set by next_phase and by a change of pace

    # ----- the control (GUI thread) ------------------------------------------------------------
    @property
    def pace(self) -> Pace:
        return self._pace

    def set_pace(self, pace: Pace) -> None:
        with self._lock:
            if pace == self._pace:
                return
            self._pace = pace
            self._next_slot = None  # a new delay counts from now
        self._wake.set()

    def next_phase(self) -> None:
        """Step mode: let exactly one more phase run."""
        with self._lock:
            self._permits += 1
        self._wake.set()

    @property
    def active(self) -> bool:
        """The run in progress is simulated, so it goes at this pace."""
        return self._active

    @property
    def holding(self) -> bool:
        """A phase waits for Next now."""
        return self._waiting

    # ----- the run (its threads) ---------------------------------------------------------------
    def begin(self, *, simulated: bool) -> None:
        """A run starts (or resumes): paced only when ``simulated``; its first phase goes at once."""
        with self._lock:
            self._active = simulated
            self._next_slot = None
            self._permits = 1

    def end(self) -> None:
        with self._lock:
            self._active = False
            self._waiting = False

    def before_call(self, cancel: threading.Event | None = None) -> bool:
        """Delay mode: wait for this call's turn, ``delay_s`` after the one before (the first,
        ``delay_s`` after the run or the change of pace). False when cancelled while waiting."""
        with self._lock:
            pace = self._pace
            if not self._active or pace.mode != DELAY:
                return True
            now = self._clock()
            slot = max(now, self._next_slot) if self._next_slot is not None else now + pace.delay_s
            self._next_slot = slot + pace.delay_s
        while True:
            if cancel is not None and cancel.is_set():
                return False
            if self._pace != pace:  # the control changed meanwhile: the new pace applies from now
                return self.before_call(cancel)
            wait = slot - self._clock()
            if wait <= 0:
                return True
            if self._sleep(min(wait, POLL_S), cancel):
                return False

    def before_phase(self, cancel: threading.Event | None = None,
                     on_hold: Callable[[], None] | None = None) -> bool:
        """Step mode: take a permit, waiting for Next when there is none (``on_hold`` is called
        once, as the wait begins). False when cancelled while waiting."""
        told = False
        try:
            while True:
                with self._lock:
                    if not self._active or self._pace.mode != STEP:
                        return True
                    if self._permits > 0:
                        self._permits -= 1
                        return True
                    self._wake.clear()
                    self._waiting = True
                if cancel is not None and cancel.is_set():
                    return False
                if not told:
                    self.holds += 1
                    if on_hold is not None:
                        on_hold()
                    told = True
                self._wake.wait(POLL_S)  # Next or a change of pace wakes it at once; cancel within POLL_S
        finally:
            self._waiting = False


__all__ = ["DELAY", "DELAYS_S", "FAST", "PACES", "Pace", "Pacer", "STEP"]
