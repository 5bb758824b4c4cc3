"""The gateway's parts without the network: scrubbing, key lookup, the sliding-window limiter on
a fake clock, backoff, Retry-After parsing, cache keys and the result record."""

from __future__ import annotations

import json
import logging
import random
import threading
from datetime import datetime, timezone
from email.utils import format_datetime

import pytest

from tests.support.fake_llm_server import FakeClock
from workbench.services.llm import secrets as llm_secrets
from workbench.services.llm.cache import MemoryCacheBackend, ResponseCache, cache_key
from workbench.services.llm.limits import Backoff, ConcurrencyGate, RateLimiter, parse_retry_after
from workbench.services.llm.result import CallResult
from workbench.services.llm.secrets import MissingKey, SecretFilter, keyring_entry, resolve_key, scrub, scrub_value


def max_in_window(stamps: list[float], window: float) -> int:
    stamps, best, lo = sorted(stamps), 0, 0
    for hi, t in enumerate(stamps):
        while t - stamps[lo] >= window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


# -- scrub ---------------------------------------------------------------------------------------

def test_scrub_replaces_every_occurrence_and_longest_first():
    text = "key sk-abcdef123 and again sk-abcdef123; prefix sk-abcdef"
    assert scrub(text, ["sk-abcdef", "sk-abcdef123"]) == "key [REDACTED] and again [REDACTED]; prefix [REDACTED]"
    assert scrub(text, []) == text
    assert scrub(None, ["x"]) is None
    assert scrub("", ["x"]) == ""
    assert scrub("nothing here", ["sk-abc", None, ""]) == "nothing here"


def test_scrub_leaves_short_values_alone():
    # A one-letter "key" must not turn every "ok" into "o[REDACTED]"; real keys are long.
    assert scrub("status ok, key k", ["k"]) == "status ok, key k"
    assert scrub("no-key here", ["no-key"]) == "no-key here"


def test_scrub_value_walks_nested_structures():
    value = {"a": ["Bearer sk-12345678", ("sk-12345678",)], "sk-12345678": 3, "n": 5}
    assert scrub_value(value, ["sk-12345678"]) == {"a": ["Bearer [REDACTED]", ("[REDACTED]",)], "[REDACTED]": 3, "n": 5}


def test_secret_filter_scrubs_messages_args_and_tracebacks(caplog):
    secret = "sk-logged-secret-0042"
    logger = logging.getLogger("rwb.test.secret_filter")
    secret_filter = SecretFilter()
    secret_filter.remember(secret)
    logger.addFilter(secret_filter)
    caplog.set_level(logging.DEBUG, logger=logger.name)
    try:
        logger.warning("key %s in the args", secret)
        logger.info(f"key {secret} in the message")
        try:
            raise ValueError(f"{secret} in an exception")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeFilter(secret_filter)
    assert len(caplog.records) == 3
    assert secret not in caplog.text and caplog.text.count("[REDACTED]") == 3


# -- keys ----------------------------------------------------------------------------------------

def test_key_from_environment_variable(monkeypatch):
    monkeypatch.setenv("RWB_TEST_KEY", "sk-env-value")
    key = resolve_key("RWB_TEST_KEY", None)
    assert (key.value, key.source) == ("sk-env-value", "env:RWB_TEST_KEY")


def test_missing_environment_variable_names_the_variable_not_a_key(monkeypatch):
    monkeypatch.delenv("RWB_TEST_KEY", raising=False)
    with pytest.raises(MissingKey, match="RWB_TEST_KEY is not set"):
        resolve_key("RWB_TEST_KEY", None)


def test_keyring_entry_names():
    assert keyring_entry("openai") == (llm_secrets.KEYRING_SERVICE, "openai")
    assert keyring_entry("my-service/alice") == ("my-service", "alice")
    assert keyring_entry("https://host/x/alice") == ("https://host/x", "alice")


def test_key_from_keyring_and_env_first(monkeypatch):
    import keyring

    store = {("resonance-workbench", "openai"): "sk-from-keyring"}
    monkeypatch.setattr(keyring, "get_password", lambda service, user: store.get((service, user)))
    monkeypatch.delenv("RWB_TEST_KEY", raising=False)
    key = resolve_key("RWB_TEST_KEY", "openai")  # env unset: the keyring answers
    assert (key.value, key.source) == ("sk-from-keyring", "keyring:resonance-workbench/openai")
    monkeypatch.setenv("RWB_TEST_KEY", "sk-env-wins")
    assert resolve_key("RWB_TEST_KEY", "openai").value == "sk-env-wins"
    with pytest.raises(MissingKey, match="resonance-workbench/absent"):
        resolve_key(None, "absent")


