"""Resonance Echo around any protocol run: :func:`with_echo` wraps a step generator's agents.

The inner protocol (RCP, findings, CONS, ARM) runs unchanged and never sees Echo. For every agent
of its batches the wrapper keeps one Echo session (see :mod:`.echo_session` for the records):

- **Marker.** At the agent's first call: ``issue_marker("echo/<agent>/session")``, an
  ``echo.anchor`` and an ``echo.seed`` note. Stateless (pacemaker) agents get the context seed
  block, ending ``[Resonance check: <hex>]``, in EVERY call; stateful and compaction-aware agents
  get the session-start message in their first call (the boot check).
- **Turns and check points.** Each of the agent's protocol calls is one turn. A batch that
  holds several calls of one agent is forwarded in waves (wave ``j`` holds each agent's ``j``-th
  call), so every turn has a check point before it, as in a session. At a check point,
  :func:`due_checks` decides (boot, error or context limit, compaction, footer, interval) and
  the due agents get ``echo/<agent>/check/<turn>`` verify calls, all in one batch.
- **Stateless agents** are verified silently on every ordinary reply: the exact hex in the
  agent's own text, outside quoted artifacts (the run's fences, ``call.meta["delimiter"]``) and
  outside footer lines (a copied footer recites nothing).
- **Quoting back.** The pacemaker's "Recent exchange" quotes earlier messages and replies back to
  the agent: it is untrusted text (an untrusted variable of the ``context_seed`` template), fenced
  with the call's fence (the protocol's ``meta["delimiter"]`` when it has one, else a fresh one,
  stored there), escapes counted in ``meta["fence_escapes"]``. Excerpts keep no fence lines of
  their own.
- **Prompts.** Every text Echo adds or sends is a step's template (:mod:`.steps`), rendered through
  the run's Echo templates (``prompts``; its config's ``prompts["echo.STEP"]``). A protocol call
  Echo dresses keeps its own step and template hash; ``meta["echo"]`` adds Echo's ``step`` and
  ``inputs`` (the values the simulated panel reads).
- **A failed check** runs :func:`echo_restore.restore` for that agent at once, with a new marker
  from ``issue_marker("echo/<agent>/restore/<n>")``; its verify call is keyed
  ``echo/<agent>/restore/<n>/verify``. An escalation yields a ``warning`` note; the agent keeps
  working, flagged, with no further Echo checks.
- **The inner generator** gets the replies keyed by its own keys, with the agent's trailing Echo
  lines (a ``Resonance: …`` recital, a ``:: SYSTEM ::`` footer) removed.
- **At the end** one final seed checkpoint and one ``echo.session_end`` note per agent (the
  :class:`EchoSessionSummary` fields, flat, plus ``run_id``); the inner result is returned as is.

Every wrapped call carries ``meta["echo"]``: the agent, pattern and turn, the protocol's own
messages, and ``session``, the agent's calls so far in its session (messages and reply). A real
provider is sent only the messages; the simulated panel builds the agent's context window from
``session``, so the window does not depend on dispatch order and a resumed run (whose earlier
replies come from the project file) sees the same window as a straight run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from typing import Any

from workbench.core.protocols.echo.config import (
    RECITAL_MAX_TOKENS,
    EchoOptions,
    check_patterns,
    parse_echo_options,
)
from workbench.core.protocols.echo.footer import is_footer_line
from workbench.core.protocols.echo.inject import carrier, check_call, due_checks, echo_call
from workbench.core.protocols.echo.markers import Marker, generate_marker, make_rng
from workbench.core.protocols.echo.models import SessionSeed, VerificationEntry, utc_now
from workbench.core.protocols.echo.quoting import Quoting
from workbench.core.protocols.echo.restore import RestorationContext, restore
from workbench.core.protocols.echo.session import (  # the session's own note formats, so records match
    EchoSessionSummary,
    _anchor_note,
    _seed_note,
    _verification_note,
    outcome_notes,
    watch_footer,
)
from workbench.core.protocols.echo.verify import verify_reply
from workbench.core.protocols.shared.declaration import Prompts
from workbench.core.protocols.shared.fencing import Fence, drop_fence_tokens, fenced
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Batch, Note

PATTERN_BY_OVERFLOW = {"silent_truncation": "stateless", "hard_rejection": "stateful",
                       "compaction": "compaction_aware"}
CONTEXT_LIMIT = "context_limit"
HUMANS = frozenset({"conductor"})
EXCERPT_WORDS = 24  # words of each message the session seed's recent exchange keeps
_TRAILER = re.compile(r"^\s*(?::: SYSTEM ::|Resonance: )")
_MARKER_TAIL = re.compile(r" — [0-9a-f]{6}(?![0-9A-Za-z_])")

IssueMarker = Callable[[str], Marker]


def echo_options(cfg: Any) -> EchoOptions:
    """The run's Echo options (``cfg.echo``), checked against its panel; an InputError names the
    bad field (``echo.patterns.a9``). A parsed run configuration holds them validated already."""
    options = parse_echo_options(cfg.echo)
    check_patterns(options, [(a.id, a.role) for a in cfg.agents])
    return options


def pattern_for(cfg: Any, options: EchoOptions, agent: str) -> str | None:
    """The agent's injection pattern, or None when Echo leaves it alone (a person, an unknown agent)."""
    spec = cfg.agent(agent)
    if spec is None or agent in HUMANS:
        return None
    provider = cfg.providers[spec.provider]
    if provider.model == "manual":
        return None
    for name in (spec.id, spec.role, agent, "*"):
        if name and name in options.patterns:
            return options.patterns[name]
    if provider.simulated:
        return PATTERN_BY_OVERFLOW.get(spec.params.get("overflow", "silent_truncation"), "stateless")
    # A model behind the gateway keeps no session between calls (each request carries only the
    # protocol's messages), so only the pacemaker, which carries the seed in every call, works.
    return "stateless"


