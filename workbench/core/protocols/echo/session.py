"""One Resonance Echo session as a step-protocol generator: turns, due checks, restoration.

The generator yields a Batch per agent call (``purpose`` "turn" or "verify") and Notes the driver
persists (``echo_records.persist_note``):

    echo.anchor           a marker was given to the agent: store resonance_anchor_{agent}
    echo.seed             a checkpoint of session_seed_{agent} (``final`` at session end)
    echo.verification     one check, success or not, with its trigger
    echo.transition       one restoration step (see echo_restore)
    echo.anchor_retired   an anchor that could not be restored (the episode escalated)
    echo.footer           the agent's footer state changed
    echo.session_end      the session summary (the runner keeps it in runs.summary_json["echo"])

Checks run at the check point before each turn when :func:`due_checks` says so, except for
stateless agents, whose every reply is verified silently. A failed check starts a restoration at
once; if it escalates, the session stops.

The stateless seed block quotes the recent exchange (earlier queries and the agent's replies)
back to the agent: that text is untrusted, an untrusted variable of the ``context_seed`` template,
so it goes in a fence drawn fresh for the call (``meta["delimiter"]``, ``meta["fence_escapes"]``),
and a recital copied from it counts for nothing. A footer counts only in the agent's own words,
and never as the recital: a reply that is only a footer line is not trusted (:func:`watch_footer`).
Every text the session sends is rendered from Echo's templates (``prompts``: a run's own, or the
defaults; see :mod:`.steps`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from workbench.core.protocols.echo.config import DEFAULT_INTERVAL, DEFAULT_PROJECT, RECITAL_MAX_TOKENS
from workbench.core.protocols.echo.footer import find_footer
from workbench.core.protocols.echo.inject import check_call, due_checks, turn_call
from workbench.core.protocols.echo.markers import Marker, MarkerIssuer
from workbench.core.protocols.echo.models import InjectionPattern, SessionSeed, VerificationEntry, utc_now
from workbench.core.protocols.echo.quoting import DEFAULT_QUOTING, Quoting
from workbench.core.protocols.echo.restore import RestorationContext, RestorationOutcome, restore
from workbench.core.protocols.echo.verify import recital_text, verify_reply
from workbench.core.protocols.shared.declaration import Prompts
from workbench.core.protocols.shared.fencing import drop_fence_tokens
from workbench.core.protocols.shared.steps import AgentReply, Batch, Note, drive

if TYPE_CHECKING:
    from workbench.core.protocols.echo.context import SimulatedAgent

CONTEXT_LIMIT = "context_limit"


class EchoPlan(BaseModel):
    """What a session does: who the agent is, how it is anchored, and the work (one query a turn)."""

    agent: str = Field(min_length=1)
    persona: str = ""
    project: str = DEFAULT_PROJECT
    pattern: InjectionPattern = "stateful"
    interval: int = Field(default=DEFAULT_INTERVAL, ge=1)
    queries: list[str] = Field(default_factory=list)
    key_decisions: list[int] = Field(default_factory=list)  # turns that are key decisions
    active_tasks: list[str] = Field(default_factory=list)
    settled_decisions: list[str] = Field(default_factory=list)
    session_id: str = Field(default="session-001", min_length=1)
    run_id: str | None = None
    new_session_on_restore: bool | None = None  # None: stateful agents, and any agent at its wall
    check_token: bool = True
    crew: list[str] = Field(default_factory=lambda: ["conductor"])


class EchoSessionSummary(BaseModel):
    agent: str
    pattern: str
    interval: int
    status: Literal["completed", "escalated"]
    turns: int  # working turns taken
    checks: int
    failures: int
    restorations: list[str]
    marker: str | None  # the marker in force at the end (None after an escalation)
    session_id: str
    footer_states: list[dict[str, Any]]  # [{turn, state}] each time the footer state changed
    ended_at: str
    text: str


@dataclass
class _State:
    marker: Marker
    seed: SessionSeed
    session_id: str
    start_pending: bool
    wall: bool = False  # a context-limit rejection since the last good state
    checks: int = 0
    failures: int = 0
    restorations: list[str] = field(default_factory=list)
    footer_states: list[dict[str, Any]] = field(default_factory=list)
    escalated: bool = False


def _events(reply: AgentReply | None) -> set[str]:
    if reply is None:
        return {"error"}
    found = {e for e in reply.meta.get("events", ()) if e in ("compaction", CONTEXT_LIMIT)}
    if not reply.ok:
        found.add(CONTEXT_LIMIT if CONTEXT_LIMIT in (reply.error or "") or
                  reply.meta.get("error_kind") == CONTEXT_LIMIT else "error")
    return found


def echo_session(plan: EchoPlan, marker: Marker, *, new_marker: Callable[[], Marker],
                 now: Callable[[], str] = utc_now, retrieved: bool = False,
                 quoting: Quoting = DEFAULT_QUOTING,
                 prompts: Prompts | None = None) -> Generator[Batch | Note, Any, EchoSessionSummary]:
    """Run one session. ``marker`` is new (issued by the driver), or ``retrieved`` from the agent's
    stored anchor: then it is not given again, and the boot check tests continuity. ``prompts``:
    Echo's templates (the defaults when None)."""
    agent, pattern = plan.agent, plan.pattern
    seed = SessionSeed(agent=agent, persona=plan.persona, active_tasks=plan.active_tasks,
                       settled_decisions=plan.settled_decisions, resonance_marker=str(marker),
                       last_checkpoint=now(), run_id=plan.run_id)
    st = _State(marker, seed, plan.session_id, start_pending=not retrieved)
    if not retrieved:
        yield _anchor_note(agent, str(marker), st.session_id, pattern, plan.run_id, now())
    yield _seed_note(st.seed)

    events: set[str] = {"boot"}
    last_check = 0
    turns = 0
    key_turns = set(plan.key_decisions)
    for turn, query in enumerate(plan.queries, 1):
        key_decision = turn in key_turns
        if pattern != "stateless":
            reasons = due_checks(turn, events, pattern, plan.interval, last_check=last_check,
                                 key_decision=key_decision)
            if reasons:
                call = check_call(pattern, st.seed, key=f"echo/{agent}/check/{turn}", agent=agent,
                                  start=st.start_pending, project=plan.project, check_token=plan.check_token,
                                  prompts=prompts, round_no=turn,
                                  meta={"turn": turn, "reasons": list(reasons), "max_tokens": RECITAL_MAX_TOKENS})
                replies = yield Batch((call,), label=f"Turn {turn}: resonance check ({', '.join(reasons)})")
                reply = (replies or {}).get(call.key)
                st.start_pending = False
                st.wall = st.wall or CONTEXT_LIMIT in _events(reply)
                yield from _check(plan, st, reply, reasons, turn, new_marker, now, quoting, prompts)
                last_check = turn
                if st.escalated:
                    break
        events = set()
        call = turn_call(pattern, st.seed, query, key=f"echo/{agent}/turn/{turn}", agent=agent,
                         start=st.start_pending, project=plan.project, check_token=plan.check_token,
                         prompts=prompts, round_no=turn, meta={"turn": turn, "key_decision": key_decision})
        replies = yield Batch((call,), label=f"Turn {turn}")
        reply = (replies or {}).get(call.key)
        turns, st.start_pending = turn, False
        events = _events(reply)
        st.wall = st.wall or CONTEXT_LIMIT in events
        text = reply.text if reply else None
        footer_event = yield from watch_footer(st.seed.agent, st.footer_states, st.marker.hex, text, turn, quoting)
        if footer_event:
            events.add("footer")
        st.seed = st.seed.with_exchange(f"user: {drop_fence_tokens(query)}",
                                        f"{agent}: {drop_fence_tokens(text) if text is not None else '(no reply)'}")
        if pattern == "stateless":
            reasons = due_checks(turn, events, pattern, plan.interval, last_check=last_check,
                                 key_decision=key_decision)
            yield from _check(plan, st, reply, reasons, turn, new_marker, now, quoting, prompts)
            last_check, events = turn, set()
            if st.escalated:
                break
        elif key_decision:
            st.seed = st.seed.checkpoint(now())
            yield _seed_note(st.seed)

    ended_at = now()
    st.seed = st.seed.checkpoint(ended_at)
    yield _seed_note(st.seed, final=True)
    status = "escalated" if st.escalated else "completed"
    summary = EchoSessionSummary(
        agent=agent, pattern=pattern, interval=plan.interval, status=status, turns=turns, checks=st.checks,
        failures=st.failures, restorations=st.restorations,
        marker=None if st.escalated else str(st.marker), session_id=st.session_id,
        footer_states=st.footer_states, ended_at=ended_at,
        text=(f"{agent} ({pattern}): {turns} turns, {st.checks} checks, {st.failures} failed, "
              f"{len(st.restorations)} restorations; {status}"))
    yield Note("echo.session_end", summary.text, data={"summary": summary.model_dump(), "run_id": plan.run_id})
    return summary


