"""What a write changed, and what another program's commit changed, named precisely.

The change counters (kept by triggers) and the watcher are the core of the GUI's refresh-on-
change: a commit from elsewhere must name exactly the tables that moved and the runs of the rows
appended, never "everything"; and a write made here must carry the counters that let the GUI
tell it from the watcher's later sight of the same commit.
"""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

from tests.core.store_samples import (
    STEP_9_TABLES,
    STEP_10_TABLES,
    STEP_11_TABLES,
    STEP_12_UNDONE,
    STEP_13_UNDONE,
    STEP_14_UNDONE,
    STEP_15_UNDONE,
)
from workbench.core.project import _sql, runs
from workbench.core.project.files import ProjectError
from workbench.core.project.findings import FindingsStore
from workbench.core.project.run_records import CallRecord, record_call
from workbench.core.project.store import Store
from workbench.core.project.watch import ChangeWatcher
from workbench.core.protocols.findings.book import consensus
from workbench.core.protocols.shared.steps import AgentCall, AgentReply
from workbench.core.runs.config import parse_run_config

CONFIG = {"protocol": "rcp", "query": "q?", "seed": 1, "providers": {"sim": {"model": "sim"}},
          "clusters": [{"name": "a", "agents": [{"id": "a1", "provider": "sim"}, {"id": "a2", "provider": "sim"}]},
                       {"name": "c", "agents": [{"id": "c1", "provider": "sim"}, {"id": "c2", "provider": "sim"}]}]}


def other(project: Store) -> Store:
    """Another connection to the same file, as the CLI or an MCP server would have."""
    return Store.open(project.path)


def a_call(run_id: str, key: str = "gen/a1") -> CallRecord:
    call = AgentCall(key, "a1", "generate", (), meta={"artifact": "w1", "author": "a1", "cluster": "a"})
    return CallRecord(call, AgentReply(key, "An artifact.", None, {}), "sim", True, {"status": "ok"})


@pytest.fixture
def watcher(project):
    w = ChangeWatcher(project.reader())
    w.start()
    yield w
    w.close()


def test_nothing_committed_is_no_change(watcher):
    assert watcher.poll() is None


def test_a_commit_elsewhere_names_exactly_the_tables_it_touched(project, watcher):
    outside = other(project)
    _sql.insert(outside, "clusters", {"name": "critic"})
    outside.close_connection()
    changes = watcher.poll()
    assert changes.tables == {"clusters"} and changes.external
    assert watcher.poll() is None  # seen once


def test_a_commit_elsewhere_names_the_runs_of_the_rows_it_appended(project, watcher):
    outside = other(project)
    cfg = parse_run_config(CONFIG)
    for run_id in ("r1", "r2"):
        runs.create_run(outside, run_id=run_id, protocol="rcp", label="", config={}, seed=1, dispatch=None,
                        simulated=True)
    watcher.poll()
    round_id = runs.ensure_round(outside, "r2", 1, "Round 1")
    record_call(outside, "r2", round_id, a_call("r2"), cfg)
    outside.close_connection()
    changes = watcher.poll()
    assert changes.tables == {"rounds", "llm_calls", "artifacts"}
    assert changes.runs == {"r2"}


def test_a_write_reports_its_tables_keys_runs_and_counters(project, watcher):
    changes = runs.create_run(project, run_id="r1", protocol="rcp", label="", config={}, seed=1, dispatch=None,
                              simulated=True)
    assert changes.tables == {"runs"} and changes.keys_of("runs") == ["r1"] and changes.runs == {"r1"}
    seen = watcher.poll()  # the watcher sees the same commit, with the same counter
    assert seen.tables == {"runs"} and seen.counters["runs"] == changes.counters["runs"]


def test_every_table_is_watched(project):
    counters = dict(_sql.tuples(project, "SELECT tbl, seq FROM change_counters"))
    assert set(counters) == set(_sql.tables(project))


