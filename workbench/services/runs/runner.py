"""Runs a protocol's step generator against real agents and persists every call as it completes.

The GUI (through :mod:`.run_worker`), ``rwb run`` and the tests all drive this same runner. It is
Qt-free and thread-based: calls of a batch run on a thread pool (or one at a time for
sequential dispatch), while this thread, the only writer, records each call the moment it
completes. A cancelled, killed or rate-limited run is left "interrupted"; :meth:`Runner.execute`
on it again issues only the calls whose results are missing, so the finished run has exactly the
records an uninterrupted run would have had.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from datetime import datetime, timezone

from workbench.core.errors import WorkbenchError
from workbench.core.limits import MAX_CONCURRENCY
from workbench.core.project import calls, limit_history, runs
from workbench.core.project.run_records import CallRecord, clipped, finish_run, prepare_run, record_call, record_calls
from workbench.core.project.spend import cache_counts, fallback_tokens, run_spend
from workbench.core.project.store import Store
from workbench.core.project.validity import degraded_reason, run_validity
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Batch, Note, read_reply
from workbench.core.runs.config import RunConfig, parse_run_config, protocol_generator
from workbench.core.runs.provenance import prompts_for, provenance, stored_prompts, summary_fields
from workbench.services.runs.agents import AgentRouter, ManualAgents, needs_human
from workbench.services.runs.budget import budget_gate, check_run_budget, describe
from workbench.services.runs.estimate import call_estimate
from workbench.services.runs.owners import owner, owner_alive
from workbench.services.runs.pace import Pacer
from workbench.services.runs.preflight import preflight


@dataclass(frozen=True)
class RunProgress:
    run_id: str
    phase: str
    done: int  # calls finished in this session of the run (resumed results not counted)
    total: int  # calls known so far, including resumed ones
    failed: int
    eta_s: float | None
    message: str = ""
    cache_hits: int | None = None  # with the reply cache on: calls it answered in this session
    cache_calls: int | None = None  # ... of the calls to a model finished in this session


@dataclass(frozen=True)
class CallEvent:
    """One call of a run starting (``kind`` "started": about to be sent), waiting before a retry
    ("waiting": the provider refused it, a 429 with its Retry-After or a server error, and it is
    sent again after ``wait_s``; ``error`` says why), or ending ("finished", with how it ended as
    recorded; "cancelled" calls are not recorded and are issued again on resume). ``round_idx``
    and ``phase`` name the step (a round and its phase) it belongs to."""

    kind: str  # started | waiting | finished
    run_id: str
    key: str
    agent: str
    purpose: str
    round_idx: int
    phase: str
    call_id: int | None = None
    status: str | None = None  # ok | invalid | error | rate_limited | cancelled (finished only)
    latency_ms: float | None = None
    tokens: int | None = None
    cost_usd: float | None = None  # None: unknown, never $0
    cost_source: str | None = None
    attempts: int | None = None
    error: str | None = None
    model: str | None = None  # "manual" for a person, "sim" for the simulated panel
    wait_s: float | None = None  # waiting only: seconds until the retry
    ordinal: int | None = None  # finished only: the call's number in its run, from 1 (calls.run_log's "n")


WAITING_FOR_HUMAN = "waiting for a human decision"
WAIT_MARK = "⧗"  # a progress message that starts with it: a call waits before a retry
PAUSE_MARK = "⏸"  # ... a phase waits for Next (a simulated run at a room's pace, step by step)


class _CapStop(Exception):
    """The run reached a budget cap (SPEC §6 "Budgets"): it ends ``stopped_at_cap``, resumable."""


class _Stop(Exception):
    """The run stops here, resumable: cancelled, rate-limited, waiting for a human, or (detached)
    waiting for a provider's batch."""

    def __init__(self, message: str, *, for_human: bool = False, for_batch: bool = False):
        super().__init__(message)
        self.for_human = for_human
        self.for_batch = for_batch


WAITING = "waiting"  # a summary's status while the run waits for a provider's batch (SPEC §10)