def _check(plan: EchoPlan, st: _State, reply: AgentReply | None, reasons: tuple[str, ...], turn: int,
           new_marker: Callable[[], Marker], now: Callable[[], str], quoting: Quoting, prompts: Prompts | None):
    text, error = (reply.text, reply.error) if reply else (None, "no reply")
    result = verify_reply(text, st.marker, quoting=quoting, error=error)
    st.checks += 1
    entry = VerificationEntry(time=now(), success=result.verified, turn=turn, trigger=",".join(reasons),
                              action=None if result.verified else "restoration_triggered",
                              reply_excerpt=(text or error or "")[:200])
    yield _verification_note(plan.agent, plan.run_id, st.marker.hex, entry, result.as_dict())
    if result.verified:
        if plan.pattern != "stateless" or turn % plan.interval == 0:
            st.seed = st.seed.checkpoint(now())  # a verified state is a significant checkpoint
            yield _seed_note(st.seed)
        return
    st.failures += 1
    needs_new = plan.new_session_on_restore
    if needs_new is None:
        needs_new = plan.pattern == "stateful" or st.wall
    ctx = RestorationContext(  # its prompt quotes the recent exchange back: fenced, as in a turn
        restoration_id=f"restore-{st.marker.hex}", agent=plan.agent, seed=st.seed,
        lost_marker=str(st.marker), lost_at=entry.time, session_id=st.session_id, pattern=plan.pattern,
        new_session_required=needs_new, project=plan.project, turn=turn, reason=result.reason,
        check_token=plan.check_token, crew=tuple(plan.crew), run_id=plan.run_id)
    st.restorations.append(ctx.restoration_id)
    outcome: RestorationOutcome = yield from restore(ctx, new_marker=new_marker, now=now, quoting=quoting,
                                                     prompts=prompts)
    notes, st.seed = outcome_notes(outcome, pattern=plan.pattern, run_id=plan.run_id, lost_hex=st.marker.hex,
                                   seed=st.seed, turn=turn, now=now)
    for note in notes:
        yield note
    if outcome.status == "resumed" and outcome.new_marker is not None:
        st.marker, st.session_id, st.wall = outcome.new_marker, outcome.session_id, False
    else:
        st.escalated = True


