"""The adaptive concurrency limit (SPEC §10) on an injected clock: it cuts, pauses, grows, never
exceeds max_concurrency, and a call gives up only after max_wait_s of refusals."""

from __future__ import annotations

import threading

import pytest

from tests.support.fake_llm_server import FakeClock, FakeLLMServer, Reply
from workbench.services.llm import adaptive
from workbench.services.llm.adaptive import AdaptiveLimit, LimitHistory, Ticket
from workbench.services.llm.gateway import Gateway, warm_up
from workbench.services.llm.limits import Backoff

HI = [{"role": "user", "content": "Say hello"}]


def limit(ceiling: int = 8, clock: FakeClock | None = None) -> tuple[AdaptiveLimit, FakeClock, LimitHistory]:
    clock = clock or FakeClock()
    history = LimitHistory(wall=clock.now)
    return AdaptiveLimit("p", ceiling, clock=clock.now, sleep=clock.sleep, record=history.record), clock, history


def take(lim: AdaptiveLimit, n: int) -> list[Ticket]:
    got = [lim.try_acquire() for _ in range(n)]
    assert all(isinstance(t, Ticket) for t in got), got
    return got


def test_a_429_halves_the_limit_once_per_episode_and_pauses_for_its_retry_after():
    lim, clock, history = limit(8)
    tickets = take(lim, 8)
    assert lim.try_acquire() == 0.0  # every slot taken: no pause, wait for one
    lim.release(tickets[0], "rate_limited", retry_after_s=3)
    assert lim.limit == 4 and lim.pause_left() == 3
    for t in tickets[1:4]:  # sent before the cut: the same episode, no second cut
        lim.release(t, "rate_limited", retry_after_s=1)
    assert lim.limit == 4 and lim.pause_left() == 3 and lim.refusals == 4
    assert lim.try_acquire() == pytest.approx(3)  # paused, though 4 slots are free
    clock.sleep(3)
    for t in tickets[4:]:
        lim.release(t, "ok")
    fresh = take(lim, 4)
    assert lim.try_acquire() == 0.0  # the new limit holds
    lim.release(fresh[0], "rate_limited", retry_after_s=2)  # a request sent under the new limit: a new episode
    assert lim.limit == 2
    assert [(e.why, e.previous, e.limit) for e in history.since(0)] == [
        ("start", None, 8), ("rate_limited", 8, 4), ("rate_limited", 4, 2)]
    assert history.since(1)[0].pause_s == 3 and history.since(1)[0].retry_after_s == 3


def test_the_cut_rounds_up_and_never_goes_below_one():
    lim, clock, _ = limit(32)
    seen = []
    for _ in range(6):
        [t] = take(lim, 1)
        lim.release(t, "rate_limited", retry_after_s=0)
        seen.append(lim.limit)
    assert seen == [16, 8, 4, 2, 1, 1]


def test_a_429_at_one_pauses_but_records_no_change():
    lim, clock, history = limit(2)
    for _ in range(2):
        [t] = take(lim, 1)
        lim.release(t, "rate_limited", retry_after_s=1)
        clock.sleep(1)
    assert lim.limit == 1 and lim.refusals == 2
    [t] = take(lim, 1)
    lim.release(t, "rate_limited", retry_after_s=1)
    assert lim.pause_left() == 1
    assert [(e.why, e.previous, e.limit) for e in history.since(0)] == [("start", None, 2), ("rate_limited", 2, 1)]


def test_without_a_retry_after_the_callers_pause_is_used():
    lim, _, _ = limit(4)
    [t] = take(lim, 1)
    lim.release(t, "rate_limited", pause_s=0.75)
    assert lim.pause_left() == 0.75 and lim.limit == 2