def test_each_finding_keeps_the_consensus_the_engine_computes(project):
    findings = FindingsStore(project)
    findings.create_finding("claim", finding_id="f1")
    for agent, vote, confidence in (("scout", "confirm", 0.85), ("auditor", "challenge", 0.65),
                                    ("dev", "confirm", 0.95), ("scout", "challenge", 0.5)):
        findings.submit_vote("f1", agent, vote, confidence)
    row = _sql.get(project, "findings", "f1")
    votes = _sql.rows(project, "finding_votes", "finding_id = 'f1'", order_by="id")
    engine = consensus([{"agent": v["agent"], "vote_type": v["vote_type"], "confidence": v["confidence"]}
                        for v in votes])
    assert (row["score"], row["k"], row["status"]) == (engine.consensus_score, engine.k, engine.status.value)
    assert row["status"] == "challenged" and row["votes_valid"] == 4


def test_a_project_of_schema_2_gets_its_findings_scored_when_migrated(tmp_path):
    path = tmp_path / "old.rwb"
    store = Store.create(path)
    findings = FindingsStore(store)
    findings.create_finding("claim", finding_id="f1")
    findings.submit_vote("f1", "scout", "confirm", 0.9)
    store.close_connection()
    conn = sqlite3.connect(path, isolation_level=None)  # make it an old file: drop what steps 3 and 4 added
    conn.executescript(
        "BEGIN; " +
        "".join(f"DROP TRIGGER {name}; " for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")) +
        STEP_15_UNDONE + STEP_14_UNDONE + STEP_13_UNDONE +
        STEP_12_UNDONE +  # then: the calls' table back under its name
        STEP_11_TABLES +  # then: its study_results refer to classification_variants
        "DROP TABLE change_counters; DROP TABLE audit_notes; DROP TABLE classification_variants; " +
        "DROP TABLE reply_cache; " +
        "DROP INDEX llm_calls_agent; DROP INDEX llm_calls_status; DROP INDEX votes_agent; DROP INDEX traces_agent; "
        "DROP INDEX votes_call; DROP INDEX artifacts_call; " + STEP_10_TABLES + STEP_9_TABLES +
        "ALTER TABLE findings DROP COLUMN score; ALTER TABLE findings DROP COLUMN k; "
        "ALTER TABLE findings DROP COLUMN status; ALTER TABLE findings DROP COLUMN votes_valid; "
        "ALTER TABLE findings DROP COLUMN votes_invalid; ALTER TABLE findings DROP COLUMN last_vote_at; "
        "PRAGMA user_version = 2; COMMIT;")
    conn.close()
    migrated = Store.open(path)
    try:
        row = _sql.get(migrated, "findings", "f1")
        assert (row["score"], row["k"], row["status"], row["votes_valid"]) == (0.9, 1, "confirmed", 1)
    finally:
        migrated.close_connection()


def test_a_file_opened_before_its_check_is_never_written_if_damaged(tmp_path):
    path = tmp_path / "p.rwb"
    store = Store.create(path)
    with _sql.write(store) as tx:
        for i in range(400):
            tx.insert("settings", {"key": f"k{i:04d}", "value_json": "x" * 300})
    store.close_connection()
    data = bytearray(path.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    # Damage the header of a b-tree leaf page well inside the file (as test_store does).
    page = next(p for p in range(len(data) // page_size - 1, 1, -1) if data[p * page_size] in (10, 13))
    data[page * page_size: page * page_size + 12] = b"\x07" * 12
    path.write_bytes(bytes(data))
    before = hashlib.sha256(path.read_bytes()).hexdigest()

    early = Store.open(path, check_later=True)  # identity only: the window shows it at once
    with pytest.raises(ProjectError, match="damaged"):
        _sql.insert(early, "clusters", {"name": "x"})  # the write runs the check first
    with pytest.raises(ProjectError, match="damaged"):
        early.check()
    early.close_connection()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