def outcome_notes(outcome: RestorationOutcome, *, pattern: str, run_id: str | None, lost_hex: str,
                  seed: SessionSeed, turn: int | None, now: Callable[[], str] = utc_now
                  ) -> tuple[list[Note], SessionSeed]:
    """The records an ended restoration leaves, and the session seed after it.

    Resumed: a new anchor for the new marker (replacing the lost one), its first verification
    (the restoration's own, trigger "restoration") and a seed checkpoint carrying the new marker.
    Escalated: a failed verification with action "escalated" on the lost anchor, which is retired.
    """
    agent = outcome.agent
    result = outcome.result.as_dict() if outcome.result else {}
    if outcome.status == "resumed" and outcome.new_marker is not None:
        marker = outcome.new_marker
        seed = seed.checkpoint(now(), resonance_marker=str(marker))
        verify = next(t for t in reversed(outcome.transitions) if t.step == "verify")
        ok = VerificationEntry(time=verify.at, success=True, turn=turn, trigger="restoration",
                               reply_excerpt=verify.detail.get("reply_excerpt"))
        return [_anchor_note(agent, str(marker), outcome.session_id, pattern, run_id, now(), replaces=lost_hex),
                _verification_note(agent, run_id, marker.hex, ok, result),
                _seed_note(seed)], seed
    failed = VerificationEntry(time=now(), success=False, turn=turn, trigger="restoration", action="escalated",
                               reply_excerpt=outcome.result.reason if outcome.result else None)
    return [_verification_note(agent, run_id, lost_hex, failed, result),
            Note("echo.anchor_retired", f"{agent}: anchor {lost_hex} escalated to the conductor",
                 data={"agent": agent, "marker_hex": lost_hex, "run_id": run_id, "reason": "escalated"})], seed


