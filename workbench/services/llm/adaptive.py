"""Concurrency that adapts to 429s (SPEC §10), one :class:`AdaptiveLimit` per deployment (per
provider when it has none). Standard library only; time comes from an injected ``clock`` and every
wait goes through an injected ``sleep``, as in :mod:`.limits`.

The rule (docs/providers.md, "Adaptive concurrency"):

- **Start** at the configured ``max_concurrency``: a provider that never refuses is never slowed.
- **Cut** on a rate-limit *episode*: the first 429 answering a request sent under the current limit
  halves it, rounding up (32, 16, 8, 4, 2, 1); when the pause is over the cut is *settled*: lowered
  further to what the provider's accepted rate supports, if that is lower (*the Little's-law cut*,
  below). The other 429s of requests sent before that cut belong to the same episode: they were
  sent under the old limit, so they pause but do not cut again (one cut per round trip, as TCP does).
  At 1 a 429 still pauses and starts an episode, but records no event: the limit did not change.
- **Pause** the deployment for the 429's ``Retry-After`` (or the caller's backoff when it gives
  none): no request goes out to it before then; those in flight finish. A 429 of the same episode
  extends the pause only by what its own ``Retry-After`` adds counted from when its request was
  sent: those requests were refused for the same reason at about the same moment, and their
  answers reach us late only because the client works through a burst of them (at 32 in flight
  the last 429 of a burst was handled 0.27 s after the first, and the pause grew by as much).
- **Grow** back additively: +1 slot after ``rounds`` rounds of clean calls, a round being as many
  clean calls as the current limit, counted only for calls during which every slot was taken (a
  limit that is not reached proves nothing), and no sooner than ``COOLDOWN_PAUSES`` times the last
  pause after the last cut. A step up is a probe: refused, it costs a whole pause (a
  ``Retry-After`` of whole seconds, up to a minute for per-minute limits), so probes are kept
  rare against the pause: ``rounds`` starts at 4 and doubles (up to 64) with every episode that
  came soon after the limit was reached, and halves again when a step up holds. Never above
  ``max_concurrency``.

The Little's-law cut. Every episode costs a pause of at least its ``Retry-After`` (whole seconds,
rounded up), so the number of episodes is what costs: halving needs four to come down from 32 to
2. The concurrency a provider's rate supports is its throughput times the time a call takes
(Little's law: in flight = throughput × latency; 10 requests/s at 200 ms is 2), and the limiter
knows both: each ticket carries its grant time, so ``release`` measures the call, and the limiter
keeps the grant times of the requests the provider accepted (answered without a 429). When the
pause is over the limit becomes ``min(ceil(limit × CUT), little)``; ``little`` is the requests sent
in the ``W`` seconds before the 429 that the provider accepted, divided by ``W``, times the mean
duration of the last ``DURATIONS_KEPT`` clean calls, rounded (never below 1), and the change is
recorded as its own event (``estimated``). ``W`` is the 429's ``Retry-After`` (else the pause), at
least ``MIN_WINDOW_S`` (1 s: providers send whole seconds, and a per-second limit is counted over a
second) and at most ``MAX_WINDOW_S`` (60 s, a per-minute limit's own window): the provider asked for
that long to free room, so its window is at least that long, and what it let through over it is
the rate it allows; a per-minute limit (``Retry-After`` 20 to 60 s) is so read over 20 to 60 s
of its own minute, not over the last second. Why at the pause's end, not at the 429: a 429 comes
back at once while the accepted requests of the same burst are still out, so at the 429 the count
misses them (after a pause, 16 sent, 4 of them accepted: counted at the 429, 6 accepted in the
window instead of 10, and the limit went to 1). At the pause's end every 429 of the burst is back,
and a request still out is being served, so it counts as accepted (which also covers calls longer
than ``W``); nothing is sent during the pause, so the limit is not needed before then.

Plain halving stays when the estimate would rest on nothing: no clean call that took time on the
clock, no accepted request in the window, or no more requests in flight at the 429 (the refused one
included) than the estimate (the provider then refused a concurrency the estimate allows, so the
estimate is not what limits it: a trickle of calls refused after a lull is not cut to the
trickle's 1). And a window reaching back before our first request counts only when the provider
took our whole *opening* (the requests granted before the first of them was answered): a 429 less
than ``W`` after the limit's first grant, with part of the opening refused, is halved only. The
provider's window may hold requests from before ours (another client's, or the previous run's),
and our share of it would be read as its whole rate (the bench's runs, started back to back, met
429s at their first requests with 3 of 8 accepted: read as the rate, 3 × 0.2 s, that would be a
cut to 1). An opening taken whole shows that what was there before us left room for all of it, so
our share of the window is at least the opening: at 10 requests/s and ``max_concurrency`` 8, the
8 opening requests are taken, 2 of the next 8, and the estimate (10 in the second, × 0.2 s) is 2,
where halving took two episodes to get there (bench/orchestration.py: 1.18× the rate bound before).
The estimate only ever cuts deeper than
halving, and the limit comes back by the same additive growth as after any cut (after the cooldown,
+1 per ``rounds`` rounds, a round lasting about one call at the limit): an estimate too low, as
when another client's burst filled the provider's minute, costs ``rounds`` call durations per
slot to recover, not the run.

Why halve rather than cut by 0.8 (Inspect): against a provider's rate limit every episode costs a
pause of at least its ``Retry-After`` (whole seconds, rounded up), and ×0.8 needs 13 episodes to
come down from 32 to 2 where halving needs 4, and the Little's-law cut 2 (bench/orchestration.py,
10 requests/s: 1.12× and 1.10× of the rate bound at max_concurrency 8 and 32; docs/performance.md).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from workbench.services.llm.limits import MIN_WAIT_S, Clock, Sleep, event_sleep, utc_stamp

CUT = 0.5  # the multiplicative cut per rate-limit episode (rounded up, never below 1)
FIRST_ROUNDS = 4  # rounds of clean calls a step up needs at first
MAX_ROUNDS = 64  # ... at most, however often the provider refused
HELD_ROUNDS = 8  # a limit that held this many rounds was good: a refusal then is no sign it is too high
COOLDOWN_PAUSES = 10  # no step up sooner after a cut than this many times the pause it imposed
SLOT_POLL_S = 0.05  # how often a caller waiting for a slot looks at its cancel event
MIN_WINDOW_S = 1.0  # the Little's-law cut counts accepted requests over the Retry-After, at least this ...
MAX_WINDOW_S = 60.0  # ... and at most this (a per-minute limit's window)
DURATIONS_KEPT = 32  # the clean calls whose mean duration the Little's-law cut uses
STARTS_KEPT = 100_000  # accepted calls' start times kept (those older than MAX_WINDOW_S are dropped anyway)
# Outcomes of a request the provider let through (answered without a 429); the others were never
# sent or never reached it (cancelled, out_of_time, connection, ...).
ANSWERED = frozenset({"ok", "timeout", "server_error", "bad_request", "not_found", "bad_response"})


@dataclass(frozen=True)
class Ticket:
    """One granted slot: the episode it was granted in, how many times the limit had been reached
    by then (its own grant included), so its end can tell whether the limit was reached while it
    was in flight, and when it was granted (on the limit's clock), so its end can tell how long
    the call took."""

    epoch: int
    fills: int
    granted: float = 0.0
    serial: int = 0  # which grant it was (the limit's in-flight set is keyed by it)


@dataclass(frozen=True)
class LimitEvent:
    """One change of a limit, for the run's history (docs/providers.md): ``why`` is ``start``,
    ``rate_limited`` (a cut, with the pause), ``estimated`` (the cut settled lower when the pause
    ended: the Little's-law cut) or ``grew`` (a step up after clean calls)."""

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
        self._starts: deque[float] = deque(maxlen=STARTS_KEPT)  # when accepted calls were sent
        self._durations: deque[float] = deque(maxlen=DURATIONS_KEPT)  # how long clean calls took
        self._flying: dict[int, float] = {}  # the tickets in flight: serial -> when granted
        self._serials = 0
        self._first_grant = math.inf  # when the first slot was granted (on the clock)
        self._opening = 0  # the grants before the first answer (serials 1.._opening); 0: none answered yet
        self._opening_refused = False  # the provider refused a request of that opening
        self._settle: tuple[float, float, int] | None = None  # a cut to settle: (when, window, in flight)
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
            now = self._clock()
            left = self.paused_until - now
            if left > 0:
                return max(left, MIN_WAIT_S)
            if self._settle is not None:
                self._settled()
            if self.in_use >= self.limit:
                return 0.0
            self.in_use += 1
            if self.in_use >= self.limit:
                self.fills += 1
            self._serials += 1
            ticket = Ticket(self.epoch, self.fills if self.in_use >= self.limit else self.fills + 1, now, self._serials)
            self._flying[ticket.serial] = now
            self._first_grant = min(self._first_grant, now)
            return ticket

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
            self._flying.pop(ticket.serial, None)
            if outcome == "rate_limited" or outcome in ANSWERED:  # the provider saw it
                self._opening = self._opening or self._serials
                if outcome == "rate_limited" and ticket.serial <= self._opening:
                    self._opening_refused = True
            if outcome == "rate_limited":
                self._refused(ticket, retry_after_s, pause_s)
            else:
                if outcome in ANSWERED:
                    self._accepted(ticket, outcome == "ok")
                if outcome == "ok":
                    self._clean(ticket)
            self._cond.notify_all()

    def _accepted(self, ticket: Ticket, clean: bool) -> None:
        now = self._clock()
        self._starts.append(ticket.granted)
        keep = now - MAX_WINDOW_S  # ... or from the start of the window a cut still to settle counts over
        if self._settle is not None:
            keep = min(keep, self._settle[0] - self._settle[1])
        while self._starts and self._starts[0] < keep:
            self._starts.popleft()
        took = now - ticket.granted
        if clean and took > 0:  # a call that took no time on the clock (a fake one) measures nothing
            self._durations.append(took)

    def little(self, window_s: float, at: float | None = None) -> int | None:
        """The concurrency the provider's accepted rate supports (Little's law): the requests sent
        in the ``window_s`` seconds up to ``at`` (on the clock; default now) that it accepted, per
        second, times the mean duration of recent clean calls; rounded, at least 1. Accepted:
        answered without a 429, or still in flight (read once the pause is over, a request still out
        is being served: a 429 comes back at once). None without a measured clean call or an
        accepted request in the window."""
        with self._cond:
            return self._little(window_s, self._clock() if at is None else at)

    def _little(self, window_s: float, at: float) -> int | None:
        if not self._durations:
            return None
        since = at - window_s
        accepted = sum(1 for t in self._starts if since < t <= at)
        accepted += sum(1 for t in self._flying.values() if since < t <= at)
        if not accepted:
            return None
        mean = sum(self._durations) / len(self._durations)
        return max(1, math.floor(accepted / window_s * mean + 0.5))

    def _refused(self, ticket: Ticket, retry_after_s: float | None, pause_s: float | None) -> None:
        self.refusals += 1
        pause = retry_after_s if retry_after_s is not None else (pause_s or 0.0)
        if ticket.epoch != self.epoch:  # sent before the last cut: the same episode, refused with it
            self.paused_until = max(self.paused_until, ticket.granted + pause)
            return
        now = self._clock()
        self.paused_until = max(self.paused_until, now + pause)
        previous = self.limit
        if self.clean < HELD_ROUNDS * self.limit:  # refused soon after it was reached: too high
            self.rounds = min(MAX_ROUNDS, self.rounds * 2)
        self.limit = max(1, math.ceil(self.limit * CUT))
        window = min(MAX_WINDOW_S, max(MIN_WINDOW_S, pause))
        # The Little's-law cut is settled when the pause is over, once the requests of this episode
        # have come back; only over a window our own requests spanned, or after an opening the
        # provider took whole (see the module docstring).
        known = now - self._first_grant >= window or not self._opening_refused
        self._settle = (now, window, self.in_use + 1) if known else None
        self.cooldown_until = now + COOLDOWN_PAUSES * pause
        self.epoch += 1
        self.clean, self.grown = 0, False
        if self.limit < previous:  # at 1 a 429 pauses, but the limit has nowhere to go: no change to record
            self._event("rate_limited", previous, retry_after_s=retry_after_s, pause_s=round(pause, 3))

    def _settled(self) -> None:
        """The pause is over: lower the episode's cut to what the provider's accepted rate supports,
        if that is lower and fewer than were in flight when the 429 came."""
        cut_at, window, in_flight = self._settle
        self._settle = None
        little = self._little(window, cut_at)
        if little is None or little >= min(self.limit, in_flight):
            return
        previous, self.limit = self.limit, little
        self._event("estimated", previous)

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
