"""The CONS tally on 1,000, 10,000 and 100,000 ballots (target: 100,000 in under 1 s).

Each case is a question with 5 options and ballots / 5 agents; every agent votes on every option
(accept 45%, reject 35%, abstain 20%, confidence uniform in [0.05, 1], evidence on a third of the
votes), drawn from a fixed seed. Printed: the tally alone (best of 3), then, for scale, the whole
``rwb classify cons`` path (validating the ballots, tally, verdict, conflicts, escalations, JSON)
once. The tally was quadratic before (per agent, a scan of every ballot): 100,000 ballots took
879 s; see docs/limits.md.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.core.protocols.cons.models import parse_question
from workbench.core.protocols.cons.tally import classify_payload, tally

OPTIONS = ("A", "B", "C", "D", "E")


def payload(ballots: int, seed: int = 7) -> dict:
    rng = random.Random(seed)
    votes = []
    for a in range(ballots // len(OPTIONS)):
        for option in OPTIONS:
            vote = rng.choices(("accept", "reject", "abstain"), (45, 35, 20))[0]
            evidence = [{"file": f"src/{option}.py", "type": "code"}] if rng.random() < 1 / 3 else []
            votes.append({"agentId": f"agent-{a:06d}", "option": option, "vote": vote,
                          "confidence": round(rng.uniform(0.05, 1.0), 3),
                          "rationale": f"{vote} {option}: reason {rng.randrange(1000)}", "evidence": evidence})
    return {"questionId": "BENCH-001", "question": "Which option?", "options": list(OPTIONS), "votes": votes}


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    quick, as_json = "--quick" in sys.argv, "--json" in sys.argv
    sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000)
    tallies = {}
    for n in sizes:
        data = payload(n)
        question = parse_question(data)
        t_tally = best_of(lambda: tally(question), 3)
        t_all = best_of(lambda: classify_payload(data), 1)
        tallies[n] = (t_tally, t_all)
        print(f"{n:>7,} ballots: tally {t_tally * 1000:8.1f} ms (best of 3); "
              f"whole classify cons {t_all * 1000:8.1f} ms", file=sys.stderr if as_json else sys.stdout)
    if as_json:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _figures import Figure, emit

        n = max(tallies)
        note = ("QUICK: 10,000 ballots, not 100,000; " if quick else "") + "best of 3"
        sys.exit(emit([Figure("Scale", f"CONS tally of {n:,} ballots", round(tallies[n][0], 3), "s",
                              ("<", 1.0), note),
                       Figure("Scale", f"whole `rwb classify cons` path, {n:,} ballots", round(tallies[n][1], 3), "s",
                              None, "validation, tally, verdict, conflicts, JSON; one run")], True))


if __name__ == "__main__":
    main()