def strip_echo_trailer(text: str | None) -> str | None:
    """``text`` without its trailing Echo lines (a ``Resonance: …`` recital, a footer)."""
    if not text:
        return text
    lines = text.split("\n")
    end, cut = len(lines), None
    while end and (not lines[end - 1].strip() or _TRAILER.match(lines[end - 1])):
        if lines[end - 1].strip():
            cut = end - 1
        end -= 1
    return text if cut is None else "\n".join(lines[:cut]).rstrip()


def with_echo(gen: Generator, cfg: Any, *, run_id: str | None, issue_marker: IssueMarker | None,
              now: Callable[[], str] = utc_now, prompts: Prompts | None = None) -> Generator[Batch | Note, Any, Any]:
    """Wrap ``gen`` (any protocol's step generator) in Resonance Echo as ``cfg.echo`` says.

    ``issue_marker(key)`` returns the marker for ``key``, the same one again for the same key
    (``echo_records.issue_marker_for``); without it markers come from the run seed, in memory.
    ``prompts``: Echo's templates for the run (its provenance's); None: the defaults.
    Options are validated here, before the first step.
    """
    options = echo_options(cfg)
    return _EchoRun(cfg, options, run_id, issue_marker or _memory_issuer(cfg.seed), now, prompts).run(gen)


def _memory_issuer(seed: int) -> IssueMarker:
    rng, issued = make_rng(seed), {}

    def issue(key: str) -> Marker:
        if key not in issued:
            issued[key] = generate_marker({m.hex for m in issued.values()}, rng=rng)
        return issued[key]
    return issue


