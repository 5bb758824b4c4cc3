"""Storage (issue 30, part 1): bytes per call with each text stored once.

    .venv/bin/python bench/storage.py [--quick] [--json] [--keep PATH]

A study of 21 simulated RCP runs with 6 agents (3 advocates, 3 critics; each run 6 answers and
30 votes: 36 calls), made by the real runner into a new project; ``--quick`` makes 3 runs.

- ``bytes per call``: the project file's growth from the empty project (VACUUMed, so free pages
  are not counted), over the calls. Every table counts (votes, artifacts, rounds, indexes), as
  issue 30's 2.9 KB did. Target <= 700.
- ``the same, texts whole``: the same file with every request and raw response stored whole
  again (each call's parts replaced by its one inline text), VACUUMed: what the calls would cost
  without ``texts``, for comparison (no target). Only step 12 is undone: the copies steps 14 and
  15 keep once (a vote's reply, a fence token, a template's hash) stay kept once.
- ``request and reply text saved``: call_texts.space, the share of the requests' and raw
  responses' bytes that storing each text once saves.
The scale project's MB per 10,000 traces is bench/scale.py's figure (run_all puts it in "Scale").
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from _figures import Figure, emit

GROUP = "Scale"  # run_all shows it with the scale project's MB per 10,000 traces
QUERY = "Should the city close its downtown to private cars?"


def study(store, runs: int) -> None:
    from workbench.core.runs.config import parse_run_config
    from workbench.services.runs.runner import Runner

    runner = Runner(store)
    for seed in range(1, runs + 1):
        cfg = {"protocol": "rcp", "query": QUERY, "seed": seed, "dispatch": "sequential",
               "providers": {"sim": {"model": "sim"}},
               "clusters": [{"name": n, "agents": [{"id": f"{n[0]}{i}", "provider": "sim"} for i in range(1, 4)]}
                            for n in ("advocate", "critic")]}
        summary = runner.execute(runner.create(parse_run_config(cfg)))
        assert summary["status"] == "completed", summary


def vacuumed_size(path: Path) -> int:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("VACUUM")
    conn.close()
    return path.stat().st_size


def stored_whole(path: Path) -> None:
    """Every call's texts back to one inline part each (what step 12 would store without texts)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(
        "BEGIN; CREATE TEMP TABLE whole (id INTEGER PRIMARY KEY, request_json TEXT, response_raw TEXT); "
        "INSERT INTO whole SELECT id, request_json, response_raw FROM llm_calls; "
        "UPDATE llm_call_rows SET request_parts = (SELECT json_array(w.request_json) FROM whole w "
        "WHERE w.id = llm_call_rows.id), response_raw_parts = (SELECT CASE WHEN w.response_raw IS NULL THEN NULL "
        "ELSE json_array(w.response_raw) END FROM whole w WHERE w.id = llm_call_rows.id); "
        "DELETE FROM texts; COMMIT;")
    conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs instead of 21")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", metavar="PATH", help="write the study's project to PATH and keep it")
    args = parser.parse_args()
    runs = 3 if args.quick else 21
    tmp = Path(tempfile.mkdtemp(prefix="rwb-storage-"))
    path = Path(args.keep) if args.keep else tmp / "study.rwb"
    if path.exists():
        path.unlink()
    q = "QUICK; " if args.quick else ""
    figures: list[Figure] = []
    try:
        from workbench.core.project.call_texts import space
        from workbench.core.project.store import Store

        store = Store.create(path, "storage benchmark")
        store.close_connection()
        empty = vacuumed_size(path)
        store = Store.open(path)
        study(store, runs)
        store.close_connection()
        size = vacuumed_size(path)
        conn = sqlite3.connect(path)
        calls = conn.execute("SELECT count(*) FROM llm_calls").fetchone()[0]
        saved = space(conn)
        conn.close()
        desc = f"{runs} simulated RCP runs, 6 agents, {calls} calls, {saved['texts']} texts"
        per_call = (size - empty) / calls
        print(f"  {desc}: {size - empty:,} bytes over the empty project, {per_call:.0f} bytes a call", file=sys.stderr)
        figures.append(Figure(GROUP, "study: bytes per call (each text once)", round(per_call), "bytes", ("<=", 700),
                              q + desc + "; whole file growth, VACUUMed"))
        twin = tmp / "whole.rwb"
        shutil.copyfile(path, twin)
        stored_whole(twin)
        whole = (vacuumed_size(twin) - empty) / calls
        figures.append(Figure(GROUP, "study: bytes per call, texts stored whole (for comparison)", round(whole),
                              "bytes", None, q + "the same file, each call's texts inline again"))
        figures.append(Figure(GROUP, "study: request and raw response bytes saved",
                              round(100 * saved["saved_fraction"], 1), "%", None,
                              q + f"{saved['request_response_bytes_whole']:,} bytes whole, "
                              f"{saved['request_response_bytes_stored']:,} stored (parts + texts with their hashes)"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return emit(figures, args.json)


if __name__ == "__main__":
    sys.exit(main())
