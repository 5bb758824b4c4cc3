"""Fault drill, kill and resume (issue 17): SIGKILL three writers at random moments, 20 times in all.

    .venv/bin/python bench/drill_kill_resume.py [--quick] [--json] [--seed N]

Writers, each a real ``rwb`` process (litellm's cost map kept local):

- **run**: ``rwb run`` of a simulated RCP run (sample_runs/rcp-sim.json widened to 18 agents:
  324 calls; ``--quick``: 12 agents, 144 calls), ``dispatch: sequential`` (each call committed on
  its own, so a kill can land anywhere in the run), seed ``--seed``; finished with
  ``rwb resume RUN_ID``;
- **batch**: ``rwb run`` of a batch of that run (10 agents, 2 questions x 2 replicates: 4 runs,
  400 calls; ``--quick``: 8 agents, 1 question x 2 replicates, 128 calls), ``dispatch:
  concurrent`` (calls that end together committed in one group); finished with ``rwb resume BATCH_ID``;
- **ARM import**: ``rwb arm import`` of every trace of ../shared/corpus/arm-protocol
  (traces/ and traces-v1.1/) into a new project; finished by running the same import again. When
  the corpus is absent this writer is skipped (a row says so) and its kills go to the other two.

Kills: 8 run, 6 batch, 6 import (``--quick``: 2 each). They come in *chains*: a fresh project,
the writer killed, then its resume killed too, 1 to 3 kills in a row, and only then a resume left
to finish. So a run is often killed two or three times before it completes, and the later kills
land inside resumes. Each kill waits until a random share of the remaining work is on disk (calls
recorded for a run or batch, ARM files committed for an import), then a random 0-5 ms more, then
``SIGKILL``. (The poll reads without waiting and retries at once when the writer holds its lock,
which it does most of the time, so a kill lands within a call or two of its target.) An attempt
whose process had already exited, or had done all its work (killed while only exiting), is not
counted as a kill: the chain ends there, and more chains are made until the quota is met. The plan
(chain lengths, targets, delays) comes from ``random.Random(--seed)``; where each kill lands still
depends on the machine's timing, and the table gives the range.

After every kill: the project is opened with ``Store.open`` (which rolls back a hot journal and
reports it: a hot journal is one a read-only probe could not read past), ``PRAGMA integrity_check``
must say ok, and what is committed must be part of the uninterrupted outcome (every artifact,
vote and recorded call is one the uninterrupted run has, no call twice; an imported ARM run is
there with all its traces or not at all). After the chain's last resume: its exit code must be 0
and every run ``completed`` (an import: the reference import's exit code), ``integrity_check`` ok
again, and the final content equal to an uninterrupted reference made with the same seed on a
fresh project: for runs and batches, per run in creation order, the label, seed, status, the
artifacts, the votes (artifact, voter, value, status, reason, raw reply), the ok calls
(step key, agent, purpose, reply) and the summary (tiers, scores, counts) less its run id,
``duration_s`` and ``resumed_calls``; for the import, the runs, rounds and traces as
workbench/core/project/compare.py normalises them (timestamps, run ids and fence tokens masked).
compare.py's whole-file comparison is not used for runs: it goes row by row in rowid order, and a
concurrent run (a killed one all the more) records its calls in another order each time.
A resume "did not complete" when the finishing resume's exit code or a run's final status is wrong,
or when a writer or resume exited by itself without completing (the ones the drill killed do not
count). A file that fails its check after a kill is not resumed.

Figures: kills made (target: the planned count), integrity_check not ok (target 0), resumes that
did not complete (target 0), final state differing from the uninterrupted one (target 0), state at
a kill outside the uninterrupted one (target 0), hot journals recovered, time to reopen after a
kill, and the wall time of the resumes that finished. Exits non-zero when a target is missed.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from _figures import Figure, emit

GROUP = "Fault drills"
CORPUS = REPO.parent / "shared" / "corpus" / "arm-protocol"
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
MAX_CHAIN = 3  # kills in a row on one project before a resume may finish it
JITTER_S = 0.005  # after the target amount of work is on disk
PROCESS_TIMEOUT_S = 300
SUMMARY_NOISE = ("duration_s", "resumed_calls", "run_id")  # differ between two faithful runs


# ----- the configurations ------------------------------------------------------------------------
def panel(agents: int, seed: int) -> dict:
    """sample_runs/rcp-sim.json with ``agents`` agents (half per cluster), its personas and
    parameters cycled, every agent id distinct."""
    data = json.loads((REPO / "sample_runs" / "rcp-sim.json").read_text())
    data["seed"] = seed
    sizes = (agents // 2, agents - agents // 2)
    for cluster, size in zip(data["clusters"], sizes):
        base = cluster["agents"]
        cluster["agents"] = []
        for i in range(size):
            agent = copy.deepcopy(base[i % len(base)])
            agent["id"] = f"{agent['id']}-{i // len(base)}"
            cluster["agents"].append(agent)
    return data


def batch_of(agents: int, seed: int, questions: list[str], replicates: int) -> dict:
    return {**panel(agents, seed), "label": "kill drill batch",
            "batch": {"name": "kill drill", "questions": questions, "replicates": replicates}}


# ----- reading a project (never waiting on the writer) -----------------------------------------------
def scalar(project: Path, sql: str, params: tuple = ()) -> int | None:
    """One number from a read-only connection that never waits (the writer's lock would hold the
    poll back, and the kill with it); None while the file is absent, locked or mid-write."""
    if not project.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True, timeout=0)
        try:
            return conn.execute(sql, params).fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def select(project: Path, sql: str, params: tuple = ()) -> list[tuple]:
    """Rows, read only: a hot journal is for ``Store.open`` to roll back, not for a reader here."""
    conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def check_integrity(project: Path) -> str:
    try:
        rows = select(project, "PRAGMA integrity_check")
    except sqlite3.Error as exc:
        return f"{type(exc).__name__}: {exc}"
    return "ok" if rows == [("ok",)] else "; ".join(str(r[0]) for r in rows[:3])


def masked(value):
    from workbench.core.project.compare import TIME_MASK, TIMESTAMP
    from workbench.core.protocols.shared.fencing import mask_fences

    return TIMESTAMP.sub(TIME_MASK, mask_fences(value)) if isinstance(value, str) else value


def run_content(project: Path, run_id: str) -> dict:
    """What a finished run must hold, in a form two projects can compare (no ids, no times)."""
    label, seed, status, summary = select(project, "SELECT label, seed, status, summary_json FROM runs WHERE id = ?",
                                          (run_id,))[0]
    summary = {k: v for k, v in json.loads(summary or "{}").items() if k not in SUMMARY_NOISE}
    artifacts = select(project, "SELECT key, author_agent, author_cluster, content FROM artifacts WHERE run_id = ?",
                       (run_id,))
    votes = select(project, "SELECT a.key, v.voter_agent, v.value, v.status, v.reason, v.raw FROM votes v "
                            "JOIN artifacts a ON a.id = v.artifact_id WHERE v.run_id = ?", (run_id,))
    calls = select(project, "SELECT step_key, agent_id, purpose, status, reply_text FROM llm_calls "
                            "WHERE run_id = ? AND status IN ('ok', 'invalid')", (run_id,))
    rounds = select(project, "SELECT idx, kind, status FROM rounds WHERE run_id = ?", (run_id,))
    return {"label": label, "seed": seed, "status": status, "summary": json.loads(masked(json.dumps(summary))),
            "rounds": sorted(rounds), "artifacts": sorted(tuple(map(masked, r)) for r in artifacts),
            "votes": sorted(tuple(map(masked, r)) for r in votes),
            "calls": sorted(tuple(map(masked, r)) for r in calls)}


def within(part: dict, whole: dict) -> str | None:
    """Why the rows committed at a kill are not part of the finished reference run (None: they are)."""
    twice = Counter(c[0] for c in part["calls"]) - Counter(c[0] for c in whole["calls"])
    if twice:
        return f"{part['label']}: a call recorded more often than in the uninterrupted run: {sorted(twice)[0]}"
    for name in ("artifacts", "votes", "calls"):
        extra = set(part[name]) - set(whole[name])
        if extra:
            return (f"{part['label']}: {len(extra)} {name} the uninterrupted run does not have, "
                    f"e.g. {sorted(extra)[0]!r:.120}")
    return None


def difference(got, want) -> str | None:
    """The first way a finished outcome differs from the uninterrupted one (None: the same). An
    outcome is one run's content, or a list of them (a batch's, in creation order)."""
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"{len(got)} runs, not {len(want)}"
        return next((why for g, w in zip(got, want) if (why := difference(g, w))), None)
    return next((f"{want.get('label')}: {key} differs" for key in want if got.get(key) != want[key]), None)


# ----- the writers ------------------------------------------------------------------------------------
class Writer:
    """One kind of writer: how to start it and resume it, how much of its work is on disk, and
    its outcome."""

    name = ""
    id_first = True  # the process prints the run (batch) id as its first stdout line

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.total = 0  # units of work (calls recorded, files imported) of an uninterrupted run
        self.expected = None
        self.reference_code = 0

    def prepare(self, project: Path) -> None:
        pass

    def start_args(self, project: Path) -> list[str]:
        raise NotImplementedError

    def resume_args(self, project: Path, ident: str | None) -> list[str]:
        raise NotImplementedError

    def poll(self, project: Path, ident: str | None) -> int | None:
        """The work on disk, read without waiting (None: not readable right now)."""
        raise NotImplementedError

    def complete(self, project: Path, ident: str | None) -> bool:
        raise NotImplementedError

    def content(self, project: Path, ident: str | None):
        raise NotImplementedError

    def partial_problem(self, project: Path, ident: str | None) -> str | None:
        raise NotImplementedError

    def on_disk(self, project: Path, ident: str | None) -> int:
        return self.poll(project, ident) or 0

    def finished_ok(self, code: int, project: Path, ident: str | None) -> bool:
        return code == self.reference_code and self.complete(project, ident)

    def make_reference(self) -> None:
        project = self.tmp / f"reference-{self.name.replace(' ', '-')}.rwb"
        self.prepare(project)
        proc = Proc(self.start_args(project), project.with_suffix(""))
        code = proc.wait(PROCESS_TIMEOUT_S)
        ident = first_line(proc) if self.id_first else None
        if code not in (0, 2) or (self.id_first and not ident):
            raise SystemExit(f"the uninterrupted {self.name} failed (exit {code}): {proc.err_tail()}")
        self.reference_code = code
        self.total = self.on_disk(project, ident)
        self.expected = self.content(project, ident)
        if not self.complete(project, ident) or self.total < 4:
            raise SystemExit(f"the uninterrupted {self.name} did not complete ({self.total} units)")


class RunWriter(Writer):
    name = "run"
    calls_sql = "SELECT count(*) FROM llm_calls WHERE run_id = ?"

    def __init__(self, tmp: Path, config: dict):
        super().__init__(tmp)
        self.config = tmp / f"{self.name}.json"
        self.config.write_text(json.dumps(config))

    def start_args(self, project):
        return ["run", str(self.config), "--project", str(project), "--quiet"]

    def resume_args(self, project, ident):
        return ["resume", ident, "--project", str(project), "--quiet"]

    def run_ids(self, project: Path, ident: str | None) -> list[str]:
        return [ident] if ident else []

    def poll(self, project, ident):
        return scalar(project, self.calls_sql, (ident,)) if ident else 0

    def complete(self, project, ident):
        runs = self.content(project, ident)
        return len(runs) == len(self.expected or runs) and all(r["status"] == "completed" for r in runs)

    def content(self, project, ident):
        return [run_content(project, r) for r in self.run_ids(project, ident)]

    def partial_problem(self, project, ident):
        want = {(r["label"], r["seed"]): r for r in self.expected}
        for part in self.content(project, ident):
            whole = want.get((part["label"], part["seed"]))
            why = (f"a run the uninterrupted one does not have: {part['label']}" if whole is None
                   else within(part, whole))
            if why:
                return why
        return None


class BatchWriter(RunWriter):
    name = "batch"
    calls_sql = "SELECT count(*) FROM llm_calls WHERE run_id IN (SELECT id FROM runs WHERE batch_id = ?)"

    def run_ids(self, project, ident):
        if not ident:
            return []
        return [r for (r,) in select(project, "SELECT id FROM runs WHERE batch_id = ? ORDER BY rowid", (ident,))]


class ImportWriter(Writer):
    name = "ARM import"
    id_first = False

    def __init__(self, tmp: Path, files: list[Path]):
        super().__init__(tmp)
        self.files = files

    def prepare(self, project):
        from workbench.core.project.store import Store

        Store.create(project).close_connection()

    def start_args(self, project):
        return ["arm", "import", *map(str, self.files), "--project", str(project)]

    def resume_args(self, project, ident):
        return self.start_args(project)  # an import is finished by importing again

    def poll(self, project, ident):
        return scalar(project, "SELECT count(*) FROM runs WHERE source = 'import'")

    def complete(self, project, ident):
        return self.on_disk(project, ident) == self.total

    def runs_with_traces(self, project: Path) -> set[tuple]:
        return set(select(project, "SELECT r.id, json_extract(r.provenance_json, '$.sha256'), "
                                   "(SELECT count(*) FROM traces t WHERE t.run_id = r.id), "
                                   "(SELECT count(*) FROM rounds d WHERE d.run_id = r.id) "
                                   "FROM runs r WHERE r.source = 'import'"))

    def content(self, project, ident):
        from workbench.core.project.compare import table_rows

        tables = table_rows(project)
        return {"label": "ARM import", **{t: tables[t] for t in ("runs", "rounds", "traces")},
                "runs with traces": sorted(self.runs_with_traces(project))}

    def partial_problem(self, project, ident):
        extra = self.runs_with_traces(project) - set(self.expected["runs with traces"])
        return f"a partly imported run (or one not in the reference): {sorted(extra)[0]}" if extra else None


# ----- processes ------------------------------------------------------------------------------------
class Proc:
    """An ``rwb`` process whose stdout and stderr go to files (a pipe could fill and block it)."""

    def __init__(self, args: list[str], stem: Path):
        self.out_path, self.err_path = stem.with_suffix(".out"), stem.with_suffix(".err")
        self.started = time.perf_counter()
        with self.out_path.open("w") as out, self.err_path.open("w") as err:
            self.popen = subprocess.Popen([sys.executable, "-m", "workbench", *args], cwd=REPO, stdout=out,
                                          stderr=err, env=ENV)

    def wait(self, timeout: float) -> int:
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(30)
            return -999

    def err_tail(self) -> str:
        return self.err_path.read_text(errors="replace").strip()[-400:]


def first_line(proc: Proc, timeout_s: float = 120) -> str | None:
    """The process's first stdout line (a run or batch id), once it is there."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = proc.out_path.read_text(errors="replace")
        if "\n" in text:
            return text.split("\n", 1)[0].strip() or None
        if proc.popen.poll() is not None:
            return None
        time.sleep(0.005)
    return None


