"""Every runner through real litellm calls to the loopback server: persisted call by call."""

from __future__ import annotations

import json

import pytest

from tests.support.fake_llm_server import FakeLLMServer, Reply
from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config
from workbench.services.runs.runner import Runner

SECRET = "sk-loopback-SECRET-0123456789abcdef"


def model_reply(request) -> str:
    """A scripted model: artifacts on request, YES to artifacts about air, NO otherwise."""
    user = request.messages[-1]["content"]
    if "Answer in one or two short paragraphs" in user:
        persona = request.messages[0]["content"]
        return f"{persona} My answer: closing the centre improves air quality."
    if "Response to evaluate" in user:
        return '{"vote": "YES", "reason": "fair"}' if "air" in user else "NO"
    return "I cannot answer that."


@pytest.fixture
def server():
    with FakeLLMServer(default=Reply(text=model_reply)) as s:
        yield s


def rcp_config(server, **extra):
    return parse_run_config({
        "protocol": "rcp", "query": "Should the city close its downtown to private cars?", "seed": 7,
        "dispatch": "concurrent",
        "providers": {"local": {"model": "openai/fake-model", "api_base": server.base_url, "api_key_env": "LOOP_KEY",
                                "max_concurrency": 4, "rpm": 6000, "timeout_s": 10, "max_retries": 2}},
        "clusters": [{"name": "advocate", "agents": [{"id": "a1", "provider": "local", "persona": "Advocate one."},
                                                     {"id": "a2", "provider": "local", "persona": "Advocate two."}]},
                     {"name": "critic", "agents": [{"id": "c1", "provider": "local", "persona": "Critic one."},
                                                   {"id": "c2", "provider": "local", "persona": "Critic two."}]}],
        **extra})


def test_rcp_run_through_litellm_records_every_call_and_vote(tmp_path, server, monkeypatch):
    monkeypatch.setenv("LOOP_KEY", SECRET)
    store = Store.create(tmp_path / "p.rwb")
    try:
        runner = Runner(store)
        run_id = runner.create(rcp_config(server))
        summary = runner.execute(run_id)
        assert summary["status"] == "completed", summary
        assert summary["calls"] == 4 + 4 * 3 and summary["failed_calls"] == 0
        assert _sql.count(store, "artifacts", "run_id = ?", (run_id,)) == 4
        assert _sql.count(store, "votes", "run_id = ? AND status = 'valid'", (run_id,)) == 12
        tiers = {s["tier"] for s in summary["rounds"][0]["states"]}
        assert tiers == {"positive_consensus"}
        assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.chat_requests)
        calls = _sql.rows(store, "llm_calls", "run_id = ?", (run_id,))
        assert {c["model"] for c in calls} == {"openai/fake-model"} and all(c["attempts"] == 1 for c in calls)
        assert all(c["cost_usd"] is None and c["cost_source"] == "unknown" for c in calls)  # unmapped: unknown, not $0
    finally:
        store.close_connection()
    assert SECRET.encode() not in (tmp_path / "p.rwb").read_bytes()


def test_a_run_whose_every_call_fails_ends_failed(tmp_path, server, monkeypatch):
    # SPEC §1: when every call of a run failed, it ends "failed", never "completed".
    monkeypatch.setenv("LOOP_KEY", SECRET)
    server.default = Reply(status=500, error_message="the model crashed")
    cfg = rcp_config(server)
    cfg.providers["local"].max_retries = 0
    store = Store.create(tmp_path / "p.rwb")
    try:
        runner = Runner(store)
        summary = runner.execute(runner.create(cfg))
        assert summary["status"] == "failed" and "every call failed" in summary["error"]
        assert summary["failed_calls"] == 4 and summary["calls"] == 4
        assert {r["status"] for r in _sql.rows(store, "llm_calls")} == {"error"}
    finally:
        store.close_connection()


