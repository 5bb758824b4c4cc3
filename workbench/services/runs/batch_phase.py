"""A phase's calls to providers with ``"batch_api": true``, sent as provider batches (SPEC §10).

The runner hands over the calls of a phase that go to such providers; :class:`BatchPhase`:

1. sends them as one batch per provider (:mod:`workbench.services.llm.batch_api`), and keeps each
   batch's id with the phase's round the moment it exists (:mod:`workbench.core.project.batch_jobs`);
2. polls the batches every ``batch_poll_s``, saying "waiting for batch" with the provider's counts
   (a progress note, which Live Run shows); detached (``rwb run --detach``), it stops there and the
   run waits (:class:`Waiting`);
3. reads each ended batch's answers and records them as the runner records any call: read once by
   the call's protocol (the reading stored is the one the generator gets), a reply it cannot read
   asked again (the provider's ``reask``) in a follow-up batch, the superseded replies kept as rows
   of their own, exactly as ``agents.AgentRouter`` does for a call sent on its own;
4. sends the requests a batch left undone (it expired, or was cancelled) in a new batch.

Everything it decides is derived again from the stored batches and the calls already recorded, so
a process killed at any point resumes without sending a request twice or recording a reply twice:
a call's chain of batch lines (the call, its re-asks, its re-sends) is walked from the first; a
line whose batch has not ended is waited for; a reply already recorded is never recorded again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from workbench.core.project import batch_jobs
from workbench.core.project.run_records import CallRecord
from workbench.core.project.store import Store, utc_now
from workbench.core.protocols.shared.steps import AgentCall, Note
from workbench.core.runs.config import RunConfig

WAITING = "waiting for batch"


class Waiting(Exception):
    """Detached with a batch out: the run waits for the provider (``rwb resume`` collects it)."""


class Stopped(Exception):
    """Cancelled while waiting for a batch; the batch runs on at the provider."""


class BatchFailed(Exception):
    """The batch API itself failed (no key, nothing answers, a refusal): the run stops resumable."""


@dataclass
class _Step:
    """Where a call stands in its chain: ``final`` (a record to store), ``wait`` (a batch out),
    or ``send`` (its next request: the call itself, a re-ask, or a re-send of either)."""

    state: str
    record: CallRecord | None = None
    reask: int = 0
    earlier: tuple[CallRecord, ...] = ()
    problem: str | None = None


class BatchPhase:
    def __init__(self, store: Store, run_id: str, round_id: int, cfg: RunConfig, gateway, provider_of,
                 *, cancel: threading.Event, note: Callable[[Note], None], sleep=None, detach: bool = False,
                 round_label: str = "", budget=None):
        from workbench.services.llm.limits import event_sleep

        self.store, self.run_id, self.round_id, self.cfg = store, run_id, round_id, cfg
        self.gateway, self.provider_of = gateway, provider_of
        self.cancel, self.note, self.detach = cancel, note, detach
        self.sleep = sleep or event_sleep
        self.label = round_label
        self.budget = budget  # the run's BudgetGate, when it has caps
        self.jobs = batch_jobs.load(store, round_id)
        self._clients: dict = {}
        self._answers: dict[str, dict] = {}  # batch id -> custom_id -> answer line (this session)
        self._bodies: dict[str, list[dict]] = {}  # batch id -> the bodies of its input file
        self._reserved: dict[str, tuple[int, float]] = {}  # call key -> its reservation against the budget

    # ----- the loop ------------------------------------------------------------------------------
    def run(self, calls: list[AgentCall], record: Callable[..., None]) -> None:
        """Send, wait for and record every call of ``calls`` (those not recorded yet). Detached, it
        returns by :class:`Waiting` once it has sent a batch, or asked the provider once."""
        pending = {c.key: c for c in calls}
        acted = False  # sent a batch or polled, in this session
        while True:
            steps = {key: self._walk(call) for key, call in pending.items()}
            finals = [s.record for s in steps.values() if s.state == "final"]
            to_send = {key: (pending[key], s) for key, s in steps.items() if s.state == "send"}
            if to_send:
                finals += self._submit(to_send)
                acted = acted or self._out()
            if finals:
                self._record(finals, record)
                for rec in finals:
                    pending.pop(rec.call.key, None)
            if not pending:
                return
            if not self._out():
                if self.budget is not None and self.budget.reached is not None:
                    return  # the cap kept the rest from being sent: the runner stops at it
                raise BatchFailed(f"{len(pending)} call(s) of this phase have no batch out and no answer")
            if self.detach and acted:
                self._say()
                raise Waiting(self._waiting_text())
            ended = self._poll()
            acted = True
            if not ended and not self.detach:
                poll = min(self.cfg.providers[j["provider"]].batch_poll_s for j in self.jobs
                           if j.get("status") not in batch_jobs.ENDED)
                if self.sleep(poll, self.cancel):
                    raise Stopped("cancelled while waiting for a batch; resume the run to collect it")

    def _out(self) -> bool:
        return any(j.get("status") not in batch_jobs.ENDED for j in self.jobs)

    def _record(self, finals: list[CallRecord], record: Callable[..., None]) -> None:
        """Record through the runner's own path; a failure recorded is marked on its batch line, so
        a resume sends that call again rather than record the same failure twice."""
        record(*finals)
        self._spent(finals)
        marked = False
        for rec in finals:
            line = rec.gateway.get("batch_line")
            if line is not None and rec.gateway.get("status") != "ok":
                job = next((j for j in self.jobs if j.get("id") == line[0]), None)
                if job is not None and line[1] < len(job.get("lines") or ()):
                    job["lines"][line[1]]["recorded"] = True
                    marked = True
        if marked:
            batch_jobs.save(self.store, self.run_id, self.round_id, self.jobs)

    def _poll(self) -> bool:
        """Ask the provider about every batch that has not ended; whether one has."""
        ended = False
        for job in [j for j in self.jobs if j.get("status") not in batch_jobs.ENDED]:
            from workbench.services.llm.batch_api import BatchError

            try:
                state = self._client(job["provider"]).state(job["id"])
            except BatchError as exc:
                raise BatchFailed(f"batch {job['id']} could not be polled: {exc}") from None
            job["status"], job["counts"] = state.status, {"total": state.total, "completed": state.completed,
                                                          "failed": state.failed}
            job["output_file_id"], job["error_file_id"] = state.output_file_id, state.error_file_id
            if state.error:
                job["error"] = state.error
            if state.ended:
                job["ended_at"] = utc_now()
                ended = True
        batch_jobs.save(self.store, self.run_id, self.round_id, self.jobs)
        self._say()
        return ended

    def _say(self) -> None:
        self.note(Note("batch", f"{WAITING}: {self._waiting_text()}",
                       {"jobs": [{k: j.get(k) for k in ("id", "provider", "status", "counts")} for j in self.jobs
                                 if j.get("status") not in batch_jobs.ENDED]}))

    def _waiting_text(self) -> str:
        parts = []
        for j in self.jobs:
            if j.get("status") in batch_jobs.ENDED:
                continue
            c = j.get("counts") or {}
            failed = f", {c.get('failed')} failed" if c.get("failed") else ""
            parts.append(f"{j['provider']} {j['id']} {j.get('status')}, {c.get('completed', 0)} of "
                         f"{c.get('total', len(j.get('lines', [])))} done{failed}")
        return "; ".join(parts) or "nothing out"

    # ----- sending -------------------------------------------------------------------------------
    def _submit(self, todo: dict[str, tuple[AgentCall, _Step]]) -> list[CallRecord]:
        """One batch per provider with the requests ``todo`` needs next; each id is kept at once.
        Returns the calls the reply cache answered (a readable reply: nothing to send)."""
        from workbench.services.llm.batch_api import BatchError

        by_provider: dict[str, list] = {}
        for call, step in todo.values():
            by_provider.setdefault(self.provider_of(call), []).append((call, step))
        finals: list[CallRecord] = []
        for provider, items in sorted(by_provider.items()):
            client = self._client(provider)
            lines, meta = [], []
            for call, step in items:
                messages = self._messages(call, step)
                line = client.prepare(str(len(lines)), messages, **self._kwargs(provider, call))
                if line.cached is not None and step.reask == 0:
                    rec = self._from_cache(call, provider, line.cached)
                    if rec is not None:
                        finals.append(rec)
                        continue
                if not self._reserve(provider, call, line):
                    break  # the cap is reached: this line and the rest stay unsent
                lines.append(line)
                meta.append({"key": call.key, "reask": step.reask,
                             "fence": {k: call.meta[k] for k in ("delimiter", "fence_escapes") if k in call.meta}})
            if not lines:
                continue
            try:
                state = client.submit(lines, {"rwb_run": self.run_id, "rwb_phase": self.label[:200]})
            except BatchError as exc:
                raise BatchFailed(f"the batch could not be sent to {provider!r}: {exc}") from None
            self.jobs.append({"id": state.id, "provider": provider, "input_file_id": state.input_file_id,
                              "submitted_at": utc_now(), "status": state.status,
                              "counts": {"total": state.total or len(lines), "completed": 0, "failed": 0},
                              "ended_at": None, "lines": meta})
            batch_jobs.save(self.store, self.run_id, self.round_id, self.jobs)  # the id, before anything else
        return finals

    def _from_cache(self, call: AgentCall, provider: str, result) -> CallRecord | None:
        """The reply cache's answer as the call's record, when the protocol can read it (else the
        call is sent, and its re-asks follow as for any reply)."""
        from workbench.services.llm.structured import read_reply, reply_problem

        rec = CallRecord(call, read_reply(call, result.agent_reply(call.key)), provider, False, result.to_dict())
        return rec if reply_problem(call, rec.reply.text, rec.reply.reading) is None else None

    # ----- the budget (SPEC §6): a line reserves its batch-price estimate when it is submitted ------
    def _reserve(self, provider: str, call: AgentCall, line) -> bool:
        """Room for one more line under every cap; the first line that has none stops the sending,
        and the run stops at its cap once the batches out are recorded. The batch phase runs on the
        runner's thread alone (the phase's other calls are done by then), so the gate's figures are
        read and moved without its lock."""
        gate = self.budget
        if not gate:
            return True
        from workbench.services.llm import prices
        from workbench.services.runs.estimate import completion_cap, prompt_tokens

        p, c = prompt_tokens(line.body.get("messages") or ()), completion_cap(self.cfg, call, provider)
        usd = prices.batch_cost(self.cfg.providers[provider].model, p, c)
        for cap in gate.caps:
            need = (p + c) if cap.kind == "tokens" else (usd or 0.0)
            if gate.spent[cap.kind] + gate.reserved[cap.kind] + need >= cap.room - 1e-12:
                gate.reached, gate.refused = cap, gate.refused + 1
                return False
        gate.reserved["tokens"] += p + c
        gate.reserved["usd"] += usd or 0.0
        self._reserved[call.key] = (p + c, usd or 0.0)
        return True

    def _spent(self, finals: list[CallRecord]) -> None:
        """The recorded calls' spend replaces their reservation (one of an earlier session's batch
        has none: its spend is counted all the same)."""
        gate = self.budget
        if not gate:
            return
        for rec in finals:
            tokens, usd = self._reserved.pop(rec.call.key, (0, 0.0))
            gate.reserved["tokens"] -= tokens
            gate.reserved["usd"] -= usd
            for r in (rec, *rec.earlier):
                g = r.gateway
                if g.get("cached"):
                    continue
                gate.spent["tokens"] += int(g.get("total_tokens") or 0)
                gate.spent["usd"] += float(g.get("cost_usd") or 0.0)

    def _messages(self, call: AgentCall, step: _Step) -> list[dict]:
        if step.reask == 0:
            return [dict(m) for m in call.messages]
        from workbench.services.llm.structured import reask_messages

        first = step.earlier[0].call if step.earlier else call
        return reask_messages(first, step.earlier[-1].reply.text or "", step.problem or "unreadable reply")

    def _kwargs(self, provider: str, call: AgentCall) -> dict:
        from workbench.core.runs.providers import merged_sampling
        from workbench.services.llm.structured import reply_schema

        spec = self.cfg.providers.get(provider)
        agent = self.cfg.agent(call.agent)
        return {"sampling": merged_sampling(spec, agent.sampling if agent is not None else None),
                "cap": call.meta.get("max_tokens"), "schema": reply_schema(call),
                "sample_index": int(call.meta.get("sample_index", 0))}

    def _client(self, provider: str):
        from workbench.services.llm.batch_api import BatchClient, BatchError

        if provider not in self._clients:
            try:
                self._clients[provider] = BatchClient(self.gateway, provider)
            except BatchError as exc:
                raise BatchFailed(f"provider {provider!r}: {exc}") from None
        return self._clients[provider]

    # ----- where a call stands -------------------------------------------------------------------
    def _walk(self, call: AgentCall) -> _Step:
        """Follow the call's lines through the batches, oldest first (see the module docstring)."""
        from workbench.services.llm.structured import read_reply, reply_problem

        provider = self.provider_of(call)
        spec = self.cfg.providers.get(provider)
        budget = spec.reask if spec is not None else 0
        earlier: list[CallRecord] = []
        reask, problem = 0, None
        for job, index, line in self._lines_of(call.key):
            if line.get("reask") != reask:
                continue  # a line of another step of the chain (never written so; read defensively)
            if job.get("status") not in batch_jobs.ENDED:
                return _Step("wait")
            if line.get("recorded"):  # a failure recorded by an earlier session: the call goes afresh
                earlier, reask, problem = [], 0, None
                continue
            result = self._result(job, index, call)
            if result is None:  # expired or cancelled undone: a re-send (unless one is out already)
                continue
            sent = self._sent_call(call, job, index, line, earlier)
            meta = {"reask": reask, "reask_error": problem} if reask else None
            reply = result.agent_reply(call.key)
            if meta:
                reply = replace(reply, meta={**reply.meta, **meta})
            rec = CallRecord(sent, read_reply(sent, reply), provider, False,
                             {**result.to_dict(), "batch_line": (job["id"], index), **({"reask": meta} if meta else {})})
            if not result.ok:
                if earlier and earlier[-1].reply.ok:  # a failed re-ask: the protocol reads the reply it got
                    last = earlier.pop()
                    return _Step("final", replace(last, earlier=(*earlier, rec)))
                return _Step("final", replace(rec, earlier=tuple(earlier)) if earlier else rec)
            problem = reply_problem(sent, rec.reply.text, rec.reply.reading)
            if problem is None or reask >= budget or reply_schema_of(sent) is None:
                return _Step("final", replace(rec, earlier=tuple(earlier)) if earlier else rec)
            earlier.append(rec)
            reask += 1
        return _Step("send", reask=reask, earlier=tuple(earlier), problem=problem)

    def _lines_of(self, key: str):
        for job in self.jobs:
            for index, line in enumerate(job.get("lines") or ()):
                if line.get("key") == key:
                    yield job, index, line

    def _result(self, job: dict, index: int, call: AgentCall):
        """The line's CallResult (None: the batch never ran it)."""
        from workbench.services.llm.batch_api import BatchError, BatchState

        client = self._client(job["provider"])
        state = BatchState(id=job["id"], status=job["status"], output_file_id=job.get("output_file_id"),
                           error_file_id=job.get("error_file_id"), error=job.get("error"))
        try:
            answers = self._answers.get(job["id"])
            if answers is None:
                answers = self._answers[job["id"]] = client.answers(state)
            body = self._bodies.get(job["id"])
            if body is None:
                body = self._bodies[job["id"]] = [row.get("body") or {} for row in
                                                  client.file_lines(job.get("input_file_id"))]
        except BatchError as exc:
            raise BatchFailed(f"the answers of batch {job['id']} could not be read: {exc}") from None
        sent = body[index] if index < len(body) else {}
        line = client.prepare(str(index), sent.get("messages") or list(call.messages),
                              **self._kwargs(job["provider"], call))
        return client.result(line, answers.get(str(index)), state, job.get("submitted_at"))

    def _sent_call(self, call: AgentCall, job: dict, index: int, line: dict, earlier: list) -> AgentCall:
        """The call as it was sent: the messages of the batch's input file and its fence name (a
        resumed run made the call afresh, with a new one)."""
        body = self._bodies.get(job["id"]) or []
        messages = (body[index] if index < len(body) else {}).get("messages")
        fence = line.get("fence") or {}
        if line.get("reask"):  # a re-ask is read as the call first sent (its request, the re-ask's, is kept apart)
            return earlier[0].call if earlier else call
        return replace(call, messages=tuple(messages or call.messages), meta={**call.meta, **fence})


def reply_schema_of(call: AgentCall):
    from workbench.services.llm.structured import reply_schema

    return reply_schema(call)
