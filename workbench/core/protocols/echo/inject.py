"""Injection patterns (seed: "Implementation by Agent Type"; SPEC §5) and when checks are due.

- ``stateless`` (Type A, the pacemaker): the context seed block is prepended to every request, and
  the user message ends with ``[Resonance check: <hex>]``. Each reply is verified silently.
- ``stateful`` (Type B, the anchor): the marker is given in the first message of a session and
  checked explicitly ("Architect, recite the resonance marker.") on boot, after errors, every
  ``interval`` turns and before key decisions.
- ``compaction_aware`` (Type C): as stateful, and also checked after every compaction event.

Every text is a step's template (:mod:`.steps`, ``prompts/*.j2``), rendered through a run's
:class:`~workbench.core.protocols.shared.declaration.Prompts` (Echo's defaults when none is given).
The ``*_call`` builders return an :class:`AgentCall` whose ``meta`` holds the step, the template's
hash, the values (``inputs``: what the simulated panel reads) and, when the session's recent
exchange is quoted back, the fence; the ``*_messages`` builders return only the chat messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

from workbench.core.errors import InputError
from workbench.core.protocols.echo.config import DEFAULT_INTERVAL, DEFAULT_PROJECT
from workbench.core.protocols.echo.models import PATTERNS, SessionSeed
from workbench.core.protocols.echo.steps import IDENTITY
from workbench.core.protocols.shared.declaration import Prompts
from workbench.core.protocols.shared.fencing import Fence
from workbench.core.protocols.shared.steps import AgentCall
from workbench.core.protocols.shared.templates import TemplateProblem

# Events a driver reports between two check points, and the reasons a check can be due.
EVENTS: tuple[str, ...] = ("boot", "error", "context_limit", "compaction", "footer", "key_decision")
REASONS: tuple[str, ...] = ("boot", "error", "compaction", "footer", "key_decision", "interval", "every_turn")


@lru_cache(maxsize=1)
def default_prompts() -> Prompts:
    """Echo's default templates (a run's own come from its provenance)."""
    return Prompts(IDENTITY)


def _marker_text(seed: SessionSeed) -> str:
    if not seed.resonance_marker:
        raise InputError("resonance_marker", f"{seed.key} has no resonance marker")
    return seed.resonance_marker


def _listed(items: Iterable[str]) -> list[str]:
    return [i for i in items if i]


def _exchange(seed: SessionSeed) -> str | None:
    """The recent exchange as one quoted text (one fence around it all), or None: none yet."""
    return "; ".join(seed.recent_exchange) or None


def short_role(persona: str) -> str:
    """How the conductor addresses an agent: "The Architect" -> "Architect"."""
    name = persona.strip()
    return name[4:] if name.lower().startswith("the ") and len(name) > 4 else (name or "Agent")


# ----- each step's values --------------------------------------------------------------------
def recite_values(persona: str) -> dict[str, Any]:
    return {"name": short_role(persona)}


def seed_values(seed: SessionSeed, message: str, *, check_token: bool = True, directive: str | None = None,
                constraints: Iterable[str] | None = None) -> dict[str, Any]:
    """``context_seed``'s values. ``directive`` stands in for the seed's active tasks and
    ``constraints`` for its settled decisions."""
    marker = _marker_text(seed)
    return {"role": seed.persona or seed.agent,
            "active_tasks": [directive] if directive else _listed(seed.active_tasks),
            "settled_decisions": _listed(constraints if constraints is not None else seed.settled_decisions),
            "recent_exchange": _exchange(seed), "marker": marker, "message": message,
            "check_hex": seed.marker.hex if check_token else ""}  # type: ignore[union-attr]


def anchor_values(seed: SessionSeed, message: str, project: str = DEFAULT_PROJECT, *,
                  compaction_aware: bool = False) -> dict[str, Any]:
    return {"role": seed.persona or seed.agent, "project": project, "marker": _marker_text(seed),
            "message": message, "compaction_aware": compaction_aware}


def restore_values(seed: SessionSeed, message: str, project: str = DEFAULT_PROJECT) -> dict[str, Any]:
    return {"role": seed.persona or seed.agent, "project": project, "marker": _marker_text(seed),
            "settled_decisions": _listed(seed.settled_decisions), "active_tasks": _listed(seed.active_tasks),
            "recent_exchange": _exchange(seed), "last_checkpoint": seed.last_checkpoint or "", "message": message}


# ----- calls ---------------------------------------------------------------------------------
def echo_call(step: str, values: Mapping[str, Any], *, key: str, agent: str, purpose: str,
              prompts: Prompts | None = None, round_no: int = 1, fence: Fence | None = None,
              meta: Mapping[str, Any] | None = None) -> AgentCall:
    """One call rendered from Echo's ``step``: the purpose is the use the step is put to (a
    check, a turn), not the step's."""
    made = (prompts or default_prompts()).call(step, key=key, agent=agent, values=values, round_no=round_no,
                                                 fence=fence, meta=meta)
    return replace(made, purpose=purpose)