def test_a_provider_nobody_answers_for_is_refused_before_any_call(tmp_path, server, monkeypatch):
    monkeypatch.setenv("LOOP_KEY", SECRET)
    cfg = rcp_config(server)
    cfg.providers["local"].api_base = "http://127.0.0.1:9/v1"  # nothing listens there
    store = Store.create(tmp_path / "p.rwb")
    try:
        runner = Runner(store)
        run_id = runner.create(cfg)
        with pytest.raises(InputError, match=r"providers\.local\.api_base: nothing answers at http://127\.0\.0\.1:9/v1"):
            runner.execute(run_id)
        assert _sql.rows(store, "llm_calls") == [] and server.chat_requests == []
    finally:
        store.close_connection()


def test_a_missing_key_is_a_clear_failure_and_nothing_is_sent(tmp_path, server, monkeypatch):
    # Refused before the first call (issue 11): the run never goes to "running", no call is made.
    monkeypatch.delenv("LOOP_KEY", raising=False)
    store = Store.create(tmp_path / "p.rwb")
    try:
        runner = Runner(store)
        run_id = runner.create(rcp_config(server))
        with pytest.raises(InputError, match="LOOP_KEY"):
            runner.execute(run_id)
        assert _sql.rows(store, "llm_calls") == [] and server.chat_requests == []
        assert _sql.get(store, "runs", run_id)["status"] == "interrupted"  # resumable once the key is set
    finally:
        store.close_connection()


def test_an_arm_reply_cut_off_at_the_token_limit_is_recorded_as_truncated(tmp_path, server, monkeypatch):
    monkeypatch.setenv("LOOP_KEY", SECRET)
    trace = {"claim": "Yes, with safeguards.", "verdict": "yes", "confidence": 0.7, "reasoning_frame": "independent",
             "decision_basis": "hybrid", "assumptions": ["a"], "critical_path": ["p"], "discarded_paths": [],
             "challenge_surface": ["c"], "flags": [], "self_check": {"status": "clean", "notes": ""}}
    server.default = Reply(text=json.dumps(trace))
    server.rule = lambda r: (Reply(text='{"claim": "Yes, but the', finish_reason="length")
                             if "ALPHA R1 (compressed)" in r.messages[-1]["content"] and "Reconcil" in r.messages[0]["content"]
                             else None)
    cfg = parse_run_config({
        "protocol": "arm", "query": "Should the agent refuse?", "seed": 1, "dispatch": "sequential",
        "providers": {"local": {"model": "openai/fake-model", "api_base": server.base_url, "api_key_env": "LOOP_KEY",
                                "reask": 0}},  # no re-ask: the cut-off reply is the one recorded
        "clusters": [{"name": "arm", "agents": [{"id": r, "provider": "local", "role": r}
                                                 for r in ("alpha", "beta", "gamma", "silent")]}]})
    store = Store.create(tmp_path / "p.rwb")
    try:
        runner = Runner(store)
        run_id = runner.create(cfg)
        assert runner.execute(run_id)["status"] == "completed"
        gamma = _sql.rows(store, "traces", "run_id = ? AND round_no = 2 AND role = 'gamma'", (run_id,))[0]
        assert gamma["ok"] == 0 and gamma["stop_reason"] == "length"
        assert "truncation_detected" in gamma["flags_json"]
        calls = _sql.rows(store, "llm_calls", "run_id = ? AND step_key = 'r2/gamma'", (run_id,))
        assert calls[0]["status"] == "invalid"  # kept with its raw text, never coerced
    finally:
        store.close_connection()


def loopback_provider(server) -> dict:
    return {"local": {"model": "openai/fake-model", "api_base": server.base_url, "api_key_env": "LOOP_KEY",
                      "max_concurrency": 4, "timeout_s": 10, "max_retries": 1}}