def hot_journal(project: Path) -> bool:
    """Whether a killed writer left a journal that must be rolled back before anything can read."""
    try:
        conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
        try:
            conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
        finally:
            conn.close()
        return False
    except sqlite3.OperationalError:
        return True


# ----- the drill ------------------------------------------------------------------------------------
@dataclass
class Tally:
    kills: int = 0
    attempts_ended_early: int = 0
    chains: int = 0
    hot: int = 0
    recovered: int = 0
    not_ok: list[str] = field(default_factory=list)  # integrity_check (or opening) failed
    unfinished: list[str] = field(default_factory=list)  # a resume that did not complete
    differing: list[str] = field(default_factory=list)  # final state != the uninterrupted one
    partial: list[str] = field(default_factory=list)  # state at a kill outside the uninterrupted one
    errors: list[str] = field(default_factory=list)  # a chain the drill could not carry through
    landed: list[float] = field(default_factory=list)  # share of the work on disk at each kill
    reopen_s: list[float] = field(default_factory=list)
    resume_s: list[float] = field(default_factory=list)
    checks: int = 0


def reopen(writer: Writer, project: Path, ident: str | None, tally: Tally, where: str) -> bool:
    """After a kill: Store.open (hot journal rolled back), integrity_check, and the committed rows
    checked against the uninterrupted outcome. False when the file is not sound."""
    from workbench.core.project.store import Store

    started = time.perf_counter()
    hot = hot_journal(project)
    try:
        store = Store.open(project)
        recovered = store.report.recovered is not None
        store.close_connection()
        verdict = check_integrity(project)
    except Exception as exc:  # noqa: BLE001 - a project that cannot be opened is the failure measured
        recovered, verdict = False, f"Store.open: {type(exc).__name__}: {exc}"
    tally.reopen_s.append(time.perf_counter() - started)
    tally.checks += 1
    tally.hot += hot
    tally.recovered += recovered
    if verdict == "ok" and hot_journal(project):
        verdict = "still unreadable after Store.open (a hot journal left)"
    if verdict != "ok":
        tally.not_ok.append(f"{where}: {verdict}")
        return False
    why = writer.partial_problem(project, ident)
    if why:
        tally.partial.append(f"{where}: {why}")
    return True