def recite_prompt(persona: str, prompts: Prompts | None = None) -> str:
    """The recital request, as the ``recite`` template words it (its user message)."""
    messages = (prompts or default_prompts()).template("recite").render(recite_values(persona))
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")


def carrier(pattern: str, seed: SessionSeed, message: str, *, start: bool, project: str = DEFAULT_PROJECT,
            check_token: bool = True) -> tuple[str | None, dict[str, Any] | None]:
    """The step that carries ``message`` to an agent of ``pattern``, with its values: the context
    seed (stateless: every request), the anchor (a session's first message), or none (the
    message goes as it is)."""
    if check_pattern(pattern) == "stateless":
        return "context_seed", seed_values(seed, message, check_token=check_token)
    if start:
        return "anchor", anchor_values(seed, message, project, compaction_aware=pattern == "compaction_aware")
    return None, None


def check_call(pattern: str, seed: SessionSeed, *, key: str, agent: str | None = None, start: bool,
               project: str = DEFAULT_PROJECT, check_token: bool = True, prompts: Prompts | None = None,
               round_no: int = 1, fence: Fence | None = None, meta: Mapping[str, Any] | None = None) -> AgentCall:
    """An explicit check: the recital request, carried as the agent's pattern wants (with the
    session-start message if ``start``)."""
    step, values = carrier(pattern, seed, recite_prompt(seed.persona, prompts), start=start, project=project,
                           check_token=check_token)
    if step is None:
        step, values = "recite", recite_values(seed.persona)
    return echo_call(step, values, key=key, agent=agent or seed.agent, purpose="verify", prompts=prompts,
                     round_no=round_no, fence=fence, meta=meta)


def turn_call(pattern: str, seed: SessionSeed, query: str, *, key: str, agent: str | None = None, start: bool,
              project: str = DEFAULT_PROJECT, check_token: bool = True, prompts: Prompts | None = None,
              round_no: int = 1, fence: Fence | None = None, meta: Mapping[str, Any] | None = None) -> AgentCall:
    """One working turn of a session (``start`` adds the session-start message)."""
    step, values = carrier(pattern, seed, query, start=start, project=project, check_token=check_token)
    if step is None:  # a started session's turn: the query alone, with no text of Echo's
        return AgentCall(key=key, agent=agent or seed.agent, purpose="turn",
                         messages=({"role": "user", "content": query},), round_no=round_no, meta=dict(meta or {}))
    return echo_call(step, values, key=key, agent=agent or seed.agent, purpose="turn", prompts=prompts,
                     round_no=round_no, fence=fence, meta=meta)


def restoration_call(pattern: str, seed: SessionSeed, *, key: str, agent: str | None = None,
                     project: str = DEFAULT_PROJECT, check_token: bool = True, prompts: Prompts | None = None,
                     round_no: int = 1, fence: Fence | None = None,
                     meta: Mapping[str, Any] | None = None) -> AgentCall:
    """Restoration steps 4 and 5: persona + settled decisions + active tasks + the NEW marker
    (``seed.resonance_marker``), then the recital request (a stateless agent: its context seed)."""
    prompt = recite_prompt(seed.persona, prompts)
    if check_pattern(pattern) == "stateless":
        step, values = "context_seed", seed_values(seed, prompt, check_token=check_token)
    else:
        step, values = "restore", restore_values(seed, prompt, project)
    return echo_call(step, values, key=key, agent=agent or seed.agent, purpose="verify", prompts=prompts,
                     round_no=round_no, fence=fence, meta=meta)


_EXAMPLE = SessionSeed(agent="a1", persona="The Architect",
                       active_tasks=["RCP run: Should the city close its downtown?"],
                       settled_decisions=["Votes are YES or NO with one reason"],
                       recent_exchange=["vote: Question: Should the city close its downtown?", "a1: YES, because"],
                       resonance_marker="salt on the threshold — 7f3a9c", last_checkpoint="turn 3")


def rehearse(overrides: Mapping[str, str]) -> None:
    """Render each overridden step once per way Echo uses it, with example values (a recent
    exchange to quote, the check token on and off): a template that fails only when rendered (an
    attribute the sandbox refuses, a quoted text cut) is refused with the run's configuration,
    not at the restoration that first renders it, after calls were paid for. ``ValueError``
    ``"prompts.STEP: ..."`` names the step, as ``check_overrides`` does."""
    prompts = Prompts(IDENTITY, overrides)
    bare = _EXAMPLE.model_copy(update={"recent_exchange": [], "last_checkpoint": None})
    uses = {
        "context_seed": [seed_values(s, "Question?", check_token=t) for s in (_EXAMPLE, bare) for t in (True, False)],
        "anchor": [anchor_values(_EXAMPLE, "Question?", compaction_aware=c) for c in (True, False)],
        "recite": [recite_values(s.persona) for s in (_EXAMPLE, bare.model_copy(update={"persona": ""}))],
        "restore": [restore_values(s, "Architect, recite.") for s in (_EXAMPLE, bare)],
    }
    for step in overrides:
        for values in uses.get(step, ()):
            try:
                prompts.template(step).render(values, Fence())
            except TemplateProblem as exc:
                raise ValueError(f"prompts.{step}: {exc}") from None
            except Exception as exc:  # noqa: BLE001 - what the template's own expressions raise ({{ 1 / 0 }})
                raise ValueError(f"prompts.{step}: could not be rendered: {type(exc).__name__}: {exc}") from None