def test_findings_run_through_litellm(tmp_path, server, monkeypatch):
    monkeypatch.setenv("LOOP_KEY", SECRET)
    votes = {"Scout": ("confirm", 0.85), "Auditor": ("challenge", 0.65), "Dev": ("confirm", 0.95)}

    def reply(request):
        role = next(r for r in votes if f"the {r}" in request.messages[0]["content"])
        vote_type, confidence = votes[role]
        return json.dumps({"vote_type": vote_type, "confidence": confidence, "reason": "checked"})

    server.default = Reply(text=reply)
    cfg = parse_run_config({
        "protocol": "findings", "seed": 1, "providers": loopback_provider(server),
        "findings": [{"id": "f1", "claim": "Commit e8f2a91 implements OAuth2 login."}],
        "clusters": [{"name": "crew", "agents": [{"id": r.lower(), "provider": "local", "role": r.lower()}
                                                  for r in votes]}]})
    store = Store.create(tmp_path / "p.rwb")
    try:
        runner = Runner(store)
        summary = runner.execute(runner.create(cfg))
        [f1] = summary["findings"]
        assert abs(f1["consensus_score"] - 1.15 / 3) < 1e-12 and f1["status"] == "challenged"
        assert _sql.count(store, "finding_votes", "status = 'valid' AND client = 'run'") == 3
    finally:
        store.close_connection()


def test_cons_run_through_litellm_with_an_invalid_ballot_kept(tmp_path, server, monkeypatch):
    monkeypatch.setenv("LOOP_KEY", SECRET)

    def reply(request):
        agent = request.messages[0]["content"]
        if agent == "Voter 5.":
            return "I accept the single file."  # not the JSON asked for: kept as invalid, never coerced
        return json.dumps({"option": "single file", "vote": "accept", "confidence": 0.9,
                           "rationale": f"{agent} prefers atomic writes",
                           "evidence": [{"type": "code", "file": "map.py", "section": "write"}]})

    server.default = Reply(text=reply)
    cfg = parse_run_config({
        "protocol": "cons", "query": "Single file or split?", "options": ["single file", "split"], "seed": 1,
        "providers": loopback_provider(server),
        "clusters": [{"name": "r", "agents": [{"id": f"v{i}", "provider": "local", "persona": f"Voter {i}."}
                                              for i in range(1, 6)]}]})
    store = Store.create(tmp_path / "p.rwb")
    try:
        runner = Runner(store)
        run_id = runner.create(cfg)
        summary = runner.execute(run_id)
        assert summary["status"] == "completed" and summary["cons"]["verdict"] == "PROVEN"
        invalid = _sql.rows(store, "cons_ballots", "status = 'invalid'")
        assert len(invalid) == 1 and invalid[0]["raw"] == "I accept the single file."
        assert _sql.count(store, "llm_calls", "run_id = ? AND status = 'invalid' AND purpose = 'ballot'", (run_id,)) == 1
        # It was asked again once (the same prose came back): the first reply is kept as its own row.
        assert _sql.count(store, "llm_calls", "run_id = ? AND purpose = 'ballot/superseded'", (run_id,)) == 1
    finally:
        store.close_connection()


def test_a_provider_allowed_32_calls_at_once_gets_more_than_16(tmp_path, monkeypatch):
    """The runner's thread pool follows the providers' max_concurrency: a floor of 16 threads once
    held a provider at max_concurrency 32 to 16 calls in flight (found by bench/orchestration.py)."""
    monkeypatch.setenv("LOOP_KEY", SECRET)
    agents = lambda side: [{"id": f"{side}{i}", "provider": "local", "persona": f"{side} {i}."} for i in range(5)]
    with FakeLLMServer(default=Reply(text=model_reply, latency_s=0.3)) as server:
        cfg = parse_run_config({
            "protocol": "rcp", "query": "Should the city close its downtown to private cars?", "seed": 7,
            "dispatch": "concurrent",
            "providers": {"local": {"model": "openai/fake-model", "api_base": server.base_url,
                                    "api_key_env": "LOOP_KEY", "max_concurrency": 32, "timeout_s": 30}},
            "clusters": [{"name": "advocate", "agents": agents("a")}, {"name": "critic", "agents": agents("c")}]})
        store = Store.create(tmp_path / "p.rwb")
        try:
            runner = Runner(store)
            summary = runner.execute(runner.create(cfg))
        finally:
            store.close_connection()
        assert summary["status"] == "completed" and summary["calls"] == 10 + 10 * 9
        assert 16 < server.max_in_flight <= 32
