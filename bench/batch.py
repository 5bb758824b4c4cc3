"""A 1,000-call study through the provider batch API's stand-in, resumed across process exits (issue 30).

    .venv/bin/python bench/batch.py [--quick] [--json]

The study is a batch of runs (SPEC §6: questions × replicates; issue 30 asks for a study, and a
batch of runs is the study form ``rwb`` has): RCP, 10 agents in two clusters, 5 questions × 2
replicates: 10 runs of 10 generations and 90 votes, 1,000 calls, on one provider with
``"batch_api": true``. The provider is the loopback server with its stand-in of OpenAI's
``/v1/files`` and ``/v1/batches`` (tests/support/fake_batch_api.py), in this process: ``rwb``
processes come and go, the provider stays, as a cloud provider does. Its first batch expires with
half its requests undone, so the re-send path is part of the figure.

The study goes as it would overnight: ``rwb run BATCH --detach`` submits every run's first phase
and exits; then ``rwb resume BATCH --detach`` again and again, each a new process that collects
what has ended, submits what comes next and exits, until every run is completed (at most 10 resumes).

Figures: calls recorded (target 1,000), calls lost (a planned call without a recorded reply: target
0), replies recorded twice (target 0), requests the provider answered (1,000 plus nothing: a
request is never answered twice), batches submitted, process exits before the end, and the wall.
"""

from __future__ import annotations

import argparse
import json
import os
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

GROUP = "Orchestration"
QUESTIONS = ["Should the city close its downtown to private cars?", "Should schools start an hour later?",
             "Should museums be free on Sundays?", "Should the ring road get a congestion charge?",
             "Should libraries open at night?"]


def reply(request) -> str:
    user = str(request.messages[-1].get("content", ""))
    if "Answer in one or two short paragraphs" in user:
        return "Yes, in steps: a trial on weekends first, with deliveries allowed in the morning."
    return '{"vote": "YES", "reason": "a measured first step"}'


def study(base_url: str, agents: int, questions: int, replicates: int) -> dict:
    half = agents // 2
    return {"protocol": "rcp", "query": QUESTIONS[0], "seed": 11, "dispatch": "concurrent",
            "providers": {"gpt": {"model": "openai/fake-model", "api_base": base_url, "api_key_env": "BENCH_BATCH_KEY",
                                  "batch_api": True, "batch_poll_s": 0.05}},
            "clusters": [{"name": name, "agents": [{"id": f"{name[0]}{i}", "provider": "gpt"} for i in range(half)]}
                         for name in ("advocate", "critic")],
            "batch": {"name": "overnight", "questions": QUESTIONS[:questions], "replicates": replicates}}


def rwb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "BENCH_BATCH_KEY": "sk-bench-0123456789abcdef0123"})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (4 agents, 2 runs), not the record")
    parser.add_argument("--json", action="store_true", help="print the figures as one BENCH_JSON line")
    args = parser.parse_args()
    agents, questions, replicates = (4, 1, 2) if args.quick else (10, 5, 2)
    per_run = agents + agents * (agents - 1)
    planned = per_run * questions * replicates

    from tests.support.fake_batch_api import BatchScript, FakeBatchAPI
    from tests.support.fake_llm_server import FakeLLMServer, Reply

    batches = FakeBatchAPI()
    batches.enqueue(BatchScript(done=agents // 2))  # the first batch expires with half its requests undone
    figures: list[Figure] = []
    with FakeLLMServer(Reply(text=reply), batches=batches) as server, \
            tempfile.TemporaryDirectory(prefix="rwb-batch-") as tmp:
        cfg, project = Path(tmp) / "study.json", Path(tmp) / "study.rwb"
        cfg.write_text(json.dumps(study(server.base_url, agents, questions, replicates)))
        start = time.perf_counter()
        out = rwb("run", str(cfg), "--project", str(project), "--detach")
        batch_id = out.stdout.splitlines()[0] if out.stdout else ""
        exits, codes = 1, [out.returncode]
        status = json.loads(out.stdout.splitlines()[-1]).get("status") if out.stdout else "no output"
        while status != "completed" and exits <= 10:
            out = rwb("resume", batch_id, "--project", str(project), "--detach")
            exits += 1
            codes.append(out.returncode)
            status = json.loads(out.stdout.splitlines()[-1]).get("status") if out.stdout else "no output"
            print(f"  resume {exits - 1}: exit {out.returncode}, {status}", file=sys.stderr)
        wall = time.perf_counter() - start
        if out.returncode not in (0, 3):
            print(out.stderr, file=sys.stderr)
        recorded, twice, batches_made = audit(project, planned)
    lost = planned - recorded
    figures += [
        Figure(GROUP, "batch API study: calls recorded", recorded, "calls", ("==", planned),
               f"{questions * replicates} RCP runs of {agents} agents ({per_run} calls each), final status {status}"),
        Figure(GROUP, "batch API study: calls lost", lost, "calls", ("==", 0), "a planned call with no recorded reply"),
        Figure(GROUP, "batch API study: replies recorded twice", twice, "calls", ("==", 0)),
        Figure(GROUP, "batch API study: requests the provider answered", batches.lines_answered, "requests",
               ("==", planned), f"the first batch expired with {agents - agents // 2} of {agents} undone: re-sent"),
        Figure(GROUP, "batch API study: batches submitted", batches_made, "batches", None,
               f"{2 * questions * replicates} phases + the re-send"),
        Figure(GROUP, "batch API study: process exits before the end", exits - 1, "exits", None,
               f"rwb run --detach, then rwb resume --detach until completed; exit codes {codes}"),
        Figure(GROUP, "batch API study: wall", round(wall, 1), "s", None, "loopback stand-in, every batch ends at its "
               "first poll; the processes' start-up included"),
    ]
    if args.quick:
        for f in figures:
            f.note = ("QUICK; " + f.note) if f.note else "QUICK"
    return emit(figures, args.json)


def audit(project: Path, planned: int) -> tuple[int, int, int]:
    """Calls recorded with a reply (distinct step keys), replies recorded twice, batches made."""
    from workbench.core.project import _sql
    from workbench.core.project.store import Store

    store = Store.open(project)
    try:
        replies = _sql.tuples(store, "SELECT run_id, step_key, count(*) FROM llm_calls WHERE status IN ('ok', 'invalid') "
                                     "AND purpose NOT LIKE '%/superseded' GROUP BY run_id, step_key")
        jobs = _sql.tuples(store, "SELECT json_array_length(detail_json, '$.batch.jobs') FROM rounds")
    finally:
        store.close_connection()
    return len(replies), sum(1 for *_k, n in replies if n > 1), sum(n or 0 for (n,) in jobs)


if __name__ == "__main__":
    sys.exit(main())
