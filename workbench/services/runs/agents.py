"""Who answers a call: the simulated panel, a person (``manual``), or a model through the gateway.

The router is thread-safe: the runner calls :meth:`AgentRouter.answer` from its pool threads.
Nothing here writes to the project file; the runner records what comes back.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Protocol

from workbench.core.project.run_records import CallRecord
from workbench.core.project.store import utc_now
from workbench.core.protocols.shared.steps import AgentCall, AgentReply
from workbench.core.runs.config import RunConfig

MANUAL = "manual"
CONDUCTOR = "conductor"
NEEDS_HUMAN = "needs_human"


class ManualAgents(Protocol):
    """A person playing an agent (or the conductor): blocks until they answer, or returns None
    when cancelled. The GUI implements it; the command line has no person to ask."""

    def ask(self, call: AgentCall, cancel: threading.Event) -> str | None: ...


class DecisionsFile:
    """The command line's person: decisions written beforehand in a JSON file,
    ``{"CONS-001": "Adopt write-through", "*": "..."}``, by CONS question id (``"*"`` for any
    question), or by the call's key (``"cons/hitl"``). A call it has no decision for is not
    answered, so the run stops resumable, as with no file at all."""

    def __init__(self, decisions: dict[str, str], source: str = "the decisions file"):
        self.decisions, self.source = decisions, source

    def ask(self, call: AgentCall, cancel: threading.Event) -> str | None:
        for key in (call.meta.get("question"), call.key, "*"):
            if key in self.decisions:
                return self.decisions[key]
        return None

    def missing(self, call: AgentCall) -> str:
        return (f"no decision for question {call.meta.get('question') or call.key!r} in {self.source}; "
                "add it there (or under \"*\") and resume")


def needs_human(rec: CallRecord) -> bool:
    return rec.gateway.get("error_kind") == NEEDS_HUMAN


class AgentRouter:
    def __init__(self, cfg: RunConfig, *, gateway=None, manual: ManualAgents | None = None, cache_backend=None):
        self.cfg = cfg
        self._gateway = gateway
        self._cache_backend = cache_backend  # where the reply cache lives (the project file), when cfg.cache
        self._manual = manual
        self._sim = None
        self._lock = threading.Lock()

    @property
    def gateway(self):
        """The gateway the run's model calls go through (None until the first one)."""
        return self._gateway

    def provider_of(self, call: AgentCall) -> str:
        if call.agent == CONDUCTOR:
            return MANUAL
        if call.meta.get("provider"):  # ARM: the call names the provider playing the role
            return call.meta["provider"]
        agent = self.cfg.agent(call.agent)
        if agent is None:
            raise KeyError(f"no agent {call.agent!r} in the run configuration")
        return agent.provider

    def answer(self, call: AgentCall, cancel: threading.Event, on_wait=None) -> CallRecord:
        """``on_wait(info)``: a model's call waits before a retry (a 429's Retry-After, a backoff)."""
        name = self.provider_of(call)
        provider = self.cfg.providers.get(name)
        if name == MANUAL or (provider is not None and provider.model == MANUAL):
            return self._ask_person(call, name, cancel)
        if provider is not None and provider.simulated:
            return self._simulate(call, name)
        return self._call_model(call, name, cancel, on_wait)

    # ----- the three kinds of agent ----------------------------------------------------------
    def _simulate(self, call: AgentCall, name: str) -> CallRecord:
        with self._lock:
            if self._sim is None:
                from workbench.core.sim import SimPanel

                self._sim = SimPanel(self.cfg.seed, self._personas())
        started = utc_now()
        try:
            reply = self._sim.reply(call)
        except Exception as exc:  # a purpose the simulated panel cannot answer: a failed call
            return CallRecord(call, AgentReply(call.key, None, f"simulated panel: {exc}"), name, True,
                              {"model": "sim", "status": "error", "error_kind": "bad_request", "attempts": 1,
                               "started_at": started})
        meta = {**reply.meta, "simulated": True}
        return CallRecord(call, AgentReply(call.key, reply.text, None, meta), name, True, {
            "model": "sim", "status": "ok", "attempts": 1, "cost_usd": 0.0, "cost_source": "simulated",
            "prompt_tokens": meta.get("prompt_tokens"), "completion_tokens": meta.get("completion_tokens"),
            "latency_ms": meta.get("latency_ms"), "started_at": started, "finished_at": utc_now(),
            "request": {"model": "sim", "messages": list(call.messages)},
        })

    def _personas(self) -> dict:
        from workbench.core.sim import SimPersona

        personas = {}
        for agent in self.cfg.agents:
            persona = SimPersona.from_params(agent.params, where=f"agents.{agent.id}")
            personas[agent.id] = persona
            if agent.role:  # ARM calls name the role, not the agent
                personas.setdefault(agent.role, persona)
        return personas

    def _ask_person(self, call: AgentCall, name: str, cancel: threading.Event) -> CallRecord:
        started = utc_now()
        base = {"model": MANUAL, "attempts": 1, "started_at": started, "request": {"messages": list(call.messages)}}
        if self._manual is None:
            error = "no person is at this terminal to answer; resume the run in the workbench to answer it"
            return CallRecord(call, AgentReply(call.key, None, error), name, False,
                              {**base, "status": "error", "error_kind": NEEDS_HUMAN})
        text = self._manual.ask(call, cancel)
        if text is None and isinstance(self._manual, DecisionsFile):
            return CallRecord(call, AgentReply(call.key, None, self._manual.missing(call)), name, False,
                              {**base, "status": "error", "error_kind": NEEDS_HUMAN})
        if text is None:
            return CallRecord(call, AgentReply(call.key, None, "cancelled"), name, False,
                              {**base, "status": "cancelled", "error_kind": "cancelled"})
        return CallRecord(call, AgentReply(call.key, text, None, {"provider": name, "model": MANUAL}), name, False,
                          {**base, "status": "ok", "finished_at": utc_now()})

    def _call_model(self, call: AgentCall, name: str, cancel: threading.Event, on_wait=None) -> CallRecord:
        self.model_gateway()
        return self._ask_model(call, name, cancel, on_wait)

    def model_gateway(self):
        """The gateway for the run's model calls, made on first use (with the reply cache when the
        run has ``cache``)."""
        with self._lock:
            if self._gateway is None:
                from workbench.services.llm.gateway import Gateway, ResponseCache

                cache = ResponseCache(self._cache_backend) if self.cfg.cache else None
                self._gateway = Gateway(self.cfg.providers, seed=self.cfg.seed, cache=cache)
            return self._gateway

    def batched(self, call: AgentCall) -> bool:
        """The call goes to a provider with ``batch_api``: the runner sends it in its phase's batch."""
        try:
            spec = self.cfg.providers.get(self.provider_of(call))
        except KeyError:
            return False
        return bool(spec is not None and spec.batch_api)

    # ----- a model's call: sampling, the reply's schema, and the re-ask ------------------------
    def _ask_model(self, call: AgentCall, name: str, cancel: threading.Event, on_wait=None) -> CallRecord:
        """The call through the gateway, with the provider's sampling under the agent's, the call
        kind's output cap, and the reply's JSON schema. A reply the protocol's parser cannot read
        is asked again (the provider's ``reask``, 0 to 2): the unreadable reply goes back as the
        assistant's, with the problem. The reply the protocol reads is the last one; each earlier
        one is kept in ``CallRecord.earlier`` (recorded as its own row, see ``record_call``)."""
        from workbench.core.runs.providers import merged_sampling
        from workbench.services.llm.structured import read_reply, reask_messages, reply_problem, reply_schema

        provider = self.cfg.providers.get(name)
        agent = self.cfg.agent(call.agent)
        sampling = merged_sampling(provider, agent.sampling if agent is not None else None)
        schema = reply_schema(call)
        kwargs = {"sampling": sampling, "cap": call.meta.get("max_tokens"), "schema": schema,
                  "sample_index": int(call.meta.get("sample_index", 0)), "cancel": cancel,
                  **({"on_wait": on_wait} if on_wait is not None else {})}
        result = self._gateway.call(name, list(call.messages), **kwargs)
        record = CallRecord(call, read_reply(call, result.agent_reply(call.key)), name, False, result.to_dict())
        earlier: list[CallRecord] = []
        for n in range(1, (provider.reask if provider is not None and schema is not None else 0) + 1):
            problem = reply_problem(call, record.reply.text, record.reply.reading) if record.reply.ok else None
            if problem is None or cancel.is_set():
                break
            messages = reask_messages(call, record.reply.text or "", problem)
            retry = self._gateway.call(name, messages, **kwargs)
            if retry.status == "cancelled":
                break
            earlier.append(record)
            meta = {"reask": n, "reask_error": problem}
            reply = retry.agent_reply(call.key)
            record = CallRecord(call, read_reply(call, replace(reply, meta={**reply.meta, **meta})), name, False,
                                {**retry.to_dict(), "reask": meta})
            if not retry.ok:  # the re-ask failed: the protocol reads the last reply it did get
                earlier.append(record)
                record = earlier.pop(-2)
                break
        return replace(record, earlier=tuple(earlier)) if earlier else record
