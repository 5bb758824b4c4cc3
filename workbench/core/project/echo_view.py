"""What the Anchors & Restoration panel shows, read in one go (no Qt; the panel calls it off the GUI thread).

:func:`echo_runs` lists the runs that hold Echo records; :func:`read_echo_view` reads one run's
agents: the current marker and its injection pattern (by the seed's agent types A, B, C), every
verification (with the call it read, for "Open in Trace Inspector"), the footer state as it
changed, the session seed, each restoration episode step by step, and the conductor's checklist
with the time each item's status last changed. The records themselves are written by
:mod:`workbench.core.project.echo`; this module only reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workbench.core.project import _sql
from workbench.core.project import echo as records
from workbench.core.project.runs import RunListRow, run_list
from workbench.core.project.store import Store
from workbench.core.protocols.echo.models import AGENT_TYPES

TYPE_OF_PATTERN = {spec["pattern"]: letter for letter, spec in AGENT_TYPES.items()}
PATTERN_LABEL = {"stateless": "Contextual Pacemaker: the seed in every turn",
                 "stateful": "Anchor: injected at session start",
                 "compaction_aware": "Anchor + post-compaction check"}
STEP_WORDS = {"log": "Logged the loss", "read_seed": "Read the session seed", "new_session": "Started a new session",
              "inject": "Injected persona, decisions, tasks and a new marker", "verify": "Asked for the new marker",
              "resume": "Resumed from the last checkpoint", "escalate": "Escalated to the conductor"}


EchoRun = RunListRow  # a run with Echo records, as every list names a run


@dataclass(frozen=True)
class Check:
    id: int
    time: str
    success: bool
    turn: int | None
    trigger: str | None
    action: str | None
    marker_hex: str
    call_id: int | None
    excerpt: str | None = None


@dataclass(frozen=True)
class StateChange:
    time: str
    state: str  # Stable | Degraded | Recovering
    why: str


@dataclass(frozen=True)
class Step:
    id: int
    step: str
    at: str
    text: str  # in plain words


@dataclass(frozen=True)
class Episode:
    id: str
    steps: tuple[Step, ...]
    call_id: int | None  # the call whose reply the verify step read, where recorded

    @property
    def current(self) -> str | None:
        return self.steps[-1].step if self.steps else None

    @property
    def status(self) -> str:
        return {"resume": "resumed", "escalate": "escalated"}.get(self.current or "", "in progress")


@dataclass(frozen=True)
class ChecklistRow:
    id: str
    phase: str
    text: str
    status: str
    detail: str
    changed_at: str | None


@dataclass(frozen=True)
class AgentEcho:
    agent: str
    pattern: str
    agent_type: str  # A, B or C
    marker: str | None
    hex: str | None
    session_id: str | None
    checks: tuple[Check, ...]
    states: tuple[StateChange, ...]
    seed: dict[str, Any] | None
    episodes: tuple[Episode, ...]
    checklist: tuple[ChecklistRow, ...]

    @property
    def state(self) -> str:
        return self.states[-1].state if self.states else "Stable"

    @property
    def pattern_text(self) -> str:
        example = AGENT_TYPES.get(self.agent_type, {}).get("example", "")
        return f"Type {self.agent_type} ({example}-like): {PATTERN_LABEL.get(self.pattern, self.pattern)}"


@dataclass(frozen=True)
class EchoView:
    runs: tuple[EchoRun, ...]
    run_id: str | None
    agents: tuple[AgentEcho, ...] = field(default_factory=tuple)

    def agent(self, agent: str) -> AgentEcho | None:
        return next((a for a in self.agents if a.agent == agent), None)


# ----- reads ------------------------------------------------------------------------------------
def echo_runs(store: Store) -> list[EchoRun]:
    """Runs holding Echo anchors, newest first."""
    return run_list(store, only="echo")


def read_echo_view(store: Store, run_id: str | None = None) -> EchoView:
    """The view of ``run_id`` (None: the newest run with Echo records)."""
    runs = tuple(echo_runs(store))
    if run_id is None or run_id not in {r.id for r in runs}:
        run_id = runs[0].id if runs else None
    if run_id is None:
        return EchoView(runs, None)
    agents = [r["agent_id"] for r in _sql.query(
        store, "SELECT agent_id, min(id) AS first FROM echo_anchors WHERE run_id = ? GROUP BY agent_id "
               "ORDER BY first", (run_id,))]
    summary = ((_sql.get(store, "runs", run_id) or {}).get("summary_json") or {}).get("echo", {})
    return EchoView(runs, run_id, tuple(_agent(store, run_id, a, summary.get(a)) for a in agents))


def _agent(store: Store, run_id: str, agent: str, summary: dict | None) -> AgentEcho:
    anchors = _sql.query(store, "SELECT a.*, m.marker FROM echo_anchors a JOIN echo_markers m ON m.hex = a.marker_hex "
                                "WHERE a.run_id = ? AND a.agent_id = ? ORDER BY a.id", (run_id, agent))
    current = next((a for a in reversed(anchors) if a["active"]), anchors[-1] if anchors else None)
    checks = tuple(Check(r["id"], r["time"], bool(r["success"]), r["turn"], r["trigger"], r["action"],
                         r["marker_hex"], r["call_id"], r["reply_excerpt"])
                   for r in _sql.query(store, "SELECT v.*, a.marker_hex FROM echo_verifications v JOIN echo_anchors a "
                                              "ON a.id = v.anchor_id WHERE a.run_id = ? AND a.agent_id = ? "
                                              "ORDER BY v.id", (run_id, agent)))
    episodes = tuple(_episode(store, rid, checks) for rid in records.restoration_ids(store, agent, run_id=run_id))
    seed = records.load_seed(store, agent, run_id=run_id, any_run=False)
    pattern = current["injection"] if current else "stateful"
    items = records.checklist(store, agent, run_id=run_id)
    times = _item_times(anchors, checks, episodes, seed.last_checkpoint if seed else None, summary)
    return AgentEcho(
        agent=agent, pattern=pattern, agent_type=TYPE_OF_PATTERN.get(pattern, "?"),
        marker=current["marker"] if current else None, hex=current["marker_hex"] if current else None,
        session_id=current["session_id"] if current else None, checks=checks,
        states=tuple(_states(anchors, checks, episodes, summary)),
        seed=seed.seed_view() if seed else None, episodes=episodes,
        checklist=tuple(ChecklistRow(i.id, i.phase, i.text, i.status, i.detail,
                                     times.get(i.id) if i.status != "pending" else None) for i in items))


def _episode(store: Store, restoration_id: str, checks: tuple[Check, ...]) -> Episode:
    rows = _sql.rows(store, "echo_restorations", "restoration = ?", (restoration_id,), order_by="id")
    steps = tuple(Step(r["id"], r["step"], r["created_at"], _step_text(r["step"], r["detail_json"] or {}))
                  for r in rows)
    new_hex = next((r["detail_json"].get("hex") for r in rows if r["step"] == "inject" and r["detail_json"]), None)
    call_id = next((c.call_id for c in checks if c.marker_hex == new_hex and c.trigger == "restoration"), None)
    return Episode(restoration_id, steps, call_id)


def _step_text(step: str, d: dict) -> str:
    words = STEP_WORDS.get(step, step)
    if step == "log":
        return f"Resonance anchor lost at {d.get('lost_at', '?')}" + (f" (turn {d['turn']})" if d.get("turn") else "")
    if step == "read_seed":
        return f"{words}: {d.get('key', '')}, persona {d.get('persona') or '—'}"
    if step == "new_session":
        return f"{words}: {d.get('previous_session_id', '?')} → {d.get('session_id', '?')}"
    if step == "inject":
        return f"{words}: {d.get('marker', '?')}"
    if step == "verify":
        result = d.get("result") or {}
        return f"{words}: {'recited ✓' if result.get('verified') else 'not recited ✗'}"
    if step == "resume":
        return f"{words} ({d.get('last_checkpoint') or 'session start'}); notified {', '.join(d.get('notified', []))}"
    if step == "escalate":
        return f"{words}: {d.get('reason') or 'the new marker was not recited'}"
    return words


def _states(anchors: list[dict], checks: tuple[Check, ...], episodes: tuple[Episode, ...],
            summary: dict | None) -> list[StateChange]:
    """The footer state as it changed: Stable from the first anchor, Degraded on a failed check,
    Recovering while a restoration runs, Stable again when it resumes (Degraded if it escalates),
    merged with the states the agent's own footers claimed (the session summary)."""
    events: list[tuple[str, int, StateChange]] = []
    if anchors:
        events.append((anchors[0]["created_at"], 0, StateChange(anchors[0]["created_at"], "Stable", "session started")))
    for c in checks:
        if not c.success and c.trigger not in ("restoration",):
            events.append((c.time, 1, StateChange(c.time, "Degraded", f"marker {c.marker_hex} not recited")))
    for e in episodes:
        for s in e.steps:
            if s.step == "log":
                events.append((s.at, 2, StateChange(s.at, "Recovering", "restoration started")))
            elif s.step == "resume":
                events.append((s.at, 3, StateChange(s.at, "Stable", "restored with a new marker")))
            elif s.step == "escalate":
                events.append((s.at, 3, StateChange(s.at, "Degraded", "escalated to the conductor")))
    out: list[StateChange] = []
    for _, _, change in sorted(events, key=lambda e: (e[0], e[1])):
        if not out or out[-1].state != change.state:
            out.append(change)
    claimed = [f for f in (summary or {}).get("footer_states") or [] if f.get("state")]
    if claimed and out and claimed[-1]["state"] != out[-1].state and not episodes:
        out.append(StateChange(out[-1].time, claimed[-1]["state"], f"footer at turn {claimed[-1].get('turn')}"))
    return out


