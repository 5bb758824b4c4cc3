"""Resonance Echo records in the project file, through the Store API only.

Tables (schema v2): ``echo_markers`` (every marker ever issued; the hex is the primary key, so a
marker is never reused), ``echo_anchors`` (``resonance_anchor_{agent}``), ``echo_verifications``
(the anchors' full verification history), ``echo_session_seeds`` (``session_seed_{agent}``, one
row per agent and run, updated at each checkpoint) and ``echo_restorations`` (one row per
restoration transition; ``restoration`` groups one episode).

The engine (``workbench.core.protocols.echo``) is pure and reports what happened as Notes;
:func:`persist_note` writes each one. :func:`run_echo_session` and :func:`resume_restoration`
drive the engine sequentially and persist as they go.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence

from workbench.core.errors import InputError, WorkbenchError
from workbench.core.project import _sql
from workbench.core.project.changes import Changes
from workbench.core.project.store import Store, utc_now
from workbench.core.protocols.echo import drive
from workbench.core.protocols.echo.checklist import ItemStatus, RestorationFacts, SessionFacts, checklist_status
from workbench.core.protocols.echo.markers import Marker, generate_marker, load_templates, make_rng, parse_marker
from workbench.core.protocols.echo.models import ResonanceAnchor, SessionSeed, VerificationEntry
from workbench.core.protocols.echo.restore import (
    TRANSITION_NOTE,
    RestorationOutcome,
    Transition,
    context_from_log,
    restore,
)
from workbench.core.protocols.echo.session import EchoPlan, EchoSessionSummary, echo_session, outcome_notes
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Note

Answer = Callable[[AgentCall], AgentReply]


class MarkerReusedError(WorkbenchError):
    """A marker whose hex was already issued (or anchored) in this project."""


# ----- markers ----------------------------------------------------------------------------------
def issued_hexes(store: Store) -> set[str]:
    return {r["hex"] for r in _sql.query(store, "SELECT hex FROM echo_markers")}


def marker_text(store: Store, hex_: str) -> str | None:
    row = _sql.get(store, "echo_markers", hex_)
    return row["marker"] if row else None


def record_markers(store: Store, markers: Iterable[Marker], *, at: str | None = None) -> Changes:
    """Record issued markers in one transaction; any hex issued before is refused (none written)."""
    at = at or utc_now()
    markers = list(markers)
    with _sql.write(store) as tx:
        taken = issued_hexes(store)
        for m in markers:
            if m.hex in taken:
                raise MarkerReusedError(f"the marker hex {m.hex} was already issued in this project")
            taken.add(m.hex)
            tx.insert("echo_markers", {"hex": m.hex, "marker": str(m), "issued_at": at})
    return tx.changes


def record_marker(store: Store, marker: Marker | str, *, at: str | None = None) -> Changes:
    return record_markers(store, [marker if isinstance(marker, Marker) else parse_marker(marker)], at=at)


def issue_marker(store: Store, *, rng: random.Random | None = None, templates: Sequence[str] | None = None,
                 at: str | None = None) -> Marker:
    """Draw a marker whose hex was never issued in this project and record it, atomically."""
    with _sql.write(store) as tx:  # BEGIN IMMEDIATE: no other writer can issue in between
        marker = generate_marker(issued_hexes(store), rng=rng or make_rng(), templates=templates)
        tx.insert("echo_markers", {"hex": marker.hex, "marker": str(marker), "issued_at": at or utc_now()})
    return marker


def issue_marker_for(store: Store, run_id: str | None, key: str, *, rng: random.Random | None = None,
                     templates: Sequence[str] | None = None, at: str | None = None) -> Marker:
    """The marker issued to ``run_id`` for ``key`` (e.g. ``"echo/a1/session"``), issuing it first if needed.

    A resumed run replays its generator from the start and asks again for every marker it was
    given: it gets the same ones back, so it sends the same prompts. A new marker's hex is drawn
    from ``rng`` and is unique in the project (never any hex issued before, by any run); its
    fragment is drawn from the run's seed and ``key``, so two runs of one configuration differ
    only in their hexes. Lookup and insertion happen in one ``BEGIN IMMEDIATE`` transaction.
    """
    if not isinstance(key, str) or not key.strip():
        raise InputError("issue_key", "a marker is issued for a non-empty key, e.g. 'echo/a1/session'")
    with _sql.write(store) as tx:
        found = _sql.query(store, "SELECT marker FROM echo_markers WHERE run_id IS ? AND issue_key = ?", (run_id, key))
        if found:
            return parse_marker(found[0]["marker"])
        bank = tuple(templates) if templates is not None else load_templates()
        run = _sql.get(store, "runs", run_id) if run_id is not None else None
        fragment = random.Random(f"{run['seed'] if run else None}/echo-fragment/{key}").choice(bank)
        marker = generate_marker(issued_hexes(store), rng=rng or make_rng(), templates=(fragment,))
        tx.insert("echo_markers", {"hex": marker.hex, "marker": str(marker), "issued_at": at or utc_now(),
                                   "run_id": run_id, "issue_key": key})
    return marker


def store_issuer(store: Store, rng: random.Random | None = None) -> Callable[[], Marker]:
    rng = rng or make_rng()
    return lambda: issue_marker(store, rng=rng)


# ----- anchors and their verifications ----------------------------------------------------------
def _entry(row: dict) -> VerificationEntry:
    return VerificationEntry(time=row["time"], success=bool(row["success"]), action=row["action"],
                             turn=row["turn"], trigger=row["trigger"], reply_excerpt=row["reply_excerpt"],
                             id=row["id"])


def _anchor(store: Store, row: dict) -> ResonanceAnchor:
    checks = _sql.rows(store, "echo_verifications", "anchor_id = ?", (row["id"],), order_by="id")
    return ResonanceAnchor(
        id=row["id"], agent=row["agent_id"], marker=row["marker"], session_id=row["session_id"],
        created_at=row["created_at"], last_verified=row["last_verified"], injection=row["injection"],
        active=bool(row["active"]), run_id=row["run_id"], verifications=[_entry(c) for c in checks])


_ANCHOR_SQL = ("SELECT a.*, m.marker FROM echo_anchors a JOIN echo_markers m ON m.hex = a.marker_hex "
               "WHERE {where} ORDER BY a.id")


def list_anchors(store: Store, agent: str | None = None, *, run_id: str | None = None,
                 active_only: bool = False, marker_hex: str | None = None) -> list[ResonanceAnchor]:
    """Anchors in creation order; ``run_id=None`` means any run."""
    where, params = ["1"], []
    for column, value in (("a.agent_id", agent), ("a.run_id", run_id), ("a.marker_hex", marker_hex)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if active_only:
        where.append("a.active = 1")
    rows = _sql.query(store, _ANCHOR_SQL.format(where=" AND ".join(where)), tuple(params))
    return [_anchor(store, r) for r in rows]


def load_anchor(store: Store, agent: str, *, run_id: str | None = None, active_only: bool = True,
                marker_hex: str | None = None) -> ResonanceAnchor | None:
    """``resonance_anchor_{agent}``: the agent's latest (active) anchor, with its full history."""
    found = list_anchors(store, agent, run_id=run_id, active_only=active_only, marker_hex=marker_hex)
    return found[-1] if found else None


