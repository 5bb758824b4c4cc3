"""Timing of the Resonant Consensus Protocol engine (a script, not a test).

    PYTHONPATH=. python bench/bench_rcp.py

Builds random panels from a fixed seed: 30 agents in 5 clusters of 6, votes 1/0 with 10% missing,
every artifact written by a random agent, the reference cluster weighted. Prints the best of 5
wall times of the vectorised core (``classify_arrays``) for 100,000 artifacts (target: < 1 s) and
for 10,000, and of the whole JSON path (``classify_payload``: validation, matrix, dicts) for 10,000
(best of 5) and 100,000 (one run).
"""

from __future__ import annotations

import time

import numpy as np

from workbench.core.protocols.rcp.classify import classify_arrays, classify_payload

SEED = 20240607
N_CLUSTERS, PER_CLUSTER = 5, 6


def build(m: int, seed: int = SEED) -> dict:
    rng = np.random.default_rng(seed)
    a = N_CLUSTERS * PER_CLUSTER
    votes = (rng.random((m, a)) < rng.random((m, 1))).astype(np.float64)
    votes[rng.random((m, a)) < 0.10] = np.nan
    author = rng.integers(0, a, size=m)
    votes[np.arange(m), author] = np.nan
    return {
        "votes": votes,
        "cluster_of": np.repeat(np.arange(N_CLUSTERS), PER_CLUSTER),
        "author": author,
        "ids": [f"w{k:06d}" for k in range(m)],
    }


def as_payload(case: dict) -> dict:
    agents = [f"c{i}a{j}" for i in range(N_CLUSTERS) for j in range(PER_CLUSTER)]
    clusters = [
        {"name": f"cluster{i}", "agents": agents[i * PER_CLUSTER:(i + 1) * PER_CLUSTER]}
        for i in range(N_CLUSTERS)
    ]
    artifacts = []
    for k, row in enumerate(case["votes"].tolist()):
        votes = {agents[j]: (None if v != v else int(v)) for j, v in enumerate(row) if j != case["author"][k]}
        artifacts.append({"id": case["ids"][k], "author": agents[case["author"][k]], "votes": votes})
    return {"clusters": clusters, "tau": 0.6, "artifacts": artifacts}


def best_of(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run_arrays(case: dict) -> None:
    classify_arrays(
        case["votes"], case["cluster_of"], n_clusters=N_CLUSTERS, thetas=0.5, tau=0.6,
        weights=[2.0, 1.0, 1.0, 1.0, 1.0], author=case["author"], ids=case["ids"],
    )


def main() -> None:
    for m in (100_000, 10_000):
        case = build(m)
        t = best_of(lambda: run_arrays(case))
        print(f"classify_arrays  {m:>7,} artifacts x 30 agents / 5 clusters: best of 5 = {t * 1000:8.1f} ms")
    for m, repeat in ((10_000, 5), (100_000, 1)):
        payload = as_payload(build(m))
        t = best_of(lambda: classify_payload(payload), repeat)
        label = f"best of {repeat}" if repeat > 1 else "one run  "
        print(f"classify_payload {m:>7,} artifacts x 30 agents / 5 clusters: {label} = {t * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