def _item_times(anchors: list[dict], checks: tuple[Check, ...], episodes: tuple[Episode, ...],
                checkpoint: str | None, summary: dict | None) -> dict[str, str | None]:
    """When each checklist item's status last changed, as the records date it."""
    start = anchors[0]["created_at"] if anchors else None
    last_check = checks[-1].time if checks else None
    failed = [c.time for c in checks if not c.success and c.trigger != "restoration"]
    step_at = {s.step: s.at for e in episodes for s in e.steps}
    end = (summary or {}).get("ended_at")
    return {"start.marker": start, "start.inject": start, "start.anchor": start, "start.seed": start,
            "during.seed_every_turn": last_check, "during.periodic_check": last_check,
            "during.seed_checkpoints": checkpoint, "during.footer_watch": last_check,
            "failure.log": step_at.get("log") or (failed[-1] if failed else None),
            "failure.restore": step_at.get("resume") or step_at.get("escalate") or step_at.get("log"),
            "failure.notify": step_at.get("resume") or step_at.get("escalate"),
            "failure.resume": step_at.get("resume") or step_at.get("escalate"),
            "end.checkpoint": end, "end.summary": end, "end.marker_persists": end}


def verification_call(store: Store, check_id: int) -> tuple[int | None, str | None]:
    """The call a verification read (``None`` when it was not a run's call) and the anchor's run."""
    rows = _sql.query(store, "SELECT v.call_id, a.run_id FROM echo_verifications v JOIN echo_anchors a "
                             "ON a.id = v.anchor_id WHERE v.id = ?", (check_id,))
    return (rows[0]["call_id"], rows[0]["run_id"]) if rows else (None, None)


