"""Identity (issue 12): an id that collides with another record's never overwrites it.

A finding is its id and its claim: the same id with the same claim is the same finding; the same
id with another claim is refused, and the votes already cast on the stored claim stay as they
were. An imported ARM file is its sha256: importing it again is the same run; another file whose
run id is taken is refused.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project.arm_import import import_arm_json
from workbench.core.project.findings import FindingsStore, check_findings, claim_findings
from workbench.core.project.store import Store

REPO = Path(__file__).resolve().parents[2]
TRACE = {"question": "Q?", "r1": {"alpha": {"claim": "A claim here.", "verdict": "yes", "confidence": 0.7}}}


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "p.rwb")
    yield s
    s.close_connection()


def votes(store: Store, finding: str) -> list[tuple]:
    return [(r["agent"], r["vote_type"], r["confidence"])
            for r in _sql.rows(store, "finding_votes", "finding_id = ?", (finding,), order_by="id")]


# ----- findings through the Consensus Server -------------------------------------------------------
def test_the_same_id_and_claim_is_the_same_finding(store):
    book = FindingsStore(store)
    first = book.create_finding("The build is green on main.", finding_id="f1")
    book.submit_vote("f1", "scout", "confirm", 0.9)
    again = book.create_finding("  The build is green on main. ", finding_id="f1")  # a retried call
    assert again.id == first.id and again.created_at == first.created_at and again.votes_total == 1
    assert _sql.count(store, "findings") == 1


@pytest.mark.parametrize("claim", ["The build is red on main.", "the build is green on main.", "x"])
def test_the_same_id_with_another_claim_is_refused_and_the_votes_kept(store, claim):
    book = FindingsStore(store)
    book.create_finding("The build is green on main.", finding_id="f1")
    book.submit_vote("f1", "scout", "confirm", 0.9)
    with pytest.raises(InputError, match="already exists with another claim"):
        book.create_finding(claim, finding_id="f1")
    assert _sql.get(store, "findings", "f1")["claim"] == "The build is green on main."
    assert votes(store, "f1") == [("scout", "confirm", 0.9)]


# ----- findings a run brings -------------------------------------------------------------------------
def test_check_findings_names_the_colliding_finding(store):
    FindingsStore(store).create_finding("Stored claim.", finding_id="f1")
    check_findings(store, [{"id": "f1", "claim": "Stored claim."}, {"id": "f2", "claim": "New."}])
    with pytest.raises(InputError) as caught:
        check_findings(store, [{"id": "f2", "claim": "New."}, {"id": "f1", "claim": "Another claim."}])
    assert caught.value.field == "findings[1].id" and "'f1' already exists" in caught.value.message
    with pytest.raises(InputError, match="given twice with different claims"):
        check_findings(store, [{"id": "f9", "claim": "A."}, {"id": "f9", "claim": "B."}])


def test_claim_findings_adds_new_keeps_same_and_refuses_a_collision_writing_nothing(store):
    book = FindingsStore(store)
    book.create_finding("Stored claim.", finding_id="f1")
    book.submit_vote("f1", "scout", "confirm", 0.9)
    for run in ("run-1", "run-2"):
        _sql.insert(store, "runs", {"id": run, "protocol": "findings", "label": run, "status": "interrupted",
                                    "source": "run", "config_json": {}, "started_at": "2026-01-01T00:00:00.000Z"})
    with _sql.write(store) as tx:
        claim_findings(tx, "run-1", [{"id": "f1", "claim": "Stored claim."}, {"id": "f2", "claim": "New."}])
    assert _sql.get(store, "findings", "f1")["run_id"] is None  # kept as it was, not taken over
    assert _sql.get(store, "findings", "f2")["run_id"] == "run-1"
    before = [dict(r) for r in _sql.rows(store, "findings", order_by="id")]
    with pytest.raises(InputError, match="another claim"):
        with _sql.write(store) as tx:
            claim_findings(tx, "run-2", [{"id": "f3", "claim": "Also new."}, {"id": "f1", "claim": "Other."}])
    assert [dict(r) for r in _sql.rows(store, "findings", order_by="id")] == before  # f3 rolled back too
    assert votes(store, "f1") == [("scout", "confirm", 0.9)]


def rwb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})


def test_two_runs_over_the_same_findings_vote_on_the_same_findings(tmp_path):
    project = tmp_path / "p.rwb"
    config = REPO / "sample_runs" / "findings-sim.json"
    assert rwb("run", config, "--project", project, "--quiet").returncode == 0
    assert rwb("run", config, "--project", project, "--quiet").returncode == 0
    conn = sqlite3.connect(project)
    try:
        assert conn.execute("SELECT count(*) FROM findings").fetchone()[0] == 2
        assert conn.execute("SELECT count(DISTINCT run_id) FROM finding_votes WHERE finding_id = 'f1'").fetchone()[0] == 2
    finally:
        conn.close()


def test_a_run_whose_finding_id_is_taken_by_another_claim_is_refused(tmp_path):
    project = tmp_path / "p.rwb"
    store = Store.create(project)
    try:
        FindingsStore(store).create_finding("The build is green on main.", finding_id="f1")
        FindingsStore(store).submit_vote("f1", "scout", "confirm", 0.9)
    finally:
        store.close_connection()
    out = rwb("run", REPO / "sample_runs" / "findings-sim.json", "--project", project, "--quiet")
    assert out.returncode == 2 and "f1" in out.stderr and "another claim" in out.stderr, out.stderr
    store = Store.open(project)
    try:
        assert votes(store, "f1") == [("scout", "confirm", 0.9)]  # nobody's run votes counted for this claim
        assert _sql.count(store, "runs") == 0  # refused before anything was spent
    finally:
        store.close_connection()


# ----- ARM imports -----------------------------------------------------------------------------------
def test_importing_the_same_file_twice_is_the_same_run(store):
    first = import_arm_json(store, TRACE, source="t.json", sha256="ab" * 32)
    again = import_arm_json(store, TRACE, source="copy.json", sha256="ab" * 32)
    assert again.run_id == first.run_id and again.already_imported and _sql.count(store, "runs") == 1


def test_another_file_whose_run_id_is_taken_is_refused(store):
    import_arm_json(store, TRACE, source="t.json", sha256="ab" * 32)
    other = {**TRACE, "question": "Another question?"}
    with pytest.raises(InputError, match="already taken by another run"):
        import_arm_json(store, other, source="other.json", sha256="ab" * 6 + "cd" * 26)  # same 12-hex prefix
    assert _sql.get(store, "runs", "arm-abababababab")["config_json"]["question"] == "Q?"
    assert _sql.count(store, "traces") == 1


def test_an_arm_import_never_takes_over_a_run_of_the_same_id(store):
    _sql.insert(store, "runs", {"id": "arm-abababababab", "protocol": "arm", "label": "mine", "status": "completed",
                                "source": "run", "config_json": {}, "started_at": "2026-01-01T00:00:00.000Z"})
    with pytest.raises(InputError, match="already taken"):
        import_arm_json(store, TRACE, source="t.json", sha256="ab" * 32)
    assert _sql.get(store, "runs", "arm-abababababab")["label"] == "mine"


def test_the_cli_reports_a_taken_run_id_in_one_line(tmp_path):
    import hashlib

    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(TRACE))
    run_id = "arm-" + hashlib.sha256(trace.read_bytes()).hexdigest()[:12]
    project = tmp_path / "p.rwb"
    store = Store.create(project)
    try:
        _sql.insert(store, "runs", {"id": run_id, "protocol": "arm", "label": "mine", "status": "completed",
                                    "source": "run", "config_json": {}, "started_at": "2026-01-01T00:00:00.000Z"})
    finally:
        store.close_connection()
    out = rwb("arm", "import", trace, "--project", project)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1 and f"its run id {run_id} is already taken" in out.stderr
