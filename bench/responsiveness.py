"""The GUI thread during a live simulated run (issue 17): the longest event-loop stall.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/responsiveness.py [--quick] [--json] [--rate 200]

Opens the main window offscreen (every panel, as ``rwb gui`` builds it) on a new project and
starts a ``sim`` RCP run through the window's own RunService (the Live Run path): 32 agents in
4 clusters, 32 generation calls then 992 votes, 1,024 calls. The simulated panel answers at once,
so the bench paces it to ``--rate`` calls/s (200): each simulated answer waits for its slot on a
shared schedule (a wrapper around ``AgentRouter._simulate``, bench-local; the product has no
pacing option for ``sim``). Meanwhile a QTimer heartbeat (5 ms) measures how late the GUI thread
serves it; the stall is the lateness past the interval.

The run starts once the window has settled (the project open, its first reads shown, the plot
modules imported in the background), as a person would start it.

Printed: the longest stall (target < 50 ms), the longest after the run's first second (the run
under way, without its start), the 99th percentile, the calls and the rate reached.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _figures import Figure, emit

HEARTBEAT_MS = 5
GROUP = "Start-up and responsiveness"


def config(clusters: int, per_cluster: int) -> dict:
    return {"protocol": "rcp", "query": "Should the city close its downtown to private cars?", "seed": 3,
            "dispatch": "concurrent", "providers": {"sim": {"model": "sim"}},
            "clusters": [{"name": f"c{c}", "agents": [{"id": f"c{c}a{i}", "provider": "sim"} for i in range(per_cluster)]}
                         for c in range(clusters)]}


def pace(rate: float) -> None:
    """Every simulated answer waits for its slot: start + n / rate (n counts answers)."""
    from workbench.services.runs import agents

    original = agents.AgentRouter._simulate
    lock = threading.Lock()
    state = {"n": 0, "start": None}

    def simulate(self, call, name):
        with lock:
            if state["start"] is None:
                state["start"] = time.monotonic()
            slot = state["start"] + state["n"] / rate
            state["n"] += 1
        delay = slot - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        return original(self, call, name)

    agents.AgentRouter._simulate = simulate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="about 110 calls (10 agents), for a smoke run")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rate", type=float, default=200.0, help="simulated calls per second")
    args = parser.parse_args()
    clusters, per = (2, 5) if args.quick else (4, 8)

    from PySide6.QtCore import QElapsedTimer, QEventLoop, QTimer

    from workbench.core.project.store import Store
    from workbench.services.project_model import ProjectModel
    from workbench.ui.app import create_application, settle_memory
    from workbench.ui.main_window import MainWindow
    from workbench.ui.settings import AppSettings

    pace(args.rate)
    create_application()
    loop = QEventLoop()
    tmp = Path(tempfile.mkdtemp(prefix="rwb-responsiveness-"))
    path = tmp / "live.rwb"
    Store.create(path).close_connection()
    window = MainWindow(ProjectModel(), AppSettings())
    window.persist_layout = False
    window.resize(1280, 720)
    window.show()
    settle_memory()

    def run_until(done, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        check = QTimer()
        check.setInterval(10)
        check.timeout.connect(lambda: (done() or time.monotonic() > deadline) and loop.quit())
        check.start()
        loop.exec()
        check.stop()
        return bool(done())

    try:
        window.open_path(path)
        # A person starts a run once the window has settled: the project open, its first reads
        # shown, the plot modules imported in the background after the first paint, and the
        # charts the panels make once those are in.
        if not run_until(lambda: window.model.store is not None and window.reads_idle() and window.warmed_up(), 60):
            raise SystemExit("the project did not open within 60 s")
        clock = QElapsedTimer()
        gaps: list[float] = []
        last = [0.0]

        late: list[tuple[float, float]] = []  # (ms since the run started, stall) for the stalls past 5 ms
        begun = [0.0]

        def tick() -> None:
            now = clock.nsecsElapsed() / 1e6
            if last[0]:
                gaps.append(max(0.0, now - last[0] - HEARTBEAT_MS))
                if gaps[-1] > 5:
                    late.append((last[0] - begun[0], gaps[-1]))
            last[0] = now

        beat = QTimer()
        beat.setInterval(HEARTBEAT_MS)
        beat.timeout.connect(tick)
        finished: list[dict] = []
        failed: list[str] = []
        window.runs.finished.connect(lambda summary: finished.append(summary))
        window.runs.failed.connect(lambda message, _details="": failed.append(message))
        clock.start()
        beat.start()
        started = time.perf_counter()
        begun[0] = clock.nsecsElapsed() / 1e6
        # As the Live Run panel's Start does: the document is checked on the run's thread.
        if not window.runs.start_document(config(clusters, per), label="responsiveness bench"):
            raise SystemExit("the run did not start")
        run_until(lambda: bool(finished or failed), 600)
        wall = time.perf_counter() - started
        run_until(lambda: False, 1.0)  # the last writes reach the panels
        beat.stop()
        if failed or not finished:
            raise SystemExit(f"the run failed: {failed[:1]}")
        summary = finished[0]
    finally:
        window.runs.cancel()
        window.close()
        loop.processEvents()
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()
    calls = int(summary.get("calls") or 0)
    gaps.sort()
    p99 = gaps[int(0.99 * (len(gaps) - 1))] if gaps else 0.0
    print(f"live sim run: {calls} calls in {wall:.2f} s ({calls / wall:.0f} calls/s, paced at {args.rate:g}); "
          f"{len(gaps)} heartbeats; max stall {max(gaps, default=0):.0f} ms, p99 {p99:.0f} ms; status {summary.get('status')}",
          file=sys.stderr)
    steady = max((stall for at, stall in late if at > 1000), default=0.0)
    print(f"after the run's first second: max stall {steady:.0f} ms", file=sys.stderr)
    note = ("QUICK; " if args.quick else "") + f"{calls} sim calls paced at {args.rate:g}/s; {HEARTBEAT_MS} ms heartbeat"
    return emit([Figure(GROUP, "live sim run: longest event-loop stall", round(max(gaps, default=0.0)), "ms", ("<", 50), note),
                 Figure(GROUP, "live sim run: longest stall after its first second", round(steady), "ms", None,
                        "the run under way, its start (panels showing a new run) left out"),
                 Figure(GROUP, "live sim run: p99 event-loop stall", round(p99, 1), "ms", None, note),
                 Figure(GROUP, "live sim run: calls/s reached", round(calls / wall), "calls/s", None,
                        f"status {summary.get('status')}")], args.json)


if __name__ == "__main__":
    sys.exit(main())