def agent_calls(store: Store, run_id: str, agent: str) -> list[dict]:
    """The agent's calls in a run, in the conductor's order: key, messages sent and reply (for
    rebuilding its session). Rows are stored as calls complete, so the run's summary keeps the
    order the conductor saw them in; calls it does not list (an older run) follow in row order."""
    rows = _sql.query(store, "SELECT step_key, request_json, reply_text, status, error_kind FROM llm_calls "
                             "WHERE run_id = ? AND agent_id = ? ORDER BY id", (run_id, agent))
    summary = ((_sql.get(store, "runs", run_id) or {}).get("summary_json") or {}).get("echo", {}).get(agent) or {}
    rank = {key: i for i, key in enumerate(summary.get("call_order") or ())}
    rows = sorted(rows, key=lambda r: rank.get(r["step_key"], len(rank)))  # stable: unlisted keep row order
    return [{"key": r["step_key"], "messages": tuple((r["request_json"] or {}).get("messages") or ()),
             "reply": r["reply_text"] if r["status"] == "ok" else None, "error_kind": r["error_kind"],
             "new_session": "/restore/" in r["step_key"] and r["step_key"].endswith("/verify")} for r in rows]


__all__ = ["AgentEcho", "Check", "ChecklistRow", "EchoRun", "EchoView", "Episode", "StateChange", "Step",
           "agent_calls", "echo_runs", "read_echo_view", "verification_call"]