def _ensure_marker(store: Store, tx, marker: str, at: str) -> str:
    m = parse_marker(marker)
    known = marker_text(store, m.hex)
    if known is None:
        tx.insert("echo_markers", {"hex": m.hex, "marker": str(m), "issued_at": at})
    elif known != str(m):
        raise MarkerReusedError(f"the hex {m.hex} was issued for another marker ({known!r})")
    return m.hex


def save_anchor(store: Store, anchor: ResonanceAnchor) -> ResonanceAnchor:
    """Insert (no id) or update an anchor; verification entries without an id are added."""
    with _sql.write(store) as tx:
        hex_ = _ensure_marker(store, tx, anchor.marker, anchor.created_at)
        row = {"agent_id": anchor.agent, "marker_hex": hex_, "injection": anchor.injection,
               "session_id": anchor.session_id, "run_id": anchor.run_id, "active": int(anchor.active),
               "created_at": anchor.created_at, "last_verified": anchor.last_verified}
        if anchor.id is None:
            other = _sql.query(store, "SELECT id FROM echo_anchors WHERE marker_hex = ?", (hex_,))
            if other:
                raise MarkerReusedError(f"the marker {hex_} already anchors anchor {other[0]['id']}; "
                                        "a marker is never reused")
            anchor_id = tx.insert("echo_anchors", row)
        else:
            anchor_id = anchor.id
            tx.update("echo_anchors", anchor_id, row)
        entries = []
        for entry in anchor.verifications:
            if entry.id is None:
                entry = entry.model_copy(update={"id": tx.insert("echo_verifications", _entry_row(anchor_id, entry))})
            entries.append(entry)
    return anchor.model_copy(update={"id": anchor_id, "verifications": entries})


