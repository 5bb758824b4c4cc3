"""Scale (issue 17): a project of 1,000 runs, 100,000 votes and 20,000 ARM traces, and what it costs.

    .venv/bin/python bench/scale.py [--quick] [--json] [--keep PATH]

The project is generated in a temporary folder (and removed after; ``--keep`` writes it to PATH
instead) in well under a minute, from realistic rows made by the workbench's own writers:

- one simulated RCP run (12 agents in 2 clusters: 12 artifacts, 132 votes, 144 calls, each call's
  request, reply and record) made by the real runner, then copied run by run with
  ``INSERT ... SELECT`` (ids shifted, run ids new) to 758 RCP runs: 100,056 votes, 109,152 calls;
- the corpus's first ARM trace file imported by the real importer (``import_arm_file``), its run
  copied to the other 242 runs, each holding its 7 traces 12 times over (agent ids suffixed):
  20,328 traces. (Without the corpus, ARM rows are skipped and said so.)

Figures:
- ``open``: process start to the project open in the window (``rwb gui FILE --exit-when-shown``,
  offscreen; its "opened" mark comes after the window's first paint), median of 3. Target < 1 s.
- ``trace inspector filter``: the slowest of 8 filters (kind, run, protocol, agent, round,
  validity, simulated, a sort), each the panel's read: its first window of 200 rows and the count,
  as ``read_page`` over the panel's ``_RecordSource``; median of 5. Target < 100 ms.
- ``file size``: the project file, in MB, and per 10,000 traces (the whole file / traces × 10,000:
  votes and calls included, so an upper bound on what traces alone cost). Issue 30's target: at
  most 60 MB per 10,000 traces. The calls are cloned as stored (``llm_call_rows``: their parts
  point at the template run's ``texts``), as each text is stored once.
- ``export``: records/s of the export path (``core.project.export.run_records``, what
  ``rwb export --format jsonl`` writes) over 50 runs, and one ``rwb export`` process end to end.
The quadrant's 10,000 points and the CONS tally of 100,000 ballots are bench/plots.py's and
bench/cons_tally.py's figures (run_all puts them in this group).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from _figures import Figure, emit

GROUP = "Scale"
CORPUS = REPO.parent / "shared" / "corpus" / "arm-protocol"
SHIFTED = ("round_id", "artifact_id", "call_id")


def template_run(store) -> str:
    from workbench.core.runs.config import parse_run_config
    from workbench.services.runs.runner import Runner

    cfg = {"protocol": "rcp", "query": "Should the city close its downtown to private cars?", "seed": 5,
           "dispatch": "sequential", "providers": {"sim": {"model": "sim"}},
           "clusters": [{"name": n, "agents": [{"id": f"{n[0]}{i}", "provider": "sim"} for i in range(1, 7)]}
                        for n in ("advocate", "critic")]}
    runner = Runner(store)
    run_id = runner.create(parse_run_config(cfg))
    summary = runner.execute(run_id)
    assert summary["status"] == "completed", summary
    return run_id


def columns(conn, table: str) -> list[tuple[str, str]]:
    return [(r[1], r[2].upper()) for r in conn.execute(f"PRAGMA table_info([{table}])")]


def clone_run(conn, run_id: str, new_id: str, offset: int, tables: list[str]) -> None:
    """Copy every row of ``run_id`` to ``new_id``: integer ids and the ids they point at shifted
    by ``offset`` (the template's ids are all below it)."""
    for table in tables:
        cols = columns(conn, table)
        exprs, params = [], []
        for name, kind in cols:
            if (table == "runs" and name == "id") or name == "run_id":
                exprs.append("?")
                params.append(new_id)
            elif (name == "id" and kind == "INTEGER") or name in SHIFTED:
                exprs.append(f"[{name}] + {offset}")
            elif table == "runs" and name == "label":
                exprs.append("[label] || ?")
                params.append(f" #{offset}")
            else:
                exprs.append(f"[{name}]")
        key = "id" if table == "runs" else "run_id"
        names = ", ".join(f"[{n}]" for n, _ in cols)
        conn.execute(f"INSERT INTO [{table}] ({names}) SELECT {', '.join(exprs)} FROM [{table}] WHERE [{key}] = ?",
                     (*params, run_id))


def build(path: Path, rcp_runs: int, arm_runs: int, copies: int) -> dict:
    from workbench.core.project.store import Store

    started = time.perf_counter()
    store = Store.create(path, "scale benchmark")
    rcp = template_run(store)
    arm = None
    files = sorted(CORPUS.glob("traces*/*.json"))
    if files and arm_runs:
        from workbench.core.project.arm_import import import_arm_file

        before = {r[0] for r in store._connection().execute("SELECT id FROM runs")}
        import_arm_file(store, files[0])
        arm = next(r[0] for r in store._connection().execute("SELECT id FROM runs") if r[0] not in before)
    store.close_connection()

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")  # bench only: the rows are real, the build's fsyncs are not
    conn.execute("BEGIN")
    tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
              if any(c == "run_id" for c, _ in columns(conn, t))]
    used = [t for t in tables if conn.execute(f"SELECT 1 FROM [{t}] WHERE run_id = ? LIMIT 1", (rcp,)).fetchone()]
    step = 1 + max(conn.execute(f"SELECT coalesce(max(id), 0) FROM [{t}]").fetchone()[0]
                   for t in used if ("id", "INTEGER") in columns(conn, t))
    for k in range(1, rcp_runs):
        clone_run(conn, rcp, f"{rcp}-s{k:04d}", k * step, ["runs", *used])
    if arm is not None:
        arm_tables = [t for t in tables if t != "traces"
                      and conn.execute(f"SELECT 1 FROM [{t}] WHERE run_id = ? LIMIT 1", (arm,)).fetchone()]
        base = rcp_runs * step
        arm_step = 1 + max(conn.execute(f"SELECT coalesce(max(id), 0) FROM [{t}]").fetchone()[0]
                           for t in ("rounds", "traces"))
        cols = [c for c, _ in columns(conn, "traces") if c != "id"]
        rows = conn.execute(f"SELECT {', '.join(cols)} FROM traces WHERE run_id = ?", (arm,)).fetchall()
        ri, ai, rr = cols.index("run_id"), cols.index("agent_id"), cols.index("round_id")
        insert = f"INSERT INTO traces ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
        for k in range(arm_runs):
            new_id, offset = f"{arm}-s{k:04d}", base + k * arm_step
            clone_run(conn, arm, new_id, offset, ["runs", *arm_tables])
            batch = []
            for j in range(copies):
                for row in rows:
                    row = list(row)
                    row[ri] = new_id
                    row[ai] = f"{row[ai]}-{j}" if row[ai] else row[ai]
                    row[rr] = row[rr] + offset if row[rr] is not None else None
                    batch.append(row)
            conn.executemany(insert, batch)
        # the imported template run itself is one of the runs; keep the counts exact
        conn.execute("DELETE FROM runs WHERE id = ?", (arm,))
    conn.execute("COMMIT")
    counts = {t: conn.execute(f"SELECT count(*) FROM [{t}]").fetchone()[0] for t in ("runs", "votes", "traces", "llm_calls")}
    conn.close()
    counts["build_s"] = time.perf_counter() - started
    return counts


