"""The kill drill (issue 12): SIGKILL every kind of writer at random moments, then check that
nothing committed was lost and the project is sound.

Writers: ``rwb run`` (a simulated RCP run), ``rwb arm import`` (the ARM corpus), a process
storing Consensus Server votes through ``FindingsStore`` (single votes and group commits), and
``rwb serve-mcp`` over stdio. Each is killed once a random amount of its work is on disk, plus a
random few milliseconds, so kills land anywhere, including inside a transaction or its commit.

After every kill:
- the project opens with ``Store.open`` (which lets SQLite roll back a hot journal, and reports it);
- ``PRAGMA integrity_check`` says ok, and no journal is left;
- a run resumes to the same artifacts and votes as an uninterrupted run; an import completes to
  the same runs and traces as an uninterrupted import; every vote a writer had acknowledged is
  stored, and each finding's stored consensus matches the one computed from its votes.
"""

from __future__ import annotations

import copy
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.project_files import integrity
from workbench.core.project.findings import FindingsStore
from workbench.core.project.store import Store

REPO = Path(__file__).resolve().parents[2]
RUN_KILLS, IMPORT_KILLS, VOTE_KILLS, MCP_KILLS = 11, 6, 5, 4
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


# ----- shared checks ---------------------------------------------------------------------------
class Tally:
    def __init__(self):
        self.kills = self.hot = self.recovered = 0
        self.rows: list[tuple] = []

    def after_kill(self, writer: str, project: Path, detail=lambda: "") -> None:
        """The project opens (recovering a hot journal if the kill left one) and is intact.

        A journal the kill left before its transaction reached the disk has a zeroed header:
        SQLite ignores it (it is not "hot"), and the next write transaction reuses it. A hot one
        (the file was already being changed) makes even a read-only open fail until rolled back.
        """
        hot = not readable(project)
        store = Store.open(project)
        recovered = store.report.recovered is not None
        store.close_connection()
        assert recovered == hot, f"{writer}: a hot journal was {'not ' if hot else ''}reported as recovered"
        assert readable(project), f"{writer}: still unreadable after opening"
        assert integrity(project) == "ok", f"{writer}: the killed file is damaged"
        self.kills += 1
        self.hot += hot
        self.recovered += recovered
        self.rows.append((writer, detail(), "hot journal rolled back" if recovered else ""))


def readable(project: Path) -> bool:
    """Whether a read-only connection can read the file (it cannot while a hot journal waits)."""
    conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    try:
        conn.execute("PRAGMA schema_version").fetchone()
        return True
    except sqlite3.OperationalError as exc:
        assert "readonly" in str(exc), exc
        return False
    finally:
        conn.close()


@pytest.fixture(scope="module")
def tally():
    t = Tally()
    yield t
    print(f"\nkill drill: {t.kills} kills, {t.hot} left a hot journal, {t.recovered} recovered on opening")
    for row in t.rows:
        print("  ", *row)