def _entry_row(anchor_id: int, entry: VerificationEntry) -> dict:
    return {"anchor_id": anchor_id, "turn": entry.turn, "time": entry.time, "success": int(entry.success),
            "trigger": entry.trigger, "action": entry.action, "reply_excerpt": entry.reply_excerpt}


def record_verification(store: Store, anchor_id: int, entry: VerificationEntry, *, call_id: int | None = None) -> int:
    """Append one check to an anchor's history; a success also sets ``last_verified``.
    ``call_id`` links the check to the call whose reply it read."""
    with _sql.write(store) as tx:
        row_id = tx.insert("echo_verifications", {**_entry_row(anchor_id, entry), "call_id": call_id})
        if entry.success:
            tx.update("echo_anchors", anchor_id, {"last_verified": entry.time})
    return int(row_id)


def retire_anchor(store: Store, anchor_id: int) -> Changes:
    """The anchor's marker is lost (replaced or escalated): it stays on record, inactive."""
    return _sql.update(store, "echo_anchors", anchor_id, {"active": 0})


# ----- session seeds ----------------------------------------------------------------------------
def _seed_rows(store: Store, agent: str, run_id: str | None, any_run: bool) -> list[dict]:
    where = "s.agent_id = ?" + ("" if any_run else " AND s.run_id IS ?")
    params = (agent,) if any_run else (agent, run_id)
    return _sql.query(store, "SELECT s.*, m.marker FROM echo_session_seeds s LEFT JOIN echo_markers m "
                       f"ON m.hex = s.marker_hex WHERE {where} ORDER BY s.id", params)


def load_seed(store: Store, agent: str, *, run_id: str | None = None, any_run: bool = True) -> SessionSeed | None:
    """``session_seed_{agent}``: the latest (for ``run_id`` only, unless ``any_run``)."""
    rows = _seed_rows(store, agent, run_id, any_run and run_id is None)
    if not rows:
        return None
    r = rows[-1]
    return SessionSeed(id=r["id"], agent=r["agent_id"], run_id=r["run_id"], persona=r["persona"],
                       active_tasks=r["active_tasks_json"], settled_decisions=r["settled_decisions_json"],
                       recent_exchange=r["recent_exchange_json"], resonance_marker=r["marker"],
                       last_checkpoint=r["last_checkpoint"])


def save_seed(store: Store, seed: SessionSeed, *, at: str | None = None) -> SessionSeed:
    """Write the agent's seed: one row per agent and run, updated in place at each checkpoint."""
    at = at or utc_now()
    with _sql.write(store) as tx:
        hex_ = _ensure_marker(store, tx, seed.resonance_marker, at) if seed.resonance_marker else None
        row = {"agent_id": seed.agent, "run_id": seed.run_id, "persona": seed.persona,
               "active_tasks_json": list(seed.active_tasks), "settled_decisions_json": list(seed.settled_decisions),
               "recent_exchange_json": list(seed.recent_exchange), "marker_hex": hex_,
               "last_checkpoint": seed.last_checkpoint, "updated_at": at}
        seed_id = seed.id
        if seed_id is None:
            existing = _seed_rows(store, seed.agent, seed.run_id, any_run=False)
            seed_id = existing[-1]["id"] if existing else None
        if seed_id is None:
            seed_id = tx.insert("echo_session_seeds", row)
        else:
            tx.update("echo_session_seeds", seed_id, row)
    return seed.model_copy(update={"id": seed_id})