def median_ms(fn, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def filter_figures(path: Path) -> tuple[float, str]:
    import threading

    from workbench.core.project import records
    from workbench.core.project.records import RecordFilter
    from workbench.core.project.store import Store
    from workbench.services.reads import PageQuery, read_page
    from workbench.ui.panels.trace_inspector_panel import _RecordSource

    store = Store.open(path).reader()
    cancel = threading.Event()
    one_run = records.facets(store).runs[-1][0]
    filters = [("no filter", RecordFilter(), PageQuery()), ("kind = vote", RecordFilter(kind="vote"), PageQuery()),
               ("kind = trace", RecordFilter(kind="trace"), PageQuery()),
               ("run = one run", RecordFilter(run=one_run), PageQuery()),
               ("protocol = arm", RecordFilter(protocol="arm"), PageQuery()),
               ("agent = a1", RecordFilter(agent="a1"), PageQuery()),
               ("validity = invalid", RecordFilter(validity="invalid"), PageQuery()),
               ("agent = a1, sorted by time", RecordFilter(agent="a1"), PageQuery("time", True))]
    results = {}
    for name, f, query in filters:
        def run() -> None:
            read_page(_RecordSource(store, f), query, 0, 200, cancel, count=True)
        run()  # warms SQLite's page cache, as any earlier view of the list has
        results[name] = median_ms(run)
        print(f"  filter {name:32s} {results[name]:8.1f} ms", file=sys.stderr)
    store.close_connection()
    worst = max(results, key=results.get)
    return results[worst], worst


def export_figures(path: Path, sample: int) -> tuple[float, float, int]:
    from workbench.core.project import export
    from workbench.core.project.store import Store

    store = Store.open(path).reader()
    ids = [r[0] for r in store._connection().execute("SELECT id FROM runs ORDER BY id")]
    chosen = ids[:: max(1, len(ids) // sample)][:sample]
    t0 = time.perf_counter()
    n = 0
    for run_id in chosen:
        for _ in export.run_records(store, run_id):
            n += 1
    in_process = n / (time.perf_counter() - t0)
    store.close_connection()
    with tempfile.TemporaryDirectory(prefix="rwb-export-") as tmp:
        out = Path(tmp) / "run.jsonl"
        t0 = time.perf_counter()
        one = next((i for i in chosen if i.startswith("rcp")), chosen[0])
        subprocess.run([sys.executable, "-m", "workbench", "export", one, "--project", str(path),
                        "--format", "jsonl", "--out", str(out)], cwd=REPO, check=True, capture_output=True)
        wall = time.perf_counter() - t0
        lines = sum(1 for _ in out.open())
    return in_process, lines / wall, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the size (100 runs), for a smoke run")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", metavar="PATH", help="write the project to PATH and keep it")
    args = parser.parse_args()
    rcp_runs, arm_runs, copies = (76, 24, 12) if args.quick else (758, 242, 12)
    tmp = Path(tempfile.mkdtemp(prefix="rwb-scale-"))
    path = Path(args.keep) if args.keep else tmp / "scale.rwb"
    if path.exists():
        path.unlink()
    figures: list[Figure] = []
    q = "QUICK; " if args.quick else ""
    try:
        counts = build(path, rcp_runs, arm_runs, copies)
        size_mb = path.stat().st_size / 1e6
        desc = f"{counts['runs']:,} runs, {counts['votes']:,} votes, {counts['traces']:,} traces, {counts['llm_calls']:,} calls"
        print(f"built {desc} in {counts['build_s']:.1f} s ({size_mb:.0f} MB)", file=sys.stderr)
        figures.append(Figure(GROUP, "generating the project", round(counts["build_s"], 1), "s", None, q + desc))

        from startup import launch

        launch(str(path))  # warm the OS file cache, as a second opening would find it
        opens = [launch(str(path)) for _ in range(1 if args.quick else 3)]
        opened = [m["opened"] for m in opens if "opened" in m]
        figures.append(Figure(GROUP, "process start to project open in the window",
                              round(statistics.median(opened), 3) if opened else None, "s", ("<", 1.0),
                              q + f"offscreen, median of {len(opened)}; after the first paint"))

        worst_ms, worst = filter_figures(path)
        figures.append(Figure(GROUP, "trace inspector: slowest filter (first 200 rows + count)", round(worst_ms, 1), "ms",
                              ("<", 100), q + f"{worst}; median of 5"))
        traces = max(counts["traces"], 1)
        figures.append(Figure(GROUP, "project file size", round(size_mb, 1), "MB", None, q + desc))
        figures.append(Figure(GROUP, "project file size per 10,000 traces", round(size_mb / traces * 10_000, 1), "MB",
                              ("<=", 60), "whole file / traces; votes and calls included (issue 30's target)"))
        try:  # the traces table and its index alone, when SQLite has the dbstat table
            conn = sqlite3.connect(path)
            trace_bytes = conn.execute("SELECT sum(pgsize) FROM dbstat WHERE name IN ('traces', 'traces_run')").fetchone()[0]
            conn.close()
            figures.append(Figure(GROUP, "traces table alone per 10,000 traces", round(trace_bytes / 1e6 / traces * 10_000, 1),
                                  "MB", None, "dbstat: the traces table and its index"))
        except sqlite3.Error:
            pass
        in_process, cli, lines = export_figures(path, 10 if args.quick else 50)
        figures.append(Figure(GROUP, "export: records/s (export path, in process)", round(in_process), "records/s", None,
                              q + "jsonl records of sampled runs"))
        figures.append(Figure(GROUP, "rwb export: records/s (one run, whole process)", round(cli), "records/s", None,
                              q + f"{lines} records; process start-up included"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return emit(figures, args.json)


if __name__ == "__main__":
    sys.exit(main())
