"""How long the workbench takes to show its window, from process start (offscreen).

Runs ``python -m workbench gui --exit-when-shown`` several times, empty and on the demo
project, and prints the time until the window is shown and until the project is open.
The target (issue: foundation) is a window in under 1.5 s; issue 17's, with the demo project,
under 1.0 s. ``--json`` prints the figures for bench/run_all.py; ``--quick`` launches once each.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

RUNS = int(os.environ.get("RUNS", "5"))
REPO = Path(__file__).resolve().parents[1]


def launch(*extra: str) -> dict[str, float]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "workbench", "gui", "--exit-when-shown", *extra],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    marks = {}
    for line in proc.stdout:
        marks[line.split(":")[0].strip()] = time.perf_counter() - start
    proc.wait(timeout=60)
    marks["exit"] = time.perf_counter() - start
    return marks


def report(label: str, samples: list[dict[str, float]]) -> None:
    for mark in ("shown", "opened"):
        values = [s[mark] for s in samples if mark in s]
        if values:
            print(f"{label:<22} {mark:<7} median {statistics.median(values):.3f} s   "
                  f"max {max(values):.3f} s   (n={len(values)})")


def median_of(samples: list[dict[str, float]], mark: str) -> float | None:
    values = [s[mark] for s in samples if mark in s]
    return round(statistics.median(values), 3) if values else None


if __name__ == "__main__":
    quick, as_json = "--quick" in sys.argv, "--json" in sys.argv
    runs = 1 if quick else RUNS
    launch()  # warm the OS file cache once, as a second launch by a user would be
    empty = [launch() for _ in range(runs)]
    demo = [launch("--demo") for _ in range(runs)]
    if not as_json:
        report("empty window", empty)
        report("demo project", demo)
        sys.exit(0)
    sys.path.insert(0, str(REPO / "bench"))
    from _figures import Figure, emit

    group, note = "Start-up and responsiveness", ("QUICK; " if quick else "") + f"offscreen, median of {runs}"
    sys.exit(emit([Figure(group, "process start to empty window shown", median_of(empty, "shown"), "s", None, note),
                   Figure(group, "process start to window shown, demo project", median_of(demo, "shown"), "s",
                          ("<", 1.0), note),
                   Figure(group, "process start to demo project open", median_of(demo, "opened"), "s", None, note)],
                  True))
