"""SPEC §6 "Budgets": the estimate before a run (`rwb run --estimate`), caps that stop a run (or a
batch) within the calls in flight, `stopped_at_cap` and exit 3, `rwb resume --max-tokens` with no
call repeated, and a dollar cap on a model with no price refused before anything is spent."""

from __future__ import annotations

import json

import pytest

from tests.runs.test_run_outcomes import last_json, rows, rwb, sample, write
from tests.support.fake_llm_server import FakeLLMServer, Reply
from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config
from workbench.services.runs.runner import Runner

USAGE = {"prompt_tokens": 60, "completion_tokens": 40}  # every scripted reply costs 100 tokens


@pytest.fixture
def server():
    with FakeLLMServer(default=Reply(text='{"vote": "YES", "reason": "fine"}', usage=USAGE)) as s:
        yield s


def real(server, data: dict, **extra) -> dict:
    """A sample configuration with its simulated provider replaced by the loopback model."""
    return {**data, "providers": {"sim": {"model": "openai/fake-model", "api_base": server.base_url,
                                          "api_key_env": "LOOP_KEY", "max_retries": 0, **extra}}}


def test_a_token_cap_stops_the_run_then_a_resume_with_a_higher_cap_finishes_it_with_no_call_repeated(tmp_path, server):
    project = tmp_path / "p.rwb"
    data = {**real(server, sample("rcp-sim.json")), "dispatch": "sequential", "budget": {"max_tokens": 1000}}
    out = rwb("run", write(tmp_path, "run.json", data), "--project", str(project))
    assert out.returncode == 3, out.stderr
    s = last_json(out)
    assert s["status"] == "stopped_at_cap"
    # One call at a time, 100 tokens each: the 10th reaches the cap and no 11th is sent.
    assert len(server.chat_requests) == 10 == s["calls"]
    assert s["budget"]["stopped_at"] == "budget.max_tokens" and s["budget"]["spend"]["tokens"] == 1000
    assert s["budget"]["caps"] == [{"name": "budget.max_tokens", "limit": 1000.0, "scope": "run", "spent": 1000}]
    [line] = [ln for ln in out.stderr.splitlines() if ln.startswith("rwb:")]
    assert "stopped_at_cap" in line and "budget.max_tokens 1,000 reached" in line and "--max-tokens" in line
    assert rows(project, "SELECT status FROM runs") == [("stopped_at_cap",)]

    again = rwb("resume", s["run_id"], "--project", str(project))  # the same cap: nothing more is sent
    assert again.returncode == 3 and last_json(again)["status"] == "stopped_at_cap"
    assert len(server.chat_requests) == 10

    done = rwb("resume", s["run_id"], "--project", str(project), "--max-tokens", "100000")
    assert done.returncode == 0, done.stderr
    s = last_json(done)
    assert s["status"] == "completed" and s["calls"] == 36 and s["resumed_calls"] == 10
    assert len(server.chat_requests) == 36  # every call sent once
    keys = rows(project, "SELECT step_key, count(*) FROM llm_calls GROUP BY step_key HAVING count(*) > 1")
    assert keys == []
    assert s["budget"]["caps"][0]["limit"] == 100000.0 and s["budget"]["spend"]["tokens"] == 3600
    report = rwb("export", s["run_id"], "--project", str(project), "--format", "md").stdout
    assert "- **Estimate beside actual**: calls 36 estimated, 36 made;" in report
    assert "- **Budget**: budget.max\\_tokens 100,000 tokens (3,600 spent)" in report


def test_with_calls_in_parallel_no_call_is_sent_once_the_spend_and_the_calls_in_flight_reach_the_cap(tmp_path, server,
                                                                                                   monkeypatch):
    monkeypatch.setenv("LOOP_KEY", "sk-loop-test-key-0000")
    store = Store.create(tmp_path / "p.rwb")
    try:
        cfg = parse_run_config({**real(server, sample("rcp-sim.json"), max_concurrency=4, max_tokens=100),
                                "budget": {"max_tokens": 2000}})
        runner = Runner(store)
        summary = runner.execute(runner.create(cfg))
    finally:
        store.close_connection()
    assert summary["status"] == "stopped_at_cap"
    sent = len(server.chat_requests)
    # Each call reserves its prompt estimate plus its output cap (100) while in flight, and a call goes
    # out only while spent + reserved < 2,000: the spend passes the cap by less than the calls in flight.
    assert summary["calls"] == sent < 36
    spent = summary["budget"]["spend"]["tokens"]
    assert spent == 100 * sent and 2000 <= spent < 2000 + 4 * 100
    assert server.max_in_flight <= 4


