"""The real-model drill (issue 19): every protocol end to end against a real local model.

Gemma 3 270M (Q4_K_M GGUF) is served on loopback by llama-cpp-python's OpenAI-compatible server,
which runs from its own venv (``.venv-real/``, built by ``make real-model``; never the locked
``.venv``). Each protocol runs twice through ``rwb run CONFIG --project FILE`` subprocesses, with
the provider's ``structured_output`` set to ``json_object`` (the form this server accepts: it
refuses ``json_schema`` with a 422) and to ``off``. One table is printed: per protocol and mode,
the exit code, the run status, the valid-reply rate, the quality flags, tokens/s and the wall time.

The arithmetic preset (``--preset arithmetic``, issue 28) runs the answer protocols instead:
``single``, ``vote`` and ``debate`` with the same three agents, each a batch over Du et al.'s
arithmetic items (``rwb dataset arithmetic --n 10 --seed 19``); its table gives each protocol's
accuracy (the final answers against the known ones), the agents' own answers' accuracy, how many
answers a number could be read from, the valid replies and the wall time. Their steps are free text
(no reply schema), so structured output on and off send the same requests: the preset runs ``off``
unless ``--modes`` says otherwise. It fails only when a batch cannot be run at all: a 270M model is
expected to do badly; the point is that the figures are honest.

The drill exits 1 when, with structured output on, fewer than 90% of the RCP votes, the findings
votes or the CONS ballots are valid; when a run that misses the validity floor
(``max_missing_share``) ends ``completed`` instead of ``degraded``; or when a run could not be made
at all (refused config, timeout). It exits 2 when the server cannot be started or reached.

    make real-model                                   # builds .venv-real and the GGUF, then runs this
    make real-model REAL_ARGS="--preset arithmetic"   # single, vote and debate over 10 arithmetic items
    .venv/bin/python bench/real_model.py [--only rcp] [--modes on,off] [--json]
    .venv/bin/python bench/real_model.py --server-url http://127.0.0.1:8080/v1   # a server already running

Ctrl-C stops the run in progress (it stays resumable in its project file) and always stops the
server this script started. docs/real-models.md gives the measured table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
REAL_VENV = REPO / ".venv-real"
MODEL_PATH = REPO / ".models" / "gemma3-270m-q4_k_m.gguf"
MODEL_ALIAS = "gemma3-270m"

PROTOCOLS = ("rcp", "findings", "cons", "echo", "arm")
# The arithmetic preset (issue 28): the answer protocols over Du et al.'s arithmetic items.
ANSWER_PROTOCOLS = ("single", "vote", "debate")
ARITHMETIC_ITEMS = 10
ARITHMETIC_SEED = 19
ARITHMETIC_MAX_TOKENS = 256  # room for the working and the final number; a rambling reply is cut, then unscorable
MODES = {"on": "json_object", "off": "off"}  # the drill's two modes -> the provider's structured_output
GATED = ("rcp", "findings", "cons")  # with structured output on, at least VALID_FLOOR of these replies are valid
VALID_FLOOR = 0.9
MAX_MISSING_SHARE = 0.2  # the configs' validity floor (SPEC §1; the workbench's default)

# The provider's max_tokens; each call kind's own cap (a vote 160, a CONS ballot 320, an Echo recital
# 256, an RCP generation 512, an ARM trace its round's budget, 5000+) wins where it is smaller. A base
# model this small rambles to the cap when no schema holds it, so the cap bounds the drill's time.
DEFAULT_MAX_TOKENS = 256
PROTOCOL_MAX_TOKENS = {"arm": 512}  # an ARM trace is a larger JSON object than a vote
DEFAULT_RUN_TIMEOUT_S = 1500.0
SERVER_START_TIMEOUT_S = 180.0


# --- the server -----------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def normalise_url(url: str) -> str:
    """A server's OpenAI base URL, ending in /v1."""
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def served_models(api_base: str, timeout: float = 5.0) -> list[str]:
    """The model ids ``GET {api_base}/models`` lists (raises OSError when the server does not answer)."""
    with urllib.request.urlopen(api_base + "/models", timeout=timeout) as response:
        body = json.load(response)
    return [m.get("id") for m in body.get("data", []) if m.get("id")]