def new_run_id(protocol: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{protocol}-{stamp}-{os.urandom(6).hex()}"  # 48 random bits: no clash in a big batch


def with_findings(store: Store, cfg: RunConfig) -> RunConfig:
    """A configuration whose protocol votes on findings (its config has ``findings``), ready to
    run: the findings taken from another run's artifacts when it names one (``findings_from_run``),
    and an id held by another claim refused now, before anything is written or spent. Keyed on
    the configuration's own fields, never on the protocol's name."""
    if getattr(cfg, "findings_from_run", None) and not cfg.findings:
        from workbench.core.project.panel import findings_from_run

        cfg = cfg.model_copy(update={"findings": findings_from_run(store, cfg.findings_from_run,
                                                                  getattr(cfg, "findings_tiers", None))})
    if getattr(cfg, "findings", None):
        from workbench.core.project.findings import check_findings

        check_findings(store, cfg.findings)
    return cfg


class Runner:
    _replay_from: str | None = None

    def __init__(self, store: Store, *, gateway=None, manual: ManualAgents | None = None,
                 on_progress: Callable[[RunProgress], None] | None = None,
                 cancel: threading.Event | None = None, max_workers: int = 16,
                 on_call: Callable[[CallEvent], None] | None = None, pace: Pacer | None = None,
                 detach: bool = False, batch_sleep=None):
        self.store = store
        # Detached (``rwb run --detach``): once a phase's provider batch is out, the run stops
        # "waiting" instead of polling it to its end; ``batch_sleep`` waits between polls (tests).
        self.detach, self.batch_sleep = detach, batch_sleep
        self.pace = pace  # a room's pace for a simulated run (services.runs.pace); None: as fast as possible
        self.gateway = gateway  # a services.llm.Gateway; made from the config when None
        self.manual = manual
        self.on_progress = on_progress or (lambda _p: None)
        self.on_call = on_call  # every call's start and end (from the call's own thread for a start)
        self.cancel = cancel or threading.Event()
        self.max_workers = max_workers

    # ----- creating and running --------------------------------------------------------------
    def create(self, cfg: RunConfig, *, label: str = "", batch_id: str | None = None,
               replicate: int | None = None, estimate: bool = True, study: tuple[str, str, str] | None = None) -> str:
        """A new run, resumable until it ends; ``study``: the (study id, arm, item) it belongs to."""
        cfg = with_findings(self.store, cfg)
        prompts, prompt_set = self._new_prompts(cfg)
        run_id = new_run_id(cfg.protocol)
        runs.create_run(self.store, run_id=run_id, protocol=cfg.protocol,
                        label=label or cfg.label or cfg.query[:60],
                        config=cfg.model_dump(mode="json", by_alias=True), seed=cfg.seed, dispatch=cfg.dispatch,
                        simulated=cfg.simulated, batch_id=batch_id, replicate=replicate, study=study)
        runs.set_provenance(self.store, run_id, provenance(cfg, prompts, prompt_set))
        if estimate and not cfg.simulated:  # a simulated run is its own estimate: not dry-run twice
            _store_estimate(self.store, run_id, cfg)
        return run_id

    def _new_prompts(self, cfg: RunConfig):
        """A new run's templates (SPEC §7): the named prompt set's newest version under the
        config's own ``prompts``; refused (exit 2, naming ``prompt_set``) when the set is unknown."""
        if not cfg.prompt_set:
            return prompts_for(cfg), None
        from workbench.core.project import prompt_sets

        found = prompt_sets.latest(self.store, cfg.prompt_set, cfg.protocol)
        return prompts_for(cfg, found.templates), {"name": found.name, "sha256": found.sha256}

    def replay(self, source_run_id: str) -> str:
        """A new run with the same configuration, answered from ``source_run_id``'s stored replies
        (no model is called): re-derives every record, e.g. after a protocol fix."""
        source = runs.get_run(self.store, source_run_id)
        if source is None:
            raise WorkbenchError(f"There is no run {source_run_id!r} in this project.")
        run_id = self.create(parse_run_config(source.config, stored=True), label=f"replay of {source_run_id}",
                             estimate=False)
        runs.set_provenance(self.store, run_id, {**(runs.get_run(self.store, run_id).provenance or {}),
                                                 "replay_of": source_run_id})
        self._replay_from = source_run_id
        try:
            self.execute(run_id)
        finally:
            self._replay_from = None
        return run_id

    def execute(self, run_id: str) -> dict:
        """Run (or resume) a run to its end, or to a resumable stop. Returns its summary."""
        store = self.store
        run = runs.get_run(store, run_id)
        if run is None:
            raise WorkbenchError(f"There is no run {run_id!r} in this project.")
        # A completed run is over. A degraded one stands, marked, until someone resumes it: then
        # its failed calls are issued again (docs/runs.md, "Resuming a degraded run").
        if run.status == "completed":
            return run.summary
        if run.status == "running" and owner_alive(run.owner) and run.owner != owner():
            raise WorkbenchError(f"Run {run_id} is running in another process ({run.owner}).")
        cfg = parse_run_config(run.config, stored=True)
        if self._replay_from is None:  # a replay answers from the stored replies
            preflight(cfg)  # before the run goes "running": a provider that cannot be called spends nothing
            check_run_budget(run, cfg)  # a dollar cap on a model with no price, unless a token cap is given too
        runs.claim_run(store, run_id, owner())
        self._run_id, self._cfg = run_id, cfg
        self._prompts = stored_prompts(cfg, run.provenance)  # the templates it was created with
        self._budget = None if self._replay_from is not None else budget_gate(store, run)
        self._cache = {"hits": 0, "calls": 0} if cfg.cache else None
        self._done = _completed_calls(store, run_id)
        self._resumed = len(self._done)
        self._ordinal = calls.counts(store, run_id).calls  # this run's calls recorded so far (a resume's too)
        self._replay = _completed_calls(store, self._replay_from) if self._replay_from else {}
        self._missing = 0  # calls a replay had no stored reply for
        self._count = {"done": 0, "failed": 0, "known": 0}
        self._started = time.perf_counter()
        self._echo_sessions: dict[str, dict] = {}
        backend = None
        if cfg.cache and self.gateway is None:  # the reply cache lives in the project file (schema step 6)
            from workbench.services.llm.cache import ProjectCacheBackend

            backend = ProjectCacheBackend(store, seed=cfg.seed, replicate=run.replicate, run_id=run_id)
        router = AgentRouter(cfg, gateway=self.gateway, manual=self.manual, cache_backend=backend)
        self._limits = _LimitTracker(router)
        status, error, summary, waiting_for_human, waiting_for_batch = "completed", None, {}, False, False
        if self.pace is not None:  # a run that calls a real model is never slowed
            self.pace.begin(simulated=cfg.simulated)
        try:
            prepare_run(store, run_id, cfg)
            result = self._drive(protocol_generator(cfg, run_id=run_id, issue_marker=self._marker_issuer(run_id, cfg),
                                                    prompts=self._prompts), router)
            summary = finish_run(store, run_id, cfg, result)
        except _CapStop as stop:
            status, error = "stopped_at_cap", str(stop)
        except _Stop as stop:
            status, error = "interrupted", str(stop)
            waiting_for_human, waiting_for_batch = stop.for_human, stop.for_batch
        except WorkbenchError as exc:
            status, error = "failed", str(exc)
        except Exception as exc:  # a bug or an unexpected provider failure: recorded, not lost
            status, error = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            if self.pace is not None:
                self.pace.end()
        duration = time.perf_counter() - self._started
        if self._echo_sessions:  # the checklist's session-end items read it from here
            summary["echo"] = self._echo_sessions
        counts = self._counts(run_id)
        if status == "completed" and counts["calls"] and counts["failed_calls"] == counts["calls"]:
            status, error = "failed", f"every call failed ({calls.commonest_error(store, run_id)})"
        validity = run_validity(store, run_id, cfg.protocol)
        counts.update(validity.summary())
        if status == "completed" and validity.missing_share > cfg.max_missing_share + 1e-12:
            status, error = "degraded", degraded_reason(validity, cfg)
        made = summary_fields(cfg, self._prompts)
        if made.get("warnings"):
            made["warnings"] = [*summary.get("warnings", []), *made["warnings"]]
        summary = {**summary, **made, **counts, "run_id": run_id, "status": status, "error": error,
                   "duration_s": round(duration, 3), "resumed_calls": self._resumed}
        if self._replay_from is not None:
            summary["missing_replies"] = self._missing
        concurrency = limit_history.run_summary(store, run_id)
        if concurrency:  # each deployment's adaptive limit over the run (SPEC §10)
            summary["concurrency"] = concurrency
        if self._budget:  # which caps held, what was spent against them, and the one reached
            summary["budget"] = {**self._budget.summary(), "spend": run_spend(store, run_id).to_dict()}
        if cfg.cache:
            hits, model_calls = cache_counts(store, run_id)
            summary["cache_hits"] = hits
            summary["cache_hit_rate"] = round(hits / model_calls, 4) if model_calls else None
        if waiting_for_human:  # the CLI's exit code and message tell the person what to do
            summary["waiting_for_human"] = True
        if waiting_for_batch:  # stored as interrupted (resumable), shown and reported as waiting
            from workbench.core.project import batch_jobs

            summary["status"] = WAITING
            summary["waiting_for_batch"] = [{k: j.get(k) for k in ("id", "provider", "status", "counts", "phase")}
                                            for j in batch_jobs.open_jobs(store, run_id)]
        runs.end_run(store, run_id, status, error=error, summary=summary)
        return summary

    # ----- the generator loop ----------------------------------------------------------------
    def _drive(self, gen, router: AgentRouter):
        reply, batch_index = None, 0
        try:
            while True:
                step = gen.send(reply)
                if isinstance(step, Batch):
                    batch_index += 1
                    round_id = runs.ensure_round(self.store, self._run_id, batch_index, step.label)
                    self._round = (batch_index, step.label)
                    try:
                        reply = self._perform(step, round_id, router)
                    finally:  # the limit's history of the phase, however it ended
                        self._limits.flush(self.store, self._run_id, round_id)
                    runs.complete_round(self.store, round_id)
                else:
                    self._note(step)
                    reply = None
        except StopIteration as stop:
            return stop.value

    def _perform(self, batch: Batch, round_id: int, router: AgentRouter) -> dict[str, AgentReply]:
        replies: dict[str, AgentReply] = {}
        todo: list[AgentCall] = []
        for call in batch.calls:
            stored = self._done.get(call.key)
            if stored is not None:
                replies[call.key] = read_reply(call, stored, _reader(call, self._cfg))
            else:
                todo.append(call)
        self._count["known"] += len(batch.calls)
        self._progress(batch.label)
        pause: list[str] = []

        def finished(*ended: CallRecord) -> None:
            """Record calls that ended together (one transaction), then account for each."""
            kept = []
            for rec in ended:
                if rec.gateway.get("status") == "cancelled":  # not a result: a resume issues it again
                    self._call_event("finished", rec.call, status="cancelled", error=rec.reply.error)
                else:
                    rec = clipped(rec)  # a reply past MAX_REPLY_CHARS: cut, with a note (docs/limits.md)
                    # Read once, here: the same reading is stored and handed to the generator.
                    kept.append(replace(rec, reply=read_reply(rec.call, rec.reply, _reader(rec.call, self._cfg))))
            for rec, call_id in zip(kept, self._record(round_id, kept)):
                account(rec, call_id)
            self._limits.flush(self.store, self._run_id, round_id)

        def account(rec: CallRecord, call_id: int) -> None:
            self._call_finished(rec, call_id)
            replies[rec.call.key] = rec.reply
            self._count["done"] += 1
            self._count["failed"] += int(not rec.reply.ok)
            if self._cache is not None and rec.gateway.get("model") not in (None, "sim", "manual") \
                    and not rec.simulated:
                self._cache["calls"] += 1
                self._cache["hits"] += int(rec.gateway.get("cost_source") == "cache")
            if rec.gateway.get("status") == "rate_limited":
                pause.append("rate-limited by the provider")
            elif needs_human(rec):
                pause.append(WAITING_FOR_HUMAN)
            self._progress(batch.label)

        if self._replay_from is not None:  # a replay answers from the stored run, and never calls a model
            for call in todo:
                finished(self._replayed(call))
            todo = []
        batched = [call for call in todo if router.batched(call)]  # sent as provider batches, below
        if batched:
            keys = {call.key for call in batched}
            todo = [call for call in todo if call.key not in keys]
        if todo and self.pace is not None and not self.pace.before_phase(self.cancel, lambda: self._held(batch.label)):
            raise _Stop("cancelled by the user; resume it to finish")

        def answer(call: AgentCall) -> CallRecord | None:
            """The call's record; None when a budget cap keeps it from being sent (or the run is
            cancelled while the call waits for its turn at a room's pace)."""
            if self.pace is not None and not self.pace.before_call(self.cancel):
                return None
            gate = self._budget
            priced = self._model_provider(router, call) if gate else None
            if priced is None:
                self._call_event("started", call)
                return router.answer(call, self.cancel, on_wait=lambda info, c=call: self._call_waits(c, info))
            tokens, usd = call_estimate(self._cfg, call, priced)
            if not gate.acquire(tokens, usd, self.cancel):
                return None
            spent = (0, 0.0)
            try:
                self._call_event("started", call)
                rec = router.answer(call, self.cancel, on_wait=lambda info, c=call: self._call_waits(c, info))
                spent = _spent_by(rec)
                return rec
            finally:
                gate.release(tokens, usd, *spent)

        if self._cfg.dispatch == "sequential" or len(todo) <= 1:
            for call in todo:
                if self.cancel.is_set():
                    break
                rec = answer(call)
                if rec is None:
                    break
                finished(rec)
        else:
            # Enough threads for every provider slot the config allows (the gateway's gates are the
            # real limit): a floor of max_workers capped a provider at max_concurrency 32 to 16 calls.
            slots = sum(self._cfg.providers[name].max_concurrency for name in self._cfg.providers_used())
            workers = min(len(todo), max(self.max_workers, min(slots, MAX_CONCURRENCY)))
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rwb-call") as pool:
                pending: set[Future] = {pool.submit(answer, call) for call in todo}
                while pending:
                    done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
                    finished(*(rec for future in done if (rec := future.result()) is not None))
                    if self.cancel.is_set():
                        for future in pending:
                            future.cancel()
        if batched and not self.cancel.is_set():
            self._send_batched(batched, round_id, batch.label, router, finished)
        if self.cancel.is_set():
            raise _Stop("cancelled by the user; resume it to finish")
        if self._budget and self._budget.reached is not None:
            raise _CapStop(self._cap_message(len(batch.calls) - len([k for k in replies if replies[k].ok])))
        if pause:
            missing = len(batch.calls) - len([k for k in replies if replies[k].ok])
            raise _Stop(f"{pause[0]}; {missing} call(s) of this step can be resumed",
                        for_human=pause[0] == WAITING_FOR_HUMAN)
        return replies

    def _send_batched(self, calls: list[AgentCall], round_id: int, label: str, router: AgentRouter,
                      finished: Callable[..., None]) -> None:
        """The phase's calls to providers with ``batch_api``, as provider batches (SPEC §10)."""
        from workbench.services.runs.batch_phase import BatchFailed, BatchPhase, Stopped, Waiting

        phase = BatchPhase(self.store, self._run_id, round_id, self._cfg, router.model_gateway(), router.provider_of,
                           cancel=self.cancel, note=self._note, sleep=self.batch_sleep, detach=self.detach,
                           round_label=label, budget=self._budget)
        try:
            phase.run(calls, finished)
        except Waiting as waiting:
            raise _Stop(f"waiting for the provider's batch ({waiting}); rwb resume {self._run_id} collects it",
                        for_batch=True) from None
        except Stopped as stopped:
            raise _Stop(str(stopped)) from None
        except BatchFailed as failed:
            raise _Stop(f"{failed}; rwb resume {self._run_id} tries again") from None

    def _record(self, round_id: int, recs: list[CallRecord]) -> list[int]:
        """Store calls that ended together in one transaction. Should that fail, each is stored
        on its own, so one record that cannot be written never costs the others theirs; the
        first error is raised after every other call is stored."""
        if len(recs) > 1:
            try:
                return record_calls(self.store, self._run_id, round_id, recs, self._cfg)[0]
            except Exception:  # noqa: BLE001 - retried one by one just below, where it is raised
                pass
        ids, error = [], None
        for rec in recs:
            try:
                ids.append(record_call(self.store, self._run_id, round_id, rec, self._cfg)[0])
            except Exception as exc:  # noqa: BLE001 - raised once the others are stored
                error = error or exc
        if error is not None:
            raise error
        return ids

    def _replayed(self, call: AgentCall) -> CallRecord:
        """The stored reply to ``call`` in the run being replayed; a call it never answered is
        recorded as missing (failed, nothing sent), never asked of a model."""
        stored = self._replay.get(call.key)
        if stored is None:
            self._missing += 1
            why = f"no stored reply in {self._replay_from}: a replay calls no model"
            return CallRecord(call, AgentReply(call.key, None, why), "replay", self._cfg.simulated, {
                "status": "error", "error_kind": "missing_reply", "attempts": 0})
        return CallRecord(call, stored, stored.meta.get("provider") or "replay", self._cfg.simulated, {
            "model": stored.meta.get("model"), "status": "ok", "cached": 1, "attempts": 0, "cost_usd": 0.0,
            "cost_source": f"replay of {self._replay_from}"})

    def _call_event(self, kind: str, call: AgentCall, **fields) -> None:
        if self.on_call is not None:
            idx, phase = getattr(self, "_round", (0, ""))
            self.on_call(CallEvent(kind, self._run_id, call.key, call.agent, call.purpose, idx, phase, **fields))

    def _call_waits(self, call: AgentCall, info: dict) -> None:
        """A call the provider refused waits before its retry: shown as it happens."""
        status = info.get("http_status")
        kind = "rate-limited" if info.get("error_kind") == "rate_limited" else "failed"
        why = f"{kind}{f' (HTTP {status})' if status else ''}"
        if info.get("retry_after_s") is not None:
            why += f", the server asked to retry after {info['retry_after_s']:g} s"
        detail = str(info.get("error") or "").removeprefix(f"HTTP {status}: " if status else "")
        self._call_event("waiting", call, status="rate_limited" if kind == "rate-limited" else "error",
                         attempts=info.get("attempt"), wait_s=info.get("delay_s"),
                         error=f"attempt {info.get('attempt')} {why}: {detail}".rstrip(": "))
        self.on_progress(RunProgress(self._run_id, getattr(self, "_round", (0, ""))[1], self._count["done"],
                                     max(self._count["known"] - self._resumed, self._count["done"]),
                                     self._count["failed"], None,
                                     f"{WAIT_MARK} {call.agent}: {why}; retrying in {info.get('delay_s') or 0:.1f} s"))

    def _call_finished(self, rec: CallRecord, call_id: int) -> None:
        """The call's end as recorded (its status may have become "invalid")."""
        if self.on_call is None:
            return
        self._ordinal += 1  # calls are recorded in order, by this thread only: as run_log numbers them
        out = calls.call_outcome(self.store, call_id)
        if out is None:
            return
        self._call_event("finished", rec.call, call_id=call_id, status=out.status, latency_ms=out.latency_ms,
                         tokens=out.tokens, cost_usd=out.cost_usd, cost_source=out.cost_source,
                         attempts=out.attempts, error=out.error, model=out.model, ordinal=self._ordinal)

    def _marker_issuer(self, run_id: str, cfg: RunConfig):
        """Markers for Echo: unique in the project, and the same ones again when the run resumes."""
        if cfg.echo is None:
            return None
        import random

        from workbench.core.project.echo import issue_marker_for

        rng = random.Random(f"{cfg.seed}/echo-markers/{run_id}")
        return lambda key: issue_marker_for(self.store, run_id, key, rng=rng)

    def _note(self, note: Note) -> None:
        if note.kind.startswith("echo."):  # Resonance Echo records: anchors, checks, restorations
            from workbench.core.project.echo import persist_note

            persist_note(self.store, note)
            if note.kind == "echo.session_end":
                self._echo_sessions[note.data.get("agent", "?")] = note.data
        self.on_progress(RunProgress(self._run_id, note.kind, self._count["done"], self._count["known"],
                                     self._count["failed"], None, note.message))

    def _held(self, phase: str) -> None:
        """Step pace: the phase waits for Next; said in the progress line."""
        done, known = self._count["done"], self._count["known"] - self._resumed
        self.on_progress(RunProgress(self._run_id, phase, done, max(known, done), self._count["failed"], None,
                                     f"{PAUSE_MARK} step by step: “{phase}” waits for Next phase"))

    def _progress(self, phase: str) -> None:
        done, known = self._count["done"], self._count["known"] - self._resumed
        elapsed = time.perf_counter() - self._started
        eta = elapsed / done * max(known - done, 0) if done else None
        cache = self._cache or {}
        self.on_progress(RunProgress(self._run_id, phase, done, max(known, done), self._count["failed"], eta,
                                     cache_hits=cache.get("hits"), cache_calls=cache.get("calls")))

    # ----- budgets ---------------------------------------------------------------------------
    def _model_provider(self, router: AgentRouter, call: AgentCall) -> str | None:
        """The provider of a call that goes to a model (and so spends), or None (sim, a person)."""
        try:
            name = router.provider_of(call)
        except KeyError:
            return None
        spec = self._cfg.providers.get(name)
        if spec is None or spec.simulated or spec.model == "manual":
            return None
        return name

    def _cap_message(self, missing: int) -> str:
        gate = self._budget
        cap = gate.reached
        spent = cap.spent_before + gate.spent[cap.kind]
        flag = "--max-tokens N" if cap.kind == "tokens" else "--max-usd X"
        target = self._batch_id_of() if cap.scope == "batch" else self._run_id
        if cap.scope == "study":  # the study's own cap (SPEC §9): the study is resumed whole
            target = f"study resume {runs.get_run(self.store, self._run_id).study_id}"
        return (f"stopped at its cap, {describe(cap, spent)}; {missing} call(s) of this step not sent; "
                f"rwb {'' if cap.scope == 'study' else 'resume '}{target} {flag} with a higher cap continues it")

    def _batch_id_of(self) -> str:
        run = runs.get_run(self.store, self._run_id)
        return (run.batch_id if run is not None else None) or self._run_id

    def _counts(self, run_id: str) -> dict:
        c = calls.counts(self.store, run_id)
        return {"calls": c.calls, "failed_calls": c.failed, "invalid_calls": c.invalid}


class _LimitTracker:
    """Moves the gateway's adaptive-limit events (and 429 counts) into the round they happened in."""

    def __init__(self, router: AgentRouter):
        self.router = router
        self.seen = 0  # events of the gateway's history already stored
        self.refusals: dict[str, int] = {}  # each limit's 429 count when last stored

    def flush(self, store: Store, run_id: str, round_id: int) -> None:
        gateway = self.router.gateway
        history = getattr(gateway, "limit_history", None)
        if history is None:  # the simulated panel, a stub gateway, or no model call yet
            return
        events = [e.to_dict() for e in history.since(self.seen)]
        counts = {key: limit.refusals for key, limit in getattr(gateway, "adaptive", {}).items()}
        new = {key: n - self.refusals.get(key, 0) for key, n in counts.items()}
        if events or any(new.values()):
            limit_history.record(store, run_id, round_id, events, new)
        self.seen += len(events)
        self.refusals = counts


def _completed_calls(store: Store, run_id: str) -> dict[str, AgentReply]:
    """The replies already recorded for this run: a resumed run reuses them instead of calling again."""
    return {r.step_key: AgentReply(r.step_key, r.text, None, r.meta) for r in calls.completed_replies(store, run_id)}


def _spent_by(rec: CallRecord) -> tuple[int, float]:
    """What a call spent, re-asks included: a cache hit or a failed call nothing but its reported tokens;
    a reply with no reported usage about 4 characters a token (as :mod:`workbench.core.project.spend`)."""
    tokens, usd = 0, 0.0
    for r in (rec, *getattr(rec, "earlier", ())):
        g = r.gateway
        if g.get("cached"):
            continue
        counted = g.get("total_tokens")
        if counted is None and g.get("prompt_tokens") is not None and g.get("completion_tokens") is not None:
            counted = g["prompt_tokens"] + g["completion_tokens"]
        if counted is None and g.get("status") == "ok":
            import json

            counted = fallback_tokens(json.dumps(g.get("request") or {}), r.reply.text)
        tokens += int(counted or 0)
        usd += float(g.get("cost_usd") or 0.0)
    return tokens, usd


def _store_estimate(store: Store, run_id: str, cfg: RunConfig) -> None:
    """The run's estimate, kept with it (``runs.provenance_json["estimate"]``) for the report."""
    from workbench.services.runs.estimate import estimate

    try:
        est = estimate(cfg)
    except Exception:  # an estimate is advice: a run never fails for want of one
        import logging

        logging.getLogger(__name__).warning("no estimate for run %s", run_id, exc_info=True)
        return
    est.pop("method", None)
    runs.set_provenance(store, run_id, {"estimate": est})


def _reader(call: AgentCall, cfg: RunConfig):
    """How the call's protocol reads a reply (its declaration's ``read``), or None for a call made
    without a step (a wrapper's own, such as an Echo check)."""
    from workbench.core import registry

    declared = registry.protocols().get(call.meta.get("protocol") or "")
    return declared.read if declared is not None else None
