"""The restoration protocol (seed: "Restoration Protocol"; SPEC §5) as a resumable state machine.

Steps, in order; each transition is reported as a ``Note("echo.transition")`` that the driver
persists as one ``echo_restorations`` row (``echo_records.persist_note``):

    log          "Resonance anchor lost at <timestamp>"
    read_seed    session_seed_{agent} is read (what it holds goes in the row)
    new_session  only when required (see RestorationContext.new_session_required)
    inject       persona + settled decisions + active tasks + a NEW marker (the ``restore`` step's
                 template; a stateless agent's ``context_seed``), with the recital request
    verify       "Recite the resonance marker": the one agent call, checked like any verification
    resume       verified: resume from the last checkpoint with the new marker
    escalate     not verified: escalate to the conductor

:func:`next_step` is the pure transition function. :func:`restore` is a step-protocol generator;
given the transitions already persisted (``done``) it continues where an interrupted episode
stopped, re-issuing the verify call if its answer was never recorded.

The restoration prompt quotes the seed's recent exchange back to the agent: untrusted text, which
reaches the template fenced (``RestorationContext.fence``, or a fresh fence), the fence kept in
the verify call's ``meta``. The ``read_seed`` row holds the seed as the prompt shows it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from workbench.core.protocols.echo.config import DEFAULT_PROJECT, RECITAL_MAX_TOKENS
from workbench.core.protocols.echo.inject import restoration_call
from workbench.core.protocols.echo.markers import Marker, parse_marker
from workbench.core.protocols.echo.models import SessionSeed, next_session_id, seed_key, utc_now
from workbench.core.protocols.echo.quoting import DEFAULT_QUOTING, Quoting
from workbench.core.protocols.echo.verify import VerificationResult, verify_reply
from workbench.core.protocols.shared.declaration import Prompts
from workbench.core.protocols.shared.fencing import Fence, fenced
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Batch, Note

STEPS: tuple[str, ...] = ("log", "read_seed", "new_session", "inject", "verify", "resume", "escalate")
TERMINAL = frozenset({"resume", "escalate"})
TRANSITION_NOTE = "echo.transition"


class RestorationError(ValueError):
    """An impossible sequence of steps (e.g. persisted rows out of order)."""


def next_step(step: str | None, *, new_session_required: bool = False,
              verified: bool | None = None) -> str | None:
    """The step after ``step`` (``None``: the episode has not started); ``None`` after a terminal step."""
    if step is None:
        return "log"
    if step == "log":
        return "read_seed"
    if step == "read_seed":
        return "new_session" if new_session_required else "inject"
    if step == "new_session":
        return "inject"
    if step == "inject":
        return "verify"
    if step == "verify":
        if verified is None:
            raise RestorationError("after verify, the outcome (verified or not) is needed")
        return "resume" if verified else "escalate"
    if step in TERMINAL:
        return None
    raise RestorationError(f"unknown restoration step {step!r}; expected one of {', '.join(STEPS)}")


@dataclass(frozen=True)
class Transition:
    step: str
    detail: dict[str, Any]
    at: str


@dataclass(frozen=True)
class RestorationContext:
    """What one restoration episode needs; everything here also goes into its ``log`` row."""

    restoration_id: str
    agent: str
    seed: SessionSeed  # session_seed_{agent} as read from memory
    lost_marker: str  # the marker that failed verification
    lost_at: str
    session_id: str
    pattern: str = "stateful"
    new_session_required: bool = True
    project: str = DEFAULT_PROJECT
    turn: int | None = None
    reason: str = ""
    check_token: bool = True
    crew: tuple[str, ...] = ("conductor",)
    run_id: str | None = None
    fence: Fence | None = None  # what the prompt's quoted recent exchange is fenced with (None: a fresh one)

    def log_detail(self) -> dict[str, Any]:
        return {"message": f"Resonance anchor lost at {self.lost_at}", "lost_at": self.lost_at,
                "lost_marker": self.lost_marker, "session_id": self.session_id, "pattern": self.pattern,
                "new_session_required": self.new_session_required, "project": self.project,
                "turn": self.turn, "reason": self.reason, "check_token": self.check_token,
                "crew": list(self.crew)}


@dataclass(frozen=True)
class RestorationOutcome:
    restoration_id: str
    agent: str
    status: Literal["resumed", "escalated"]
    new_marker: Marker | None
    session_id: str
    new_session: bool
    result: VerificationResult | None
    transitions: tuple[Transition, ...] = field(default_factory=tuple)

    @property
    def steps(self) -> list[str]:
        return [t.step for t in self.transitions]


def check_sequence(steps: Sequence[str], *, new_session_required: bool) -> None:
    """Refuse persisted steps that the state machine could not have produced."""
    state: str | None = None
    for i, step in enumerate(steps):
        if state in TERMINAL:
            raise RestorationError(f"step {step!r} after the episode ended with {state!r}")
        allowed = {"resume", "escalate"} if state == "verify" else {
            next_step(state, new_session_required=new_session_required)}
        if step not in allowed:
            raise RestorationError(f"step {i + 1} is {step!r}, but after {state or 'the start'} "
                                   f"the next step is {' or '.join(sorted(a for a in allowed if a))}")
        state = step


def verify_key(restoration_id: str, agent: str) -> str:
    return f"echo/{agent}/{restoration_id}/verify"


def restore(ctx: RestorationContext, *, new_marker: Callable[[], Marker],
            done: Sequence[Transition] = (), now: Callable[[], str] = utc_now,
            quoting: Quoting = DEFAULT_QUOTING,
            prompts: Prompts | None = None) -> Generator[Batch | Note, Any, RestorationOutcome]:
    """Run (or continue) one restoration episode; returns its outcome.

    ``new_marker`` issues a marker never used before in the project (the driver's
    ``echo_records.issue_marker``); it is called once, at ``inject``, and the marker is then read
    back from the inject row when an interrupted episode continues. ``prompts``: Echo's
    templates (a run's own; the defaults when None).
    """
    transitions = list(done)
    check_sequence([t.step for t in transitions], new_session_required=ctx.new_session_required)
    session_id, new_session = ctx.session_id, False
    marker: Marker | None = None
    result: VerificationResult | None = None
    call: AgentCall | None = None  # the verify call, made at inject (its messages are that row's)
    fence = ctx.fence or (Fence() if ctx.seed.recent_exchange else None)

    def verify_call(seed: SessionSeed) -> AgentCall:
        return restoration_call(
            ctx.pattern, seed, key=verify_key(ctx.restoration_id, ctx.agent), agent=ctx.agent, project=ctx.project,
            check_token=ctx.check_token, prompts=prompts, fence=fence,
            meta={"new_session": new_session, "restoration": ctx.restoration_id, "marker_hex": marker.hex,
                  "turn": ctx.turn, "max_tokens": RECITAL_MAX_TOKENS})

    for t in transitions:
        if t.step == "new_session":
            session_id, new_session = t.detail["session_id"], True
        elif t.step == "inject":
            marker = parse_marker(t.detail["marker"])
        elif t.step == "verify":
            result = VerificationResult.model_validate(t.detail["result"])

    step = transitions[-1].step if transitions else None
    while (nxt := next_step(step, new_session_required=ctx.new_session_required,
                            verified=result.verified if result else None)) is not None:
        seed = ctx.seed.model_copy(update={"resonance_marker": str(marker) if marker else ctx.seed.resonance_marker})
        if nxt == "log":
            detail = ctx.log_detail()
        elif nxt == "read_seed":
            detail = {"key": seed_key(ctx.agent), **_as_shown(ctx.seed, fence).seed_view()}
        elif nxt == "new_session":
            session_id, new_session = next_session_id(ctx.session_id), True
            detail = {"session_id": session_id, "previous_session_id": ctx.session_id}
        elif nxt == "inject":
            marker = new_marker()
            seed = ctx.seed.model_copy(update={"resonance_marker": str(marker)})
            call = verify_call(seed)
            detail = {"marker": str(marker), "hex": marker.hex, "persona": seed.persona,
                      "settled_decisions": list(seed.settled_decisions), "active_tasks": list(seed.active_tasks),
                      "messages": list(call.messages)}
        elif nxt == "verify":
            assert marker is not None
            call = call or verify_call(seed)  # an episode continued after its inject row
            replies = yield Batch((call,), label=f"Restoring {ctx.agent}: verify the new marker")
            reply: AgentReply | None = (replies or {}).get(call.key)
            text, error = (reply.text, reply.error) if reply else (None, "no reply")
            result = verify_reply(text, marker, quoting=quoting, error=error)
            detail = {"result": result.as_dict(), "reply_excerpt": (text or "")[:200], "error": error}
        elif nxt == "resume":
            detail = {"marker": str(marker), "session_id": session_id,
                      "last_checkpoint": ctx.seed.last_checkpoint, "notified": list(ctx.crew)}
        else:  # escalate
            detail = {"to": "conductor", "reason": result.reason if result else "", "notified": ["conductor"],
                      "marker": str(marker) if marker else None}
        transition = Transition(nxt, detail, now())
        transitions.append(transition)
        yield Note(TRANSITION_NOTE, f"{ctx.agent}: restoration {nxt}",
                   data={"restoration": ctx.restoration_id, "agent": ctx.agent, "step": nxt,
                         "detail": detail, "at": transition.at, "lost_marker": ctx.lost_marker,
                         "run_id": ctx.run_id})
        step = nxt

    return RestorationOutcome(
        restoration_id=ctx.restoration_id, agent=ctx.agent,
        status="resumed" if step == "resume" else "escalated",
        new_marker=marker if step == "resume" else None, session_id=session_id,
        new_session=new_session, result=result, transitions=tuple(transitions))


def _as_shown(seed: SessionSeed, fence: Fence | None) -> SessionSeed:
    """The seed as the restoration prompt shows it: its recent exchange in ``fence`` (the
    escapes are counted once, when the prompt is rendered)."""
    if fence is None or not seed.recent_exchange:
        return seed
    return seed.model_copy(update={"recent_exchange": [fenced("; ".join(seed.recent_exchange), fence.name)]})


def context_from_log(restoration_id: str, agent: str, seed: SessionSeed, log: Transition, *,
                     run_id: str | None = None) -> RestorationContext:
    """Rebuild an episode's context from its persisted ``log`` row (to continue it)."""
    d = log.detail
    return RestorationContext(
        restoration_id=restoration_id, agent=agent, seed=seed, lost_marker=d["lost_marker"],
        lost_at=d["lost_at"], session_id=d["session_id"], pattern=d.get("pattern", "stateful"),
        new_session_required=bool(d.get("new_session_required", True)),
        project=d.get("project", DEFAULT_PROJECT), turn=d.get("turn"), reason=d.get("reason", ""),
        check_token=bool(d.get("check_token", True)), crew=tuple(d.get("crew", ("conductor",))),
        run_id=run_id)