class Server:
    """llama-cpp-python's server on a free loopback port, in its own process group; a context
    manager that always stops it (Ctrl-C included)."""

    def __init__(self, model_path: Path = MODEL_PATH, python: Path | None = None, *, threads: int | None = None,
                 n_ctx: int = 4096, log_path: Path | None = None):
        self.model_path = Path(model_path)
        self.python = Path(python) if python else REAL_VENV / "bin" / "python"
        self.threads = threads or max(1, min(os.cpu_count() or 2, 4))
        self.n_ctx = n_ctx
        self.port = free_port()
        self.api_base = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = Path(log_path) if log_path else Path(tempfile.gettempdir()) / f"rwb-real-server-{self.port}.log"
        self.proc: subprocess.Popen | None = None
        self.start_s: float | None = None

    def command(self) -> list[str]:
        return [str(self.python), "-m", "llama_cpp.server", "--model", str(self.model_path),
                "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
                "--n_threads", str(self.threads), "--model_alias", MODEL_ALIAS, "--chat_format", "gemma"]

    def start(self, timeout_s: float = SERVER_START_TIMEOUT_S) -> str:
        if not self.python.exists():
            raise RuntimeError(f"{self.python} is missing: run `make real-model` to build .venv-real")
        if not self.model_path.exists():
            raise RuntimeError(f"{self.model_path} is missing: run `make real-model` to assemble the GGUF")
        t0 = time.monotonic()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")
        try:
            # A session of its own: Ctrl-C in the terminal does not reach it, and stop() ends its group.
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            log.close()
        deadline = t0 + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if MODEL_ALIAS in served_models(self.api_base, timeout=2.0):
                    self.start_s = time.monotonic() - t0
                    return self.api_base
            except (OSError, ValueError):
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the server did not answer /v1/models within {timeout_s:.0f} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue

    def __enter__(self) -> Server:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


# --- the run configurations ---------------------------------------------------------------------------

def provider(api_base: str, model: str, structured_output: str, max_tokens: int | None) -> dict[str, Any]:
    p = {"model": f"openai/{model}", "api_base": api_base, "max_concurrency": 1, "timeout_s": 120,
         "max_retries": 1, "structured_output": structured_output}
    if max_tokens is not None:
        p["max_tokens"] = max_tokens
    return p


def _agents(ids_personas: list[tuple[str, str]], **extra) -> list[dict[str, Any]]:
    return [{"id": i, "provider": "local", "persona": p, **extra} for i, p in ids_personas]