def count(project: Path, sql: str, params: tuple = ()) -> int | None:
    """A read that never waits long and never fails the poll (the writer may hold the lock)."""
    try:
        conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True, timeout=0.5)
        try:
            return conn.execute(sql, params).fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def wait_until(proc: subprocess.Popen, ready, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None and not ready():
        time.sleep(0.002)


def kill(proc: subprocess.Popen, rng: random.Random) -> None:
    time.sleep(rng.uniform(0.0, 0.004))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def rwb(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env=ENV)


# ----- rwb run, then rwb resume ------------------------------------------------------------------
def sim_config(path: Path) -> Path:
    """sample_runs/rcp-sim.json with each agent doubled: 12 agents, 144 calls."""
    config = json.loads((REPO / "sample_runs" / "rcp-sim.json").read_text())
    for cluster in config["clusters"]:
        cluster["agents"] += [{**copy.deepcopy(a), "id": a["id"] + "x"} for a in cluster["agents"]]
    path.write_text(json.dumps(config))
    return path


def outcome(project: Path, run_id: str) -> dict:
    conn = sqlite3.connect(project)
    try:
        artifacts = sorted(conn.execute("SELECT key, author_agent, content FROM artifacts WHERE run_id = ?", (run_id,)))
        votes = sorted(conn.execute(
            "SELECT a.key, v.voter_agent, v.value, v.status FROM votes v JOIN artifacts a ON a.id = v.artifact_id "
            "WHERE v.run_id = ?", (run_id,)))
        calls = [k for (k,) in conn.execute("SELECT step_key FROM llm_calls WHERE run_id = ? AND status = 'ok'",
                                            (run_id,))]
        status = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
    finally:
        conn.close()
    assert len(calls) == len(set(calls)), "a call was recorded twice"
    return {"status": status, "artifacts": artifacts, "votes": votes, "calls": sorted(calls)}


@pytest.mark.timeout(300)
def test_kill_rwb_run_at_random_moments_then_resume(tmp_path, tally):
    rng = random.Random(1201)
    config = sim_config(tmp_path / "run.json")
    reference = tmp_path / "reference.rwb"
    done = rwb("run", config, "--project", reference, "--quiet")
    assert done.returncode == 0, done.stderr
    expected = outcome(reference, done.stdout.splitlines()[0])
    total = len(expected["calls"])
    assert expected["status"] == "completed" and total == 144

    for trial in range(RUN_KILLS):
        project = tmp_path / f"run-{trial}.rwb"
        proc = subprocess.Popen([sys.executable, "-m", "workbench", "run", str(config), "--project", str(project),
                                 "--quiet"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                env=ENV)
        run_id = proc.stdout.readline().strip()
        target = rng.randint(1, total - 4)
        wait_until(proc, lambda: (count(project, "SELECT count(*) FROM llm_calls WHERE run_id = ?", (run_id,)) or 0)
                   >= target)
        kill(proc, rng)
        proc.stdout.close()
        assert run_id, "the run did not start"
        recorded = "SELECT count(*) FROM llm_calls WHERE run_id = ?"
        tally.after_kill("rwb run", project, lambda: f"{count(project, recorded, (run_id,))} of {total} calls recorded")

        resumed = rwb("resume", run_id, "--project", project, "--quiet")
        assert resumed.returncode == 0, resumed.stderr
        assert outcome(project, run_id) == expected, f"trial {trial}: the resumed run differs"
        assert integrity(project) == "ok"


# ----- rwb arm import -------------------------------------------------------------------------
def imported(project: Path) -> list[tuple]:
    conn = sqlite3.connect(project)
    try:
        return sorted(conn.execute(
            "SELECT r.id, json_extract(r.provenance_json, '$.sha256'), count(t.id) FROM runs r "
            "LEFT JOIN traces t ON t.run_id = r.id WHERE r.source = 'import' GROUP BY r.id"))
    finally:
        conn.close()


@pytest.mark.timeout(300)
def test_kill_rwb_arm_import_at_random_moments(tmp_path, tally, corpus_dir):
    rng = random.Random(1202)
    files = sorted((corpus_dir / "traces").glob("*.json")) + sorted((corpus_dir / "traces-v1.1").glob("*.json"))
    reference = tmp_path / "reference.rwb"
    assert rwb("new", reference).returncode == 0
    done = rwb("arm", "import", *files, "--project", reference)
    expected = imported(reference)
    assert done.returncode in (0, 2) and len(expected) >= 10, done.stderr

    for trial in range(IMPORT_KILLS):
        project = tmp_path / f"import-{trial}.rwb"
        assert rwb("new", project).returncode == 0
        proc = subprocess.Popen([sys.executable, "-m", "workbench", "arm", "import", *map(str, files),
                                 "--project", str(project)], cwd=REPO, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=ENV)
        target = rng.randint(0, len(expected) - 2)
        wait_until(proc, lambda: (count(project, "SELECT count(*) FROM runs") or 0) >= target)
        kill(proc, rng)
        tally.after_kill("rwb arm import", project, lambda: f"{len(imported(project))} of {len(expected)} imported")
        at_kill = imported(project)
        # Each import is one transaction: a run is there with all its traces, or not at all.
        assert set(at_kill) <= set(expected), f"trial {trial}: a partly imported run"
        again = rwb("arm", "import", *files, "--project", project)
        assert again.returncode == done.returncode, again.stderr
        assert imported(project) == expected
        assert integrity(project) == "ok"


# ----- Consensus Server votes: FindingsStore in a subprocess, and rwb serve-mcp over stdio --------
FINDINGS = [f"f{i}" for i in range(5)]
AGENTS = [f"agent{i}" for i in range(8)]

VOTE_WRITER = """
import random, sys
from workbench.core.project.findings import FindingsStore, VoteRequest
from workbench.core.project.store import Store

store = Store.open(sys.argv[1])
book, rng = FindingsStore(store), random.Random(int(sys.argv[2]))
findings, agents = sys.argv[3].split(","), sys.argv[4].split(",")

def request():
    return VoteRequest(rng.choice(findings), rng.choice(agents), rng.choice(["confirm", "challenge", "uncertain"]),
                       round(rng.random(), 3), "drill", client="drill")

while True:
    if rng.random() < 0.3:  # a group commit
        receipts = book.submit_votes([request() for _ in range(rng.randint(2, 6))])
        ids = [r.vote.id for r in receipts]
    else:
        r = request()
        ids = [book.submit_vote(r.finding_id, r.agent, r.vote_type, r.confidence, r.reason, client="drill").vote.id]
    print(*ids, flush=True)  # acknowledged only once committed
"""


def make_findings_project(path: Path) -> Path:
    store = Store.create(path)
    try:
        book = FindingsStore(store)
        for fid in FINDINGS:
            book.create_finding(f"claim {fid}", finding_id=fid)
    finally:
        store.close_connection()
    return path


def check_votes(project: Path, acknowledged: set[int]) -> None:
    """Every acknowledged vote is stored, and each finding's stored consensus is the computed one."""
    conn = sqlite3.connect(project)
    try:
        stored = {i for (i,) in conn.execute("SELECT id FROM finding_votes")}
        columns = {r[0]: r[1:] for r in conn.execute(
            "SELECT id, score, k, status, votes_valid, votes_invalid FROM findings")}
    finally:
        conn.close()
    assert acknowledged <= stored, f"acknowledged votes lost: {sorted(acknowledged - stored)[:5]}"
    store = Store.open(project)
    try:
        for s in FindingsStore(store).list_findings():
            score, k, status, valid, invalid = columns[s.id]
            assert (k, status, valid, invalid) == (s.k, s.status.value, s.votes_total, s.invalid_votes), s.id
            assert (score is None) == (s.consensus_score is None)
            assert score is None or abs(score - s.consensus_score) < 1e-9
    finally:
        store.close_connection()


@pytest.mark.timeout(300)
def test_kill_a_findings_vote_writer_at_random_moments(tmp_path, tally):
    rng = random.Random(1203)
    for trial in range(VOTE_KILLS):
        project = make_findings_project(tmp_path / f"votes-{trial}.rwb")
        proc = subprocess.Popen([sys.executable, "-c", VOTE_WRITER, str(project), str(trial), ",".join(FINDINGS),
                                 ",".join(AGENTS)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=ENV)
        acknowledged: set[int] = set()
        target = rng.randint(5, 120)
        while len(acknowledged) < target:
            line = proc.stdout.readline()
            assert line, f"the writer stopped: {proc.stderr.read()}"
            acknowledged.update(int(i) for i in line.split())
        kill(proc, rng)
        for line in proc.stdout:  # acknowledged before the kill, read after it
            acknowledged.update(int(i) for i in line.split())
        proc.stdout.close()
        proc.stderr.close()
        tally.after_kill("FindingsStore votes", project, lambda: f"{len(acknowledged)} votes acknowledged")
        check_votes(project, acknowledged)


def rpc(message_id: int | None, method: str, params: dict | None = None) -> bytes:
    message = {"jsonrpc": "2.0", "method": method, **({"id": message_id} if message_id is not None else {}),
               **({"params": params} if params is not None else {})}
    return (json.dumps(message) + "\n").encode()


@pytest.mark.timeout(300)
def test_kill_rwb_serve_mcp_while_it_stores_votes(tmp_path, tally):
    rng = random.Random(1204)
    for trial in range(MCP_KILLS):
        project = make_findings_project(tmp_path / f"mcp-{trial}.rwb")
        proc = subprocess.Popen([sys.executable, "-m", "workbench", "serve-mcp", "--project", str(project),
                                 "--log-level", "warning"], cwd=REPO, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV)
        batch = [rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "drill", "version": "1"}}),
                 rpc(None, "notifications/initialized")]
        batch += [rpc(n, "tools/call", {"name": "submit_vote", "arguments": {
            "finding_id": rng.choice(FINDINGS), "agent": rng.choice(AGENTS),
            "vote_type": rng.choice(["confirm", "challenge", "uncertain"]), "confidence": round(rng.random(), 3)}})
            for n in range(2, 400)]
        proc.stdin.write(b"".join(batch))
        proc.stdin.flush()
        acknowledged: set[int] = set()
        target = rng.randint(5, 150)
        while len(acknowledged) < target:
            line = proc.stdout.readline()
            assert line, "the server stopped"
            reply = json.loads(line)
            result = reply.get("result", {})
            if reply.get("id", 0) >= 2 and not result.get("isError"):
                acknowledged.add(result["structuredContent"]["vote"]["id"])
        kill(proc, rng)
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except BrokenPipeError:
                pass
        tally.after_kill("rwb serve-mcp", project, lambda: f"{len(acknowledged)} votes acknowledged")
        check_votes(project, acknowledged)


def test_the_drill_killed_enough_writers(tally):
    """Runs last in this module: at least 20 kills in all, even when the corpus import is skipped."""
    assert RUN_KILLS + VOTE_KILLS + MCP_KILLS >= 20
    assert tally.kills >= 20