@dataclass
class _Session:
    agent: str
    pattern: str
    marker: Marker
    seed: SessionSeed
    session_id: str
    started: bool = False  # the marker has been sent to the agent
    turns: int = 0
    last_check: int = 0
    events: set[str] = field(default_factory=lambda: {"boot"})
    wall: bool = False  # a context-limit rejection since the last good state
    checkpoint_turn: int = 0  # the turn of the last seed checkpoint (0: the session start)
    checks: int = 0
    failures: int = 0
    restorations: list[str] = field(default_factory=list)
    footer_states: list[dict[str, Any]] = field(default_factory=list)
    escalated: bool = False
    ledger: list[dict[str, Any]] = field(default_factory=list)  # the calls of the current session
    # Every call's key, in the conductor's order, across sessions. The project file stores calls in
    # the order they completed, which concurrency shuffles; the conductor's later actions rebuild
    # the agent's window from this order, as the run did.
    call_order: list[str] = field(default_factory=list)


def _events(reply: AgentReply | None) -> set[str]:
    if reply is None:
        return {"error"}
    found = {e for e in reply.meta.get("events", ()) if e in ("compaction", CONTEXT_LIMIT)}
    if not reply.ok:
        found.add(CONTEXT_LIMIT if _error_kind(reply) == CONTEXT_LIMIT else "error")
    return found


def _error_kind(reply: AgentReply) -> str | None:
    if CONTEXT_LIMIT in (reply.error or "") or reply.meta.get("error_kind") == CONTEXT_LIMIT:
        return CONTEXT_LIMIT
    return reply.meta.get("error_kind") or ("error" if not reply.ok else None)


def _excerpt(text: str | None) -> str:
    words = _MARKER_TAIL.sub("", drop_fence_tokens(text or "")).split()
    return " ".join(words[:EXCERPT_WORDS]) + (" …" if len(words) > EXCERPT_WORDS else "")


def _last_user(messages) -> str:
    return next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")


def _carried(made, messages: list[dict]) -> list[dict]:
    """The protocol's ``messages`` as an Echo step carries them (``made``: the step rendered with
    the protocol's last user message as its ``message``): the step's system messages first, its
    other messages in place of that user message (at the end when there is none)."""
    head = [dict(m) for m in made if m.get("role") == "system"]
    body = [dict(m) for m in made if m.get("role") != "system"]
    i = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"), None)
    if i is None:
        return head + messages + body
    return head + messages[:i] + body + messages[i + 1:]


def quoting_for(call: AgentCall) -> Quoting:
    """What counts as quoted data in a reply to ``call``: the run's artifact fences
    (``call.meta["delimiter"]``: a fence name, or an ``[open, close]`` pair), the texts fenced in
    the request, and any footer line the request shows (a copy of it is not the agent's own)."""
    fence = call.meta.get("delimiter")
    if isinstance(fence, str) and fence:
        pairs = [tuple(fenced("\0", fence).split("\n\0\n"))]
    elif isinstance(fence, (list, tuple)) and len(fence) == 2:
        pairs = [tuple(fence)]
    else:
        pairs = []
    request = "\n".join(m.get("content", "") for m in call.messages)
    shown = [m.group(1) for o, c in pairs
             for m in re.finditer(re.escape(o) + r"\n?(.*?)\n?" + re.escape(c), request, re.S)]
    footers = [line.strip() for line in request.split("\n") if is_footer_line(line)]
    if not pairs and not footers:
        return Quoting()
    return Quoting.of(delimiters=pairs, artifacts=shown + footers)


