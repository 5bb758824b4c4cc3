"""Per-provider limits for the gateway: a sliding-window request limiter, a concurrency gate,
exponential backoff with jitter, and ``Retry-After`` parsing. Standard library only.

Every wait here goes through a ``sleep(seconds, cancel) -> cancelled`` function and reads time
from a ``clock() -> seconds`` function, both injectable, so tests can run a 60 s window on a
fake clock in milliseconds. The defaults are ``time.monotonic`` and :func:`event_sleep`, which
wakes at once when the cancel event is set.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

Clock = Callable[[], float]
Sleep = Callable[[float, "threading.Event | None"], bool]  # returns True when cancelled

MIN_WAIT_S = 0.001  # the smallest wait, so a fake clock always moves forward


def event_sleep(seconds: float, cancel: threading.Event | None = None) -> bool:
    """Sleep ``seconds``, or less if ``cancel`` is set meanwhile; return whether it was set."""
    if cancel is None:
        time.sleep(max(0.0, seconds))
        return False
    return cancel.wait(max(0.0, seconds))


class RateLimiter:
    """At most ``limit`` acquisitions in any window of ``window_s`` seconds (sliding, not bucketed).

    An acquisition at time ``t`` counts against every window containing ``t``: the stamp expires
    once ``clock() - t >= window_s``. Callers acquire immediately before sending each request,
    retries included, so the provider never sees more than ``limit`` requests per window.
    """

    def __init__(self, limit: int, window_s: float = 60.0, *, clock: Clock = time.monotonic,
                 sleep: Sleep = event_sleep):
        if limit < 1 or window_s <= 0:
            raise ValueError("a rate limit needs limit >= 1 and window_s > 0")
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._sleep = sleep
        self._stamps: deque[float] = deque()
        self._lock = threading.Lock()
        self.sent: list[float] = []  # every stamp ever granted (tests and diagnostics)

    def try_acquire(self) -> float:
        """Take a slot now and return 0.0, or return how long to wait before one frees up."""
        with self._lock:
            now = self._clock()
            while self._stamps and now - self._stamps[0] >= self.window_s:
                self._stamps.popleft()
            if len(self._stamps) < self.limit:
                self._stamps.append(now)
                self.sent.append(now)
                return 0.0
            return max(self._stamps[0] + self.window_s - now, MIN_WAIT_S)

    def acquire(self, cancel: threading.Event | None = None) -> bool:
        """Block until a slot is free and take it; False if cancelled while waiting."""
        while True:
            if cancel is not None and cancel.is_set():
                return False
            wait = self.try_acquire()
            if wait == 0.0:
                return True
            if self._sleep(wait, cancel):
                return False


class ConcurrencyGate:
    """A semaphore whose acquisition can be abandoned when a cancel event is set."""

    def __init__(self, limit: int, *, poll_s: float = 0.05):
        self.limit = limit
        self._sem = threading.BoundedSemaphore(limit)
        self._poll_s = poll_s
        self._count_lock = threading.Lock()
        self.in_use = 0  # slots held now (a hint for routing: read without waiting)

    @property
    def full(self) -> bool:
        return self.in_use >= self.limit

    def acquire(self, cancel: threading.Event | None = None) -> bool:
        while True:
            if cancel is not None and cancel.is_set():
                return False
            if self._sem.acquire(timeout=self._poll_s if cancel is not None else None):
                if cancel is not None and cancel.is_set():
                    self._sem.release()
                    return False
                with self._count_lock:
                    self.in_use += 1
                return True

    def release(self) -> None:
        with self._count_lock:
            self.in_use -= 1
        self._sem.release()


class Backoff:
    """Exponential backoff with jitter: attempt ``n`` (1-based retry number) waits a uniform
    draw in ``[d/2, d]`` with ``d = min(cap_s, base_s * 2 ** (n - 1))``.

    A server's ``Retry-After`` wins when present: the wait is that figure plus up to 10 % jitter
    (so a herd of callers told the same figure does not return in lockstep). Seed the random
    generator for reproducible waits.
    """

    def __init__(self, base_s: float = 0.5, cap_s: float = 30.0):
        self.base_s = base_s
        self.cap_s = cap_s

    def delay(self, retry_no: int, rng: random.Random, retry_after_s: float | None = None) -> float:
        if retry_after_s is not None:
            return retry_after_s * (1.0 + 0.1 * rng.random())
        ceiling = min(self.cap_s, self.base_s * (2 ** min(max(0, retry_no - 1), 64)))  # 429s count without end
        return ceiling * (0.5 + 0.5 * rng.random())


def parse_retry_after(headers: dict[str, str] | None, *, now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait from ``retry-after-ms``, or ``retry-after`` as seconds or an HTTP date."""
    if not headers:
        return None
    lower = {str(k).lower(): str(v).strip() for k, v in headers.items()}
    value = lower.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - now())


def utc_stamp(moment: float | None = None) -> str:
    """The project's timestamp format: ISO 8601 UTC with milliseconds and a Z."""
    dt = datetime.fromtimestamp(time.time() if moment is None else moment, timezone.utc)
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")
