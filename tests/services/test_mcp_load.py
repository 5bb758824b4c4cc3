"""Load: 20 MCP clients submit 500 votes each to one project file while a GUI stand-in writes too.

Real concurrency on one file from three processes: two agent-host processes each run a Consensus
Server with ten ``mcp.Client`` sessions (the full MCP tool path: schemas, validation, the store
threads, group commits), and a third process stands in for the GUI: it casts reviewer votes and
creates findings through its own connection, and polls ``data_version`` and re-reads the findings
as the GUI's model does. Afterwards every one of the 10,000 votes is stored exactly once, no
client saw an error (so none saw "database is locked"), and the file passes integrity_check.

Run with ``-s`` to see the figures. This file is also the helper program the test starts:
``python test_mcp_load.py host|gui ...``.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.core.project import _sql, watch

CLIENTS, VOTES_EACH, HOSTS, FINDINGS = 20, 500, 2, 10
TIMEOUT_S = 240
VOTE_TYPES = ("confirm", "challenge", "uncertain", "confirm")


def vote_args(client: int, i: int) -> dict:
    return {"finding_id": f"f{i % FINDINGS}", "agent": f"agent-{client:02d}-{i % 5}",
            "vote_type": VOTE_TYPES[i % len(VOTE_TYPES)], "confidence": round(0.05 + (i % 19) * 0.05, 2),
            "reason": f"{client:02d}:{i:03d}"}


# ----- the helper processes ------------------------------------------------------------------
def run_host(project: str, first: int, count: int, votes_each: int) -> dict:
    """One agent host: a Consensus Server and ``count`` concurrent MCP clients voting on it."""
    import anyio
    import mcp_types as types
    from mcp import Client

    from workbench.core.project.store import Store
    from workbench.services.mcp.server import ConsensusServer

    latencies: list[float] = []
    errors: list[str] = []

    async def client(server, n: int) -> None:
        info = types.Implementation(name=f"load-{n:02d}", version="1")
        async with Client(server, client_info=info) as session:
            for i in range(votes_each):
                started = time.perf_counter()
                result = await session.call_tool("submit_vote", vote_args(n, i))
                latencies.append(time.perf_counter() - started)
                if result.is_error:
                    errors.append(result.content[0].text)

    async def main(server) -> None:
        async with anyio.create_task_group() as tg:
            for n in range(first, first + count):
                tg.start_soon(client, server, n)

    store = Store.open(project)
    with ConsensusServer(store) as server:
        began = time.time()
        anyio.run(main, server)
        ended = time.time()
        stats = {"votes": len(latencies), "errors": errors, "began": began, "ended": ended,
                 "max_latency": max(latencies), "mean_latency": sum(latencies) / len(latencies),
                 "retries": server.findings.retries, "batches": server.threads.batches,
                 "largest_batch": server.threads.largest_batch}
    store.close_connection()
    return stats


def run_gui(project: str, stop_file: str, ready_file: str) -> dict:
    """Writes and reads the way the GUI does, until ``stop_file`` appears."""
    from workbench.core.project.findings import FindingsStore
    from workbench.core.project.store import Store

    store = Store.open(project)
    findings = FindingsStore(store)
    votes = created = reads = 0
    errors: list[str] = []
    max_write = 0.0
    seen = watch.data_version(store)
    last_read = 0.0
    Path(ready_file).write_text("ready")
    k = 0
    while not Path(stop_file).exists():
        started = time.perf_counter()
        try:
            if k % 5 == 4:
                findings.create_finding(f"reviewer note {k}", {"from": "gui"}, finding_id=f"gui-{k}",
                                        created_by="gui")
                created += 1
            else:
                findings.submit_vote(f"f{k % FINDINGS}", f"reviewer-{k % 3}", "challenge" if k % 2 else "confirm",
                                     0.7, f"gui:{k}", client="gui")
                votes += 1
        except Exception as exc:  # noqa: BLE001 - every failure is reported to the test
            errors.append(f"{type(exc).__name__}: {exc}")
        max_write = max(max_write, time.perf_counter() - started)
        k += 1
        now = time.monotonic()
        if now - last_read >= 0.4:  # the model's poll, then a panel's refresh
            last_read = now
            try:
                version = watch.data_version(store)
                if version != seen:
                    seen = version
                    findings.list_findings()
                    reads += 1
            except Exception as exc:  # noqa: BLE001 — any failure of a reader thread is collected and asserted on
                errors.append(f"{type(exc).__name__}: {exc}")
        time.sleep(0.02)
    store.close_connection()
    return {"votes": votes, "findings": created, "reads": reads, "errors": errors,
            "max_write": max_write, "retries": findings.retries}


# ----- the test ------------------------------------------------------------------------------
@pytest.mark.timeout(TIMEOUT_S + 60)
def test_twenty_clients_and_the_gui_write_one_file_and_nothing_is_lost(tmp_path):
    from workbench.core.project.findings import FindingsStore
    from workbench.core.project.store import Store
    from workbench.core.protocols.findings.book import Vote, consensus

    project = tmp_path / "load.rwb"
    store = Store.create(project)
    for n in range(FINDINGS):
        FindingsStore(store).create_finding(f"claim {n}", finding_id=f"f{n}")
    store.close_connection()

    stop, ready = tmp_path / "stop", tmp_path / "gui-ready"
    here = str(Path(__file__).resolve())
    logs = [(tmp_path / f"proc{i}.err").open("w") for i in range(HOSTS + 1)]
    gui = subprocess.Popen([sys.executable, here, "gui", str(project), str(stop), str(ready)],
                           stdout=subprocess.PIPE, stderr=logs[0], text=True)
    hosts: list[subprocess.Popen] = []
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert gui.poll() is None and time.monotonic() < deadline, "the GUI stand-in did not start"
            time.sleep(0.05)
        per_host = CLIENTS // HOSTS
        started = time.monotonic()
        hosts = [subprocess.Popen([sys.executable, here, "host", str(project), str(h * per_host), str(per_host),
                                   str(VOTES_EACH)], stdout=subprocess.PIPE, stderr=logs[h + 1], text=True)
                 for h in range(HOSTS)]
        results = []
        for host in hosts:
            out, _ = host.communicate(timeout=TIMEOUT_S)
            assert host.returncode == 0, (tmp_path / "proc1.err").read_text()[-2000:]
            results.append(json.loads(out.strip().splitlines()[-1]))
        wall = time.monotonic() - started
        stop.write_text("stop")
        out, _ = gui.communicate(timeout=30)
        assert gui.returncode == 0, (tmp_path / "proc0.err").read_text()[-2000:]
        gui_stats = json.loads(out.strip().splitlines()[-1])
    finally:
        stop.write_text("stop")
        for proc in [gui, *hosts]:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
        for log in logs:
            log.close()

    # Nobody saw an error, so nobody saw "database is locked".
    errors = [e for r in results for e in r["errors"]] + gui_stats["errors"]
    assert errors == [], errors[:5]
    assert sum(r["votes"] for r in results) == CLIENTS * VOTES_EACH

    conn = sqlite3.connect(project)
    try:
        rows = conn.execute("SELECT client, reason FROM finding_votes WHERE client LIKE 'load-%'").fetchall()
        expected = {(f"load-{c:02d}", vote_args(c, i)["reason"]) for c in range(CLIENTS) for i in range(VOTES_EACH)}
        assert len(rows) == CLIENTS * VOTES_EACH == len(set(rows))  # none lost, none duplicated
        assert set(rows) == expected
        per_client = dict(conn.execute("SELECT client, count(*) FROM finding_votes WHERE client LIKE 'load-%' "
                                       "GROUP BY client").fetchall())
        assert set(per_client.values()) == {VOTES_EACH} and len(per_client) == CLIENTS
        gui_votes = conn.execute("SELECT count(*) FROM finding_votes WHERE client = 'gui'").fetchone()[0]
        gui_findings = conn.execute("SELECT count(*) FROM findings WHERE created_by = 'gui'").fetchone()[0]
        assert (gui_votes, gui_findings) == (gui_stats["votes"], gui_stats["findings"])
        assert gui_votes > 0
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # no WAL on SQLite 3.40
    finally:
        conn.close()

    # The stored results agree with the engine replaying each finding's whole history.
    store = Store.open(project)
    try:
        for summary in FindingsStore(store).list_findings():
            history = _sql.rows(store, "finding_votes", "finding_id = ? AND status = 'valid'", (summary.id,), order_by="id")
            replayed = consensus([Vote(agent=r["agent"], vote_type=r["vote_type"], confidence=r["confidence"])
                                  for r in history], summary.threshold)
            assert (summary.consensus_score, summary.status, summary.k) == (
                replayed.consensus_score, replayed.status, replayed.k)
    finally:
        store.close_connection()

    voting = max(r["ended"] for r in results) - min(r["began"] for r in results)
    figures = {
        "votes": CLIENTS * VOTES_EACH, "voting_seconds": round(voting, 1), "wall_seconds": round(wall, 1),
        "votes_per_second": round(CLIENTS * VOTES_EACH / voting),
        "max_latency_ms": round(1000 * max(r["max_latency"] for r in results)),
        "mean_latency_ms": round(1000 * sum(r["mean_latency"] for r in results) / len(results), 1),
        "group_commits": sum(r["batches"] for r in results),
        "largest_group": max(r["largest_batch"] for r in results),
        "lock_retries": sum(r["retries"] for r in results) + gui_stats["retries"],
        "gui_votes": gui_stats["votes"], "gui_findings": gui_stats["findings"], "gui_reads": gui_stats["reads"],
        "gui_max_write_ms": round(1000 * gui_stats["max_write"]),
    }
    print("\nMCP load:", json.dumps(figures))
    (tmp_path / "figures.json").write_text(json.dumps(figures))


if __name__ == "__main__":
    role, args = sys.argv[1], sys.argv[2:]
    if role == "host":
        print(json.dumps(run_host(args[0], int(args[1]), int(args[2]), int(args[3]))))
    elif role == "gui":
        print(json.dumps(run_gui(*args)))
    else:
        raise SystemExit(f"unknown role {role!r}")
