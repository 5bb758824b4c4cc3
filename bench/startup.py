"""How long the workbench takes to show its window, from process start (offscreen).

Runs ``python -m workbench gui --exit-when-shown`` several times, empty and on the demo
project, and prints the time until the window is shown and until the project is open.
The target (issue: foundation) is a window in under 1.5 s.
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


if __name__ == "__main__":
    launch()  # warm the OS file cache once, as a second launch by a user would be
    report("empty window", [launch() for _ in range(RUNS)])
    report("demo project", [launch("--demo") for _ in range(RUNS)])