def test_clean_calls_grow_it_back_one_step_at_a_time_never_above_max_concurrency():
    lim, clock, history = limit(4)
    [t] = take(lim, 1)
    lim.release(t, "rate_limited", retry_after_s=1)  # 4 -> 2; a quick refusal: steps now need 8 rounds
    clock.sleep(adaptive.COOLDOWN_PAUSES * 1)  # and none before ten times the pause
    assert lim.limit == 2 and lim.rounds == 2 * adaptive.FIRST_ROUNDS
    clean = 0
    limits = []
    while clean < 500:
        tickets = take(lim, lim.limit)  # every slot busy: these calls prove the limit
        assert lim.in_use <= lim.limit <= 4
        for t in tickets:
            lim.release(t, "ok")
            clean += 1
        limits.append(lim.limit)
    assert limits[-1] == 4 and max(limits) == 4  # back at max_concurrency, and never past it
    grew = [e for e in history.since(0) if e.why == "grew"]
    assert [(e.previous, e.limit) for e in grew] == [(2, 3), (3, 4)]  # one slot per step
    # the first step waited for its rounds: 2 x FIRST_ROUNDS rounds of 2 clean calls
    assert limits.index(3) + 1 == 2 * adaptive.FIRST_ROUNDS


def test_no_step_up_during_the_cooldown_after_a_cut():
    lim, clock, _ = limit(4)
    [t] = take(lim, 1)
    lim.release(t, "rate_limited", retry_after_s=2)  # 4 -> 2, paused 2 s: no step up for 20 s
    clock.sleep(2)
    for _ in range(1000):
        for ticket in take(lim, lim.limit):
            lim.release(ticket, "ok")
    assert lim.limit == 2
    clock.sleep(adaptive.COOLDOWN_PAUSES * 2 - 2)
    for ticket in take(lim, 2):
        lim.release(ticket, "ok")
    assert lim.limit == 3  # the clean calls counted meanwhile: the step comes once the cooldown is over


def test_calls_below_the_limit_or_of_an_earlier_episode_do_not_grow_it():
    lim, clock, _ = limit(8)
    old = take(lim, 2)
    [t] = take(lim, 1)
    lim.release(t, "rate_limited", retry_after_s=0)  # 8 -> 4
    for ticket in old:  # sent under the old limit
        lim.release(ticket, "ok")
    for _ in range(1000):  # one call at a time, never at the limit of 4
        [t] = take(lim, 1)
        lim.release(t, "ok")
    assert lim.limit == 4


def test_other_failures_leave_the_limit_alone():
    lim, _, _ = limit(4)
    for kind in ("timeout", "server_error", "connection", "cancelled"):
        [t] = take(lim, 1)
        lim.release(t, kind)
    assert lim.limit == 4 and lim.pause_left() == 0 and lim.refusals == 0


def test_acquire_waits_out_the_pause_on_the_clock_and_gives_up_at_a_deadline():
    lim, clock, _ = limit(2)
    [t] = take(lim, 1)
    start = clock.now()
    lim.release(t, "rate_limited", retry_after_s=5)
    assert lim.acquire(deadline=start + 4) is None  # the pause outlasts the caller's time
    assert clock.now() == start  # ... and it did not wait for nothing
    got = lim.acquire(deadline=start + 6)
    assert isinstance(got, Ticket) and clock.now() == pytest.approx(start + 5)


def test_acquire_blocks_on_a_full_limit_until_a_slot_is_given_back():
    lim, _, _ = limit(1)
    [held] = take(lim, 1)
    got: list = []
    waiter = threading.Thread(target=lambda: got.append(lim.acquire()))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive() and not got  # no slot: it waits
    lim.release(held, "ok")
    waiter.join(5)
    assert isinstance(got[0], Ticket)


def test_a_cancelled_acquire_returns_none():
    lim, _, _ = limit(1)
    take(lim, 1)
    cancel = threading.Event()
    cancel.set()
    assert lim.acquire(cancel) is None


def test_probes_get_rarer_the_more_often_the_limit_is_refused():
    # A provider that takes 2 at once and refuses a third: each probe at 3 is refused at once,
    # so the rounds needed before the next probe double, up to MAX_ROUNDS.
    lim, clock, history = limit(3)
    [t] = take(lim, 1)
    lim.release(t, "rate_limited", retry_after_s=0)  # 3 -> 2
    for _ in range(20_000):
        clock.sleep(0.01)
        tickets = take(lim, lim.limit)
        if lim.limit == 3:
            lim.release(tickets[0], "rate_limited", retry_after_s=0)
            for t in tickets[1:]:
                lim.release(t, "ok")
            continue
        for t in tickets:
            lim.release(t, "ok")
    cuts = [e for e in history.since(0) if e.why == "rate_limited"]
    grows = [e.seq for e in history.since(0) if e.why == "grew"]
    assert len(cuts) == len(grows) + 1 >= 5
    assert lim.rounds == adaptive.MAX_ROUNDS and max(e.limit for e in history.since(0)) == 3
    gaps = [b - a for a, b in zip(grows, grows[1:])]
    assert gaps == sorted(gaps)  # never sooner than the previous probe


