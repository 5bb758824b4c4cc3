"""The simulated panel: answers an :class:`AgentCall` with the reply TEXT a model would return.

``SimPanel(seed, personas).reply(call)`` routes the call by its step (its protocol's declared
``sim`` module's ``HANDLERS``; no protocol is named here) to the function that writes its reply,
and wraps the text in a :class:`SimReply` whose meta says ``simulated: True`` and ``model:
"sim"``. The text then goes through the protocol's own parser, exactly as a real model's reply
would.

Determinism: each reply draws from ``random.Random("<seed>/<key>/<agent>/<purpose>/<prompt hash>")``
plus, for what must be stable across rounds, ``random.Random("<seed>/latent/<agent>/<scenario>")``.
The same seed, call and persona give the same text. Echo agents (and ARM's FAP re-queue) also
remember what they were told earlier in the run, as a real session does; use one panel per run.

In a run wrapped in Resonance Echo (a call whose ``meta["echo"]`` carries the agent's
``session``), every call the agent answers, whatever its purpose, goes through the agent's
simulated context window (:meth:`EchoSimAgent.answer_in_session`), so ordinary protocol work can
push the marker out of a small window. The reply itself is written from the protocol's own
messages (``meta["echo"]["protocol_messages"]``), so it is the same as without Echo.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from workbench.core.errors import InputError
from workbench.core.protocols.shared.steps import AgentCall, AgentReply
from workbench.core.sim import arm
from workbench.core.sim.echo import EchoSimAgent
from workbench.core.sim.persona import SIM_MODEL, SimError, SimPersona, SimReply
from workbench.core.sim.scenarios import Scenario, ScenarioBank, default_bank
from workbench.core.sim.text import Ask, count_words

HUMAN_PURPOSES = frozenset({"hitl_decision"})
HUMAN_AGENTS = frozenset({"conductor"})
Handler = Callable[[Ask], tuple[str, dict]]


ECHO_PURPOSES = frozenset({"turn", "verify"})


class SimPanel:
    """The built-in offline panel. ``personas`` maps agent ids to :class:`SimPersona` (or to the
    parameter dicts a project stores); an agent not listed answers with ``default``. ARM's silent
    baseline, unless listed as ``silent``, answers with the persona of its draw (gamma's)."""

    def __init__(self, seed: int, personas: Mapping[str, SimPersona | dict[str, Any]] | None = None,
                 scenarios: ScenarioBank | list[Scenario] | str | Path | None = None, *,
                 default: SimPersona | dict[str, Any] | None = None, latency_ms: int = 0):
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InputError("seed", f"must be a whole number, got {seed!r}")
        if isinstance(latency_ms, bool) or not isinstance(latency_ms, int) or latency_ms < 0:
            raise InputError("latency_ms", f"must be a whole number of milliseconds >= 0, got {latency_ms!r}")
        self.seed = seed
        self.personas = {str(a): SimPersona.from_params(p, f"personas.{a}") for a, p in (personas or {}).items()}
        self.default = SimPersona.from_params(default, "default")
        self.bank = _bank(scenarios)
        self.latency_ms = latency_ms
        self.memory: dict[Any, Any] = {}
        self._echo: dict[str, EchoSimAgent] = {}
        self._echo_lock = threading.Lock()

    @classmethod
    def for_config(cls, cfg) -> SimPanel:
        """A panel that answers every agent of ``cfg`` (a RunConfig) as a dry run would: each
        agent's simulated persona from its params, or the default persona where its params are
        for a real model and mean nothing to sim; a role answers like its first agent."""
        personas: dict[str, SimPersona] = {}
        for agent in cfg.agents:
            try:
                persona = SimPersona.from_params(agent.params)
            except InputError:
                persona = SimPersona()
            personas[agent.id] = persona
            if agent.role:
                personas.setdefault(agent.role, persona)
        return cls(cfg.seed, personas)

    def persona_for(self, call: AgentCall) -> SimPersona:
        if call.agent in self.personas:
            return self.personas[call.agent]
        if call.agent == "silent" and call.purpose == "trace":
            draw = arm.draw_of(call)  # the call's input, never its prompt
            if draw in self.personas:
                return self.personas[draw]
        return self.default

    def echo_agent(self, agent: str) -> EchoSimAgent:
        """The agent's Echo context (created on first use); its ``history`` is the observer's
        ground truth of which markers were in the window after each call."""
        with self._echo_lock:
            if agent not in self._echo:
                persona = self.personas.get(agent, self.default)
                self._echo[agent] = EchoSimAgent(agent, persona, self.bank, self.seed)
            return self._echo[agent]

    def reply(self, call: AgentCall) -> SimReply:
        """The simulated reply to ``call``; :class:`SimError` when sim must not or cannot answer."""
        if call.purpose in HUMAN_PURPOSES or call.agent in HUMAN_AGENTS:
            raise SimError(f"call {call.key!r} ({call.purpose}) asks {call.agent!r} for a human decision; "
                           "the simulated panel never answers for a human. Route it to a person "
                           "(the GUI's manual agent or a decisions file).")
        session = _echo_session(call)
        if call.purpose in ECHO_PURPOSES:
            return self._echo_reply(call) if session is None else self._session_reply(call, session, None)
        handler = _declared_handler(call)
        if handler is None:
            schema = call.reply_schema
            what = f"purpose {call.purpose!r}" + (f" with reply schema {schema!r}" if schema else "")
            raise SimError(f"the simulated panel cannot answer {what} (call {call.key!r}); it answers each step "
                           "a registered protocol declares and its sim module's HANDLERS name, and Echo's "
                           f"{', '.join(sorted(ECHO_PURPOSES))}")
        if session is not None:
            asked = replace(call, messages=tuple(call.meta["echo"].get("protocol_messages") or call.messages))
            return self._session_reply(call, session, lambda: handler(
                Ask(asked, self.persona_for(asked), self.seed, self.bank, self.memory)))
        ask = Ask(call, self.persona_for(call), self.seed, self.bank, self.memory)
        text, detail = handler(ask)
        return SimReply(text, self._meta(call, text, detail))

    def answer(self, call: AgentCall) -> AgentReply:
        """``reply`` as the step protocol's :class:`AgentReply`, for drivers (``echo.drive``,
        the runner). A call sim cannot answer becomes a failed reply that says why."""
        try:
            return self.reply(call).to_agent_reply(call.key)
        except SimError as exc:
            return AgentReply(call.key, None, error=str(exc), meta={"simulated": True, "model": SIM_MODEL,
                                                                     "error_kind": "simulated_refusal"})

    def _echo_reply(self, call: AgentCall) -> SimReply:
        agent = self.echo_agent(call.agent)
        got = agent.answer(call)
        detail = {"events": got.meta.get("events", []), "scenario": agent.last_scenario}
        for key in ("context_tokens", "error_kind"):
            if key in got.meta:
                detail[key] = got.meta[key]
        return SimReply(got.text, self._meta(call, got.text, detail), error=got.error)

    def _session_reply(self, call: AgentCall, session, work) -> SimReply:
        """A call of an Echo-wrapped run: answered from the agent's window (see sim.echo)."""
        agent = self.echo_agent(call.agent)
        got, detail = agent.answer_in_session(call, session, work)
        if work is None:
            detail["scenario"] = agent.last_scenario
        for key in ("events", "context_tokens", "error_kind"):
            if key in got.meta:
                detail[key] = got.meta[key]
        return SimReply(got.text, self._meta(call, got.text, detail), error=got.error)

    def _meta(self, call: AgentCall, text: str | None, detail: dict) -> dict[str, Any]:
        prompt = sum(count_words(str(m.get("content", ""))) for m in call.messages)
        completion = count_words(text)
        meta = {"simulated": True, "model": SIM_MODEL, "prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion, "latency_ms": self.latency_ms}
        if text is not None:
            meta["finish_reason"] = "stop"
        for key in ("events", "context_tokens", "error_kind"):
            if key in detail:
                meta[key] = detail.pop(key)
        meta["sim"] = detail
        return meta


def _declared_handler(call: AgentCall) -> Handler | None:
    """What answers the call's step, by its protocol's declaration (``sim``: a module whose
    ``HANDLERS`` map step names to handlers). The step is the one the call's meta names, or for a
    call built by hand the one declared step of its purpose (``registry.step_of``); None when
    no declared step, or no handler, answers it."""
    from workbench.core import registry

    found = registry.step_of(call)
    if found is None or not found[0].sim:
        return None
    protocol, step = found
    return getattr(importlib.import_module(protocol.sim), "HANDLERS", {}).get(step.name)


def _echo_session(call: AgentCall):
    """The agent's Echo session when the call comes from an Echo-wrapped run, else None."""
    echo = call.meta.get("echo")
    return echo.get("session") if isinstance(echo, dict) and echo.get("session") is not None else None


def _bank(scenarios: ScenarioBank | list[Scenario] | str | Path | None) -> ScenarioBank:
    if scenarios is None:
        return default_bank()
    if isinstance(scenarios, ScenarioBank):
        return scenarios
    if isinstance(scenarios, (str, Path)):
        return ScenarioBank.load(scenarios)
    if isinstance(scenarios, list) and all(isinstance(s, Scenario) for s in scenarios):
        return ScenarioBank(scenarios, default_bank().generic_template)
    raise InputError("scenarios", "must be a ScenarioBank, a list of Scenario, a path to a bank, or None")