# ----- restoration transitions ------------------------------------------------------------------
def record_transition(store: Store, restoration_id: str, agent: str, transition: Transition, *,
                      anchor_id: int | None = None, run_id: str | None = None) -> int:
    pk, _ = _sql.insert(store, "echo_restorations", {
        "restoration": restoration_id, "anchor_id": anchor_id, "run_id": run_id, "agent_id": agent,
        "step": transition.step, "detail_json": transition.detail, "created_at": transition.at})
    return int(pk)


def load_transitions(store: Store, restoration_id: str) -> list[Transition]:
    rows = _sql.rows(store, "echo_restorations", "restoration = ?", (restoration_id,), order_by="id")
    return [Transition(r["step"], r["detail_json"], r["created_at"]) for r in rows]


def restoration_ids(store: Store, agent: str | None = None, *, run_id: str | None = None) -> list[str]:
    """Episode ids in the order they started."""
    where, params = ["1"], []
    if agent is not None:
        where.append("agent_id = ?")
        params.append(agent)
    if run_id is not None:
        where.append("run_id = ?")
        params.append(run_id)
    rows = _sql.query(store, f"SELECT restoration, min(id) AS first FROM echo_restorations WHERE {' AND '.join(where)} "
                       "GROUP BY restoration ORDER BY first", tuple(params))
    return [r["restoration"] for r in rows]


# ----- persisting the engine's notes ------------------------------------------------------------
def _anchor_id(store: Store, agent: str, hex_: str) -> int:
    anchor = load_anchor(store, agent, active_only=False, marker_hex=hex_)
    if anchor is None or anchor.id is None:
        raise InputError("marker_hex", f"no anchor of {agent} holds the marker {hex_}")
    return anchor.id


def _anchor_exists(store: Store, d: dict) -> bool:
    """A run's anchor already stored (same agent, run and marker): the note is a replay."""
    if d.get("run_id") is None:
        return False
    hex_ = parse_marker(d["marker"]).hex
    return bool(_sql.query(store, "SELECT id FROM echo_anchors WHERE marker_hex = ? AND agent_id = ? AND run_id = ?",
                            (hex_, d["agent"], d["run_id"])))


def _verification_exists(store: Store, anchor_id: int, entry: VerificationEntry, d: dict) -> bool:
    """A run's check of this anchor, on the same call (by its key, so a call issued again after
    a resume counts as the same call), with the same trigger, outcome and action: a replay."""
    if not d.get("run_id") or not d.get("call_key"):
        return False
    return bool(_sql.query(store,
        "SELECT v.id FROM echo_verifications v JOIN llm_calls c ON c.id = v.call_id WHERE v.anchor_id = ? "
        "AND c.run_id = ? AND c.step_key = ? AND v.trigger IS ? AND v.success = ? AND v.action IS ?",
        (anchor_id, d["run_id"], d["call_key"], entry.trigger, int(entry.success), entry.action)))


def _transition_exists(store: Store, d: dict) -> bool:
    return d.get("run_id") is not None and bool(_sql.count(store,
        "echo_restorations", "restoration = ? AND step = ? AND run_id = ?", (d["restoration"], d["step"], d["run_id"])))


def _call_id(store: Store, run_id: str | None, call_key: str | None) -> int | None:
    if not run_id or not call_key:
        return None
    rows = _sql.query(store, "SELECT id FROM llm_calls WHERE run_id = ? AND step_key = ? ORDER BY id DESC LIMIT 1",
                       (run_id, call_key))
    return rows[0]["id"] if rows else None