# -- through the gateway, on the fake clock ------------------------------------------------------

@pytest.fixture(scope="module")
def litellm_loaded():
    warm_up()


def test_the_gateway_cuts_and_keeps_every_429_off_max_retries(litellm_loaded):
    # Every other request is refused with Retry-After: 1; 6 callers at max_concurrency 6 and
    # max_retries 0 all get through, since a 429 uses no retry; the limit is cut, never passed.
    clock = FakeClock()
    with FakeLLMServer(Reply(text="ok"), clock=clock.now) as srv:
        srv.rule = lambda req: Reply(status=429, retry_after="1") if req.index % 2 == 0 else None
        gw = Gateway({"p": {"model": "openai/fake-model", "api_base": srv.base_url, "timeout_s": 5,
                            "max_concurrency": 6, "max_retries": 0, "max_wait_s": 600}},
                     clock=clock.now, sleep=clock.sleep, backoff=Backoff(0.01, 0.05))
        results: list = []
        gate = threading.Barrier(6, timeout=10)

        def caller():
            gate.wait()
            for _ in range(5):
                results.append(gw.call("p", HI))

        threads = [threading.Thread(target=caller) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        sent = len(srv.chat_requests)
    assert len(results) == 30 and all(r.ok for r in results), {r.status for r in results}
    assert sum(r.attempts for r in results) == sent and any(r.attempts > 1 for r in results)
    events = gw.limit_history.since(0)
    assert events[0].why == "start" and events[0].limit == 6
    assert any(e.why == "rate_limited" for e in events) and all(e.limit <= 6 for e in events)
    assert gw.adaptive["p"].in_use == 0 and gw.adaptive["p"].refusals == sent - 30


# -- the Little's-law cut: settled when the pause is over (on the fake clock) ---------------------

STEP = 0.25  # a power of two: the fake clock's sums stay exact


class Traffic:
    """Requests through ``lim`` on the fake clock, every one accepted and answered ``took`` s after it
    was sent."""

    def __init__(self, lim: AdaptiveLimit, clock: FakeClock):
        self.lim, self.clock, self.out = lim, clock, []  # out: (due, ticket)

    def answer_due(self) -> None:
        now = self.clock.now()
        for item in [x for x in self.out if x[0] <= now]:
            self.out.remove(item)
            self.lim.release(item[1], "ok")

    def run(self, seconds: float, every: float, took: float, n: int = 1) -> None:
        """``n`` requests every ``every`` s for ``seconds`` s; ends with what is due answered."""
        per = round(every / STEP)
        for i in range(round(seconds / STEP)):
            self.answer_due()
            if i % per == 0:
                self.out += [(self.clock.now() + took, t) for t in take(self.lim, n)]
            self.clock.sleep(STEP)
        self.answer_due()


def refused_burst(lim: AdaptiveLimit, clock: FakeClock, sent: int, accepted: int, retry_after: float = 1,
                  took: float = STEP) -> None:
    """``sent`` requests at once; all but ``accepted`` refused at once with ``retry_after``, the
    accepted ones answered ``took`` s later (the clock is left there)."""
    burst = take(lim, sent)
    for t in burst[accepted:]:
        lim.release(t, "rate_limited", retry_after_s=retry_after)
    clock.sleep(took)
    for t in burst[:accepted]:
        lim.release(t, "ok")


def test_the_cut_settles_at_the_concurrency_the_accepted_rate_supports_when_the_pause_ends():
    # 8 requests/s accepted, each taking 0.25 s: Little's law says 2 in flight. A burst of 30 meets
    # the limit: 2 accepted, 28 refused (Retry-After 1). The 429 halves the limit at once (32 -> 16);
    # when the pause is over the cut settles at 2: one episode instead of four halvings.
    lim, clock, history = limit(32)
    Traffic(lim, clock).run(2.0, every=STEP, took=STEP, n=2)
    cut_at = clock.now()
    refused_burst(lim, clock, sent=30, accepted=2)
    assert lim.limit == 16 and lim.pause_left() == pytest.approx(1 - STEP)
    clock.sleep(1 - STEP)
    assert isinstance(lim.try_acquire(), Ticket)
    assert lim.limit == 2
    assert [(e.why, e.previous, e.limit) for e in history.since(0)] == [
        ("start", None, 32), ("rate_limited", 32, 16), ("estimated", 16, 2)]
    # the requests counted: sent in the Retry-After's 1 s before the 429, and accepted
    assert lim.little(1.0, at=cut_at) == 2


def test_the_estimate_waits_for_the_burst_it_counts_and_counts_calls_still_out():
    # Calls of 4 s, 2 sent a second (8 in flight), then a burst of 24 all refused: none of the calls
    # sent in the last second has ended when the pause is over, and they still count (a 429 would
    # have come back at once), so the limit settles at 2/s x 4 s = 8, not at a halving's 16.
    lim, clock, history = limit(32)
    traffic = Traffic(lim, clock)
    traffic.run(10.0, every=0.5, took=4.0)
    traffic.out += [(clock.now() + 4.0, t) for t in take(lim, 1)]  # the steady request of this instant
    refused_burst(lim, clock, sent=24, accepted=0, took=0.5)
    traffic.answer_due()
    clock.sleep(0.5)
    traffic.answer_due()
    assert lim.limit == 16 and lim.pause_left() == 0
    assert isinstance(lim.try_acquire(), Ticket)
    assert lim.limit == 8 and history.since(0)[-1].why == "estimated"


def test_without_a_measured_call_the_cut_is_a_halving():
    # Calls that take no time on the clock measure nothing: the settled cut stays a halving.
    lim, clock, history = limit(32)
    for _ in range(8):
        for t in take(lim, 2):
            lim.release(t, "ok")
        clock.sleep(STEP)
    refused_burst(lim, clock, sent=30, accepted=2, took=0)
    clock.sleep(1)
    assert isinstance(lim.try_acquire(), Ticket)
    assert lim.limit == 16 and [e.why for e in history.since(0)] == ["start", "rate_limited"]


def test_a_429_before_our_requests_spanned_the_window_is_a_halving():
    # The provider's window may hold requests from before ours (another client's, the previous
    # run's): 3 of our first 8 accepted is our share of it, not its rate (3 x 0.25 s would be 1).
    lim, clock, history = limit(8)
    refused_burst(lim, clock, sent=8, accepted=3)
    assert lim.limit == 4
    clock.sleep(1)
    assert isinstance(lim.try_acquire(), Ticket)
    assert lim.limit == 4 and [e.why for e in history.since(0)] == ["start", "rate_limited"]


def test_after_an_opening_taken_whole_an_early_429_settles_at_the_estimate():
    # 9 requests/s, calls of 0.25 s, max_concurrency 8: the 8 opening requests are taken, then 1
    # of the next 8, 0.25 s in (less than the 1 s window after our first request). The provider
    # took our whole opening, so the window's 9 are our share at least: 9/s x 0.25 s = 2.25, so 2.
    lim, clock, history = limit(8)
    opening = take(lim, 8)
    clock.sleep(STEP)
    for t in opening:
        lim.release(t, "ok")
    refused_burst(lim, clock, sent=8, accepted=1)
    assert lim.limit == 4
    clock.sleep(1 - STEP)
    assert isinstance(lim.try_acquire(), Ticket)
    assert lim.limit == 2
    assert [(e.why, e.previous, e.limit) for e in history.since(0)] == [
        ("start", None, 8), ("rate_limited", 8, 4), ("estimated", 4, 2)]


def test_an_opening_refused_in_part_keeps_a_later_early_429_a_halving():
    # 3 of the 8 opening requests refused: the provider's window held others' requests. The opening
    # cut halves; a second 429 still inside the first window is a halving too, not the estimate.
    lim, clock, history = limit(8)
    refused_burst(lim, clock, sent=8, accepted=3, retry_after=0.25)
    clock.sleep(0.25)
    refused_burst(lim, clock, sent=4, accepted=1, retry_after=0.25)
    clock.sleep(0.25)
    assert isinstance(lim.try_acquire(), Ticket)
    assert lim.limit == 2 and [e.why for e in history.since(0)] == ["start", "rate_limited", "rate_limited"]


def test_a_refusal_with_no_more_in_flight_than_the_estimate_is_a_halving():
    # 2 in flight is what the rate supports; a single request refused is not a sign of too many.
    lim, clock, _ = limit(32)
    Traffic(lim, clock).run(2.0, every=STEP, took=STEP, n=2)
    refused_burst(lim, clock, sent=1, accepted=0, took=1)
    assert lim.little(1.0, at=clock.now() - 1) == 2
    assert isinstance(lim.try_acquire(), Ticket)
    assert lim.limit == 16


def test_a_per_minute_limit_is_read_over_its_retry_after_and_growth_brings_the_limit_back():
    # 40 s at 1 request per 2 s, then 10 s at 4/s (calls of 2 s: 8 in flight), refused with
    # Retry-After 30: over those 30 s the provider took 49 (9 + 40), 49/30 per s x 2 s = 3 (the
    # last second alone, 4/s, would say 8). After the cooldown (10 pauses) clean calls at the limit
    # bring it back to max_concurrency, one slot at a time.
    lim, clock, history = limit(32)
    traffic = Traffic(lim, clock)
    traffic.run(40.0, every=2.0, took=2.0)
    traffic.run(10.0, every=STEP, took=2.0)
    burst = take(lim, 8)
    for t in burst:
        lim.release(t, "rate_limited", retry_after_s=30)
    for _ in range(round(30 / STEP)):
        clock.sleep(STEP)
        traffic.answer_due()
    assert isinstance(lim.try_acquire(), Ticket) and lim.in_use == 1
    assert lim.limit == 3 and history.since(0)[-1].why == "estimated"
    start = clock.now()
    clock.sleep(adaptive.COOLDOWN_PAUSES * 30)
    limits = []
    while lim.limit < 32 and clock.now() - start < 3600:
        tickets = take(lim, lim.limit - lim.in_use)
        clock.sleep(2.0)
        for t in tickets:
            lim.release(t, "ok")
        limits.append(lim.limit)
    assert lim.limit == 32 and limits == sorted(limits)  # back, never down, one slot per step
    assert all(b - a <= 1 for a, b in zip(limits, limits[1:]))
    assert clock.now() - start < 1200  # the cooldown (300 s), then 29 steps of a few rounds of 2 s


def test_a_pause_longer_than_the_window_still_counts_the_requests_before_the_429():
    # Retry-After 120: the window is 60 s (at most), the 60 s before the 429, read 120 s later;
    # a request answered late in the pause (a timeout) must not drop them as older than a minute.
    lim, clock, history = limit(32)
    traffic = Traffic(lim, clock)
    traffic.run(70.0, every=1.0, took=2.0)
    [slow] = take(lim, 1)
    for t in take(lim, 8):
        lim.release(t, "rate_limited", retry_after_s=120)
    for _ in range(round(120 / STEP)):
        clock.sleep(STEP)
        traffic.answer_due()
    lim.release(slow, "timeout")
    assert isinstance(lim.try_acquire(), Ticket)
    assert lim.limit == 2 and history.since(0)[-1].why == "estimated"  # 1/s x 2 s


def test_429s_of_the_same_episode_pause_from_when_they_were_sent():
    # Refused at about the same moment, they are handled late only because the client works through
    # them: each extends the pause by its own Retry-After counted from when it was sent.
    lim, clock, _ = limit(8)
    first, second, third, _ = take(lim, 4)
    clock.sleep(0.125)
    lim.release(first, "rate_limited", retry_after_s=1)  # the cut: paused 1 s from now
    clock.sleep(0.375)
    lim.release(second, "rate_limited", retry_after_s=1)  # sent 0.5 s ago: adds nothing
    assert lim.pause_left() == pytest.approx(0.625)
    lim.release(third, "rate_limited", retry_after_s=2)  # its 2 s from its sending outlast the pause
    assert lim.pause_left() == pytest.approx(1.5) and lim.limit == 4