def protocol_config(protocol: str, prov: dict[str, Any], *, small: bool = False) -> dict[str, Any]:
    """A run configuration (SPEC §6) for one protocol on the provider ``local``."""
    base = {"seed": 7, "providers": {"local": prov}, "max_missing_share": MAX_MISSING_SHARE,
            "notes": "bench/real_model.py: the real-model drill (issue 19)"}
    if protocol in ("rcp", "echo"):
        advocates = [("a1", "Urban planner who favours walkable centres."), ("a2", "Public-health researcher."),
                     ("a3", "Shop owner on a pedestrian street.")]
        critics = [("c1", "Disability-access advocate."), ("c2", "Transport economist."),
                   ("c3", "Suburban commuter.")]
        size = 2 if (small or protocol == "echo") else 3
        cfg = {"protocol": "rcp", "label": f"Downtown cars ({protocol}, real model)",
               "query": "Should the city close its downtown to private cars?",
               "dispatch": "concurrent", "theta": 0.5, "tau": 0.6,
               "clusters": [{"name": "advocate", "agents": _agents(advocates[:size])},
                            {"name": "critic", "agents": _agents(critics[:size])}]}
        if protocol == "echo":
            cfg["echo"] = {"interval": 4, "project": "Downtown cars study",
                           "decisions": ["Votes are YES or NO with one reason"]}
        return {**base, **cfg}
    if protocol == "arm":
        return {**base, "protocol": "arm", "label": "ARM (real model)",
                "query": "Should an AI agent refuse an instruction it judges harmful but legal?",
                "dispatch": "sequential",
                "clusters": [{"name": "arm", "agents": [
                    {"id": "alpha", "provider": "local", "persona": "Deontological reasoner.", "role": "alpha"},
                    {"id": "beta", "provider": "local", "persona": "Consequentialist reasoner.", "role": "beta"},
                    {"id": "gamma", "provider": "local", "persona": "Reconciler.", "role": "gamma"},
                    {"id": "silent", "provider": "local", "persona": "Silent baseline.", "role": "silent"}]}]}
    if protocol == "findings":
        return {**base, "protocol": "findings", "label": "Consensus Server (real model)", "dispatch": "concurrent",
                "threshold": 0.6,
                "findings": [{"id": "f1", "claim": "Commit e8f2a91 in the auth-service repo implements OAuth2 login.",
                              "context": {"repo": "auth-service"}},
                             {"id": "f2", "claim": "The /api/v2/users endpoint returns 200 OK for anonymous requests."}],
                "clusters": [{"name": "crew", "agents": [
                    {"id": "scout", "provider": "local", "persona": "", "role": "scout"},
                    {"id": "auditor", "provider": "local", "persona": "", "role": "auditor"},
                    {"id": "dev", "provider": "local", "persona": "", "role": "dev"}]}]}
    if protocol in ANSWER_PROTOCOLS:  # one batch over the preset's items; the same three agents every time
        return {**base, "protocol": protocol, "label": f"Arithmetic ({protocol}, real model)", "dispatch": "concurrent",
                "agents": _agents([("m1", "A careful arithmetician."), ("m2", "A student checking each step."),
                                   ("m3", "A quick mental calculator.")]),
                "batch": {"name": f"Arithmetic, {protocol} (real model)", "dataset": "arithmetic.jsonl"}}
    if protocol == "cons":
        return {**base, "protocol": "cons", "label": "CONS (real model)",
                "query": "Should the codebase map be a single file or split per module?",
                "question_id": "CONS-001", "options": ["single file", "split per module"],
                "dispatch": "concurrent", "consensus_threshold": 0.8, "min_voters": 3, "max_challenge_rounds": 2,
                "clusters": [{"name": "reviewers",
                              "agents": _agents([(f"r{i}", f"Reviewer {i}.") for i in range(1, 6)])}]}
    raise ValueError(f"unknown protocol {protocol!r} (one of {', '.join(PROTOCOLS)})")


# --- one run ------------------------------------------------------------------------------------

@dataclass
class RunResult:
    protocol: str
    mode: str  # on | off
    structured_output: str
    exit_code: int | None = None  # None: timed out
    status: str | None = None
    run_id: str | None = None
    votes_expected: int | None = None
    votes_valid: int | None = None  # cast + abstained: a reply the parser accepted
    votes_invalid: int | None = None
    votes_failed: int | None = None
    missing_share: float | None = None
    valid_rate: float | None = None
    calls: int | None = None
    completion_tokens: int | None = None
    llm_seconds: float | None = None
    tokens_per_s: float | None = None
    flags: dict[str, int] | None = None  # None: not known (no quality flags in the summary or stats)
    # The arithmetic preset: items run, final answers correct, the agents' answers (correct,
    # readable: a number could be read, all).
    items: int | None = None
    answers_correct: int | None = None
    accuracy: float | None = None
    agent_answers: int | None = None
    agent_correct: int | None = None
    agent_readable: int | None = None
    wall_s: float | None = None
    duration_s: float | None = None
    project: str | None = None
    note: str = ""  # the refusal or error line, when there is one

    @property
    def misses_floor(self) -> bool:
        return self.missing_share is not None and self.missing_share > MAX_MISSING_SHARE


def rwb_command() -> list[str]:
    """The workbench's CLI in this interpreter (the locked .venv's when run by make)."""
    return [sys.executable, "-c", "import sys; from workbench.cli import main; sys.exit(main())"]