def persist_note(store: Store, note: Note) -> bool:
    """Write what an echo Note reports; returns False for notes that leave no record.

    A verification note that names its ``call_key`` is linked to that call (``call_id``).

    Idempotent for a run's notes (``run_id`` set): a resumed run replays its generator from the
    start, so the runner persists its notes again, and a record already held is not written
    twice: an anchor of the same agent, run and marker; a check of the same anchor on the same
    call (by key) with the same trigger, outcome and action; a restoration step already recorded
    for its episode. Seeds are updated in place anyway.
    """
    d = note.data
    if note.kind == "echo.anchor":
        if d.get("replaces"):
            for old in list_anchors(store, d["agent"], marker_hex=d["replaces"], active_only=True):
                retire_anchor(store, old.id)
        if not _anchor_exists(store, d):
            save_anchor(store, ResonanceAnchor(agent=d["agent"], marker=d["marker"], session_id=d["session_id"],
                                               injection=d["injection"], run_id=d.get("run_id"),
                                               created_at=d["created_at"]))
    elif note.kind == "echo.seed":
        save_seed(store, SessionSeed.model_validate(d["seed"]))
    elif note.kind == "echo.verification":
        anchor_id = _anchor_id(store, d["agent"], d["marker_hex"])
        entry = VerificationEntry.model_validate(d["entry"])
        if not _verification_exists(store, anchor_id, entry, d):
            record_verification(store, anchor_id, entry, call_id=_call_id(store, d.get("run_id"), d.get("call_key")))
    elif note.kind == TRANSITION_NOTE:
        if _transition_exists(store, d):
            return True  # a replayed step of an episode already on record
        hex_ = parse_marker(d["lost_marker"]).hex
        anchor = load_anchor(store, d["agent"], active_only=False, marker_hex=hex_)
        record_transition(store, d["restoration"], d["agent"], Transition(d["step"], d["detail"], d["at"]),
                          anchor_id=anchor.id if anchor else None, run_id=d.get("run_id"))
    elif note.kind == "echo.anchor_retired":
        for old in list_anchors(store, d["agent"], marker_hex=d["marker_hex"], active_only=True):
            retire_anchor(store, old.id)
    else:
        return False
    return True


def run_echo_session(store: Store, plan: EchoPlan, answer: Answer, *, rng: random.Random | None = None,
                     now: Callable[[], str] | None = None, continue_anchor: bool = False,
                     on_note: Callable[[Note], None] | None = None) -> EchoSessionSummary:
    """Run a whole session sequentially, persisting every record as it happens.

    With ``continue_anchor`` the agent's active anchor is retrieved (the seed's boot sequence:
    if a marker exists, verify the agent can still recite it); otherwise a new marker is issued.
    """
    issuer = store_issuer(store, rng)
    existing = load_anchor(store, plan.agent) if continue_anchor else None
    marker = existing.parsed_marker if existing else issuer()

    def note(n: Note) -> None:
        persist_note(store, n)
        if on_note:
            on_note(n)

    kwargs = {"now": now} if now else {}
    gen = echo_session(plan, marker, new_marker=issuer, retrieved=existing is not None, **kwargs)
    return drive(gen, answer, note)