def kill_at_random(writer: Writer, project: Path, proc: Proc, ident: str | None, target: int, delay: float) -> bool:
    """Wait until ``target`` units are on disk, then ``delay`` more, then SIGKILL. False when the
    process ended first."""
    deadline = time.monotonic() + 120
    while proc.popen.poll() is None and time.monotonic() < deadline:
        now = writer.poll(project, ident)
        if now is not None and now >= target:
            break
        # the writer holds its lock most of the time: a poll that found it locked retries at
        # once, or the count would be seen in jumps and the kill land late
        time.sleep(0.001 if now is not None else 0.0003)
    time.sleep(delay)
    if proc.popen.poll() is not None:
        return False
    proc.popen.send_signal(signal.SIGKILL)
    proc.wait(30)
    return True


def chain(writer: Writer, project: Path, kills_wanted: int, rng: random.Random, tally: Tally, label: str) -> int:
    """One project: the writer, killed, then its resume, killed, ... ``kills_wanted`` times at
    most, then a resume left to finish. Returns the kills made."""
    writer.prepare(project)
    ident, kills = None, 0
    for n in range(kills_wanted):
        done = writer.on_disk(project, ident)
        if writer.total - done < 2:
            break  # too little left to land a kill inside the work
        target = done + rng.randint(1, writer.total - done - 1)
        delay = rng.uniform(0.0, JITTER_S)
        proc = Proc(writer.start_args(project) if n == 0 else writer.resume_args(project, ident),
                    project.with_name(f"{project.stem}-{n}"))
        if writer.id_first:
            ident = ident or first_line(proc)
            if not ident:
                code = proc.wait(PROCESS_TIMEOUT_S)
                tally.unfinished.append(f"{label}: exit {code} before it printed an id: {proc.err_tail()}")
                return kills
        killed = kill_at_random(writer, project, proc, ident, target, delay)
        recovered_before = tally.recovered
        sound = reopen(writer, project, ident, tally, f"{label} kill {n + 1}")
        if not killed or writer.complete(project, ident):  # it ended before the kill: not a kill
            tally.attempts_ended_early += 1
            code = proc.wait(30)
            if not killed and not writer.finished_ok(code, project, ident):
                tally.unfinished.append(f"{label}: process {n} exited {code} by itself: {proc.err_tail()}")
            print(f"  {label}: process {n} " + ("had done all its work at the kill" if killed else
                                                 f"ended before the kill (exit {code})"), file=sys.stderr, flush=True)
            break
        kills += 1
        tally.kills += 1
        on_disk = writer.on_disk(project, ident)
        tally.landed.append(on_disk / writer.total)
        rolled_back = ", hot journal rolled back" if tally.recovered > recovered_before else ""
        print(f"  {label}: kill {kills} (aimed at {target}) with {on_disk} of {writer.total} on disk{rolled_back}",
              file=sys.stderr, flush=True)
        if not sound:
            return kills  # a damaged file is not resumed
    if not writer.complete(project, ident):  # the resume left to finish
        proc = Proc(writer.resume_args(project, ident), project.with_name(f"{project.stem}-final"))
        code = proc.wait(PROCESS_TIMEOUT_S)
        tally.resume_s.append(time.perf_counter() - proc.started)
        if not writer.finished_ok(code, project, ident):
            tally.unfinished.append(f"{label}: the finishing resume exited {code}: {proc.err_tail()}")
    verdict = check_integrity(project)
    tally.checks += 1
    if verdict != "ok":
        tally.not_ok.append(f"{label} finished: {verdict}")
    why = difference(writer.content(project, ident), writer.expected)
    if why:
        tally.differing.append(f"{label}: {why}")
    print(f"  {label}: {kills} kill(s), then finished: " + (f"DIFFERS: {why}" if why else "same as uninterrupted"),
          file=sys.stderr, flush=True)
    return kills


