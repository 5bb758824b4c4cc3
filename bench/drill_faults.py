"""Fault drill, provider faults (issue 17): a ~500-call run against a server that misbehaves.

    .venv/bin/python bench/drill_faults.py [--quick] [--json] [--seed N] [--agents N]

The run: RCP, one round, ``n`` agents in two clusters (n generation calls, then n(n-1) vote
calls: 22 agents give 484 calls; ``--quick``: 8 agents, 64 calls), ``dispatch: concurrent``, one
provider with ``max_retries`` 4, ``timeout_s`` 2 and ``max_concurrency`` 16. It goes through
``rwb run`` (a fresh process each time: the gateway, litellm, the runner, every call recorded in
the project's ``llm_calls`` table) against the loopback server (tests/support/fake_llm_server.py)
answering after 20 ms.

1. **Baseline**: the run with no faults. Its step keys are the plan: the calls the run must make.
2. **Faults**: the same config on a fresh project; the server's rule injects, per request,
   deterministically from ``--seed`` (a hash of the seed, the request's messages less the run's
   random fence tokens, and how many times the server has seen that call, so a retry draws again
   and a rerun draws the same):
   429 with ``Retry-After: 1`` (20 %), 500 (5 %), a hang past the client's timeout (5 %), a
   malformed JSON body (10 %) and a truncated body (3 %). The gateway does not stream
   (``litellm.completion`` without ``stream``), so a "truncated stream" cannot happen on its wire:
   the drill sends a real completion's JSON cut off halfway instead (the connection's view of a
   stream dropped mid-body). Malformed and truncated bodies are not retryable (``bad_response``):
   they end as recorded failures.
3. **Resumed**, as a user would: while the run ends ``interrupted`` (retries ran out), or
   ``failed`` or ``degraded`` with recorded failures, ``rwb resume`` issues the failed and missing
   calls again (at most 10 times), the server still injecting faults.

Figures: calls lost at the fault run's end and after the resumes (a plan key with no final row
that is ok/invalid or a recorded failure, and not a vote on an artifact whose generation is a
recorded failure; target 0), failures without a reason (target 0), duplicated replies (target 0),
the recorded failures the fault run ended with and those left after the resumes, retries spent
(sum of ``attempts`` over every row, minus the calls issued), the requests the server saw, the
fault run's wall time against the baseline's (the runner's own ``duration_s``, summed over the run
and its resumes; and the processes' wall, litellm's import included), the final status and exit
codes, resumes needed, and ``PRAGMA integrity_check`` (target ok). Exits non-zero when a target is
missed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from _figures import Figure, emit
from tests.support.fake_llm_server import FakeLLMServer, Reply
from tests.support.project_files import integrity

GROUP = "Fault drills"
MODEL = "openai/fake-model"
TIMEOUT_S = 2.0
MAX_RETRIES = 4
CONCURRENCY = 16
LATENCY_S = 0.02
MAX_RESUMES = 10
# (kind, share of requests); the rest are answered normally
FAULTS = (("429", 0.20), ("500", 0.05), ("timeout", 0.05), ("malformed", 0.10), ("truncated", 0.03))


def answer_text(messages: list[dict]) -> str:
    content = str(messages[-1].get("content", "")) if messages else ""
    if "Response A:" in content:  # ballot mode (not used here, kept for any config)
        labels = [line.split()[1].rstrip(":") for line in content.splitlines() if line.startswith("Response ")]
        return json.dumps({"votes": {label: "YES" for label in labels}})
    if "Response to evaluate" in content:
        return "YES"
    persona = str(messages[0].get("content", "")) if messages else ""
    return f"{persona} Closing the centre cuts traffic and noise; shops need deliveries and a transition period."


FENCE = re.compile(r"FENCE-[0-9A-F]+")


def call_identity(messages: list[dict]) -> str:
    """A request's messages without the run's random fence tokens: the same call in any run."""
    return hashlib.sha256(FENCE.sub("FENCE", json.dumps(messages, sort_keys=True)).encode()).hexdigest()


def config(base_url: str, agents: int, seed: int) -> dict:
    half = agents // 2
    sides = (("advocate", half), ("critic", agents - half))
    return {"protocol": "rcp", "query": "Should the city close its downtown to private cars?", "seed": seed,
            "dispatch": "concurrent",
            "providers": {"p": {"model": MODEL, "api_base": base_url, "max_concurrency": CONCURRENCY,
                                "timeout_s": TIMEOUT_S, "max_retries": MAX_RETRIES}},
            "clusters": [{"name": name, "agents": [{"id": f"{name[0]}{i}", "provider": "p",
                                                     "persona": f"{name.title()} number {i}."}
                                                    for i in range(1, n + 1)]} for name, n in sides]}


class FaultRule:
    """The server's rule: a deterministic draw per (seed, messages, occurrence)."""

    def __init__(self, seed: int):
        self.seed = seed
        self.seen: Counter[str] = Counter()
        self.injected: Counter[str] = Counter()
        self.lock = threading.Lock()

    def kind(self, request) -> str | None:
        key = call_identity(request.messages)
        with self.lock:
            self.seen[key] += 1
            n = self.seen[key]
        draw = int(hashlib.sha256(f"{self.seed}:{key}:{n}".encode()).hexdigest()[:12], 16) / 16 ** 12
        edge = 0.0
        for kind, share in FAULTS:
            edge += share
            if draw < edge:
                with self.lock:
                    self.injected[kind] += 1
                return kind
        return None

    def __call__(self, request):
        kind = self.kind(request)
        if kind is None:
            return None  # the default reply
        if kind == "429":
            return Reply(status=429, retry_after=1, error_message="rate limited (injected)")
        if kind == "500":
            return Reply(status=500, error_message="internal error (injected)")
        if kind == "timeout":
            return Reply(hang_s=TIMEOUT_S + 1.5)
        if kind == "malformed":
            return Reply(malformed=True)
        return Reply(body=truncated_body)  # "truncated"


