"""The simulated panel runs every protocol end to end through the real runner, offline."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from workbench.core.project import _sql
from workbench.core.project.export import run_records
from workbench.core.project.store import Store
from workbench.core.protocols.shared.fencing import mask_fences
from workbench.core.runs.batch import expand_batch
from workbench.core.runs.config import parse_run_config
from workbench.services.runs.runner import Runner

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"


def sample(name: str) -> dict:
    return json.loads((SAMPLES / name).read_text())


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "sim.rwb")
    yield s
    s.close_connection()


def run(store, data, **kw) -> tuple[str, dict]:
    runner = Runner(store, **kw)
    run_id = runner.create(parse_run_config(data))
    return run_id, runner.execute(run_id)


def content(store, run_id) -> dict:
    """What a run concluded, without ids, timings or other bookkeeping."""
    q = lambda sql: sorted(tuple(r.values()) for r in _sql.query(store, sql, (run_id,)))
    return {
        "calls": q("SELECT step_key, status, reply_text FROM llm_calls WHERE run_id = ? AND status IN ('ok', 'invalid')"),
        "artifacts": q("SELECT key, author_agent, content FROM artifacts WHERE run_id = ?"),
        "votes": q("SELECT a.key, v.voter_agent, v.value, v.status FROM votes v JOIN artifacts a ON a.id = v.artifact_id "
                   "WHERE v.run_id = ?"),
        "finding_votes": q("SELECT finding_id, agent, vote_type, confidence, status FROM finding_votes WHERE run_id = ?"),
        "traces": q("SELECT round_no, role, attempt, claim, verdict, confidence, reconciliation_status "
                    "FROM traces WHERE run_id = ?"),
    }


@pytest.mark.parametrize("name", ["rcp-sim.json", "arm-sim.json", "findings-sim.json", "cons-sim.json"])
def test_every_protocol_runs_offline_and_everything_is_labelled_simulated(store, name):
    run_id, summary = run(store, sample(name))
    assert summary["status"] == "completed", summary
    assert summary["calls"] > 0 and summary["failed_calls"] == 0
    assert _sql.get(store, "runs", run_id)["simulated"] == 1
    assert _sql.count(store, "llm_calls", "run_id = ? AND simulated = 0", (run_id,)) == 0
    records = list(run_records(store, run_id))
    assert all(r["simulated"] is True for r in records)
    assert {r["kind"] for r in records} >= {"run", "call"}


def test_the_same_seed_sends_the_same_prompts_and_gets_the_same_results(store):
    first, _ = run(store, sample("rcp-sim.json"))
    second, _ = run(store, sample("rcp-sim.json"))
    # The same prompts up to the fence names, which are fresh per call (SPEC §6 "Reproducibility").
    prompts = lambda rid: [(r["step_key"], mask_fences(json.dumps(r["request_json"]))) for r in
                           _sql.rows(store, "llm_calls", "run_id = ?", (rid,), order_by="step_key")]
    assert prompts(first) == prompts(second)
    assert content(store, first) == content(store, second)
    other, _ = run(store, {**sample("rcp-sim.json"), "seed": 8})
    assert content(store, other) != content(store, first)


@pytest.mark.parametrize("name", ["rcp-sim.json", "arm-sim.json", "findings-sim.json"])
def test_cancel_then_resume_equals_a_straight_run(store, name):
    straight, _ = run(store, sample(name))
    cancel = threading.Event()
    seen = []

    def progress(p):  # cancel once a few calls have been recorded
        seen.append(p.done)
        if p.done >= 3:
            cancel.set()

    runner = Runner(store, on_progress=progress, cancel=cancel)
    run_id = runner.create(parse_run_config({**sample(name), "dispatch": "sequential"}))
    first = runner.execute(run_id)
    assert first["status"] == "interrupted" and "cancelled" in _sql.get(store, "runs", run_id)["error"]
    partial = _sql.count(store, "llm_calls", "run_id = ?", (run_id,))
    again = Runner(store).execute(run_id)
    assert again["status"] == "completed" and again["resumed_calls"] == partial
    a, b = content(store, run_id), content(store, straight)
    if name == "arm-sim.json":  # dispatch differs (sequential vs the sample's), the answers do not
        assert a["traces"] == b["traces"]
    else:
        assert a == b


def test_the_conductor_waits_for_a_person(store):
    data = {**sample("cons-sim.json"), "min_voters": 6}  # five voters: insufficient evidence, escalated
    run_id, summary = run(store, data)
    assert summary["status"] == "interrupted"
    assert "waiting for a human decision" in _sql.get(store, "runs", run_id)["error"]

    class Person:
        def ask(self, call, cancel):
            assert call.agent == "conductor" and call.purpose == "hitl_decision"
            return "Split per module, revisit in a month."

    done = Runner(store, manual=Person()).execute(run_id)
    assert done["status"] == "completed"
    decisions = _sql.rows(store, "cons_escalations", "status = 'resolved'")
    assert decisions and all(d["decision"] == "Split per module, revisit in a month." for d in decisions)


def test_a_batch_expands_and_rotates_the_silent_baseline(store):
    spec, runs = expand_batch(sample("batch-arm-sim.json"))
    assert len(runs) == 2 * 2 * 2
    assert {r.config.seed for r in runs} == {5, 6}
    # Run i of the batch takes provider i (mod the number) of its own panel: uniform runs have one
    # provider, mixed runs two (alpha and gamma on sim, beta on sim-b).
    assert [r.config.arm["silent_provider"] for r in runs[:4]] == ["sim", "sim", "sim", "sim-b"]
    runner = Runner(store)
    ids = [runner.create(r.config, label=r.label, batch_id=None, replicate=r.replicate) for r in runs[:2]]
    assert all(runner.execute(i)["status"] == "completed" for i in ids)


def test_replay_answers_from_the_stored_replies_and_calls_nothing(store, monkeypatch):
    original, _ = run(store, sample("rcp-sim.json"))
    from workbench.core import sim

    def refuse(*_a, **_k):
        raise AssertionError("a replay must not ask the simulated panel")

    monkeypatch.setattr(sim.SimPanel, "reply", refuse)
    replayed = Runner(store).replay(original)
    row = _sql.get(store, "runs", replayed)
    assert row["status"] == "completed" and row["provenance_json"]["replay_of"] == original
    calls = _sql.rows(store, "llm_calls", "run_id = ?", (replayed,))
    assert calls and all(c["cached"] == 1 and c["attempts"] == 0 for c in calls)
    assert content(store, replayed) == content(store, original)


def test_findings_can_come_from_another_runs_artifacts(store):
    rcp_id, summary = run(store, sample("rcp-sim.json"))
    consensus = [s["artifact"] for s in summary["rounds"][0]["states"] if s["tier"] == "positive_consensus"]
    data = {**sample("findings-sim.json"), "findings": [], "findings_from_run": rcp_id,
            "findings_tiers": ["positive_consensus"]}
    run_id, result = run(store, data)
    assert result["status"] == "completed"
    assert sorted(f["id"] for f in result["findings"]) == sorted(f"{rcp_id}:{k}" for k in consensus)
    assert _sql.count(store, "finding_votes", "run_id = ?", (run_id,)) == 3 * len(consensus)