def test_keyring_failure_is_a_missing_key(monkeypatch):
    import keyring

    def broken(service, user):
        raise RuntimeError("locked: secret-token-in-message")

    monkeypatch.setattr(keyring, "get_password", broken)
    with pytest.raises(MissingKey) as info:
        resolve_key(None, "openai")
    assert "secret-token-in-message" not in str(info.value)


def test_no_key_named_means_no_key():
    assert resolve_key(None, None).value is None


# -- the limiter ---------------------------------------------------------------------------------

def test_limiter_never_grants_more_than_limit_in_any_window_on_a_fake_clock():
    clock = FakeClock()
    limiter = RateLimiter(30, 60.0, clock=clock.now, sleep=clock.sleep)
    for _ in range(200):
        assert limiter.acquire()
        clock.sleep(0.7)  # some work between requests
    assert max_in_window(limiter.sent, 60.0) == 30
    assert limiter.sent[-1] - limiter.sent[0] > 6 * 60  # it really waited for windows to slide


def test_limiter_holds_when_threads_contend_on_a_fake_clock():
    # 8 threads x 10 acquisitions against 5 per 60 s; every thread's waits move the one clock.
    clock = FakeClock()
    limiter = RateLimiter(5, 60.0, clock=clock.now, sleep=clock.sleep)
    granted: list[bool] = []
    threads = [threading.Thread(target=lambda: granted.extend(limiter.acquire() for _ in range(10)))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    assert granted == [True] * 80 and len(limiter.sent) == 80
    assert limiter.sent == sorted(limiter.sent)  # stamps are taken under the lock, in clock order
    assert max_in_window(limiter.sent, 60.0) == 5


def test_limiter_burst_then_waits_exactly_for_the_oldest_stamp_to_expire():
    clock = FakeClock(start=0.0)
    limiter = RateLimiter(3, 60.0, clock=clock.now, sleep=clock.sleep)
    for _ in range(3):
        assert limiter.acquire()
    clock.sleep(10.0)
    assert limiter.try_acquire() == pytest.approx(50.0)  # the t=0 stamps expire at t=60
    assert limiter.acquire()
    assert limiter.sent == pytest.approx([0.0, 0.0, 0.0, 60.0])
    assert limiter.try_acquire() == 0.0 and limiter.try_acquire() == 0.0  # two slots were free
    assert limiter.try_acquire() == pytest.approx(60.0)


def test_limiter_honours_cancel_while_waiting():
    clock = FakeClock()
    limiter = RateLimiter(1, 60.0, clock=clock.now, sleep=clock.sleep)
    assert limiter.acquire()
    cancel = threading.Event()
    cancel.set()
    assert limiter.acquire(cancel) is False
    assert len(limiter.sent) == 1


def test_limiter_rejects_nonsense():
    with pytest.raises(ValueError):
        RateLimiter(0)


def test_concurrency_gate_gives_up_when_cancelled():
    gate = ConcurrencyGate(1, poll_s=0.01)
    assert gate.acquire()
    cancel = threading.Event()
    timer = threading.Timer(0.05, cancel.set)
    timer.start()
    assert gate.acquire(cancel) is False
    timer.join()
    gate.release()
    assert gate.acquire(threading.Event())
    gate.release()


# -- backoff and Retry-After ---------------------------------------------------------------------

def test_backoff_is_exponential_capped_jittered_and_reproducible():
    backoff = Backoff(base_s=0.5, cap_s=4.0)
    a = [backoff.delay(n, random.Random(7)) for n in range(1, 8)]
    b = [backoff.delay(n, random.Random(7)) for n in range(1, 8)]
    assert a == b
    for n, d in enumerate(a, start=1):
        ceiling = min(4.0, 0.5 * 2 ** (n - 1))
        assert ceiling / 2 <= d <= ceiling
    rng = random.Random(1)
    assert 3.0 <= backoff.delay(1, rng, retry_after_s=3.0) <= 3.3  # Retry-After wins


def test_parse_retry_after_seconds_date_and_ms():
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({}) is None and parse_retry_after(None) is None
    assert parse_retry_after({"retry-after": "soon"}) is None
    base = datetime(2030, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
    date = format_datetime(datetime(2030, 1, 1, 12, 0, 30, tzinfo=timezone.utc), usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=base.timestamp) == pytest.approx(30.0)
    assert parse_retry_after({"Retry-After": date}, now=lambda: base.timestamp() + 60) == 0.0


# -- cache keys and results ----------------------------------------------------------------------

def test_cache_key_depends_on_what_decides_the_reply():
    msgs = [{"role": "user", "content": "hi"}]
    k = cache_key("openai/m", "http://h/v1", msgs, {"temperature": 0.2}, 0)
    assert k == cache_key("openai/m", "http://h/v1", [dict(m) for m in msgs], {"temperature": 0.2}, 0)
    assert k == cache_key("openai/m", "http://h/v1", msgs, {"temperature": 0.2, "max_tokens": None}, 0)
    others = [
        cache_key("openai/m", "http://h/v1", msgs, {"temperature": 0.2}, 1),
        cache_key("openai/n", "http://h/v1", msgs, {"temperature": 0.2}, 0),
        cache_key("openai/m", "http://g/v1", msgs, {"temperature": 0.2}, 0),
        cache_key("openai/m", "http://h/v1", [{"role": "user", "content": "hi!"}], {"temperature": 0.2}, 0),
        cache_key("openai/m", "http://h/v1", msgs, {"temperature": 0.3}, 0),
    ]
    assert len({k, *others}) == 6


def test_response_cache_counts_hits_and_misses():
    cache = ResponseCache(MemoryCacheBackend())
    assert cache.get("k") is None
    cache.put("k", {"a": 1})
    assert cache.get("k") == {"a": 1}
    assert (cache.hits, cache.misses) == (1, 1)


def test_call_result_round_trips_and_fills_an_llm_calls_row():
    result = CallResult(status="ok", provider="p", model="openai/m", text="hi", attempts=2,
                        request={"model": "openai/m", "messages": []}, prompt_tokens=3, completion_tokens=1,
                        total_tokens=4, cost_usd=None, attempt_log=({"http_status": 500}, {"http_status": 200}))
    assert CallResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    row = result.record()
    assert row["cost_usd"] is None and row["cost_source"] == "unknown" and row["cached"] == 0
    assert json.loads(row["request_json"]) == {"model": "openai/m", "messages": []}
    assert set(row) >= {"request_json", "response_raw", "status", "error", "error_kind", "attempts",
                        "prompt_tokens", "completion_tokens", "total_tokens", "cost_usd", "cost_source",
                        "latency_ms", "cached", "started_at", "finished_at"}
    assert result.meta()["attempts"] == 2


def test_agent_reply_carries_text_or_error_and_meta():
    ok = CallResult(status="ok", provider="p", model="m", text="YES", attempts=1)
    failed = CallResult(status="rate_limited", provider="p", model="m", error="HTTP 429: slow down",
                        error_kind="rate_limited", attempts=4)
    assert ok.agent_reply("vote/w1/a1").ok and ok.agent_reply("k").text == "YES"
    reply = failed.agent_reply("vote/w1/a2")
    assert not reply.ok and reply.text is None and reply.error == "rate_limited: HTTP 429: slow down"
    assert reply.meta["attempts"] == 4 and reply.key == "vote/w1/a2"


def test_the_cache_key_ignores_fence_names():
    # Every call has fresh fence names (SPEC §6): the same question behind another fence is the same.
    from workbench.core.protocols.shared.fencing import fenced, new_delimiter

    def ask(fence: str) -> list[dict]:
        return [{"role": "user", "content": "Vote on:\n" + fenced("The artifact.", fence)}]

    one, two = new_delimiter(), new_delimiter()
    assert one != two
    assert cache_key("m", None, ask(one), {}, 0) == cache_key("m", None, ask(two), {}, 0)
    other = [{"role": "user", "content": "Vote on:\n" + fenced("Another artifact.", one)}]
    assert cache_key("m", None, other, {}, 0) != cache_key("m", None, ask(one), {}, 0)