def test_a_dollar_cap_on_a_model_with_no_price_is_refused_before_anything(tmp_path, server):
    project = tmp_path / "p.rwb"
    out = rwb("run", write(tmp_path, "run.json", {**real(server, sample("rcp-sim.json")), "budget": {"max_usd": 1}}),
              "--project", str(project))
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "rwb run: error: budget.max_usd: litellm has no price for model 'openai/fake-model' (provider 'sim'), so a "
        "dollar cap cannot be kept; add budget.max_tokens, or drop max_usd"]
    assert server.chat_requests == [] and not project.exists()
    # With a token cap too, the run goes (the token cap is the one that can be kept).
    both = {**real(server, sample("findings-sim.json")), "budget": {"max_usd": 1, "max_tokens": 100000}}
    out = rwb("run", write(tmp_path, "both.json", both), "--project", str(project))
    assert out.returncode in (0, 3) and last_json(out)["status"] != "stopped_at_cap", out.stderr


def test_the_estimate_counts_the_calls_of_the_protocols_generator_and_prices_them(tmp_path):
    project = tmp_path / "never.rwb"
    out = rwb("run", str(write(tmp_path, "rcp.json", sample("rcp-sim.json"))), "--project", str(project), "--estimate")
    assert out.returncode == 0, out.stderr
    est = json.loads(out.stdout)
    assert est["calls"] == 36 and est["by_purpose"] == {"generate": 6, "vote": 30}  # 6 + 6 × 5
    assert est["simulated_calls"] == 36 and est["model_calls"] == 0 and est["cost_usd"] == 0.0
    assert not project.exists()  # nothing is created

    def priced(model: str, **more) -> dict:
        data = {**sample("rcp-sim.json"), "refinement_rounds": 1, **more,
                "providers": {"sim": {"model": model, "api_base": "http://127.0.0.1:9/v1", "max_tokens": 100}}}
        out = rwb("run", write(tmp_path, "p.json", data), "--project", str(project), "--estimate")
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    unpriced = priced("openai/fake-model")
    assert unpriced["calls"] == 72 and unpriced["by_purpose"] == {"generate": 12, "vote": 60}  # two rounds
    assert unpriced["completion_tokens"] == 72 * 100  # every call at its cap (the provider's 100 is the smaller)
    assert unpriced["cost_usd"] is None and unpriced["unpriced_models"] == ["openai/fake-model"]
    ballots = priced("openai/gpt-4o-mini", ballot_mode=True)
    assert ballots["calls"] == 24 and ballots["by_purpose"] == {"ballot": 12, "generate": 12}  # n + n per round
    assert isinstance(ballots["cost_usd"], float) and 0 < ballots["cost_usd"] < 0.1
    assert ballots["providers"]["sim"]["cost_usd"] == pytest.approx(ballots["cost_usd"], abs=1e-6)
    cons = json.loads(rwb("run", str(write(tmp_path, "c.json", sample("cons-sim.json"))), "--project", str(project),
                          "--estimate").stdout)
    assert cons["calls"] == 5 and cons["by_purpose"] == {"ballot": 5}
    batch = {**sample("rcp-sim.json"), "batch": {"replicates": 3}}
    est = json.loads(rwb("run", write(tmp_path, "b.json", batch), "--project", str(project), "--estimate").stdout)
    assert est["runs"] == 3 and est["calls"] == 108
    assert not project.exists()


def test_a_batch_budget_caps_the_whole_batch_and_resumes_with_a_higher_one(tmp_path, server):
    project = tmp_path / "p.rwb"
    data = {**real(server, sample("rcp-sim.json")), "dispatch": "sequential", "budget": {"max_tokens": 4000},
            "batch": {"replicates": 2}}
    out = rwb("run", write(tmp_path, "batch.json", data), "--project", str(project))
    assert out.returncode == 3, out.stderr
    batch = last_json(out)
    assert batch["status"] == "stopped_at_cap" and batch["statuses"] == {"completed": 1, "stopped_at_cap": 1}
    assert len(server.chat_requests) == 40  # the first run's 36, then 4 of the second's
    capped = rows(project, "SELECT summary_json FROM runs WHERE status = 'stopped_at_cap'")
    assert json.loads(capped[0][0])["budget"]["stopped_at"] == "batch budget.max_tokens"

    done = rwb("resume", batch["batch_id"], "--project", str(project), "--max-tokens", "10000")
    assert done.returncode == 0, done.stderr
    assert last_json(done)["statuses"] == {"completed": 2} and len(server.chat_requests) == 72


def test_run_budget_caps_each_run_of_a_batch(tmp_path, server):
    project = tmp_path / "p.rwb"
    data = {**real(server, sample("rcp-sim.json")), "dispatch": "sequential", "run_budget": {"max_tokens": 500},
            "batch": {"replicates": 2}}
    out = rwb("run", write(tmp_path, "batch.json", data), "--project", str(project))
    assert out.returncode == 3, out.stderr
    assert last_json(out)["statuses"] == {"stopped_at_cap": 2}  # a run's own cap does not stop the batch
    assert len(server.chat_requests) == 10  # five calls of 100 tokens each, in each run
    done = rwb("resume", last_json(out)["batch_id"], "--project", str(project), "--run-max-tokens", "5000")
    assert done.returncode == 0, done.stderr
    assert last_json(done)["statuses"] == {"completed": 2} and len(server.chat_requests) == 72