class _EchoRun:
    def __init__(self, cfg: Any, options: EchoOptions, run_id: str | None, issue: IssueMarker,
                 now: Callable[[], str], prompts: Prompts | None = None):
        self.cfg, self.opt, self.run_id, self.issue, self.now = cfg, options, run_id, issue, now
        self.prompts = prompts
        self.sessions: dict[str, _Session] = {}
        self.patterns: dict[str, str | None] = {}
        task = f"{cfg.protocol.upper()} run" + (f": {cfg.query}" if getattr(cfg, "query", "") else "")
        self.tasks = [task]

    # ----- the outer loop --------------------------------------------------------------------
    def run(self, gen: Generator) -> Generator[Batch | Note, Any, Any]:
        try:
            item = next(gen)
            while True:
                if isinstance(item, Batch):
                    replies = yield from self._batch(item)
                    item = gen.send(replies)
                else:
                    yield item
                    item = gen.send(None)
        except StopIteration as stop:
            result = stop.value
        yield from self._end()
        return result

    def _pattern(self, agent: str) -> str | None:
        if agent not in self.patterns:
            self.patterns[agent] = pattern_for(self.cfg, self.opt, agent)
        return self.patterns[agent]

    def _batch(self, batch: Batch):
        by_agent: dict[str, list[AgentCall]] = {}
        plain: list[AgentCall] = []
        for call in batch.calls:
            (by_agent.setdefault(call.agent, []) if self._pattern(call.agent) else plain).append(call)
        if not by_agent:
            return (yield batch)
        waves = max(len(calls) for calls in by_agent.values())
        inner: dict[str, AgentReply] = {}
        for w in range(waves):
            wave = [calls[w] for calls in by_agent.values() if len(calls) > w]
            for call in wave:
                yield from self._start(call.agent)
            yield from self._check_point([call.agent for call in wave])
            sent = [self._dress(call) for call in wave]
            label = batch.label if waves == 1 else f"{batch.label} (wave {w + 1}/{waves})"
            got = (yield Batch(tuple(sent + (plain if w == 0 else [])), label)) or {}
            for call, out in zip(wave, sent):
                reply = yield from self._after(call, out, got.get(call.key))
                if reply is not None:
                    inner[call.key] = reply
            for call in plain if w == 0 else ():
                if call.key in got:
                    inner[call.key] = got[call.key]
        return inner

    # ----- sessions --------------------------------------------------------------------------
    def _start(self, agent: str):
        if agent in self.sessions:
            return
        marker = self.issue(f"echo/{agent}/session")
        seed = SessionSeed(agent=agent, persona=agent, active_tasks=self.tasks,
                           settled_decisions=list(self.opt.decisions), resonance_marker=str(marker),
                           last_checkpoint=self.now(), run_id=self.run_id)
        s = _Session(agent, self._pattern(agent) or "stateful", marker, seed, f"{agent}-001")
        self.sessions[agent] = s
        yield _anchor_note(agent, str(marker), s.session_id, s.pattern, self.run_id, self.now())
        yield _seed_note(seed)

    def _meta(self, s: _Session, turn: int | None, protocol_messages=None) -> dict[str, Any]:
        return {"agent": s.agent, "pattern": s.pattern, "turn": turn, "session": tuple(s.ledger),
                "protocol_messages": protocol_messages}

    def _record(self, s: _Session, call: AgentCall, reply: AgentReply | None) -> None:
        if call.meta.get("new_session"):
            s.ledger = []
        ok = reply is not None and reply.ok
        s.call_order.append(call.key)
        s.ledger.append({"key": call.key, "messages": call.messages, "reply": reply.text if ok else None,
                         "new_session": bool(call.meta.get("new_session")),
                         "error_kind": None if ok else (_error_kind(reply) if reply else "error")})

    def _dress(self, call: AgentCall) -> AgentCall:
        """The call as sent: the marker injected per the agent's pattern (the context seed in every
        call of a stateless agent, the anchor in a session's first), and ``meta["echo"]``."""
        s = self.sessions[call.agent]
        messages = [dict(m) for m in call.messages]
        meta = dict(call.meta)
        echo = self._meta(s, s.turns + 1, call.messages)
        dressed = not s.escalated and (s.pattern == "stateless" or not s.started)
        step, values = carrier(s.pattern, s.seed, _last_user(messages), start=True, project=self.opt.project,
                               check_token=self.opt.check_token) if dressed else (None, None)
        if step is not None:
            fence = None
            if values.get("recent_exchange"):  # quoted back to the agent: untrusted, in the call's fence
                own = meta.get("delimiter")
                fence = Fence(own, meta.get("fence_escapes", 0)) if isinstance(own, str) and own else Fence()
            made = echo_call(step, values, key=call.key, agent=call.agent, purpose=call.purpose,
                             prompts=self.prompts, fence=fence)
            messages = _carried(made.messages, messages)
            meta.update({k: made.meta[k] for k in ("delimiter", "fence_escapes") if k in made.meta})
            echo.update(step=step, inputs=made.meta["inputs"])
        return replace(call, messages=tuple(messages), meta={**meta, "echo": echo})

    def _after(self, call: AgentCall, sent: AgentCall, reply: AgentReply | None):
        """One turn done: record it, watch the footer, check a stateless reply silently; returns
        the reply the inner protocol sees."""
        s = self.sessions[call.agent]
        s.turns += 1
        turn = s.turns
        self._record(s, sent, reply)
        inner = reply if reply is None or not reply.text else replace(reply, text=strip_echo_trailer(reply.text))
        if s.escalated:
            return inner
        s.started = True
        events = _events(reply)
        s.wall = s.wall or CONTEXT_LIMIT in events
        quoting = quoting_for(sent)
        if (yield from watch_footer(s.agent, s.footer_states, s.marker.hex, reply.text if reply else None, turn,
                                    quoting, self.run_id)):
            events.add("footer")
        s.seed = s.seed.with_exchange(f"{call.purpose}: {_excerpt(_last_user(call.messages))}",
                                      f"{s.agent}: {_excerpt(inner.text if inner else None) or '(no reply)'}")
        if s.pattern == "stateless":
            reasons = due_checks(turn, s.events | events, s.pattern, self.opt.interval, last_check=s.last_check)
            s.last_check, s.events = turn, set()
            yield from self._check(s, reply, reasons, turn, call.key, quoting)
        else:
            s.events |= events
        return inner

    def _check_point(self, agents: list[str]):
        due = []
        for agent in agents:
            s = self.sessions[agent]
            if s.escalated or s.pattern == "stateless":
                continue
            turn = s.turns + 1
            reasons = due_checks(turn, s.events, s.pattern, self.opt.interval, last_check=s.last_check)
            if reasons:
                due.append((s, turn, reasons, check_call(
                    s.pattern, s.seed, key=f"echo/{agent}/check/{turn}", agent=agent, start=not s.started,
                    project=self.opt.project, check_token=self.opt.check_token, prompts=self.prompts,
                    round_no=turn, meta={"turn": turn, "reasons": list(reasons), "echo": self._meta(s, turn),
                                         "max_tokens": RECITAL_MAX_TOKENS})))
        if not due:
            return
        label = "Resonance check: " + ", ".join(f"{s.agent} ({', '.join(r)})" for s, _, r, _ in due)
        got = (yield Batch(tuple(c for *_, c in due), label)) or {}
        for s, turn, reasons, call in due:
            reply = got.get(call.key)
            s.started = True
            s.wall = s.wall or CONTEXT_LIMIT in _events(reply)
            self._record(s, call, reply)
            s.last_check, s.events = turn, set()
            yield from self._check(s, reply, reasons, turn, call.key, Quoting())

    def _check(self, s: _Session, reply: AgentReply | None, reasons, turn: int, key: str, quoting: Quoting):
        if reply is None:
            text, error = None, "no reply"
        else:
            text, error = reply.text, None if reply.ok else (reply.error or _error_kind(reply))
        result = verify_reply(text, s.marker, quoting=quoting, error=error)
        s.checks += 1
        entry = VerificationEntry(time=self.now(), success=result.verified, turn=turn, trigger=",".join(reasons),
                                  action=None if result.verified else "restoration_triggered",
                                  reply_excerpt=(text or error or "")[:200])
        yield self._verification(_verification_note(s.agent, self.run_id, s.marker.hex, entry, result.as_dict()), key)
        if result.verified:
            if s.pattern != "stateless" or turn % self.opt.interval == 0:
                s.seed, s.checkpoint_turn = s.seed.checkpoint(self.now()), turn
                yield _seed_note(s.seed)
            return
        s.failures += 1
        yield from self._restore(s, turn, result.reason, entry.time)

    @staticmethod
    def _verification(note: Note, call_key: str) -> Note:
        return Note(note.kind, note.message, data={**note.data, "call_key": call_key})

    def _restore(self, s: _Session, turn: int, reason: str, lost_at: str):
        # The checkpoint is named by its turn, not its time, so the restoration prompt is the same
        # when a resumed run sends it again.
        named = s.seed.model_copy(update={"last_checkpoint": f"turn {s.checkpoint_turn}" if s.checkpoint_turn
                                          else "session start"})
        ctx = RestorationContext(  # its prompt quotes the recent exchange back: restore() fences it
            restoration_id=f"restore-{s.marker.hex}", agent=s.agent, seed=named, lost_marker=str(s.marker),
            lost_at=lost_at, session_id=s.session_id, pattern=s.pattern,
            new_session_required=s.pattern == "stateful" or s.wall, project=self.opt.project, turn=turn,
            reason=reason, check_token=self.opt.check_token, run_id=self.run_id)
        s.restorations.append(ctx.restoration_id)
        n = len(s.restorations)
        engine = restore(ctx, new_marker=lambda: self.issue(f"echo/{s.agent}/restore/{n}"), now=self.now,
                         prompts=self.prompts)
        verify_key = f"echo/{s.agent}/restore/{n}/verify"
        outcome = yield from self._relay(engine, s, verify_key)
        notes, s.seed = outcome_notes(outcome, pattern=s.pattern, run_id=self.run_id, lost_hex=s.marker.hex,
                                      seed=s.seed, turn=turn, now=self.now)
        for note in notes:
            yield self._verification(note, verify_key) if note.kind == "echo.verification" else note
        if outcome.status == "resumed" and outcome.new_marker is not None:
            s.marker, s.session_id, s.wall, s.checkpoint_turn = outcome.new_marker, outcome.session_id, False, turn
            return
        s.escalated = True
        yield Note("warning", f"{s.agent}: its resonance marker was lost and could not be restored; "
                              "escalated to the conductor. The agent keeps working, flagged.",
                   data={"agent": s.agent, "echo": "escalated", "restoration": ctx.restoration_id,
                         "turn": turn, "run_id": self.run_id})

    def _relay(self, engine: Generator, s: _Session, verify_key: str):
        """Drive a restoration: its calls get run-stable keys (the engine's key holds the lost hex)."""
        try:
            item = next(engine)
            while True:
                if isinstance(item, Batch):
                    keys = {f"{verify_key}/{i}" if i else verify_key: c for i, c in enumerate(item.calls)}
                    sent = {k: replace(c, key=k, meta={**c.meta, "echo": self._meta(s, c.meta.get("turn"))})
                            for k, c in keys.items()}
                    got = (yield Batch(tuple(sent.values()), item.label)) or {}
                    for k, c in sent.items():
                        self._record(s, c, got.get(k))
                    item = engine.send({keys[k].key: replace(r, key=keys[k].key) for k, r in got.items() if k in keys})
                else:
                    yield item
                    item = engine.send(None)
        except StopIteration as stop:
            return stop.value

    def _end(self):
        for s in self.sessions.values():
            ended = self.now()
            s.seed = s.seed.checkpoint(ended)
            yield _seed_note(s.seed, final=True)
            status = "escalated" if s.escalated else "completed"
            summary = EchoSessionSummary(
                agent=s.agent, pattern=s.pattern, interval=self.opt.interval, status=status, turns=s.turns,
                checks=s.checks, failures=s.failures, restorations=s.restorations,
                marker=None if s.escalated else str(s.marker), session_id=s.session_id,
                footer_states=s.footer_states, ended_at=ended,
                text=(f"{s.agent} ({s.pattern}): {s.turns} turns, {s.checks} checks, {s.failures} failed, "
                      f"{len(s.restorations)} restorations; {status}"))
            yield Note("echo.session_end", summary.text,
                       data={**summary.model_dump(), "run_id": self.run_id, "call_order": s.call_order})


__all__ = ["EchoOptions", "echo_options", "pattern_for", "quoting_for", "strip_echo_trailer", "with_echo"]
