"""The gateway's rate limit in real time, against the loopback fake server (a script, not a test).

    PYTHONPATH=. .venv/bin/python bench/rate_limit.py [--limit 4] [--window 0.5] [--threads 4]
        [--calls 12] [--storm 2] [--latency 0] [--slack 0.03] [--busy 0]

The rpm limit is scaled down to ``--limit`` requests per ``--window`` seconds. ``--threads``
threads share ``--calls`` calls; every ``--storm``-th request is answered 429 with
``Retry-After: 0`` (0: no storm), and each call retries up to 4 times, retries counting against
the limit. ``--busy N`` runs N busy-looping processes meanwhile, to see the figures under load.

For the limiter's grants (its own clock) and for the server's arrival stamps (the same
``time.monotonic``), it prints the most requests seen in any window of ``--window`` seconds
against the limit (at the server also for the window shortened by ``--slack``, as the old
real-time test checked), and the shortest span holding ``limit + 1`` requests: at the limiter it
is at least the window by construction; at the server the loopback hop's jitter can shorten it,
and the difference is the slack a real-time check would need. The verdict on the limiter itself is
the fake-clock tests in tests/services/test_llm_gateway.py and test_llm_units.py.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tests.support.fake_llm_server import FakeLLMServer, Reply
from workbench.services.llm.gateway import Gateway, warm_up
from workbench.services.llm.limits import Backoff

MESSAGES = [{"role": "user", "content": "Should the city close its downtown to private cars?"}]


def max_in_window(stamps: list[float], window_s: float) -> int:
    """The most stamps within any half-open window of ``window_s``."""
    stamps, best, lo = sorted(stamps), 0, 0
    for hi, t in enumerate(stamps):
        while t - stamps[lo] >= window_s:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def shortest_span(stamps: list[float], count: int) -> float | None:
    """The shortest time holding ``count`` consecutive stamps (None when there are fewer)."""
    stamps = sorted(stamps)
    if len(stamps) < count:
        return None
    return min(stamps[i + count - 1] - stamps[i] for i in range(len(stamps) - count + 1))


def spin(stop: Any) -> None:
    """Burn a CPU until ``stop`` (a multiprocessing Event) is set."""
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def run_once(server: FakeLLMServer, args: argparse.Namespace) -> dict:
    server.requests.clear()
    server.rule = ((lambda req: Reply(status=429, retry_after="0") if req.index % args.storm == 0 else None)
                   if args.storm else None)
    gateway = Gateway({"p": {"model": "openai/fake-model", "api_base": server.base_url, "rpm": args.limit,
                             "max_concurrency": args.threads, "max_retries": 4, "timeout_s": 10}},
                      rate_window_s=args.window, backoff=Backoff(base_s=0.01, cap_s=0.05))
    counter = iter(range(args.calls))
    lock = threading.Lock()
    statuses: list[str] = []

    def worker() -> None:
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            statuses.append(gateway.call("p", MESSAGES, sample_index=i).status)

    pool = [threading.Thread(target=worker, name=f"bench-{n}") for n in range(args.threads)]
    t0 = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    elapsed = time.perf_counter() - t0
    granted = list(gateway.limiters["p"].sent)
    arrived = server.arrivals()
    return {
        "elapsed": elapsed, "statuses": statuses, "granted": granted, "arrived": arrived,
        "lim_max": max_in_window(granted, args.window), "srv_max": max_in_window(arrived, args.window),
        "srv_slack": max_in_window(arrived, args.window - args.slack),
        "lim_span": shortest_span(granted, args.limit + 1), "srv_span": shortest_span(arrived, args.limit + 1),
    }


def fmt_span(span: float | None) -> str:
    return "   n/a  " if span is None else f"{span * 1000:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=4, help="requests allowed per window")
    parser.add_argument("--window", type=float, default=0.5, help="the window, in seconds")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--calls", type=int, default=12)
    parser.add_argument("--storm", type=int, default=2, help="every N-th request gets a 429 (0: none)")
    parser.add_argument("--latency", type=float, default=0.0, help="server latency per reply, seconds")
    parser.add_argument("--slack", type=float, default=0.03, help="seconds off the window at the server")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--busy", type=int, default=0, help="busy-looping processes to run meanwhile")
    args = parser.parse_args()

    t0 = time.perf_counter()
    warm_up()
    print(f"litellm import + warm-up: {time.perf_counter() - t0:.2f} s")

    stop = multiprocessing.Event()
    hogs = [multiprocessing.Process(target=spin, args=(stop,), daemon=True) for _ in range(args.busy)]
    for hog in hogs:
        hog.start()
    rows = []
    try:
        with FakeLLMServer(Reply(text="Yes, on weekends.", latency_s=args.latency)) as server:
            gateway = Gateway({"p": {"model": "openai/fake-model", "api_base": server.base_url}})
            gateway.call("p", MESSAGES)  # first-call set-up (client creation) outside the figures
            for _ in range(args.repeat):
                rows.append(run_once(server, args))
    finally:
        stop.set()
        for hog in hogs:
            hog.join(5)

    print(f"limit {args.limit} per {args.window:g} s window; {args.calls} calls on {args.threads} threads; "
          f"429 storm every {args.storm or '-'} request(s); server latency {args.latency * 1000:.0f} ms; "
          f"{args.busy} busy process(es)")
    print("run  requests  elapsed   most in a window          shortest span of limit+1   statuses")
    print(f"                         limiter  server  -{args.slack * 1000:.0f}ms   limiter     server")
    for n, r in enumerate(rows, 1):
        over = "  (more than the limit, with the slack)" if r["srv_slack"] > args.limit else ""
        ok = sum(s == "ok" for s in r["statuses"])
        print(f"{n:3d}  {len(r['arrived']):8d}  {r['elapsed']:6.2f} s  {r['lim_max']:7d}  {r['srv_max']:6d}"
              f"  {r['srv_slack']:6d}  {fmt_span(r['lim_span'])}  {fmt_span(r['srv_span'])}  "
              f"{ok} ok, {len(r['statuses']) - ok} other{over}")
    deficits = [args.window - r["srv_span"] for r in rows if r["srv_span"] is not None]
    print(f"limiter: never more than {max(r['lim_max'] for r in rows)} per window (limit {args.limit})")
    if deficits:
        worst = max(deficits)
        print(f"server : most per window {max(r['srv_max'] for r in rows)}, "
              f"{max(r['srv_slack'] for r in rows)} with {args.slack * 1000:.0f} ms of slack; "
              f"the loopback hop shortened the tightest limit+1 span below the window by up to "
              f"{max(0.0, worst) * 1000:.1f} ms "
              f"(median {statistics.median(deficits) * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
