"""Provider health figures (issue 19) on a crafted project: p50/p95, valid rate, unknown cost, flags."""

from __future__ import annotations

import pytest

from tests.core.quality_project import add_call, add_run, add_vote, new_project
from workbench.core.project import quality
from workbench.core.project.provider_stats import percentile, provider_stats


def build(path):
    """local/gemma: 20 calls, latencies 10..200 ms, 17 ok, 2 invalid, 1 error, one cost unknown,
    one template echo, one cut at cap, one rubber stamp; cloud/gpt: 3 calls with known costs and a
    cache hit whose latency is left out; a second run with one more local call."""
    store = new_project(path)
    add_run(store, "r1")
    add_run(store, "r2")
    ids = []
    for i in range(1, 21):
        status = "invalid" if i in (5, 6) else "error" if i == 7 else "ok"
        reply = None if status == "error" else ("<one sentence>" if i == 8 else '{"vote": "YES", "reason": "Fine."}')
        ids.append(add_call(store, "r1", agent="a1", status=status, reply=reply, latency_ms=10.0 * i,
                            cost_usd=None if i == 9 else 0.001, finish_reason="length" if i == 10 else "stop",
                            prompt_tokens=None if i == 7 else 100, completion_tokens=None if i == 7 else 20))
    for i in range(5):
        add_vote(store, "r1", "a1", 1, call_id=ids[i])
    for latency, cached in ((300.0, 0), (500.0, 0), (1.0, 1)):
        add_call(store, "r1", agent="g1", provider="cloud", model="gpt", latency_ms=latency, cached=cached,
                 cost_usd=0.0 if cached else 0.02)
    add_call(store, "r2", agent="a1", latency_ms=1000.0)
    return store


@pytest.fixture
def store(tmp_path):
    quality.clear_cache()
    s = build(tmp_path / "p.rwb")
    yield s
    s.close_connection()


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(10, 201, 10)]
    assert percentile(values, 50) == 100.0 and percentile(values, 95) == 190.0
    assert percentile([7.0], 95) == 7.0 and percentile([], 50) is None


def test_the_figures_per_provider_and_model(store):
    rows = provider_stats(store, "r1")
    assert [(s.provider, s.model) for s in rows] == [("cloud", "gpt"), ("local", "openai/gemma")]
    by = {s.provider: s for s in rows}
    local, cloud = by["local"], by["cloud"]
    assert (local.calls, local.ok, local.invalid, local.failed) == (20, 17, 2, 1)
    assert local.valid_rate == pytest.approx(0.85)
    assert (local.latency_p50_ms, local.latency_p95_ms) == (100.0, 190.0)
    assert (local.prompt_tokens, local.completion_tokens, local.tokens_unknown) == (1900, 380, 1)
    # One call's cost is unknown: the total is unknown, never $0 or the known part alone.
    assert local.cost_usd is None and local.cost_unknown_calls == 1
    assert local.cost_known_usd == pytest.approx(0.019)
    assert local.flags == {"template_echo": 1, "cut_at_cap": 1, "rubber_stamp": 1}
    # The cache hit sent nothing: its latency is left out, its (zero) cost counts.
    assert cloud.calls == 3 and (cloud.latency_p50_ms, cloud.latency_p95_ms) == (300.0, 500.0)
    assert cloud.cost_usd == pytest.approx(0.04) and cloud.flags == {}


def test_the_whole_project_and_one_run(store):
    every = {s.provider: s for s in provider_stats(store)}
    assert every["local"].calls == 21 and every["local"].latency_p95_ms == 200.0
    only = {s.provider: s for s in provider_stats(store, "r2")}
    assert list(only) == ["local"] and only["local"].calls == 1 and only["local"].cost_usd == pytest.approx(0.001)
