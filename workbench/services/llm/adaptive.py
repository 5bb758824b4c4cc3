"""Concurrency that adapts to 429s (SPEC §10), one :class:`AdaptiveLimit` per deployment (per
provider when it has none). Standard library only; time comes from an injected ``clock`` and every
wait goes through an injected ``sleep``, as in :mod:`.limits`.

The rule (docs/providers.md, "Adaptive concurrency"):

- **Start** at the configured ``max_concurrency``: a provider that never refuses is never slowed.
- **Cut** on a rate-limit *episode*: the first 429 answering a request sent under the current limit
  halves it, rounding up (32, 16, 8, 4, 2, 1). The other 429s of requests sent before that cut
  belong to the same episode: they were sent under the old limit, so they pause but do not cut
  again (one cut per round trip, as TCP does).
- **Pause** the deployment for the 429's ``Retry-After`` (or the caller's backoff when it gives
  none): no request goes out to it before then; those in flight finish.
- **Grow** back additively: +1 slot after ``rounds`` rounds of clean calls, a round being as many
  clean calls as the current limit, counted only for calls during which every slot was taken (a
  limit that is not reached proves nothing), and no sooner than ``COOLDOWN_PAUSES`` times the last
  pause after the last cut. A step up is a probe: refused, it costs a whole pause (a
  ``Retry-After`` of whole seconds, up to a minute for per-minute limits), so probes are kept
  rare against the pause: ``rounds`` starts at 4 and doubles (up to 64) with every episode that
  came soon after the limit was reached, and halves again when a step up holds. Never above
  ``max_concurrency``.

Why halve rather than cut by 0.8 (Inspect): against a provider's rate limit every episode costs a
pause of at least its ``Retry-After`` (whole seconds, rounded up), and ×0.8 needs 13 episodes to
come down from 32 to 2 where halving needs 4 (bench/orchestration.py: 1.09× and 1.15× of the rate
bound at max_concurrency 8 and 32; see docs/performance.md).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from workbench.services.llm.limits import MIN_WAIT_S, Clock, Sleep, event_sleep, utc_stamp

CUT = 0.5  # the multiplicative cut per rate-limit episode (rounded up, never below 1)
FIRST_ROUNDS = 4  # rounds of clean calls a step up needs at first
MAX_ROUNDS = 64  # ... at most, however often the provider refused
HELD_ROUNDS = 8  # a limit that held this many rounds was good: a refusal then is no sign it is too high
COOLDOWN_PAUSES = 10  # no step up sooner after a cut than this many times the pause it imposed
SLOT_POLL_S = 0.05  # how often a caller waiting for a slot looks at its cancel event


@dataclass(frozen=True)
class Ticket:
    """One granted slot: the episode it was granted in, and how many times the limit had been
    reached by then (its own grant included), so its end can tell whether the limit was reached
    while it was in flight."""

    epoch: int
    fills: int


@dataclass(frozen=True)
class LimitEvent:
    """One change of a limit, for the run's history (docs/providers.md): ``why`` is ``start``,
    ``rate_limited`` (a cut, with the pause) or ``grew`` (a step up after clean calls)."""

    seq: int
    at: str  # ISO 8601 UTC, as calls' started_at
    key: str  # "provider" or "provider[index]"
    provider: str
    deployment: int | None
    limit: int
    previous: int | None
    ceiling: int
    why: str
    retry_after_s: float | None = None
    pause_s: float | None = None

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "seq"}


class AdaptiveLimit:
    """The concurrency one deployment gets now (see the module docstring)."""

    def __init__(self, provider: str, ceiling: int, *, deployment: int | None = None,
                 clock: Clock = time.monotonic, sleep: Sleep = event_sleep,
                 record: Callable[..., None] | None = None):
        if ceiling < 1:
            raise ValueError("an adaptive limit needs a ceiling of at least 1")
        self.provider, self.deployment, self.ceiling = provider, deployment, ceiling
        self.key = provider if deployment is None else f"{provider}[{deployment}]"
        self.limit = ceiling
        self.in_use = 0
        self.fills = 0  # how many grants took the last free slot
        self.epoch = 0
        self.rounds = FIRST_ROUNDS
        self.clean = 0  # clean calls at the limit since it was last changed
        self.grown = False  # the limit was last changed by a step up
        self.cooldown_until = -math.inf  # no step up before then (on the clock)
        self.paused_until = -math.inf
        self.refusals = 0  # 429s answered (every one, episodes or not)
        self._clock, self._sleep = clock, sleep
        self._record = record
        self._cond = threading.Condition()
        self._started = False

    # -- state, read without waiting ------------------------------------------------------------
    @property
    def full(self) -> bool:
        return self.in_use >= self.limit

    def pause_left(self) -> float:
        with self._cond:
            return max(0.0, self.paused_until - self._clock())

    @property
    def paused(self) -> bool:
        return self.pause_left() > 0.0

    # -- slots ----------------------------------------------------------------------------------
    def try_acquire(self) -> Ticket | float:
        """A slot now, or how long the pause still lasts (0.0: no pause, every slot taken)."""
        with self._cond:
            if not self._started:  # the series starts where the limit starts
                self._started = True
                self._event("start", None)
            left = self.paused_until - self._clock()
            if left > 0:
                return max(left, MIN_WAIT_S)
            if self.in_use >= self.limit:
                return 0.0
            self.in_use += 1
            if self.in_use >= self.limit:
                self.fills += 1
            return Ticket(self.epoch, self.fills if self.in_use >= self.limit else self.fills + 1)

    def acquire(self, cancel: threading.Event | None = None, deadline: float | None = None) -> Ticket | None:
        """Wait out the pause and for a free slot, and take it. None when ``cancel`` is set, or when
        ``deadline`` (on the clock) comes first: the caller's time for refusals is up."""
        while True:
            if cancel is not None and cancel.is_set():
                return None
            got = self.try_acquire()
            if isinstance(got, Ticket):
                return got
            if deadline is not None and self._clock() + got >= deadline:
                return None  # the pause outlasts what the caller may still wait
            if got > 0.0:  # paused: sleep on the (injectable) clock
                if self._sleep(got, cancel):
                    return None
                continue
            with self._cond:  # every slot taken: woken when one is given back
                if self.in_use >= self.limit and self.paused_until <= self._clock():
                    self._cond.wait(SLOT_POLL_S)

    def release(self, ticket: Ticket, outcome: str, *, retry_after_s: float | None = None,
                pause_s: float | None = None) -> None:
        """The request holding ``ticket`` ended: ``ok`` (a clean call), ``rate_limited`` (a 429:
        pause for ``retry_after_s``, else ``pause_s``; cut on a new episode) or anything else
        (another failure: no change, 429s alone steer the limit)."""
        with self._cond:
            self.in_use -= 1
            if outcome == "rate_limited":
                self._refused(ticket, retry_after_s, pause_s)
            elif outcome == "ok":
                self._clean(ticket)
            self._cond.notify_all()

    def _refused(self, ticket: Ticket, retry_after_s: float | None, pause_s: float | None) -> None:
        self.refusals += 1
        pause = retry_after_s if retry_after_s is not None else (pause_s or 0.0)
        self.paused_until = max(self.paused_until, self._clock() + pause)
        if ticket.epoch != self.epoch:
            return  # sent before the last cut: the same episode
        previous = self.limit
        if self.clean < HELD_ROUNDS * self.limit:  # refused soon after it was reached: too high
            self.rounds = min(MAX_ROUNDS, self.rounds * 2)
        self.limit = max(1, math.ceil(self.limit * CUT))
        self.cooldown_until = self._clock() + COOLDOWN_PAUSES * pause
        self.epoch += 1
        self.clean, self.grown = 0, False
        self._event("rate_limited", previous, retry_after_s=retry_after_s, pause_s=round(pause, 3))

    def _clean(self, ticket: Ticket) -> None:
        # Only a call during which every slot was taken proves the limit: one sent while slots
        # stood free says nothing about whether the provider would take more.
        if ticket.epoch != self.epoch or self.fills < ticket.fills or self.limit >= self.ceiling:
            return
        self.clean += 1
        if self.grown and self.clean == HELD_ROUNDS * self.limit:  # the provider took more than before
            self.rounds = max(FIRST_ROUNDS, self.rounds // 2)
        if self.clean >= self.limit * self.rounds and self._clock() >= self.cooldown_until:
            previous = self.limit
            self.limit += 1
            self.clean, self.grown = 0, True
            self._event("grew", previous)

    def _event(self, why: str, previous: int | None, **extra) -> None:
        if self._record is not None:
            self._record(key=self.key, provider=self.provider, deployment=self.deployment, limit=self.limit,
                         previous=previous, ceiling=self.ceiling, why=why, **extra)


class LimitHistory:
    """Every limit event of a gateway, in order (thread-safe), for the runner to store with its run."""

    def __init__(self, wall: Callable[[], float] = time.time):
        self._wall = wall
        self._events: list[LimitEvent] = []
        self._lock = threading.Lock()

    def record(self, **fields) -> None:
        with self._lock:
            self._events.append(LimitEvent(seq=len(self._events), at=utc_stamp(self._wall()), **fields))

    def since(self, seq: int) -> list[LimitEvent]:
        """The events from number ``seq`` on (0: all of them)."""
        with self._lock:
            return self._events[seq:]

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)
