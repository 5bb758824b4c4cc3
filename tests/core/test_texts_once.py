"""Each text once (issue 30, schema step 12): the calls' texts read back byte for byte through the
``llm_calls`` view after the migration of every sample project, exports and search unchanged, a new
run writes each shared text once, and the migration is crash-safe (an injected fault, a kill)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.core.store_samples import STEP_14_UNDONE, STEP_15_UNDONE
from tests.support.project_files import user_version as version
from workbench.cli import main as cli_main
from workbench.core.project import _sql, call_texts, search
from workbench.core.project import store as store_module
from workbench.core.project.files import ProjectError
from workbench.core.project.store import Store
from workbench.core.project.trace_columns import trace_from_columns, trace_source

REPO = Path(__file__).resolve().parents[2]
SAMPLE_FILES = sorted(p for p in (REPO / "sample_runs").glob("*.rwb") if p.stat().st_size)
STEP_11 = 11
FORMATS = ("jsonl", "csv", "md", "html")


def _undo_step(path: Path, step: int, undone: str) -> None:
    """Undo schema step ``step`` of a file at that version or later (``undone``: its SQL)."""
    if version(path) < step:
        return
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(f"BEGIN; {undone} PRAGMA user_version = {step - 1}; COMMIT;")
    conn.close()


def as_step_14(path: Path) -> None:
    """A file of schema 15 made a file of step 14 again: every call's request and raw response
    inline and whole (step 14's conversion is tested from step 11, where they are whole too), its
    template's hash in its own column."""
    _undo_step(path, 15, STEP_15_UNDONE)


def as_step_13(path: Path) -> None:
    """A file of schema 14 made a file of step 13 again: every vote's and artifact's copy of its
    call's reply stored whole."""
    as_step_14(path)
    _undo_step(path, 14, STEP_14_UNDONE)


def as_step_12(path: Path) -> None:
    """A file of schema 13 made a file of step 12 again: every trace's source stored whole."""
    as_step_13(path)
    if version(path) < 13:
        return
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    cursor = conn.execute("SELECT * FROM traces WHERE source_rebuilt = 1")
    names = [d[0] for d in cursor.description]
    for values in cursor.fetchall():
        row = _sql.decode(dict(zip(names, values, strict=True)))
        conn.execute("UPDATE traces SET source_json = ? WHERE id = ?",
                     (json.dumps(trace_from_columns(row), ensure_ascii=False), row["id"]))
    conn.execute("ALTER TABLE traces DROP COLUMN source_rebuilt")
    conn.execute("PRAGMA user_version = 12")
    conn.execute("COMMIT")
    conn.close()


def as_step_11(path: Path) -> None:
    """A file of schema 12 or later (a sample rebuilt after this step) made a file of step 11
    again, its texts whole, so the migration is tested on it as on a file written before the step."""
    as_step_12(path)
    if version(path) < 12:
        return
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(
        "BEGIN; CREATE TEMP TABLE whole (id INTEGER PRIMARY KEY, request_json TEXT, response_raw TEXT); "
        "INSERT INTO whole SELECT id, request_json, response_raw FROM llm_calls; "
        "DROP VIEW llm_calls; ALTER TABLE llm_call_rows RENAME TO llm_calls; "
        "ALTER TABLE llm_calls RENAME COLUMN request_parts TO request_json; "
        "ALTER TABLE llm_calls RENAME COLUMN response_raw_parts TO response_raw; "
        "UPDATE llm_calls SET request_json = (SELECT w.request_json FROM whole w WHERE w.id = llm_calls.id), "
        "response_raw = (SELECT w.response_raw FROM whole w WHERE w.id = llm_calls.id); "
        "DROP TABLE texts; PRAGMA user_version = 11; COMMIT;")
    conn.close()


def traces(path: Path) -> list[str]:
    """Every trace as it reads back (its source, stored or rebuilt), as JSON text, in id order."""
    conn = sqlite3.connect(path)
    try:
        cursor = conn.execute("SELECT * FROM traces ORDER BY id")
        names = [d[0] for d in cursor.description]
        rows = [_sql.decode(dict(zip(names, values, strict=True))) for values in cursor.fetchall()]
    finally:
        conn.close()
    return [json.dumps(trace_source(row), ensure_ascii=False) for row in rows]


def calls(path: Path, table: str = "llm_calls") -> list[tuple]:
    """Every column of every call (or of ``table``: ``votes``, ``artifacts``), in id order, read
    with plain sqlite3 (a table before step 12, or 14, the view after)."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()
    finally:
        conn.close()


def open_at(path: Path, monkeypatch, schema: int | None) -> Store:
    """Open ``path``, migrating it only up to ``schema`` (None: the current version)."""
    with monkeypatch.context() as m:
        if schema is not None:
            m.setattr(store_module, "SCHEMA_VERSION", schema)
        return Store.open(path)


def exports(path: Path, tmp: Path) -> dict[tuple[str, str], bytes]:
    """Every run of the project exported in every format, through ``rwb export``."""
    conn = sqlite3.connect(path)
    runs = [r for (r,) in conn.execute("SELECT id FROM runs ORDER BY id")]
    conn.close()
    out = {}
    for run_id in runs:
        for fmt in FORMATS:
            dest = tmp / f"{len(out)}.{fmt}"
            assert cli_main(["export", run_id, "--project", str(path), "--format", fmt, "--out", str(dest)]) == 0
            out[(run_id, fmt)] = dest.read_bytes()
            dest.unlink()
    return out


def search_words(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        replies = [r for (r,) in conn.execute("SELECT reply_text FROM llm_calls WHERE reply_text IS NOT NULL "
                                              "ORDER BY id LIMIT 40")]
    finally:
        conn.close()
    found = sorted({w for text in replies for w in search.words(text) if len(w) >= 6})
    return found[::max(1, len(found) // 6)][:6] + ["zzzznothing"]


def searched(store: Store, words: list[str]) -> dict[tuple[str, str, str], list[int]]:
    """The calls and votes each word finds, by the index (rebuilt) and by LIKE, through
    search.condition."""
    search.rebuild_index(store)
    out = {}
    for word in words:
        for plan in (search.plan(store, word), search.SearchPlan(word, search.LIKE)):
            for kind, table in (("call", "llm_calls"), ("vote", "votes")):
                where, params = search.condition(plan, kind, "c")
                rows = store._connection().execute(f"SELECT c.id FROM {table} c WHERE {where} ORDER BY c.id", params)
                out[(word, plan.mode, kind)] = [r[0] for r in rows]
    return out


# ----- the sample projects: migrated, every byte read back, exports and search unchanged --------------
@pytest.mark.parametrize("sample", SAMPLE_FILES, ids=[p.stem for p in SAMPLE_FILES])
def test_a_migrated_sample_reads_back_byte_for_byte_and_exports_and_searches_the_same(sample, tmp_path, monkeypatch):
    path = tmp_path / sample.name
    shutil.copyfile(sample, path)
    as_step_11(path)
    with monkeypatch.context() as m:  # this workbench as it was before step 12
        m.setattr(store_module, "SCHEMA_VERSION", STEP_11)
        store = Store.open(path)
        assert version(path) == STEP_11
        words = search_words(path)
        found_before = searched(store, words)
        store.close_connection()
        before_rows = calls(path)
        before_votes, before_artifacts = calls(path, "votes"), calls(path, "artifacts")
        before_traces = traces(path)
        before_exports = exports(path, tmp_path)
    assert version(path) == STEP_11

    store = Store.open(path)  # schema steps 12 to 15: texts once, trace sources, replies, fences once
    try:
        assert version(path) == store_module.SCHEMA_VERSION == 15 and store.report.migrated_from == STEP_11
        assert calls(path) == before_rows  # every column of every call, request and raw reply whole
        assert calls(path, "votes") == before_votes and calls(path, "artifacts") == before_artifacts
        assert traces(path) == before_traces  # every trace as read or written, stored or rebuilt
        kept, rebuilt = store._connection().execute(
            "SELECT count(source_json), coalesce(sum(source_rebuilt), 0) FROM traces").fetchone()
        from_call = store._connection().execute(
            "SELECT (SELECT coalesce(sum(raw_from_call), 0) FROM vote_rows), "
            "(SELECT coalesce(sum(content_from_call), 0) FROM artifact_rows)").fetchone()
        assert searched(store, words) == found_before
        info = store.info()["storage"]
    finally:
        store.close_connection()
    assert exports(path, tmp_path) == before_exports
    if before_traces:  # the migration dropped the copies the columns rebuild exactly
        assert rebuilt > 0 and kept + rebuilt == sum(t != "null" for t in before_traces), (kept, rebuilt)
    if any(v[8] is not None for v in before_votes):  # a vote's raw reply is its call's, kept there once
        assert from_call[0] > 0, from_call
    if any(a[6] is not None for a in before_artifacts):  # an artifact's text too
        assert from_call[1] > 0, from_call
    if before_rows:
        assert info["texts"] > 0 and info["request_response_bytes_stored"] < info["request_response_bytes_whole"]
        assert info["bytes_saved"] == info["request_response_bytes_whole"] - info["request_response_bytes_stored"]


def test_the_view_joins_the_parts_in_array_order_whatever_the_texts_ids(tmp_path):
    store = Store.create(tmp_path / "p.rwb")
    conn = store._connection()
    bodies = [f"piece {n} " * 10 for n in range(3)]
    ids = [conn.execute("INSERT INTO texts (sha256, body) VALUES (?, ?)", (f"h{n}", b)).lastrowid
           for n, b in enumerate(reversed(bodies))]  # the first piece has the highest id
    parts = [ids[2], "FENCE-" + "A" * 32, ids[1], "tail", ids[0]]
    conn.execute("PRAGMA foreign_keys = OFF")  # a call without its run: only the texts matter here
    conn.execute("INSERT INTO llm_call_rows (run_id, step_key, purpose, request_parts, status, started_at) "
                 "VALUES ('r', 'k', 'vote', ?, 'ok', 't')", (json.dumps(parts),))
    (whole,) = conn.execute("SELECT request_json FROM llm_calls").fetchone()
    assert whole == bodies[0] + "FENCE-" + "A" * 32 + bodies[1] + "tail" + bodies[2]
    # the order holds because json_each (array order) is the outer loop of the LEFT JOIN
    plan = [r[3] for r in conn.execute("EXPLAIN QUERY PLAN SELECT request_json FROM llm_calls")]
    scan = next(i for i, d in enumerate(plan) if d.startswith("SCAN p"))
    lookup = next(i for i, d in enumerate(plan) if d.startswith("SEARCH t"))
    assert scan < lookup, plan
    store.close_connection()


@pytest.mark.parametrize("text", ["", "short", "x" * 39, "é" * 200 + "FENCE-" + "0A" * 16 + "ü" * 50,
                                  'a "quoted" \\ line\n' * 9 + "ARTIFACT-" + "F" * 16 + "\u2028" * 41,
                                  "raw body with a NUL \x00 inside", "\x00" * 50])
def test_any_text_is_stored_and_read_back_exactly(text, tmp_path):
    store = Store.create(tmp_path / "p.rwb")
    conn = store._connection()
    conn.execute("CREATE TEMP TABLE t (parts TEXT)")
    conn.execute("INSERT INTO t VALUES (?)", (call_texts.to_parts(conn, text, min_text=40),))
    (back,) = conn.execute("SELECT group_concat(CASE WHEN p.type = 'integer' THEN x.body ELSE p.value END, '') "
                           "FROM t, json_each(t.parts) AS p LEFT JOIN texts AS x ON p.type = 'integer' "
                           "AND x.id = p.value").fetchone()
    assert back == text
    assert "".join(piece for _, piece in call_texts.pieces(text)) == text
    store.close_connection()


def test_plain_sql_writes_to_the_view_still_work(tmp_path):
    """Tests and scripts that write llm_calls with SQL: INSTEAD OF triggers store them whole."""
    store = Store.create(tmp_path / "p.rwb")
    conn = store._connection()
    conn.execute("PRAGMA foreign_keys = OFF")  # a call without its run: only the texts matter here
    conn.execute("INSERT INTO llm_calls (id, run_id, step_key, purpose, request_json, response_raw, status, "
                 "started_at) VALUES (7, 'r', 'k', 'vote', '{\"a\": 1}', NULL, 'ok', 't')")
    conn.execute("UPDATE llm_calls SET status = 'invalid', response_raw = 'body' WHERE id = 7")
    assert conn.execute("SELECT request_json, response_raw, status FROM llm_calls").fetchall() == \
        [('{"a": 1}', "body", "invalid")]
    conn.execute("UPDATE llm_calls SET template_sha256 = ? WHERE id = 7", ("ab" * 32,))  # by id since step 15
    assert conn.execute("SELECT template_sha256 FROM llm_calls").fetchone()[0] == "ab" * 32
    assert conn.execute("SELECT h.sha256 FROM llm_call_rows c JOIN template_hashes h ON h.id = c.template_hash"
                        ).fetchone()[0] == "ab" * 32
    conn.execute("DELETE FROM llm_calls WHERE id = 7")
    assert conn.execute("SELECT count(*) FROM llm_call_rows").fetchone()[0] == 0
    store.close_connection()


# ----- a new run: each shared text once ------------------------------------------------------------
def rcp_run(store: Store, seed: int) -> str:
    from workbench.core.runs.config import parse_run_config
    from workbench.services.runs.runner import Runner

    cfg = {"protocol": "rcp", "query": "Should the city close its downtown to private cars?", "seed": seed,
           "dispatch": "sequential", "providers": {"sim": {"model": "sim"}},
           "clusters": [{"name": n, "agents": [{"id": f"{n[0]}{i}", "provider": "sim"} for i in range(1, 4)]}
                        for n in ("advocate", "critic")]}
    runner = Runner(store)
    run_id = runner.create(parse_run_config(cfg))
    assert runner.execute(run_id)["status"] == "completed"
    return run_id


def test_a_new_run_stores_each_answer_under_vote_once(tmp_path):
    store = Store.create(tmp_path / "p.rwb")
    try:
        run_id = rcp_run(store, 1)
        conn = store._connection()
        answers = [a for (a,) in conn.execute("SELECT content FROM artifacts WHERE run_id = ?", (run_id,))]
        assert len(answers) == 6
        for answer in answers:
            escaped = json.dumps(answer, ensure_ascii=False)[1:-1]  # as it stands in request_json
            asked = conn.execute("SELECT count(*) FROM llm_calls WHERE purpose = 'vote' AND instr(request_json, ?)",
                                 (escaped,)).fetchone()[0]
            stored = conn.execute("SELECT count(*) FROM texts WHERE instr(body, ?)", (escaped,)).fetchone()[0]
            assert asked == 5 and stored == 1, (asked, stored)
        first = conn.execute("SELECT count(*) FROM texts").fetchone()[0]
        rcp_run(store, 2)  # the same question again: personas and instructions are stored already
        second = conn.execute("SELECT count(*) FROM texts").fetchone()[0] - first
        assert 0 < second < first
        # the rows hold parts, never the whole request
        whole = conn.execute("SELECT count(*) FROM llm_call_rows c JOIN llm_calls v ON v.id = c.id "
                             "WHERE c.request_parts = json_array(v.request_json)").fetchone()[0]
        assert whole == 0
        # step 15: a vote's fence token once (its request names it three times), the part 0 in its
        # place; each template's hash once, by id
        for parts, fence, request in conn.execute(
                "SELECT c.request_parts, c.fence, v.request_json FROM llm_call_rows c JOIN llm_calls v "
                "ON v.id = c.id WHERE c.purpose = 'vote' AND c.run_id = ?", (run_id,)):
            assert request.count(fence) == 3 and fence not in parts
            assert json.loads(parts).count(0) == 3
        hashes = conn.execute("SELECT count(*) FROM template_hashes").fetchone()[0]
        used = conn.execute("SELECT count(DISTINCT template_sha256) FROM llm_calls").fetchone()[0]
        assert hashes == used == 2  # generate and vote
        shown = {sha for (sha,) in conn.execute("SELECT DISTINCT template_sha256 FROM llm_calls")}
        provenance = json.loads(conn.execute("SELECT provenance_json FROM runs WHERE id = ?", (run_id,)).fetchone()[0])
        assert shown == {provenance["prompts"][k]["sha256"] for k in ("generate", "vote")}
    finally:
        store.close_connection()


# ----- the migration is one transaction --------------------------------------------------------------
@pytest.fixture
def step_11_file(tmp_path, monkeypatch) -> Path:
    """A sample project as this workbench wrote it before step 12."""
    path = tmp_path / "old.rwb"
    shutil.copyfile(REPO / "sample_runs" / "rcp-tiers.rwb", path)
    as_step_11(path)
    open_at(path, monkeypatch, STEP_11).close_connection()
    assert version(path) == STEP_11
    return path


def assert_untouched_step_11(path: Path, rows: list[tuple]) -> None:
    conn = sqlite3.connect(path)  # rolls a hot journal back, as any reader would
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == STEP_11
        kinds = dict(conn.execute("SELECT name, type FROM sqlite_master WHERE name IN ('llm_calls', 'texts', "
                                  "'llm_call_rows')"))
        assert kinds == {"llm_calls": "table"}
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    assert calls(path) == rows


def test_a_fault_mid_conversion_leaves_the_file_at_step_11(step_11_file, monkeypatch):
    rows = calls(step_11_file)
    real, done = call_texts.to_parts, []

    def failing(conn, text, min_text=call_texts.MIN_TEXT):
        done.append(1)
        if len(done) > len(rows) // 2:
            raise sqlite3.OperationalError("disk I/O error (injected)")
        return real(conn, text, min_text)

    monkeypatch.setattr(call_texts, "to_parts", failing)
    with pytest.raises(ProjectError, match="could not be upgraded from schema v11"):
        Store.open(step_11_file)
    assert_untouched_step_11(step_11_file, rows)
    monkeypatch.setattr(call_texts, "to_parts", real)
    Store.open(step_11_file).close_connection()
    assert calls(step_11_file) == rows


def test_a_fault_mid_step_15_leaves_the_file_at_step_14(tmp_path, monkeypatch):
    """Step 15's Python part (each call's fence once) fails half way: the step's transaction rolls
    back with its SQL (the template hashes moved, the view re-created), the file stays at 14."""
    path = tmp_path / "old.rwb"
    shutil.copyfile(REPO / "sample_runs" / "rcp-tiers.rwb", path)
    as_step_14(path)
    open_at(path, monkeypatch, 14).close_connection()
    rows = calls(path)
    real, done = call_texts.with_fence, []

    def failing(parts, fence):
        done.append(1)
        if len(done) > len(rows) // 2:
            raise sqlite3.OperationalError("disk I/O error (injected)")
        return real(parts, fence)

    monkeypatch.setattr(call_texts, "with_fence", failing)
    with pytest.raises(ProjectError, match="could not be upgraded from schema v14"):
        Store.open(path)
    assert version(path) == 14 and calls(path) == rows
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'template_hashes'").fetchone()[0] == 0
    conn.close()
    monkeypatch.setattr(call_texts, "with_fence", real)
    Store.open(path).close_connection()
    assert version(path) == 15 and calls(path) == rows and len(done) > len(rows) // 2


def test_a_kill_mid_conversion_leaves_the_file_at_step_11(step_11_file, tmp_path):
    rows = calls(step_11_file)
    marker = tmp_path / "halfway"
    child = f"""
