"""A run against a provider that allows a fixed number of requests per second and answers 429 with
Retry-After above it (SPEC §10): the runner adapts its concurrency and finishes on its first pass,
with no call left for a resume, and the limit's history is stored with the run, reported by
``rwb providers stats`` and readable as a series for Live Run."""

from __future__ import annotations

import json

import pytest

from tests.support.fake_llm_server import FakeLLMServer, RateLimitRule, Reply
from workbench.core.project import _sql, limit_history
from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config
from workbench.services.runs.runner import Runner


def model_reply(request) -> str:
    user = request.messages[-1]["content"]
    if "Answer in one or two short paragraphs" in user:
        return "Closing the centre cuts traffic and noise; shops need deliveries."
    return '{"vote": "YES", "reason": "fair"}'


def config(base_url: str, agents: int = 3, **provider) -> dict:
    return {"protocol": "rcp", "query": "Should the city close its downtown to private cars?", "seed": 5,
            "dispatch": "concurrent",
            "providers": {"p": {"model": "openai/fake-model", "api_base": base_url, "timeout_s": 10,
                                "max_retries": 0, **provider}},
            "clusters": [{"name": name, "agents": [{"id": f"{name[0]}{i}", "provider": "p"} for i in range(agents)]}
                         for name in ("advocate", "critic")]}


@pytest.fixture
def limited():
    """The loopback server allowing 10 requests in any 1 s window, each answered after 50 ms."""
    with FakeLLMServer(default=Reply(text=model_reply, latency_s=0.05)) as server:
        server.rule = RateLimitRule(10)
        yield server


def test_a_rate_limited_run_adapts_and_leaves_nothing_for_a_resume(tmp_path, limited):
    store = Store.create(tmp_path / "p.rwb")
    try:
        runner = Runner(store)
        # 6 generations, then 30 votes, at max_concurrency 16 and max_retries 0: before SPEC §10 every
        # 429 used up the call's retries and the run stopped interrupted.
        run_id = runner.create(parse_run_config(config(limited.base_url, max_concurrency=16)))
        summary = runner.execute(run_id)
        assert summary["status"] == "completed", summary.get("error")
        assert summary["calls"] == 36 and summary["failed_calls"] == 0
        assert limited.rule.refused > 0  # the provider did refuse: the run waited its 429s out
        statuses = [s for (s,) in _sql.tuples(store, "SELECT status FROM llm_calls WHERE run_id = ?", (run_id,))]
        assert statuses == ["ok"] * 36  # no call rate_limited, none to issue again on resume
        attempts = sum(a for (a,) in _sql.tuples(store, "SELECT attempts FROM llm_calls WHERE run_id = ?", (run_id,)))
        assert attempts == len(limited.chat_requests) == 36 + limited.rule.refused

        # The history: stored with the run's rounds, summarised in the run's summary.
        points = limit_history.series(store, run_id)
        assert points[0].why == "start" and points[0].limit == 16 and points[0].key == "p"
        cuts = [p for p in points if p.why == "rate_limited"]
        assert cuts and all(p.limit < p.previous for p in cuts) and all(p.limit <= 16 for p in points)
        assert [p.at for p in points] == sorted(p.at for p in points)
        assert {p.phase for p in points} <= {"Round 1: generate", "Round 1: vote"}
        concurrency = summary["concurrency"]["p"]
        assert concurrency["ceiling"] == 16 and concurrency["cuts"] == len(cuts)
        assert concurrency["refusals"] == limited.rule.refused and concurrency["lowest"] < 16
    finally:
        store.close_connection()


def test_providers_stats_reports_the_limit(tmp_path, limited):
    import subprocess
    import sys
    from pathlib import Path

    store = Store.create(tmp_path / "p.rwb")
    try:
        runner = Runner(store)
        run_id = runner.create(parse_run_config(config(limited.base_url, agents=2, max_concurrency=12)))
        assert runner.execute(run_id)["status"] == "completed"
    finally:
        store.close_connection()
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-m", "workbench", "providers", "stats", "--project", str(tmp_path / "p.rwb"),
                          "--json"], cwd=repo, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    [row] = json.loads(out.stdout)
    c = row["concurrency"]
    assert c["refusals"] == limited.rule.refused > 0 and c["cuts"] >= 1
    assert c["deployments"]["p"]["ceiling"] == 12 and c["lowest"] < 12
    table = subprocess.run([sys.executable, "-m", "workbench", "providers", "stats", "--project",
                            str(tmp_path / "p.rwb")], cwd=repo, capture_output=True, text=True, timeout=120)
    assert f"12→{c['lowest']}" in table.stdout and f"{c['refusals']}×429" in table.stdout


def test_a_run_that_never_meets_a_429_keeps_its_limit(tmp_path):
    with FakeLLMServer(default=Reply(text=model_reply)) as server:
        store = Store.create(tmp_path / "p.rwb")
        try:
            runner = Runner(store)
            run_id = runner.create(parse_run_config(config(server.base_url, agents=2, max_concurrency=4)))
            summary = runner.execute(run_id)
            assert summary["status"] == "completed"
            assert summary["concurrency"]["p"] == {"provider": "p", "deployment": None, "ceiling": 4, "final": 4,
                                                   "lowest": 4, "cuts": 0, "grew": 0, "refusals": 0}
            assert [(p.why, p.limit) for p in limit_history.series(store, run_id)] == [("start", 4)]
        finally:
            store.close_connection()