def truncated_body(request) -> str:
    """A real completion's JSON, cut off halfway."""
    text = answer_text(request.messages)
    full = json.dumps({"id": f"chatcmpl-cut-{request.index}", "object": "chat.completion", "created": int(time.time()),
                       "model": "fake-model", "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                                          "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
    return full[: len(full) // 2]


def rwb(*args: str) -> tuple[int, dict, float, str]:
    """One ``rwb`` process: exit code, its summary (the last stdout line), wall seconds, stderr's tail."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "workbench", *args, "--quiet"], cwd=REPO, capture_output=True,
                          text=True, timeout=900, env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    wall = time.perf_counter() - started
    summary = {}
    for line in reversed(proc.stdout.splitlines()):
        try:
            summary = json.loads(line)
            break
        except ValueError:
            continue
    return proc.returncode, summary if isinstance(summary, dict) else {}, wall, proc.stderr.strip()[-400:]


def rows(project: Path, run_id: str) -> list[tuple]:
    conn = sqlite3.connect(project)
    try:
        return conn.execute("SELECT id, step_key, status, error, error_kind, attempts FROM llm_calls "
                            "WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()
    finally:
        conn.close()


def run_status(project: Path, run_id: str) -> str:
    conn = sqlite3.connect(project)
    try:
        return conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
    finally:
        conn.close()


FAILED = ("error", "rate_limited")


def upstream(key: str) -> str | None:
    """The generation call a vote call depends on: ``r1/vote/r1-a1/c2`` -> ``r1/generate/a1``."""
    parts = key.split("/")
    if len(parts) == 4 and parts[1] == "vote" and "-" in parts[2]:
        return f"{parts[0]}/generate/{parts[2].split('-', 1)[1]}"
    return None


def audit(plan: set[str], calls: list[tuple]) -> dict:
    """Each plan key's final row: ok/invalid, or a recorded failure with its reason; a vote call
    never issued because its artifact's generation is a recorded failure counts as not issued (the
    failure that explains it is recorded, and RCP's validity counts the vote as missing); anything
    else is lost."""
    final: dict[str, tuple] = {}
    answered: Counter[str] = Counter()
    for row in calls:
        final[row[1]] = row
        if row[2] in ("ok", "invalid"):
            answered[row[1]] += 1
    lost, unexplained, failures, skipped = [], [], Counter(), []
    for key in sorted(plan):
        row = final.get(key)
        if row is None and (up := upstream(key)) and up in final and final[up][2] in FAILED \
                and (final[up][3] or "").strip():
            skipped.append(key)  # its artifact's generation is a recorded failure: no artifact to vote on
        elif row is None or row[2] == "cancelled":
            lost.append(key)
        elif row[2] not in ("ok", "invalid"):
            failures[row[4] or "?"] += 1
            if not (row[3] or "").strip():
                unexplained.append(key)
    return {"lost": lost, "unexplained": unexplained, "failures": failures, "skipped": skipped,
            "issued": len(final),
            "ok": sum(final[k][2] == "ok" for k in plan if k in final),
            "invalid": sum(final[k][2] == "invalid" for k in plan if k in final),
            "duplicated": sum(c > 1 for c in answered.values()),
            "extra": sorted(set(final) - plan), "attempts": sum(r[5] for r in calls), "rows": len(calls)}


def drill(agents: int, seed: int) -> list[Figure]:
    planned = agents + agents * (agents - 1)
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="rwb-drill-faults-") as tmp_name, \
            FakeLLMServer(default=Reply(text=lambda r: answer_text(r.messages), latency_s=LATENCY_S)) as srv:
        tmp = Path(tmp_name)
        cfg_path = tmp / "run.json"
        cfg_path.write_text(json.dumps(config(srv.base_url, agents, seed)))

        # 1. the baseline: no faults
        base_project = tmp / "baseline.rwb"
        base_code, base_summary, base_wall, base_err = rwb("run", str(cfg_path), "--project", str(base_project))
        base_id = base_summary.get("run_id")
        if not base_id:
            raise SystemExit(f"the baseline run did not report (exit {base_code}): {base_err}")
        base_rows = rows(base_project, base_id)
        plan = {r[1] for r in base_rows}
        base_dur = float(base_summary.get("duration_s") or base_wall)
        print(f"  baseline: {base_summary.get('status')} exit {base_code}, {len(plan)} calls "
              f"(expected {planned}), runner {base_dur:.2f} s, process {base_wall:.2f} s", file=sys.stderr)

        # 2. the fault run, resumed until it ends
        rule = FaultRule(seed)
        srv.rule = rule
        before = len(srv.chat_requests)
        project = tmp / "faults.rwb"
        code, summary, wall, err = rwb("run", str(cfg_path), "--project", str(project))
        run_id = summary.get("run_id")
        if not run_id:
            raise SystemExit(f"the fault run did not report (exit {code}): {err}")
        codes, durations, walls = [code], [float(summary.get("duration_s") or wall)], [wall]
        status = summary.get("status")
        print(f"  fault run: {status} exit {code} in {wall:.1f} s" + (f" ({err.splitlines()[-1]})" if err else ""),
              file=sys.stderr)
        first, first_status = audit(plan, rows(project, run_id)), status
        # An interrupted run's calls not yet issued wait for the resume: pending, not lost.
        first_pending = first["lost"] if first_status == "interrupted" else []
        first_lost = [] if first_status == "interrupted" else first["lost"]
        resumes = 0

        def resumable(result: dict) -> bool:  # what a user resumes: a stop, or failures to issue again
            return status == "interrupted" or (status in ("failed", "degraded") and
                                               bool(result["lost"] or result["failures"] or result["skipped"]))

        while resumes < MAX_RESUMES and resumable(audit(plan, rows(project, run_id))):
            resumes += 1
            code, summary, wall, err = rwb("resume", run_id, "--project", str(project))
            codes.append(code)
            durations.append(float(summary.get("duration_s") or wall))
            walls.append(wall)
            status = summary.get("status") or run_status(project, run_id)
            print(f"  resume {resumes}: {status} exit {code} in {wall:.1f} s"
                  + (f" ({err.splitlines()[-1]})" if err else ""), file=sys.stderr)
        srv.rule = None
        requests = len(srv.chat_requests) - before
        result = audit(plan, rows(project, run_id))
        check = integrity(project)

    fault_dur, fault_wall = sum(durations), sum(walls)
    injected = ", ".join(f"{k} {rule.injected[k]}" for k, _ in FAULTS)
    failed = ", ".join(f"{k} {n}" for k, n in sorted(result["failures"].items())) or "none"
    first_failed = ", ".join(f"{k} {n}" for k, n in sorted(first["failures"].items())) or "none"
    retries = result["attempts"] - result["issued"]
    figures += [
        Figure(GROUP, "provider faults: calls planned", len(plan), "calls", None,
               f"RCP {agents} agents, 1 round; expected {planned}; baseline {base_summary.get('status')}"),
        Figure(GROUP, "provider faults: calls lost", len(first_lost) + len(result["lost"]), "calls", ("==", 0),
               f"at the fault run's end ({first_status}) {len(first_lost)}: ok {first['ok']}, invalid "
               f"{first['invalid']}, recorded failures {sum(first['failures'].values())}, not issued (artifact's "
               f"generation failed) {len(first['skipped'])}, pending a resume {len(first_pending)}; after the "
               f"resumes {len(result['lost'])}"
               + (f"; lost e.g. {(first_lost + result['lost'])[:3]}" if first_lost or result["lost"] else "")),
        Figure(GROUP, "provider faults: failures without a reason", len(first["unexplained"]) + len(result["unexplained"]),
               "calls", ("==", 0), f"recorded failures by kind at the fault run's end: {first_failed}"),
        Figure(GROUP, "provider faults: recorded failures left after resumes", sum(result["failures"].values()),
               "calls", None, f"ok {result['ok']}, invalid {result['invalid']}, by kind: {failed}; not issued "
                              f"(artifact's generation failed) {len(result['skipped'])}"),
        Figure(GROUP, "provider faults: replies recorded twice", result["duplicated"], "calls", ("==", 0),
               f"{result['rows']} llm_calls rows; keys outside the plan {len(result['extra'])}"),
        Figure(GROUP, "provider faults: retries spent", retries, "attempts", None,
               f"sum of attempts {result['attempts']} - {result['issued']} calls issued; the server saw {requests} requests; "
               f"injected: {injected}"),
        Figure(GROUP, "provider faults: wall vs no-fault run", round(fault_dur / base_dur, 2) if base_dur else None,
               "x", None, f"runner time {fault_dur:.1f} s vs {base_dur:.1f} s (run + resumes); "
                          f"processes {fault_wall:.1f} s vs {base_wall:.1f} s"),
        Figure(GROUP, "provider faults: final status", status or "?", "", None,
               f"the fault run ended {first_status}; exit codes {' -> '.join(map(str, codes))} "
               f"(baseline exit {base_code})"),
        Figure(GROUP, "provider faults: resumes needed", resumes, "", None, f"at most {MAX_RESUMES}"),
        Figure(GROUP, "provider faults: integrity_check not ok", 0 if check == "ok" else 1, "", ("==", 0),
               f"PRAGMA integrity_check: {check}"),
    ]
    if status in ("interrupted", "failed", "degraded") and resumes >= MAX_RESUMES:
        figures.append(Figure(GROUP, "provider faults: run ended", 1, "", ("==", 0),
                              f"still {status} after {MAX_RESUMES} resumes"))
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 agents, 64 calls: a smoke run, not the record")
    parser.add_argument("--json", action="store_true", help="print the figures as one BENCH_JSON line")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--agents", type=int, default=None, help="agents in the run (default 22; --quick 8)")
    args = parser.parse_args()
    agents = args.agents or (8 if args.quick else 22)
    figures = drill(agents, args.seed)
    if args.quick:
        for f in figures:
            f.note = ("QUICK; " + f.note) if f.note else "QUICK"
    return emit(figures, args.json)


if __name__ == "__main__":
    sys.exit(main())
