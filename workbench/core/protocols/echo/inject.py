"""Injection patterns (seed: "Implementation by Agent Type"; SPEC §5) and when checks are due.

- ``stateless`` (Type A, the pacemaker): the context seed block is prepended to every request, and
  the user message ends with ``[Resonance check: <hex>]``. Each reply is verified silently.
- ``stateful`` (Type B, the anchor): the marker is given in the first message of a session and
  checked explicitly ("Architect, recite the resonance marker.") on boot, after errors, every
  ``interval`` turns and before key decisions.
- ``compaction_aware`` (Type C): as stateful, and also checked after every compaction event.

The builders return chat messages (``{"role", "content"}`` dicts) ready for an AgentCall.
"""

from __future__ import annotations

from collections.abc import Iterable

from workbench.core.errors import InputError
from workbench.core.protocols.echo.config import DEFAULT_INTERVAL, DEFAULT_PROJECT
from workbench.core.protocols.echo.models import PATTERNS, SessionSeed

# Events a driver reports between two check points, and the reasons a check can be due.
EVENTS: tuple[str, ...] = ("boot", "error", "context_limit", "compaction", "footer", "key_decision")
REASONS: tuple[str, ...] = ("boot", "error", "compaction", "footer", "key_decision", "interval", "every_turn")


def _marker_text(seed: SessionSeed) -> str:
    if not seed.resonance_marker:
        raise InputError("resonance_marker", f"{seed.key} has no resonance marker")
    return seed.resonance_marker


def _hex(seed: SessionSeed) -> str:
    return seed.marker.hex  # type: ignore[union-attr]


def _join(items: Iterable[str]) -> str:
    items = [i for i in items if i]
    return "; ".join(items) if items else "(none)"


def short_role(persona: str) -> str:
    """How the conductor addresses an agent: "The Architect" -> "Architect"."""
    name = persona.strip()
    return name[4:] if name.lower().startswith("the ") and len(name) > 4 else (name or "Agent")


def recite_prompt(persona: str) -> str:
    return f"{short_role(persona)}, recite the resonance marker."


def context_seed_block(seed: SessionSeed, *, directive: str | None = None,
                       constraints: Iterable[str] | None = None) -> str:
    """The seed's ``[CONTEXT SEED]`` block (Type A)."""
    marker = _marker_text(seed)
    return "\n".join([
        "[CONTEXT SEED]",
        f"Role: {seed.persona or seed.agent}",
        f"Active task: {directive or _join(seed.active_tasks)}",
        f"Constraints: {_join(constraints if constraints is not None else seed.settled_decisions)}",
        f"Recent exchange: {_join(seed.recent_exchange)}",
        f'Resonance: "{marker}"',
    ])


def pacemaker_messages(seed: SessionSeed, query: str, *, directive: str | None = None,
                       constraints: Iterable[str] | None = None, check_token: bool = True) -> list[dict[str, str]]:
    """One self-contained request: the context seed block, then the user message.

    ``check_token`` appends ``[Resonance check: <hex>]`` as the seed shows. It puts the hex in the
    request itself, so a recital then proves only that the request's end arrived intact; turn it
    off for a stricter check where the agent must take the marker from the seed block.
    """
    block = context_seed_block(seed, directive=directive, constraints=constraints)
    user = f"{query} [Resonance check: {_hex(seed)}]" if check_token else query
    return [{"role": "user", "content": f"{block}\n\n[USER MESSAGE]\n{user}"}]


def anchor_messages(seed: SessionSeed, project: str = DEFAULT_PROJECT) -> list[dict[str, str]]:
    """Session start for Type B (and C): the marker in the first message of the session."""
    return [{"role": "system", "content": "\n".join([
        f"You are {seed.persona or seed.agent} in the {project} project.",
        f'Resonance marker: "{_marker_text(seed)}"',
        "Include this marker in your responses when prompted.",
    ])}]


def compaction_aware_messages(seed: SessionSeed, project: str = DEFAULT_PROJECT) -> list[dict[str, str]]:
    """Session start for Type C: the anchor message, and notice that compaction triggers a check."""
    (msg,) = anchor_messages(seed, project)
    return [{"role": "system", "content": msg["content"] + "\nAfter any compaction of this conversation "
             "you will be asked to recite it."}]


def session_start_messages(pattern: str, seed: SessionSeed, project: str = DEFAULT_PROJECT) -> list[dict[str, str]]:
    """What opens a session. Stateless agents have no session: their seed goes with every turn."""
    check_pattern(pattern)
    if pattern == "stateless":
        return []
    if pattern == "compaction_aware":
        return compaction_aware_messages(seed, project)
    return anchor_messages(seed, project)


def turn_messages(pattern: str, seed: SessionSeed, query: str, *, start: bool,
                  project: str = DEFAULT_PROJECT, check_token: bool = True) -> list[dict[str, str]]:
    """The messages of one working turn; ``start`` adds the session-start message."""
    if check_pattern(pattern) == "stateless":
        return pacemaker_messages(seed, query, check_token=check_token)
    head = session_start_messages(pattern, seed, project) if start else []
    return head + [{"role": "user", "content": query}]


def check_messages(pattern: str, seed: SessionSeed, *, start: bool, project: str = DEFAULT_PROJECT,
                   check_token: bool = True) -> list[dict[str, str]]:
    """An explicit check: ask the agent to recite (with the session-start message if ``start``)."""
    prompt = recite_prompt(seed.persona)
    if check_pattern(pattern) == "stateless":
        return pacemaker_messages(seed, prompt, check_token=check_token)
    head = session_start_messages(pattern, seed, project) if start else []
    return head + [{"role": "user", "content": prompt}]


def restoration_messages(pattern: str, seed: SessionSeed, project: str = DEFAULT_PROJECT, *,
                         check_token: bool = True) -> list[dict[str, str]]:
    """Restoration step 4 and 5: persona + settled decisions + active tasks + the NEW marker
    (``seed.resonance_marker``), then "recite the resonance marker"."""
    prompt = recite_prompt(seed.persona)
    if check_pattern(pattern) == "stateless":
        return pacemaker_messages(seed, prompt, check_token=check_token)
    inject = "\n".join([
        f"You are {seed.persona or seed.agent} in the {project} project. Your working context was "
        "restored from your session seed.",
        f'Resonance marker: "{_marker_text(seed)}"',
        "Include this marker in your responses when prompted.",
        f"Settled decisions: {_join(seed.settled_decisions)}",
        f"Active tasks: {_join(seed.active_tasks)}",
        f"Recent exchange: {_join(seed.recent_exchange)}",
        f"Resume from the last checkpoint ({seed.last_checkpoint or 'session start'}).",
    ])
    return [{"role": "system", "content": inject}, {"role": "user", "content": prompt}]


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