def _last_json_line(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def run_one(protocol: str, mode: str, api_base: str, model: str, workdir: Path, *,
            max_tokens: int | None = None, timeout_s: float = DEFAULT_RUN_TIMEOUT_S,
            small: bool = False, items: int = ARITHMETIC_ITEMS) -> RunResult:
    so = MODES[mode]
    if max_tokens is None:
        max_tokens = PROTOCOL_MAX_TOKENS.get(protocol, ARITHMETIC_MAX_TOKENS if protocol in ANSWER_PROTOCOLS
                                             else DEFAULT_MAX_TOKENS)
    elif max_tokens <= 0:
        max_tokens = None  # none from the provider: only the call kinds' own caps
    cfg = protocol_config(protocol, provider(api_base, model, so, max_tokens), small=small)
    cfg_path = workdir / f"{protocol}-{mode}.json"
    project = workdir / f"{protocol}-{mode}.rwb"
    cfg_path.write_text(json.dumps(cfg, indent=2))
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(REPO)}
    if protocol in ANSWER_PROTOCOLS:
        write_arithmetic(workdir / "arithmetic.jsonl", env, items)
        timeout_s *= items  # a batch of one run per item: the timeout is per run
    for stale in (project, Path(str(project) + "-wal"), Path(str(project) + "-shm")):
        stale.unlink(missing_ok=True)
    result = RunResult(protocol, mode, so, project=str(project))
    err_path = workdir / f"{protocol}-{mode}.stderr"
    t0 = time.monotonic()
    with open(err_path, "wb") as err:
        extra: list[str] = []
        if protocol == "cons":  # an escalated verdict asks the conductor: answered here, so the run ends
            decisions = workdir / "cons-decisions.json"
            decisions.write_text(json.dumps({"*": "Noted by the real-model drill; no one decided."}))
            extra = ["--decisions", str(decisions)]
        proc = subprocess.Popen([*rwb_command(), "run", str(cfg_path), "--project", str(project), *extra],
                                stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, cwd=workdir, env=env)
        try:
            out, _ = proc.communicate(timeout=timeout_s)
            result.exit_code = proc.returncode
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)  # rwb leaves the run resumable on Ctrl-C
            try:
                out, _ = proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            result.note = f"timed out after {timeout_s:.0f} s"
        except BaseException:  # Ctrl-C: the child got it too; make sure it is gone
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
            raise
    result.wall_s = time.monotonic() - t0
    stderr = err_path.read_text(errors="replace")
    # The reason behind an exit 1 to 4 is one line on stderr (SPEC §6): an error, or "rwb: run ... ended degraded: ...".
    errors = [ln for ln in stderr.splitlines() if ": error:" in ln or "Traceback" in ln]
    reasons = [ln for ln in stderr.splitlines() if ln.startswith("rwb")]
    if not result.note and (errors or (result.exit_code not in (0, None) and reasons)):
        result.note = (errors or reasons)[-1].strip()
    summary = _last_json_line(out.decode(errors="replace")) or {}
    if protocol in ANSWER_PROTOCOLS:
        fill_answers(result, summary, project)
        return result
    fill_from_summary(result, summary)
    if project.exists():
        fill_from_project(result, project)
        if result.flags is None:
            flags_from_stats(result, project, env)
    return result


def write_arithmetic(path: Path, env: dict[str, str], items: int = ARITHMETIC_ITEMS) -> None:
    """The preset's items, through the CLI (``rwb dataset arithmetic``), as a researcher makes them
    (the first ``items`` of the same seed: a shorter run asks the same first questions)."""
    proc = subprocess.run([*rwb_command(), "dataset", "arithmetic", "--n", str(items),
                           "--seed", str(ARITHMETIC_SEED)], capture_output=True, text=True, env=env, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"rwb dataset arithmetic failed: {proc.stderr.strip()}")
    path.write_text(proc.stdout, encoding="utf-8")


def fill_answers(result: RunResult, summary: dict, project: Path) -> None:
    """A batch of an answer protocol: its status (the batch's), the final answers' accuracy from
    its summary's ``scored``, and from the project the agents' answers, the valid replies (calls
    that left an answer) and tokens/s over every run of the batch."""
    result.status = summary.get("status")
    result.run_id = summary.get("batch_id")
    answers = (summary.get("scored") or {}).get("answers") or {}
    result.items = summary.get("runs")
    if answers:
        result.answers_correct = answers.get("correct")
        result.accuracy = answers.get("accuracy")
    if not project.exists():
        return
    db = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    try:
        counts = dict(db.execute("SELECT coalesce(score, 'none'), COUNT(*) FROM artifacts GROUP BY 1").fetchall())
        result.agent_answers = sum(counts.values())
        result.agent_correct = counts.get("correct", 0)
        result.agent_readable = counts.get("correct", 0) + counts.get("incorrect", 0)
        calls = dict(db.execute("SELECT status, COUNT(*) FROM llm_calls GROUP BY 1").fetchall())
        result.calls = sum(calls.values())
        result.votes_expected = result.calls  # each call is one agent's answer
        result.votes_valid = result.agent_answers
        result.votes_invalid = calls.get("invalid", 0)
        result.votes_failed = result.calls - calls.get("ok", 0) - result.votes_invalid
        result.valid_rate = result.votes_valid / result.calls if result.calls else None
        tokens, latency = db.execute(
            "SELECT SUM(completion_tokens), SUM(latency_ms) FROM llm_calls WHERE simulated = 0 AND cached = 0 "
            "AND completion_tokens IS NOT NULL AND latency_ms IS NOT NULL").fetchone()
        if tokens is not None and latency:
            result.completion_tokens = int(tokens)
            result.tokens_per_s = tokens / (latency / 1000.0)
    finally:
        db.close()