# ----- the same, as chat messages ------------------------------------------------------------
def pacemaker_messages(seed: SessionSeed, query: str, *, directive: str | None = None,
                       constraints: Iterable[str] | None = None, check_token: bool = True,
                       prompts: Prompts | None = None, fence: Fence | None = None) -> list[dict[str, str]]:
    """One self-contained request: the context seed block, then the user message.

    ``check_token`` appends ``[Resonance check: <hex>]`` as the seed shows. It puts the hex in the
    request itself, so a recital then proves only that the request's end arrived intact; turn it
    off for a stricter check where the agent must take the marker from the seed block.
    """
    values = seed_values(seed, query, check_token=check_token, directive=directive, constraints=constraints)
    return list(echo_call("context_seed", values, key="", agent=seed.agent, purpose="turn", prompts=prompts,
                          fence=fence).messages)


def turn_messages(pattern: str, seed: SessionSeed, query: str, *, start: bool,
                  project: str = DEFAULT_PROJECT, check_token: bool = True,
                  prompts: Prompts | None = None) -> list[dict[str, str]]:
    """The messages of one working turn; ``start`` adds the session-start message."""
    return list(turn_call(pattern, seed, query, key="", start=start, project=project, check_token=check_token,
                          prompts=prompts).messages)


def check_messages(pattern: str, seed: SessionSeed, *, start: bool, project: str = DEFAULT_PROJECT,
                   check_token: bool = True, prompts: Prompts | None = None) -> list[dict[str, str]]:
    """An explicit check: ask the agent to recite (with the session-start message if ``start``)."""
    return list(check_call(pattern, seed, key="", start=start, project=project, check_token=check_token,
                           prompts=prompts).messages)


def restoration_messages(pattern: str, seed: SessionSeed, project: str = DEFAULT_PROJECT, *,
                         check_token: bool = True, prompts: Prompts | None = None) -> list[dict[str, str]]:
    """Restoration steps 4 and 5 as messages (see :func:`restoration_call`)."""
    return list(restoration_call(pattern, seed, key="", project=project, check_token=check_token,
                                 prompts=prompts).messages)


def check_pattern(pattern: str) -> str:
    if pattern not in PATTERNS:
        raise InputError("pattern", f"must be one of {', '.join(PATTERNS)}, got {pattern!r}")
    return pattern


def check_interval(interval: object) -> int:
    if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
        raise InputError("interval", f"must be a whole number of turns >= 1, got {interval!r}")
    return interval


def due_checks(turn: int, events: Iterable[str] = (), pattern: str = "stateful",
               interval: int = DEFAULT_INTERVAL, *, last_check: int = 0,
               key_decision: bool = False) -> tuple[str, ...]:
    """Why a verification is due at the check point before ``turn`` (empty: none is due).

    ``events`` are what happened since the previous check point (see :data:`EVENTS`);
    ``last_check`` is the turn of the last check (0: none yet). Reasons, in :data:`REASONS`
    order: ``boot`` (session start), ``error`` (a failed call or a context-limit rejection),
    ``compaction``, ``footer`` (a footer reported Degraded/Recovering or a different hex),
    ``key_decision`` (the turn is flagged as a key decision), ``interval`` (``interval`` turns or
    more since the last check) and, for stateless agents, ``every_turn``: their reply to this
    turn is verified silently, with no extra call.
    """
    check_pattern(pattern)
    check_interval(interval)
    happened = set(events)
    unknown = happened - set(EVENTS)
    if unknown:
        raise InputError("events", f"unknown event(s) {sorted(unknown)}; expected some of {', '.join(EVENTS)}")
    reasons = []
    if "boot" in happened:
        reasons.append("boot")
    if happened & {"error", "context_limit"}:
        reasons.append("error")
    if "compaction" in happened:
        reasons.append("compaction")
    if "footer" in happened:
        reasons.append("footer")
    if key_decision or "key_decision" in happened:
        reasons.append("key_decision")
    if turn - last_check >= interval:
        reasons.append("interval")
    if pattern == "stateless":
        reasons.append("every_turn")
    return tuple(reasons)