def watch_footer(agent: str, footer_states: list[dict[str, Any]], marker_hex: str, text: str | None, turn: int,
                 quoting: Quoting, run_id: str | None = None):
    """Record a change of the agent's footer state (a Note); returns True when it asks for a check
    (Degraded or Recovering, or a footer hex that is not the current marker's). A footer that is
    the only content of the reply is not trusted (it may be a copy): nothing is recorded, and a
    check is asked for, where the marker must be recited outside any footer line."""
    footer = find_footer(text, quoting)
    if footer is None:
        return False
    if footer_only(text or "", quoting):
        return True
    previous = footer_states[-1]["state"] if footer_states else None
    if footer.state != previous:
        footer_states.append({"turn": turn, "state": footer.state})
        extra = {"run_id": run_id} if run_id is not None else {}
        yield Note("echo.footer", f"{agent}: footer state {footer.state}",
                   data={"agent": agent, "turn": turn, **extra, **footer.model_dump()})
    return footer.state != "Stable" or footer.resonance != marker_hex


def footer_only(text: str, quoting: Quoting = DEFAULT_QUOTING) -> bool:
    """Whether the reply's own text is nothing but footer lines."""
    return not recital_text(text, quoting).strip()


def _anchor_note(agent: str, marker: str, session_id: str, pattern: str, run_id: str | None, at: str,
                 replaces: str | None = None) -> Note:
    return Note("echo.anchor", f"{agent}: resonance anchor {marker[-6:]}",
                data={"agent": agent, "marker": marker, "session_id": session_id, "injection": pattern,
                      "run_id": run_id, "created_at": at, "replaces": replaces})


def _seed_note(seed: SessionSeed, final: bool = False) -> Note:
    return Note("echo.seed", f"{seed.agent}: session seed checkpoint", data={"seed": seed.model_dump(), "final": final})


def _verification_note(agent: str, run_id: str | None, hex_: str, entry: VerificationEntry, result: dict) -> Note:
    word = "verified" if entry.success else "FAILED"
    return Note("echo.verification", f"{agent}: marker {hex_} {word} ({entry.trigger})",
                data={"agent": agent, "marker_hex": hex_, "entry": entry.model_dump(), "result": result,
                      "run_id": run_id})


def simulate(plan: EchoPlan, agent: SimulatedAgent, *, seed: int = 0,
             now: Callable[[], str] | None = None) -> tuple[EchoSessionSummary, list[Note], MarkerIssuer]:
    """A whole session against a simulated agent, with no project file: (summary, notes, issuer)."""
    issuer = MarkerIssuer(random.Random(seed))
    notes: list[Note] = []
    kwargs = {"now": now} if now else {}
    summary = drive(echo_session(plan, issuer(), new_marker=issuer, **kwargs), agent.answer, notes.append)
    return summary, notes, issuer