def drill_writer(writer: Writer, quota: int, rng: random.Random) -> Tally:
    tally = Tally()
    started = time.perf_counter()
    writer.make_reference()
    print(f"{writer.name}: reference of {writer.total} units in {time.perf_counter() - started:.1f} s "
          f"(exit {writer.reference_code})", file=sys.stderr, flush=True)
    made, n = 0, 0
    while made < quota and n < 2 * quota + 4:
        n += 1
        tally.chains += 1
        want = min(quota - made, rng.randint(1, MAX_CHAIN))
        label = f"{writer.name} chain {n}"
        try:
            made += chain(writer, writer.tmp / f"{writer.name.replace(' ', '-')}-{n}.rwb", want, rng, tally, label)
        except Exception as exc:  # noqa: BLE001 - e.g. a project too damaged to read: a failure, not a crash
            tally.errors.append(f"{label}: {type(exc).__name__}: {exc}")
            print(f"  {label}: ERROR {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            made += want  # the quota moves on; the error fails the drill
    return tally


def share_range(values: list[float]) -> str:
    if not values:
        return "no kills"
    return f"{min(values):.0%}-{max(values):.0%} of the work on disk (median {statistics.median(values):.0%})"


def median_ms(values: list[float]) -> float | None:
    return round(1000 * statistics.median(values), 1) if values else None


def figures_of(results: dict[str, Tally], planned: dict[str, int], skipped: str | None, sizes: str) -> list[Figure]:
    per = lambda attr: ", ".join(f"{w} {len(getattr(t, attr))}" for w, t in results.items())
    example = lambda attr: "; ".join(x for t in results.values() for x in getattr(t, attr))[:300]
    count = lambda attr: sum(len(getattr(t, attr)) for t in results.values())
    kills = sum(t.kills for t in results.values())
    every = list(results.values())
    reopen_all = [x for t in every for x in t.reopen_s]
    resume_all = [x for t in every for x in t.resume_s]
    figs = [
        Figure(GROUP, "kill and resume: kills made", kills, "kills", (">=", sum(planned.values())),
               "; ".join(f"{w} {t.kills} in {t.chains} chain(s), {t.attempts_ended_early} attempt(s) ended before "
                         f"the kill, {share_range(t.landed)}" for w, t in results.items()) + f"; {sizes}"),
        Figure(GROUP, "kill and resume: integrity_check not ok", count("not_ok"), "", ("==", 0),
               f"{sum(t.checks for t in every)} checks (after every kill and every finish); {per('not_ok')}"
               + (f"; {example('not_ok')}" if count("not_ok") else "")),
        Figure(GROUP, "kill and resume: resumes that did not complete", count("unfinished"), "", ("==", 0),
               f"{sum(t.chains for t in every)} chains; {per('unfinished')}"
               + (f"; {example('unfinished')}" if count("unfinished") else "")),
        Figure(GROUP, "kill and resume: final state differing from uninterrupted", count("differing"), "", ("==", 0),
               f"votes, artifacts, calls, tiers (import: runs, rounds, traces); {per('differing')}"
               + (f"; {example('differing')}" if count("differing") else "")),
        Figure(GROUP, "kill and resume: state at a kill outside the uninterrupted", count("partial"), "", ("==", 0),
               f"rows committed before a kill that the uninterrupted outcome lacks; {per('partial')}"
               + (f"; {example('partial')}" if count("partial") else "")),
        Figure(GROUP, "kill and resume: hot journals recovered", sum(t.recovered for t in every), "", None,
               f"{sum(t.hot for t in every)} kills left a hot journal (read-only probe blocked); "
               + ", ".join(f"{w} {t.recovered}" for w, t in results.items())),
        Figure(GROUP, "kill and resume: time to reopen after a kill", median_ms(reopen_all), "ms", None,
               f"median of Store.open (journal rollback) + integrity_check over {len(reopen_all)} reopenings; max "
               f"{round(1000 * max(reopen_all), 1) if reopen_all else None} ms"),
        Figure(GROUP, "kill and resume: finishing resume wall", round(statistics.median(resume_all), 2)
               if resume_all else None, "s", None,
               "median process wall of the resumes left to finish, start-up included; "
               + ", ".join(f"{w} {statistics.median(t.resume_s):.2f} s" for w, t in results.items() if t.resume_s)),
    ]
    if count("errors"):
        figs.append(Figure(GROUP, "kill and resume: chains the drill could not finish", count("errors"), "",
                           ("==", 0), example("errors")))
    if skipped:
        figs.append(Figure(GROUP, "kill and resume: ARM import", "skipped", "", None, skipped))
    return figs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 kills per writer, small runs: a smoke run")
    parser.add_argument("--json", action="store_true", help="print the figures as one BENCH_JSON line")
    parser.add_argument("--seed", type=int, default=17, help="the run's seed and the kill plan's (default 17)")
    args = parser.parse_args()
    started = time.perf_counter()
    rng = random.Random(args.seed)
    questions = ["Should the city close its downtown to private cars?",
                 "Should the city make its buses free to ride?"]
    if args.quick:
        run_agents, batch_agents, batch_questions, replicates = 12, 8, questions[:1], 2
        planned = {"run": 2, "batch": 2, "ARM import": 2}
    else:
        run_agents, batch_agents, batch_questions, replicates = 18, 10, questions, 2
        planned = {"run": 8, "batch": 6, "ARM import": 6}
    files = sorted((CORPUS / "traces").glob("*.json")) + sorted((CORPUS / "traces-v1.1").glob("*.json"))
    skipped = None
    if not files:
        skipped = f"the ARM corpus is absent (expected at {CORPUS}): its kills went to the run and the batch"
        print(f"NOTE: {skipped}", file=sys.stderr, flush=True)
        extra = planned.pop("ARM import")
        planned["run"] += extra - extra // 2
        planned["batch"] += extra // 2
    results: dict[str, Tally] = {}
    with tempfile.TemporaryDirectory(prefix="rwb-drill-kill-") as tmp_name:
        tmp = Path(tmp_name)
        # The run goes one call at a time, so its calls reach the disk one by one and a kill can
        # land anywhere in it; run concurrently, the simulated panel's calls all end together and
        # were committed in a few groups, and 5 of 8 kills landed after the last one. The batch
        # keeps the concurrent dispatch (and its group commits).
        writers = [RunWriter(tmp, {**panel(run_agents, args.seed), "dispatch": "sequential"}),
                   BatchWriter(tmp, batch_of(batch_agents, args.seed, batch_questions, replicates))]
        if files:
            writers.append(ImportWriter(tmp, files))
        for writer in writers:
            results[writer.name] = drill_writer(writer, planned[writer.name], rng)
    batch_calls = len(batch_questions) * replicates * batch_agents ** 2  # RCP: n generations + n(n-1) votes
    sizes = (f"run {run_agents} agents ({run_agents ** 2} calls), batch {len(batch_questions)} question(s) x "
             f"{replicates} replicates of {batch_agents} agents ({batch_calls} calls), import "
             f"{f'{len(files)} files' if files else 'skipped'}; seed {args.seed}; "
             f"drill {time.perf_counter() - started:.0f} s")
    figures = figures_of(results, planned, skipped, sizes)
    if args.quick:
        for f in figures:
            f.note = ("QUICK; " + f.note) if f.note else "QUICK"
    return emit(figures, args.json)


if __name__ == "__main__":
    sys.exit(main())