def fill_from_summary(result: RunResult, summary: dict) -> None:
    result.status = summary.get("status", result.status)
    result.run_id = summary.get("run_id", result.run_id)
    result.duration_s = summary.get("duration_s")
    result.calls = summary.get("calls")
    if "votes_expected" in summary:
        result.votes_expected = summary["votes_expected"]
        result.votes_invalid = summary.get("votes_invalid")
        result.votes_failed = summary.get("votes_failed")
        result.votes_valid = (summary.get("votes_cast") or 0) + (summary.get("votes_abstained") or 0)
        result.missing_share = summary.get("missing_share")
    flags = summary.get("quality_flags")
    if flags is not None:
        result.flags = count_flags(flags)


def count_flags(flags: Any) -> dict[str, int]:
    """Quality flags in whatever shape they are stored: {kind: count}, {kind: [items]}, [{kind: ...}], [kind]."""
    counts: dict[str, int] = {}
    if isinstance(flags, dict):
        for kind, value in flags.items():
            if isinstance(value, bool):
                n = int(value)
            elif isinstance(value, (int, float)):
                n = int(value)
            elif isinstance(value, (list, dict)):
                n = len(value)
            else:
                n = 1 if value else 0
            if n:
                counts[str(kind)] = counts.get(str(kind), 0) + n
    elif isinstance(flags, list):
        for item in flags:
            kind = item.get("kind") or item.get("flag") or item.get("type") if isinstance(item, dict) else item
            if kind:
                counts[str(kind)] = counts.get(str(kind), 0) + 1
    return counts


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in db.execute(f"PRAGMA table_info({table})")]