import sys, time
sys.path.insert(0, {str(REPO)!r})
from workbench.core.project import call_texts
from workbench.core.project.store import Store
real, done = call_texts.to_parts, []
def slow(conn, text, min_text=call_texts.MIN_TEXT):
    done.append(1)
    if len(done) == {len(rows) // 2}:
        open({str(marker)!r}, "w").close()
        time.sleep(600)
    return real(conn, text, min_text)
call_texts.to_parts = slow
Store.open({str(step_11_file)!r})
"""
    proc = subprocess.Popen([sys.executable, "-c", child], env={**os.environ}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the migration never reached half way"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert_untouched_step_11(step_11_file, rows)
    Store.open(step_11_file).close_connection()
    assert calls(step_11_file) == rows


def test_rwb_info_reports_the_space_saved(step_11_file, capsys):
    assert cli_main(["info", str(step_11_file)]) == 0  # migrates it, then reports
    storage = json.loads(capsys.readouterr().out)["storage"]
    assert storage["file_bytes"] == step_11_file.stat().st_size
    assert storage["calls"] == len(calls(step_11_file)) and storage["texts"] > 0
    assert 0 < storage["request_response_bytes_stored"] < storage["request_response_bytes_whole"]
    assert storage["saved_fraction"] > 0.3
    conn = sqlite3.connect(step_11_file)  # step 14: votes' and artifacts' copies of their call's reply
    copies = conn.execute("SELECT (SELECT sum(raw_from_call + reason_from_call) FROM vote_rows) + "
                          "(SELECT sum(content_from_call) FROM artifact_rows)").fetchone()[0]
    conn.close()
    assert storage["copies_read_from_calls"] == copies > 0 and storage["copies_bytes_saved"] > 0
