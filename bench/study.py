"""Studies (issue 29): a 6-arm × 30-replicate RCP study on the simulated panel, end to end in one
process, against the same runs as separate ``rwb run`` processes; and the report of a
50,000-run study computed from the project file.

    .venv/bin/python bench/study.py [--quick] [--json] [--keep DIR]

- ``study, one process``: ``rwb study run`` of issue 29's researcher's arms on rcp-sim.json (as
  configured; theta 0.67 and theta 2/3, rule-only: they re-classify the baseline's calls; stricter
  critics; 5 + 5 agents; sycophantic advocates), 30 replicates: 6,240 calls made and 2,160
  re-classified, about 8,400 in all. Wall time of the command, process start to its summary.
- ``same runs, separate processes``: each arm's replicate run as its own ``rwb run CONFIG
  --project P`` (the theta arms included: run separately, nothing is re-classified). A sample of
  them is timed (two replicates per arm, into one project as a script would) and extrapolated:
  each arm's mean process time × 30 replicates, summed over the arms. Target: the study at least
  5× faster.
- ``report of 50,000 runs``: a synthetic study (5 arms × 100 items × 100 replicates of RCP, each
  result's seven metric values drawn from each arm's own tier probabilities, made as the runner's
  ``study_results`` rows are) and ``rwb study report ID --format json`` on it, process start to
  the JSON; median of 3. Target < 5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
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

from _figures import Figure, emit

GROUP = "Studies"
SAMPLES = REPO / "sample_runs"
SYCOPHANTIC = [{"op": "add", "path": f"/clusters/0/agents/{i}/params/sycophancy", "value": 0.8} for i in (0, 1)]


def study_document(replicates: int) -> dict:
    arms = json.loads((SAMPLES / "study-rcp-theta.json").read_text())["arms"]
    return {"study": "bench: RCP theta, strictness, cluster size, sycophancy", "base": str(SAMPLES / "rcp-sim.json"),
            "replicates": replicates, "baseline": "as configured",
            "arms": [*arms, {"name": "sycophantic advocates", "patch": SYCOPHANTIC}]}


def rwb(*args: str, timeout: float = 3600) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "workbench", *args], cwd=REPO, capture_output=True, text=True,
                         timeout=timeout, env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    return out, time.perf_counter() - started


def bench_study(folder: Path, replicates: int, per_arm: int) -> list[Figure]:
    from workbench.core.studies.spec import parse_study, with_study_files_read

    path = folder / "study.json"
    path.write_text(json.dumps(study_document(replicates)))
    project = folder / "study.rwb"
    out, wall = rwb("study", "run", str(path), "--project", str(project), "--quiet")
    if out.returncode != 0:
        raise SystemExit(f"rwb study run failed ({out.returncode}): {out.stderr[-2000:]}")
    summary = json.loads(out.stdout.splitlines()[-1])
    print(f"study: {wall:.1f} s, {summary['calls']:,} calls made, {summary['calls_reused']:,} re-classified",
          file=sys.stderr)

    study = parse_study(with_study_files_read(study_document(replicates), folder))
    separate = folder / "separate.rwb"
    per_arm_s: dict[str, list[float]] = {}
    for arm in study.arms:
        for r in range(per_arm):
            config = folder / f"run-{arm.index}-{r}.json"
            config.write_text(json.dumps(study.document_of(arm, study.items[0], r)))
            done, took = rwb("run", str(config), "--project", str(separate), "--quiet")
            if done.returncode != 0:
                raise SystemExit(f"rwb run failed: {done.stderr[-2000:]}")
            per_arm_s.setdefault(arm.name, []).append(took)
    extrapolated = sum(statistics.mean(times) * replicates for times in per_arm_s.values())
    sampled = sum(len(t) for t in per_arm_s.values())
    print(f"separate: {sampled} processes timed, extrapolated {extrapolated:.1f} s", file=sys.stderr)
    speedup = extrapolated / wall
    arms, runs = len(study.arms), study.runs
    return [
        Figure(GROUP, "study: 6 arms x replicates, one process", round(wall, 2), "s", None,
               f"{arms} arms x {replicates} replicates = {runs} results; {summary['calls']:,} calls made, "
               f"{summary['calls_reused']:,} re-classified by the rule-only arms"),
        Figure(GROUP, "study: the same runs as separate rwb run processes", round(extrapolated, 1), "s", None,
               f"{sampled} processes timed ({per_arm} per arm), each arm's mean x {replicates}"),
        Figure(GROUP, "study: one process against separate processes", round(speedup, 1), "x", (">=", 5.0),
               "the separate processes' extrapolated time over the study's"),
    ]


# ----- the report of 50,000 runs ----------------------------------------------------------------------

ARMS = {"as configured": (0.36, 0.22, 0.28, 0.14), "theta 0.67": (0.02, 0.40, 0.40, 0.18),
        "theta 2/3": (0.27, 0.25, 0.30, 0.18), "stricter critics": (0.26, 0.24, 0.32, 0.18),
        "5 + 5 agents": (0.25, 0.26, 0.30, 0.19)}
TIER_SHARES = ("positive_consensus_share", "positive_polar_share", "negative_polar_share", "negative_consensus_share")


def synthetic_study(path: Path, items: int, replicates: int) -> str:
    """A study of len(ARMS) x items x replicates RCP results, as the runner stores them."""
    from workbench.core.project.store import Store

    Store.create(path).close_connection()  # the schema, as the workbench makes it
    study_id = "study-bench-50000"
    plan = {"baseline": "as configured", "replicates": replicates, "seed": 0,
            "items": [f"item-{i}" for i in range(items)], "warnings": [],
            "arms": [{"name": a, "protocol": "rcp", "changes": [], "dropped": [], "tags": {},
                      "rule_only_of": None} for a in ARMS]}
    rng = random.Random(29)
    now = "2026-11-28T00:00:00.000Z"
    runs, results = [], []
    for arm, probabilities in ARMS.items():
        for i in range(items):
            for r in range(replicates):
                run_id = f"rcp-bench-{len(runs)}"
                tiers = rng.choices(range(4), weights=probabilities, k=6)
                metrics = {name: tiers.count(t) / 6 for t, name in enumerate(TIER_SHARES)}
                metrics.update(unclassified_share=0.0, mean_score=rng.randint(12, 24) / 30,
                               accelerators=float(rng.randint(0, 3)))
                runs.append((run_id, "rcp", f"{arm} · item-{i} · rep {r}", "{}", r, r, "completed", 1, now,
                             study_id, arm, f"item-{i}"))
                results.append((study_id, arm, f"item-{i}", r, run_id, "completed", json.dumps(metrics), now))
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.execute("INSERT INTO studies (id, name, config_json, plan_json, created_at) VALUES (?, ?, ?, ?, ?)",
                         (study_id, "bench: 50,000 runs", "{}", json.dumps(plan), now))
            conn.executemany("INSERT INTO runs (id, protocol, label, config_json, replicate, seed, status, simulated, "
                             "started_at, study_id, arm, item) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", runs)
            conn.executemany("INSERT INTO study_results (study_id, arm, item, replicate, run_id, status, metrics_json, "
                             "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", results)
    finally:
        conn.close()
    return study_id


def bench_report(folder: Path, items: int, replicates: int) -> list[Figure]:
    path = folder / "report.rwb"
    started = time.perf_counter()
    study_id = synthetic_study(path, items, replicates)
    made = time.perf_counter() - started
    runs = len(ARMS) * items * replicates
    times = []
    for _ in range(3):
        out, took = rwb("study", "report", study_id, "--project", str(path), "--format", "json")
        if out.returncode != 0:
            raise SystemExit(f"rwb study report failed: {out.stderr[-2000:]}")
        times.append(took)
    report = json.loads(out.stdout)
    print(f"report of {runs:,} runs: {statistics.median(times):.2f} s (made in {made:.1f} s), "
          f"{len(report['comparisons'])} comparisons", file=sys.stderr)
    return [Figure(GROUP, f"report of a {runs:,}-run study", round(statistics.median(times), 2), "s", ("<", 5.0),
                   f"rwb study report --format json, process start to its JSON, median of 3; {len(ARMS)} arms x "
                   f"{items} items x {replicates} replicates, {len(report['comparisons'])} comparisons")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run, not the record")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", metavar="DIR", help="keep the projects in DIR")
    args = parser.parse_args()
    replicates, per_arm, items, report_replicates = (3, 1, 10, 10) if args.quick else (30, 2, 100, 100)
    with tempfile.TemporaryDirectory(prefix="rwb-bench-study-") as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        figures = bench_study(folder, replicates, per_arm) + bench_report(folder, items, report_replicates)
    return emit(figures, args.json)


if __name__ == "__main__":
    sys.exit(main())
