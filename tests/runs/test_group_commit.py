"""Calls that end together are stored in one transaction (a group commit), and a call whose
record cannot be written never costs the calls beside it theirs."""

from __future__ import annotations

import concurrent.futures
import json
from pathlib import Path

import pytest

from workbench.core.project import _sql, run_records
from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config
from workbench.services.runs import runner as runner_module
from workbench.services.runs.runner import Runner

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "group.rwb")
    yield s
    s.close_connection()


@pytest.fixture
def all_at_once(monkeypatch):
    """The runner's wait sees every call of a step end at the same moment (deterministic batches)."""
    def wait(fs, timeout=None, return_when=None):
        return concurrent.futures.wait(fs, return_when=concurrent.futures.ALL_COMPLETED)

    monkeypatch.setattr(runner_module, "wait", wait)
    groups: list[int] = []
    real = run_records.record_calls

    def record_calls(store, run_id, round_id, recs, cfg):
        groups.append(len(recs))
        return real(store, run_id, round_id, recs, cfg)

    monkeypatch.setattr(runner_module, "record_calls", record_calls)
    return groups


def rcp() -> dict:
    data = json.loads((SAMPLES / "rcp-sim.json").read_text())
    data["dispatch"] = "concurrent"
    return data


def stored(store, run_id) -> list[tuple]:
    return sorted(tuple(r.values()) for r in _sql.query(
        store, "SELECT step_key, status, reply_text FROM llm_calls WHERE run_id = ?", (run_id,)))


def test_calls_that_end_together_share_one_commit_and_store_what_one_by_one_would(store, all_at_once):
    runner = Runner(store)
    grouped = runner.create(parse_run_config(rcp()))
    summary = runner.execute(grouped)
    assert summary["status"] == "completed"
    assert all_at_once and max(all_at_once) > 1 and sum(all_at_once) == summary["calls"]

    data = rcp()
    data["dispatch"] = "sequential"  # every call its own transaction
    runner = Runner(store)
    single = runner.create(parse_run_config(data))
    assert runner.execute(single)["status"] == "completed"
    assert stored(store, grouped) == stored(store, single)


def test_a_call_that_cannot_be_stored_never_costs_the_others_theirs(store, all_at_once, monkeypatch):
    real = run_records._record_protocol_rows
    broken: list[str] = []

    def protocol_rows(tx, run_id, round_id, call_id, rec, cfg):
        if rec.call.purpose == "vote" and not broken:
            broken.append(rec.call.key)
        if rec.call.key in broken:  # this call's record can never be written
            raise RuntimeError("disk says no")
        return real(tx, run_id, round_id, call_id, rec, cfg)

    monkeypatch.setattr(run_records, "_record_protocol_rows", protocol_rows)
    runner = Runner(store)
    run_id = runner.create(parse_run_config(rcp()))
    summary = runner.execute(run_id)
    assert summary["status"] == "failed" and "disk says no" in (summary.get("error") or "")
    keys = {k for k, _, _ in stored(store, run_id)}
    votes_in_step = max(all_at_once)  # the vote step's calls were one group
    assert broken and broken[0] not in keys
    assert _sql.count(store, "llm_calls", "run_id = ? AND purpose = 'vote'", (run_id,)) == votes_in_step - 1

    monkeypatch.setattr(run_records, "_record_protocol_rows", real)  # the disk is back: resume finishes it
    resumed = Runner(store).execute(run_id)
    assert resumed["status"] == "completed"
    assert broken[0] in {k for k, _, _ in stored(store, run_id)}
