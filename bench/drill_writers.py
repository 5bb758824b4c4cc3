"""Fault drill, concurrent writers (issue 17): MCP clients, a GUI stand-in and ``rwb run`` on one file.

    .venv/bin/python bench/drill_writers.py [--quick] [--json]

Writers, all on one project file, all at once (the pattern of tests/services/test_mcp_load.py,
whose vote arguments and GUI stand-in this reuses):

- two agent-host processes, each a Consensus Server (``ConsensusServer``) with its share of the
  ``mcp.Client`` sessions submitting votes through the full MCP tool path (20 clients x 500 votes:
  10,000 votes; ``--quick``: 4 clients x 25). Each vote's latency is timed at the client;
- the GUI stand-in (``test_mcp_load.py gui``): reviewer votes and findings through its own
  connection, polling ``data_version`` and re-reading the findings as the GUI's model does;
- ``rwb run`` processes, one after another until the hosts are done (the hosts start once the
  first run has recorded its first call, so it writes while they vote): an RCP run (8 agents, 56
  vote calls; ``--quick``: 5 agents, 20) against the loopback LLM server (100 ms per reply,
  2 at a time), which writes its votes and calls to the same file.

Figures: MCP votes written vs expected (lost; target 0), duplicated (target 0), RCP votes written
vs its vote calls (lost; target 0), "database is locked" errors surfaced to any writer (MCP
results, the GUI stand-in, ``rwb run``'s stderr and exit code; target 0), other errors (target 0),
the p50/p99/max vote latency over every MCP vote, throughput, and ``PRAGMA integrity_check``.
Exits non-zero when a target is missed.

This file is also its own helper: ``python bench/drill_writers.py host PROJECT FIRST COUNT VOTES``.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from _figures import Figure, emit

GROUP = "Fault drills"
FINDINGS = 10
HOSTS = 2
LOAD_TEST = REPO / "tests" / "services" / "test_mcp_load.py"
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(REPO)}


def run_host(project: str, first: int, count: int, votes_each: int) -> dict:
    """One agent host: a Consensus Server and ``count`` concurrent MCP clients voting on it; every
    vote's latency is returned (the load test's host keeps only the max and mean)."""
    import anyio
    import mcp_types as types
    from mcp import Client

    from tests.services.test_mcp_load import vote_args
    from workbench.core.project.store import Store
    from workbench.services.mcp.server import ConsensusServer

    latencies: list[float] = []
    errors: list[str] = []

    async def client(server, n: int) -> None:
        info = types.Implementation(name=f"load-{n:02d}", version="1")
        async with Client(server, client_info=info) as session:
            for i in range(votes_each):
                started = time.perf_counter()
                try:
                    result = await session.call_tool("submit_vote", vote_args(n, i))
                except Exception as exc:  # noqa: BLE001 - every failure is a figure
                    errors.append(f"{type(exc).__name__}: {exc}")
                    continue
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
        stats = {"latencies": latencies, "errors": errors, "began": began, "ended": time.time(),
                 "retries": server.findings.retries}
    store.close_connection()
    return stats


def cli_loop(config: Path, project: Path, hosts: list, hosts_started, out: list[dict]) -> None:
    """``rwb run`` after ``rwb run`` on the project until every host has exited."""
    while True:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "workbench", "run", str(config), "--project", str(project),
                               "--quiet"], cwd=REPO, capture_output=True, text=True, timeout=600, env=ENV)
        summary = {}
        for line in reversed(proc.stdout.splitlines()):
            try:
                summary = json.loads(line)
                break
            except ValueError:
                continue
        out.append({"code": proc.returncode, "run_id": summary.get("run_id"), "status": summary.get("status"),
                    "stderr": proc.stderr.strip(), "wall": time.perf_counter() - t0})
        print(f"  rwb run {len(out)}: {summary.get('status')} exit {proc.returncode} "
              f"in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        if hosts_started.wait(600) and all(h.poll() is not None for h in hosts):
            return


def wait_for_first_call(project: Path, thread, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and thread.is_alive():
        try:
            conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True, timeout=0.5)
            try:
                if conn.execute("SELECT count(*) FROM llm_calls").fetchone()[0]:
                    return
            finally:
                conn.close()
        except sqlite3.Error:
            pass
        time.sleep(0.02)


def percentile(values: list[float], p: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, max(0, int(round(p / 100 * len(values) + 0.5)) - 1))]


def drill(clients: int, votes_each: int, agents: int) -> list[Figure]:
    from drill_faults import answer_text, config

    from tests.support.fake_llm_server import FakeLLMServer, Reply
    from workbench.core.project.findings import FindingsStore
    from workbench.core.project.store import Store

    procs: list[subprocess.Popen] = []
    logs = []
    with tempfile.TemporaryDirectory(prefix="rwb-drill-writers-") as tmp_name, \
            FakeLLMServer(default=Reply(text=lambda r: answer_text(r.messages), latency_s=0.1)) as srv:
        tmp = Path(tmp_name)
        project = tmp / "writers.rwb"
        store = Store.create(project)
        for n in range(FINDINGS):
            FindingsStore(store).create_finding(f"claim {n}", finding_id=f"f{n}")
        store.close_connection()
        cfg = config(srv.base_url, agents, 3)
        cfg["providers"]["p"].update(timeout_s=60, max_concurrency=2)
        (tmp / "run.json").write_text(json.dumps(cfg))
        stop, ready = tmp / "stop", tmp / "gui-ready"
        cli_runs: list[dict] = []
        hosts_started, cli_thread = threading.Event(), None
        try:
            logs = [(tmp / f"proc{i}.err").open("w") for i in range(HOSTS + 1)]
            gui = subprocess.Popen([sys.executable, str(LOAD_TEST), "gui", str(project), str(stop), str(ready)],
                                   stdout=subprocess.PIPE, stderr=logs[0], text=True, env=ENV, cwd=REPO)
            procs.append(gui)
            deadline = time.monotonic() + 60
            while not ready.exists():
                if gui.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the GUI stand-in did not start: " + (tmp / "proc0.err").read_text()[-800:])
                time.sleep(0.05)
            # rwb run, one after another in a thread, until the hosts are done (at least one, to its end)
            hosts: list[subprocess.Popen] = []
            cli_thread = threading.Thread(target=cli_loop, args=(tmp / "run.json", project, hosts, hosts_started,
                                                                 cli_runs), daemon=True)
            cli_thread.start()
            wait_for_first_call(project, cli_thread)  # so the run is writing while the clients vote
            per_host = [clients // HOSTS + (h < clients % HOSTS) for h in range(HOSTS)]
            firsts = [sum(per_host[:h]) for h in range(HOSTS)]
            started = time.monotonic()
            hosts += [subprocess.Popen([sys.executable, __file__, "host", str(project), str(firsts[h]), str(per_host[h]),
                                        str(votes_each)], stdout=subprocess.PIPE, stderr=logs[h + 1], text=True,
                                       env=ENV, cwd=REPO) for h in range(HOSTS) if per_host[h]]
            procs += hosts
            hosts_started.set()
            results = []
            for h, host in enumerate(hosts):
                out, _ = host.communicate(timeout=900)
                if host.returncode != 0:
                    raise SystemExit(f"host {h} exited {host.returncode}: " + (tmp / f"proc{h + 1}.err").read_text()[-1500:])
                results.append(json.loads(out.strip().splitlines()[-1]))
            wall = time.monotonic() - started
            cli_thread.join(timeout=900)
            stop.write_text("stop")
            out, _ = gui.communicate(timeout=60)
            if gui.returncode != 0:
                raise SystemExit(f"the GUI stand-in exited {gui.returncode}: " + (tmp / "proc0.err").read_text()[-1500:])
            gui_stats = json.loads(out.strip().splitlines()[-1])
        finally:
            stop.write_text("stop")
            hosts_started.set()  # the rwb run loop ends after its current run
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(30)
            for log in logs:
                log.close()
            if cli_thread is not None:
                cli_thread.join(timeout=600)

        conn = sqlite3.connect(project)
        try:
            rows = conn.execute("SELECT client, reason FROM finding_votes WHERE client LIKE 'load-%'").fetchall()
            gui_votes = conn.execute("SELECT count(*) FROM finding_votes WHERE client = 'gui'").fetchone()[0]
            rcp = []
            for run in cli_runs:
                if run["run_id"]:
                    votes = conn.execute("SELECT count(*) FROM votes WHERE run_id = ?", (run["run_id"],)).fetchone()[0]
                    vote_calls = conn.execute("SELECT count(DISTINCT step_key) FROM llm_calls WHERE run_id = ? "
                                              "AND status IN ('ok', 'invalid') AND step_key LIKE '%/vote/%'",
                                              (run["run_id"],)).fetchone()[0]
                    rcp.append((votes, vote_calls))
            finished = [r[0] for r in conn.execute("SELECT finished_at FROM llm_calls WHERE finished_at IS NOT NULL")]
            check = conn.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            conn.close()

    from tests.services.test_mcp_load import vote_args

    expected = clients * votes_each
    wanted = {(f"load-{c:02d}", vote_args(c, i)["reason"]) for c in range(clients) for i in range(votes_each)}
    stored = set(rows)
    latencies = [x for r in results for x in r["latencies"]]
    mcp_errors = [e for r in results for e in r["errors"]]
    cli_errors = [r["stderr"] for r in cli_runs if r["code"] != 0]
    all_errors = mcp_errors + gui_stats["errors"] + cli_errors
    locked = sum("locked" in e.lower() for e in all_errors) + sum("database is locked" in r["stderr"] for r in cli_runs
                                                                  if r["code"] == 0)
    began, ended = min(r["began"] for r in results), max(r["ended"] for r in results)
    voting = ended - began
    during = sum(began <= datetime.fromisoformat(f.replace("Z", "+00:00")).timestamp() <= ended for f in finished)
    rcp_expected = agents * (agents - 1) * len(cli_runs)
    rcp_votes = sum(v for v, _ in rcp)
    ms = lambda s: round(1000 * s, 1) if s is not None else None
    retries = sum(r["retries"] for r in results) + gui_stats["retries"]
    return [
        Figure(GROUP, "concurrent writers: MCP votes lost", len(wanted - stored), "votes", ("==", 0),
               f"{len(stored & wanted)} of {expected} stored ({clients} clients x {votes_each}, {HOSTS} hosts)"),
        Figure(GROUP, "concurrent writers: MCP votes duplicated", len(rows) - len(stored), "votes", ("==", 0)),
        Figure(GROUP, "concurrent writers: rwb run votes lost", rcp_expected - rcp_votes, "votes", ("==", 0),
               f"{len(cli_runs)} run(s) of {agents} agents: {rcp_votes} of {rcp_expected} votes, {during} calls "
               f"recorded while the MCP clients voted; statuses "
               f"{', '.join(sorted({str(r['status']) for r in cli_runs}))}; exit codes "
               f"{', '.join(sorted({str(r['code']) for r in cli_runs}))}"),
        Figure(GROUP, 'concurrent writers: "database is locked" errors surfaced', locked, "errors", ("==", 0),
               f"lock retries absorbed inside the stores: {retries}"),
        Figure(GROUP, "concurrent writers: other errors surfaced", len(all_errors) - locked, "errors", ("==", 0),
               "; ".join(e[:120] for e in all_errors[:3])),
        Figure(GROUP, "concurrent writers: p99 vote latency", ms(percentile(latencies, 99)), "ms", None,
               f"p50 {ms(percentile(latencies, 50))} ms, max {ms(max(latencies) if latencies else None)} ms, "
               f"over {len(latencies)} MCP votes"),
        Figure(GROUP, "concurrent writers: MCP votes/s", round(len(latencies) / voting) if voting > 0 else None, "votes/s",
               None, f"voting {voting:.1f} s, wall {wall:.1f} s; GUI stand-in: {gui_votes} votes, "
                     f"{gui_stats['findings']} findings, {gui_stats['reads']} re-reads"),
        Figure(GROUP, "concurrent writers: integrity_check not ok", 0 if check == "ok" else 1, "", ("==", 0),
               f"PRAGMA integrity_check: {check}"),
    ]


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "host":
        a = sys.argv[2:]
        print(json.dumps(run_host(a[0], int(a[1]), int(a[2]), int(a[3]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 clients x 25 votes: a smoke run, not the record")
    parser.add_argument("--json", action="store_true", help="print the figures as one BENCH_JSON line")
    args = parser.parse_args()
    clients, votes_each, agents = (4, 25, 5) if args.quick else (20, 500, 8)
    figures = drill(clients, votes_each, agents)
    if args.quick:
        for f in figures:
            f.note = ("QUICK; " + f.note) if f.note else "QUICK"
    return emit(figures, args.json)


if __name__ == "__main__":
    sys.exit(main())
