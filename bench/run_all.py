"""`make bench`: every issue-17 benchmark, each in its own process, then one table.

    .venv/bin/python bench/run_all.py [--quick] [--only GROUP[,GROUP]] [--json]

Each script runs as ``python bench/<script> --json [--quick]`` and prints its figures as one
``BENCH_JSON`` line (bench/_figures.py); its own progress goes to stderr, shown as it comes. The
table: figure | measured | target | PASS/FAIL ("—" where the issue gives no target), grouped as
issue 17 groups them. A script that fails without figures is one FAIL row. Exit status 1 when any
figure with a target fails (or a script could not report), else 0.

``--quick`` gives every script its tiny sizes: a smoke run of the whole chain, not figures to
record. ``--json`` prints the collected figures as JSON on stdout (the table goes to stderr).
Groups: orchestration (orchestration.py, batch.py), startup, scale (with storage.py: bytes per call),
drills (drill_faults.py, drill_writers.py, drill_kill_resume.py), studies (study.py: issue 29's study in one process against separate runs, a
50,000-run study's report).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

from _figures import MARK, Figure, load, print_table

# group -> (its title in the table, the scripts, in order). A figure keeps the group its script gives it.
GROUPS = {
    "orchestration": ("Orchestration", ["orchestration.py", "batch.py"]),
    "startup": ("Start-up and responsiveness", ["startup.py", "responsiveness.py", "gui_refresh.py", "plots.py"]),
    "scale": ("Scale", ["scale.py", "cons_tally.py", "storage.py"]),
    "drills": ("Fault drills", ["drill_faults.py", "drill_writers.py", "drill_kill_resume.py"]),
    "studies": ("Studies", ["study.py"]),
}
ORDER = [title for title, _ in GROUPS.values()]
TIMEOUT_S = 1800


def run_script(script: str, group_title: str, quick: bool) -> list[Figure]:
    path = BENCH / script
    if not path.exists():
        return [Figure(group_title, f"{script}", "not written yet", "", None, "missing: see docs/performance.md")]
    cmd = [sys.executable, str(path), "--json"] + (["--quick"] if quick else [])
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    print(f"--- {script} ---", file=sys.stderr, flush=True)
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=None, text=True,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return [Figure(group_title, f"{script}: finished", "timed out", "", ("==", 0), f"after {TIMEOUT_S} s")]
    lines = [line for line in proc.stdout.splitlines() if line.startswith(MARK)]
    print(f"--- {script}: exit {proc.returncode} in {time.perf_counter() - started:.0f} s ---", file=sys.stderr, flush=True)
    if not lines:
        return [Figure(group_title, f"{script}: finished", f"exit {proc.returncode}", "", ("==", 0),
                       "no figures; see its stderr above")]
    return load(lines[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run, not the record")
    parser.add_argument("--only", metavar="GROUP", help="comma-separated: " + ", ".join(GROUPS))
    parser.add_argument("--json", action="store_true", help="the figures as JSON on stdout")
    args = parser.parse_args()
    chosen = args.only.split(",") if args.only else list(GROUPS)
    unknown = [g for g in chosen if g not in GROUPS]
    if unknown:
        parser.error(f"unknown group(s) {', '.join(unknown)}; choose from {', '.join(GROUPS)}")
    figures: list[Figure] = []
    started = time.perf_counter()
    for group in chosen:
        title, scripts = GROUPS[group]
        for script in scripts:
            figures += run_script(script, title, args.quick)
    figures.sort(key=lambda f: ORDER.index(f.group) if f.group in ORDER else len(ORDER))  # stable: script order kept
    out = sys.stderr if args.json else sys.stdout
    label = "QUICK smoke run: tiny sizes, figures NOT the record" if args.quick else "full run"
    print(f"\nmake bench ({label}); {time.perf_counter() - started:.0f} s", file=out)
    print_table(figures, out)
    failed = [f for f in figures if f.passed is False]
    print(f"\n{sum(f.passed is True for f in figures)} PASS, {len(failed)} FAIL, "
          f"{sum(f.passed is None for f in figures)} without a target", file=out)
    if args.json:
        print(json.dumps({"quick": args.quick, "figures": [f.as_dict() for f in figures]}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
