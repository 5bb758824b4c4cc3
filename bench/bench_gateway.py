"""Throughput of the provider gateway against the loopback fake server (a script, not a test).

    PYTHONPATH=. .venv/bin/python bench/bench_gateway.py [--calls 40] [--latency 0.2]

Every reply takes ``--latency`` seconds on the server. Prints calls per second for the same
number of real litellm calls made sequentially (one thread, one at a time) and concurrently
(max_concurrency 8, 8 threads), the gateway's overhead per call over the injected latency, and
the most requests the server ever had in flight. litellm's import is done (and timed) first.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tests.support.fake_llm_server import FakeLLMServer, Reply
from workbench.services.llm.gateway import Gateway, warm_up

MESSAGES = [{"role": "user", "content": "Should the city close its downtown to private cars?"}]


def run_sequential(gateway: Gateway, calls: int) -> float:
    t0 = time.perf_counter()
    for i in range(calls):
        result = gateway.call("p", MESSAGES, sample_index=i)
        assert result.ok, result.error
    return time.perf_counter() - t0


def run_concurrent(gateway: Gateway, calls: int, threads: int) -> float:
    counter = iter(range(calls))
    lock = threading.Lock()
    failures: list[str] = []

    def worker() -> None:
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            result = gateway.call("p", MESSAGES, sample_index=i)
            if not result.ok:
                failures.append(result.error or result.status)

    pool = [threading.Thread(target=worker, name=f"bench-{n}") for n in range(threads)]
    t0 = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    elapsed = time.perf_counter() - t0
    assert not failures, failures[:3]
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()

    t0 = time.perf_counter()
    warm_up()
    print(f"litellm import + warm-up: {time.perf_counter() - t0:.2f} s")

    with FakeLLMServer(Reply(text="Yes, on weekends.", latency_s=args.latency)) as server:
        def gateway(concurrency: int) -> Gateway:
            return Gateway({"p": {"model": "openai/fake-model", "api_base": server.base_url,
                                  "max_concurrency": concurrency, "max_retries": 0, "timeout_s": 10}})

        gateway(1).call("p", MESSAGES)  # first-call set-up (client creation) outside the timings
        seq = run_sequential(gateway(1), args.calls)
        server.max_in_flight = 0
        con = run_concurrent(gateway(args.threads), args.calls, args.threads)
        in_flight = server.max_in_flight

    ideal_seq = args.calls * args.latency
    ideal_con = -(-args.calls // args.threads) * args.latency
    print(f"{args.calls} calls, server latency {args.latency * 1000:.0f} ms each")
    print(f"sequential            : {seq:6.2f} s  {args.calls / seq:6.2f} calls/s  "
          f"(ideal {args.calls / ideal_seq:.2f}; overhead {(seq - ideal_seq) / args.calls * 1000:.1f} ms/call)")
    print(f"concurrent ({args.threads} threads): {con:6.2f} s  {args.calls / con:6.2f} calls/s  "
          f"(ideal {args.calls / ideal_con:.2f}; max in flight at the server {in_flight})")
    print(f"speed-up              : {seq / con:.2f}x")


if __name__ == "__main__":
    main()