def resume_restoration(store: Store, restoration_id: str, answer: Answer, *, rng: random.Random | None = None,
                       now: Callable[[], str] = utc_now) -> RestorationOutcome:
    """Continue an interrupted restoration episode from its persisted rows, then record its outcome."""
    rows = _sql.rows(store, "echo_restorations", "restoration = ?", (restoration_id,), order_by="id")
    if not rows:
        raise InputError("restoration", f"no restoration {restoration_id!r} in this project")
    done = [Transition(r["step"], r["detail_json"], r["created_at"]) for r in rows]
    if done[0].step != "log":
        raise InputError("restoration", f"{restoration_id} does not start with a log row")
    agent, run_id = rows[0]["agent_id"], rows[0]["run_id"]
    read = next((t for t in done if t.step == "read_seed"), None)
    seed = (SessionSeed(agent=agent, run_id=run_id, **{k: v for k, v in read.detail.items() if k != "key"})
            if read else load_seed(store, agent, run_id=run_id))
    if seed is None:
        raise InputError("restoration", f"session_seed_{agent} is missing, so {restoration_id} cannot continue")
    ctx = context_from_log(restoration_id, agent, seed, done[0], run_id=run_id)

    def note(n: Note) -> None:
        persist_note(store, n)

    outcome: RestorationOutcome = drive(restore(ctx, new_marker=store_issuer(store, rng), done=done, now=now),
                                        answer, note)
    if not ({"resume", "escalate"} & {t.step for t in done}):  # the ending is new: record its effects
        current = load_seed(store, agent, run_id=run_id) or seed
        notes, _ = outcome_notes(outcome, pattern=ctx.pattern, run_id=run_id,
                                 lost_hex=parse_marker(ctx.lost_marker).hex, seed=current, turn=ctx.turn, now=now)
        for n in notes:
            persist_note(store, n)
    return outcome


# ----- the checklist ----------------------------------------------------------------------------
def session_facts(store: Store, agent: str, *, run_id: str | None = None,
                  summary: EchoSessionSummary | dict | None = None) -> SessionFacts:
    """What the project file shows about ``agent``'s session (in ``run_id``, if given).

    The session summary (turns, footer states, end) is ``summary`` if passed, else the one the
    runner keeps in ``runs.summary_json["echo"][agent]``.
    """
    anchors = list_anchors(store, agent, run_id=run_id)
    seed = load_seed(store, agent, run_id=run_id, any_run=run_id is None)
    if summary is None and run_id is not None:
        run = _sql.get(store, "runs", run_id)
        summary = ((run or {}).get("summary_json") or {}).get("echo", {}).get(agent)
    if isinstance(summary, dict):
        summary = EchoSessionSummary.model_validate(summary)
    episodes = []
    for rid in restoration_ids(store, agent, run_id=run_id):
        steps = load_transitions(store, rid)
        notified = [n for t in steps if t.step in ("resume", "escalate") for n in t.detail.get("notified", [])]
        episodes.append(RestorationFacts(id=rid, steps=[t.step for t in steps], notified=notified,
                                         started_at=steps[0].at if steps else None))
    issued = issued_hexes(store)
    started_at = anchors[0].created_at if anchors else None
    return SessionFacts(
        agent=agent, pattern=anchors[0].injection if anchors else (summary.pattern if summary else None),
        interval=summary.interval if summary else 10,
        marker_issued=any(a.hex in issued for a in anchors), anchor_stored=bool(anchors),
        seed_stored=seed is not None,
        seed_updated=bool(seed and started_at and seed.last_checkpoint and seed.last_checkpoint > started_at),
        checks=sorted((v for a in anchors for v in a.verifications), key=lambda v: v.id or 0),
        restorations=episodes, turns=summary.turns if summary else None,
        footer_states=summary.footer_states if summary else None, ended=summary is not None,
        summary_logged=summary is not None,
        final_checkpoint=bool(summary and seed and seed.last_checkpoint and seed.last_checkpoint >= summary.ended_at),
        marker_persisted=any(a.active and a.hex in issued for a in anchors))


def checklist(store: Store, agent: str, *, run_id: str | None = None,
              summary: EchoSessionSummary | dict | None = None) -> list[ItemStatus]:
    """The conductor's checklist with each item's status, for the GUI."""
    return checklist_status(session_facts(store, agent, run_id=run_id, summary=summary))


__all__ = [
    "MarkerReusedError", "checklist", "issue_marker", "issue_marker_for", "issued_hexes", "list_anchors",
    "load_anchor", "load_seed", "load_transitions", "marker_text", "persist_note", "record_marker",
    "record_markers", "record_transition", "record_verification", "restoration_ids", "resume_restoration",
    "retire_anchor", "run_echo_session", "save_anchor", "save_seed", "session_facts", "store_issuer",
]