def fill_from_project(result: RunResult, project: Path) -> None:
    """Tokens/s from llm_calls, and the votes when the summary lacked them."""
    db = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    try:
        run_id = result.run_id
        if run_id is None:
            row = db.execute("SELECT id, status FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()
            if row is None:
                return
            run_id, result.status = row[0], result.status or row[1]
            result.run_id = run_id
        tokens, latency = db.execute(
            "SELECT SUM(completion_tokens), SUM(latency_ms) FROM llm_calls WHERE run_id = ? AND simulated = 0 "
            "AND cached = 0 AND completion_tokens IS NOT NULL AND latency_ms IS NOT NULL", (run_id,)).fetchone()
        if tokens is not None and latency:
            result.completion_tokens = int(tokens)
            result.llm_seconds = latency / 1000.0
            result.tokens_per_s = tokens / (latency / 1000.0)
        if result.votes_expected is None:
            _votes_from_project(result, db, run_id)
        if result.votes_expected and result.votes_valid is not None:
            result.valid_rate = result.votes_valid / result.votes_expected
    finally:
        db.close()


_VOTE_TABLES = {"rcp": ("votes", "status"), "echo": ("votes", "status"),
                "findings": ("finding_votes", "status"), "cons": ("cons_ballots", "status")}


def _votes_from_project(result: RunResult, db: sqlite3.Connection, run_id: str) -> None:
    table, col = _VOTE_TABLES.get(result.protocol, ("", ""))
    if table and col in _columns(db, table) and "run_id" in _columns(db, table):
        rows = dict(db.execute(f"SELECT {col}, COUNT(*) FROM {table} WHERE run_id = ? GROUP BY 1", (run_id,)).fetchall())
        result.votes_expected = sum(rows.values())
        result.votes_valid = sum(n for s, n in rows.items() if s in ("valid", "abstained", "cast"))
        result.votes_invalid = rows.get("invalid", 0)
        result.votes_failed = rows.get("failed", 0) + rows.get("missing", 0)
    else:  # ARM (a trace per call), or an unknown layout: count the calls that had to reply in JSON
        purposes = {"arm": ("trace",)}.get(result.protocol, ("vote", "finding_vote", "ballot"))
        marks = ",".join("?" * len(purposes))
        rows = dict(db.execute(f"SELECT status, COUNT(*) FROM llm_calls WHERE run_id = ? AND purpose IN ({marks}) "
                               "GROUP BY 1", (run_id, *purposes)).fetchall())
        result.votes_expected = sum(rows.values())
        result.votes_valid = rows.get("ok", 0)
        result.votes_invalid = rows.get("invalid", 0)
        result.votes_failed = result.votes_expected - result.votes_valid - result.votes_invalid
    if result.votes_expected:
        result.missing_share = (result.votes_invalid + result.votes_failed) / result.votes_expected


def flags_from_stats(result: RunResult, project: Path, env: dict[str, str]) -> None:
    """The reply quality flags (template echo, cut at cap, rubber stamp) of the run, as
    ``rwb providers stats --project FILE --run ID --json`` counts them; left None when the command
    is missing or fails."""
    if result.run_id is None:
        return
    proc = subprocess.run([*rwb_command(), "providers", "stats", "--project", str(project), "--run", result.run_id,
                           "--json"], capture_output=True, text=True, env=env, timeout=120)
    if proc.returncode != 0:
        return
    try:
        rows = json.loads(proc.stdout)
    except ValueError:
        return
    flags: dict[str, int] = {}
    for row in rows if isinstance(rows, list) else []:
        for kind, n in count_flags(row.get("flags") or {}).items():
            flags[kind] = flags.get(kind, 0) + n
    result.flags = flags


# --- the drill ---------------------------------------------------------------------------------

def run_drill(api_base: str, *, protocols=PROTOCOLS, modes=("on", "off"), workdir: Path | None = None,
              model: str | None = None, max_tokens: int | None = None,
              timeout_s: float = DEFAULT_RUN_TIMEOUT_S, small: bool = False, items: int = ARITHMETIC_ITEMS,
              progress=print) -> list[RunResult]:
    workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="rwb-real-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if model is None:
        models = served_models(api_base)
        model = MODEL_ALIAS if MODEL_ALIAS in models else (models[0] if models else MODEL_ALIAS)
    results = []
    # Every protocol with structured output on first (the gated figures come early), then off;
    # each result is written to results.json as it comes, so an interrupted drill keeps what it made.
    for mode in modes:
        for protocol in protocols:
            if progress:
                progress(f"[drill] {protocol} structured output {mode} ({MODES[mode]}) ...")
            r = run_one(protocol, mode, api_base, model, workdir, max_tokens=max_tokens, timeout_s=timeout_s,
                        small=small, items=items)
            if progress:
                progress(f"[drill]   exit {r.exit_code}, {r.status}, valid {_rate(r)}, {_num(r.tokens_per_s, '.1f')} "
                         f"tokens/s, {_num(r.wall_s)} s" + (f"  ({r.note})" if r.note else ""))
            results.append(r)
            (workdir / "results.json").write_text(json.dumps([asdict(x) for x in results], indent=2))
    order = {p: i for i, p in enumerate((*PROTOCOLS, *ANSWER_PROTOCOLS))}
    return sorted(results, key=lambda x: (order.get(x.protocol, 99), x.mode != "on"))


def check(results: list[RunResult]) -> list[str]:
    """The drill's verdict: one line per failure (none: it passed)."""
    failures = []
    for r in results:
        where = f"{r.protocol}/{r.mode}"
        if r.exit_code is None or r.exit_code == 2 or r.status is None:
            failures.append(f"{where}: no result ({r.note or f'exit {r.exit_code}'})")
            continue
        if r.protocol in ANSWER_PROTOCOLS:
            continue  # the preset reports how a small model does; only a batch that could not run fails it
        if r.misses_floor and r.status == "completed":
            failures.append(f"{where}: {r.missing_share:.0%} of the votes missing (floor {MAX_MISSING_SHARE:.0%}) "
                            "but the run ended completed, not degraded")
        if r.status == "degraded" and r.exit_code != 3:
            failures.append(f"{where}: degraded but rwb run exited {r.exit_code}, not 3")
        if r.mode == "on" and r.protocol in GATED:
            if r.valid_rate is None or r.valid_rate < VALID_FLOOR:
                failures.append(f"{where}: {_rate(r)} valid with structured output, under {VALID_FLOOR:.0%}")
    return failures


# --- output -------------------------------------------------------------------------------------

def _num(v: float | None, fmt: str = ".0f") -> str:
    return "-" if v is None else format(v, fmt)


def _rate(r: RunResult) -> str:
    if r.votes_expected is None:
        return "-"
    if not r.votes_expected:
        return "0/0"
    return f"{r.votes_valid}/{r.votes_expected} ({r.valid_rate:.0%})" if r.valid_rate is not None else f"?/{r.votes_expected}"


def _flags(r: RunResult) -> str:
    if r.flags is None:
        return "n/a"
    return ", ".join(f"{k} {n}" for k, n in sorted(r.flags.items())) or "none"


def table(results: list[RunResult]) -> str:
    header = ["protocol", "structured output", "exit", "status", "valid replies", "invalid", "failed",
              "quality flags", "tokens/s", "wall s"]
    rows = [[r.protocol, f"{r.mode} ({r.structured_output})", "timeout" if r.exit_code is None else str(r.exit_code),
             r.status or "-", _rate(r), _num(r.votes_invalid, "d"), _num(r.votes_failed, "d"), _flags(r),
             _num(r.tokens_per_s, ".1f"), _num(r.wall_s)] for r in results]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(header)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def _share(n: int | None, of: int | None) -> str:
    if n is None or not of:
        return "-"
    return f"{n}/{of} ({n / of:.0%})"


def answers_table(results: list[RunResult]) -> str:
    """The arithmetic preset's table: accuracy per protocol, beside what it rests on."""
    header = ["protocol", "structured output", "exit", "status", "accuracy (final answers)", "agents' answers correct",
              "a number read", "valid replies", "tokens/s", "wall s"]
    rows = [[r.protocol, f"{r.mode} ({r.structured_output})", "timeout" if r.exit_code is None else str(r.exit_code),
             r.status or "-", _share(r.answers_correct, r.items), _share(r.agent_correct, r.agent_answers),
             _share(r.agent_readable, r.agent_answers), _share(r.votes_valid, r.calls), _num(r.tokens_per_s, ".1f"),
             _num(r.wall_s)] for r in results]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(header)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"date": time.strftime("%Y-%m-%d %H:%M %Z"), "cpu": cpu, "cpus": os.cpu_count(),
            "platform": platform.platform(), "python": platform.python_version()}


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", choices=("drill", "arithmetic"), default="drill",
                    help="drill: every protocol (default); arithmetic: single, vote and debate over "
                         f"{ARITHMETIC_ITEMS} arithmetic items, with their accuracy")
    ap.add_argument("--only", action="append", choices=(*PROTOCOLS, *ANSWER_PROTOCOLS), metavar="PROTOCOL",
                    help=f"run only this protocol (repeatable; one of {', '.join((*PROTOCOLS, *ANSWER_PROTOCOLS))})")
    ap.add_argument("--modes", help="structured output modes to run: on, off or on,off (the drill's default; the "
                                    "arithmetic preset's is off: its replies are free text either way)")
    ap.add_argument("--server-url", help="use this running OpenAI-compatible server instead of starting one")
    ap.add_argument("--model", help="the model id on --server-url (default: gemma3-270m, or the first it lists)")
    ap.add_argument("--model-path", type=Path, default=MODEL_PATH, help="the GGUF to serve")
    ap.add_argument("--real-venv", type=Path, default=REAL_VENV, help="the venv holding llama-cpp-python[server]")
    ap.add_argument("--threads", type=int, help="server threads (default: the CPU count, at most 4)")
    ap.add_argument("--n-ctx", type=int, default=4096, help="the server's context window (default 4096)")
    ap.add_argument("--max-tokens", type=int,
                    help=f"the provider's max_tokens for every protocol (default {DEFAULT_MAX_TOKENS}, ARM "
                         f"{PROTOCOL_MAX_TOKENS['arm']}; 0: none, only each call kind's own cap)")
    ap.add_argument("--items", type=int, default=ARITHMETIC_ITEMS,
                    help=f"the arithmetic preset's items (default {ARITHMETIC_ITEMS}; fewer on a slow or busy machine)")
    ap.add_argument("--small", action="store_true", help="RCP with 2 clusters x 2 agents instead of 2 x 3")
    ap.add_argument("--run-timeout", type=float, default=DEFAULT_RUN_TIMEOUT_S,
                    help="seconds per run (the arithmetic preset's batches: per item)")
    ap.add_argument("--workdir", type=Path, help="where configs and projects go (default: a new temp folder)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    args = ap.parse_args(argv)

    arithmetic_preset = args.preset == "arithmetic"
    modes = tuple(m.strip() for m in (args.modes or ("off" if arithmetic_preset else "on,off")).split(",") if m.strip())
    if not modes or any(m not in MODES for m in modes):
        ap.error("--modes takes on, off or on,off")
    if args.items < 1:
        ap.error("--items takes a whole number of at least 1")
    protocols = tuple(args.only) if args.only else (ANSWER_PROTOCOLS if arithmetic_preset else PROTOCOLS)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="rwb-real-"))
    workdir.mkdir(parents=True, exist_ok=True)
    log = (lambda *a: print(*a, file=sys.stderr, flush=True)) if args.json else (lambda *a: print(*a, flush=True))

    server = None
    # SIGTERM (a CI runner, `timeout`) behaves as Ctrl-C: the finally below stops the server.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if args.server_url:
            api_base = normalise_url(args.server_url)
            try:
                served_models(api_base)
            except (OSError, ValueError) as exc:
                print(f"real_model: {api_base}/models does not answer: {exc}", file=sys.stderr)
                return 2
            server_info = {"url": api_base, "started_by_drill": False}
        else:
            server = Server(args.model_path, args.real_venv / "bin" / "python", threads=args.threads,
                            n_ctx=args.n_ctx, log_path=workdir / "server.log")
            log(f"[drill] starting {' '.join(server.command())}")
            try:
                api_base = server.start()
            except RuntimeError as exc:
                print(f"real_model: {exc}", file=sys.stderr)
                return 2
            log(f"[drill] server ready at {api_base} in {server.start_s:.1f} s (log: {server.log_path})")
            server_info = {"url": api_base, "started_by_drill": True, "start_s": round(server.start_s, 1),
                           "threads": server.threads, "model_path": str(args.model_path)}
        log(f"[drill] configs and projects in {workdir}")
        t0 = time.monotonic()
        results = run_drill(api_base, protocols=protocols, modes=modes, workdir=workdir, model=args.model,
                            max_tokens=args.max_tokens, timeout_s=args.run_timeout, small=args.small,
                            items=args.items, progress=log)
        total_s = time.monotonic() - t0
    except KeyboardInterrupt:
        print("real_model: interrupted (the run in progress stays resumable in its project)", file=sys.stderr)
        return 130
    finally:
        if server is not None:
            server.stop()

    failures = check(results)
    if args.json:
        print(json.dumps({"machine": machine(), "server": server_info, "workdir": str(workdir),
                          "total_s": round(total_s, 1), "results": [asdict(r) | {"misses_floor": r.misses_floor}
                                                                   for r in results],
                          "failures": failures, "passed": not failures}, indent=2))
    else:
        m = machine()
        print(f"\nReal-model drill, {m['date']}, {m['cpu']} ({m['cpus']} CPUs), {m['platform']}; "
              f"server {server_info['url']}; total {total_s:.0f} s")
        drill = [r for r in results if r.protocol not in ANSWER_PROTOCOLS]
        answered = [r for r in results if r.protocol in ANSWER_PROTOCOLS]
        if drill:
            print(table(drill))
        if answered:
            print(f"\nArithmetic preset: {args.items} items (rwb dataset arithmetic --n {args.items} --seed "
                  f"{ARITHMETIC_SEED}), three agents, debate over 2 rounds; max_tokens "
                  f"{args.max_tokens or ARITHMETIC_MAX_TOKENS}")
            print(answers_table(answered))
        notes = [f"- {r.protocol}/{r.mode}: {r.note}" for r in results if r.note]
        if notes:
            print("\nNotes:\n" + "\n".join(notes))
        print("\nPASSED" if not failures else "\nFAILED:\n" + "\n".join(f"- {f}" for f in failures))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
