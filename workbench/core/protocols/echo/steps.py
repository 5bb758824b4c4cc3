"""Resonance Echo's steps (SPEC §7): every text Echo sends or adds to a call, each a template in
``prompts/``, and the protocol's identity. The declaration (:mod:`.declaration`) adds the rest;
:mod:`.inject` renders the calls from these.

Echo wraps other protocols' calls, so two of its steps dress a call rather than make one:

- ``context_seed`` (stateless agents, the pacemaker): the ``[CONTEXT SEED]`` block, then the call's
  own ``message``; it stands in for the call's last user message.
- ``anchor`` (stateful and compaction-aware agents, at session start): its system block goes
  before the call's messages; its user block stands in for the call's last user message.

``recite`` is the recital request ("Architect, recite the resonance marker."): sent alone to an
agent whose session has started, else as the ``message`` of ``anchor`` (a boot check) or of
``context_seed`` (a stateless agent). ``restore`` is a restoration's injection, with the recital
request as its ``message`` (a stateless agent's restoration is a ``context_seed`` call).

A run overrides these as ``prompts["echo.STEP"]`` (docs/protocols.md, "Echo's prompts").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench.core.protocols.shared.declaration import Protocol
from workbench.core.protocols.shared.steps import AgentCall
from workbench.core.protocols.shared.templates import Step, Variable

NAME = "echo"

ROLE = Variable("role", "who the agent is: its persona (in a run Echo wraps, its agent id)")
MARKER = Variable("marker", "the agent's resonance marker (fragment — hex): what its recital is checked against",
                  required=True)
MESSAGE = Variable("message", "what the call asks: the protocol's own prompt (its quoted parts already fenced), "
                              "a session turn's query, or the recital request (the recite step)", required=True)
PROJECT = Variable("project", "the project the agent works in (the run's echo.project)")
ACTIVE_TASKS = Variable("active_tasks", "the session seed's active tasks, a list (in a run: the protocol and its "
                                        "query)")
SETTLED = Variable("settled_decisions", "the session seed's settled decisions, a list (the run's echo.decisions)")
RECENT = Variable("recent_exchange", 'the session\'s last messages and replies, joined by "; " (none at the '
                                     "start): quoted back to the agent", untrusted=True)

STEPS = (
    Step("context_seed", "turn",
         "Stateless agents (the pacemaker): the context seed block in every request, before the request's own "
         "message; with the check token, the request ends with the marker's hex.",
         (ROLE, ACTIVE_TASKS, SETTLED, RECENT, MARKER, MESSAGE,
          Variable("check_hex", "the marker's 6 hex digits when the request ends with the check token "
                                "(echo.check_token), else empty")),
         "context_seed.j2"),
    Step("anchor", "turn",
         "Stateful and compaction-aware agents: the session start, the marker given in the session's first "
         "message (the system block, before the call's own messages).",
         (ROLE, PROJECT, MARKER, MESSAGE,
          Variable("compaction_aware", "true for a compaction-aware agent: a compaction will be followed by a "
                                       "check")),
         "anchor.j2"),
    Step("recite", "verify", "An explicit check: the agent is asked to recite its marker.",
         (Variable("name", 'how the conductor addresses the agent: its persona without a leading "The "'),),
         "recite.j2"),
    Step("restore", "verify",
         "Restoration (steps inject and verify): persona, settled decisions, active tasks and the NEW marker, "
         "then the recital request.",
         (ROLE, PROJECT, MARKER, SETTLED, ACTIVE_TASKS, RECENT, MESSAGE,
          Variable("last_checkpoint", 'where the agent resumes: "turn N", a time, or empty (the session '
                                      "start)")),
         "restore.j2"),
)


IDENTITY = Protocol(
    name=NAME, title="Resonance Echo", version="1.0",
    package="workbench.core.protocols.echo",
    summary="Each agent carries a resonance marker; a recital that no longer matches reveals silent "
            "context loss, which restoration repairs.",
    steps=STEPS, runnable=False, sim="workbench.core.sim.echo",
)


def echo_values(call: AgentCall) -> Mapping[str, Any]:
    """The values Echo made the call's prompt from: what the simulated panel reads, never the
    prompt's wording. A call of Echo's own keeps them in ``meta["inputs"]``; a protocol's call that
    Echo dressed (the context seed, a session start), in ``meta["echo"]["inputs"]``. Empty for a
    call Echo made no text of (a session turn sent as it is)."""
    meta = call.meta if isinstance(call.meta, Mapping) else {}
    echo = meta.get("echo")
    if isinstance(echo, Mapping) and isinstance(echo.get("inputs"), Mapping):
        return echo["inputs"]
    if meta.get("protocol") == NAME and isinstance(meta.get("inputs"), Mapping):
        return meta["inputs"]
    return {}


def asks_recital(call: AgentCall) -> bool:
    """Whether the call asks the agent to recite its marker: an explicit check or a restoration's
    verify call (purpose ``verify``), or a request that ends with the check token."""
    return call.purpose == "verify" or bool(echo_values(call).get("check_hex"))


__all__ = ["IDENTITY", "NAME", "STEPS", "asks_recital", "echo_values"]
