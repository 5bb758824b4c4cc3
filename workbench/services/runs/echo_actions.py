"""The conductor's two Echo actions on one agent of a run, on demand (Qt-free; the GUI calls them
through ``ProjectModel.write``, off the GUI thread).

- :func:`recite`: "<Role>, recite the resonance marker." The agent's explicit check
  (``echo.check_messages``), answered by the run's own agent router (the simulated panel offline,
  rebuilt over the agent's recorded session, so it remembers exactly what its window still holds),
  verified by ``echo.verify_reply`` and recorded on the agent's active anchor.
- :func:`inject`: re-inject the marker: a restoration episode the conductor starts
  (``echo.restore.restore``, same session): the seed is read, persona + decisions + tasks + a new
  marker are injected, the agent recites it, and the episode resumes or escalates. Every step is
  persisted by ``core.project.echo.persist_note``, as the runner does.

Each returns the :class:`Changes` it made, so the window announces them.
"""

from __future__ import annotations

import threading

from workbench.core.errors import InputError
from workbench.core.project import echo as records
from workbench.core.project.changes import Changes
from workbench.core.project.echo_view import agent_calls
from workbench.core.project.runs import get_run
from workbench.core.project.store import Store, utc_now
from workbench.core.protocols.echo import drive
from workbench.core.protocols.echo.inject import check_messages
from workbench.core.protocols.echo.models import VerificationEntry
from workbench.core.protocols.echo.restore import RestorationContext, restore
from workbench.core.protocols.echo.session import outcome_notes
from workbench.core.protocols.echo.verify import verify_reply
from workbench.core.protocols.shared.steps import AgentCall, AgentReply

ECHO_TABLES = ("echo_markers", "echo_anchors", "echo_verifications", "echo_session_seeds", "echo_restorations")


def _context(store: Store, run_id: str, agent: str):
    from workbench.core.runs.config import parse_run_config
    from workbench.services.runs.agents import AgentRouter

    run = get_run(store, run_id)
    if run is None:
        raise InputError("run", f"no run {run_id!r} in this project")
    anchor = records.load_anchor(store, agent, run_id=run_id)
    if anchor is None:
        raise InputError("agent", f"{agent} has no active resonance anchor in {run_id}")
    seed = records.load_seed(store, agent, run_id=run_id, any_run=False)
    if seed is None:
        raise InputError("agent", f"session_seed_{agent} is missing in {run_id}")
    cfg = parse_run_config(run.config)
    project = (run.config.get("echo") or {}).get("project") or "Resonance Workbench"
    return AgentRouter(cfg), anchor, seed, project


def _answer(router, run_id: str, store: Store, agent: str, pattern: str):
    """Answer a call as the agent would now: its recorded session, then this call."""
    session = agent_calls(store, run_id, agent)

    def answer(call: AgentCall) -> AgentReply:
        meta = {**call.meta, "echo": {"agent": agent, "pattern": pattern, "turn": None,
                                      "session": tuple(session), "protocol_messages": None}}
        rec = router.answer(AgentCall(call.key, call.agent, call.purpose, call.messages, meta=meta),
                            threading.Event())
        return rec.reply

    return answer


def _changes(run_id: str) -> Changes:
    out = Changes()
    for table in ECHO_TABLES:
        out = out | Changes.of(table, run=run_id)
    return out


def recite(store: Store, run_id: str, agent: str) -> Changes:
    """Ask ``agent`` to recite its current marker; record the check (success or failure)."""
    router, anchor, seed, project = _context(store, run_id, agent)
    n = len(anchor.verifications) + 1
    call = AgentCall(key=f"echo/{agent}/conductor/{anchor.hex}/{n}", agent=agent, purpose="verify",
                     messages=tuple(check_messages(anchor.injection, seed, start=False, project=project)))
    reply = _answer(router, run_id, store, agent, anchor.injection)(call)
    result = verify_reply(reply.text, anchor.parsed_marker, error=reply.error)
    records.record_verification(store, anchor.id, VerificationEntry(
        time=utc_now(), success=result.verified, trigger="conductor",
        action=None if result.verified else "conductor_notified", reply_excerpt=(reply.text or reply.error or "")[:200]))
    return _changes(run_id)


def inject(store: Store, run_id: str, agent: str) -> Changes:
    """Re-inject the agent's marker through the restoration protocol (a new marker, same session)."""
    router, anchor, seed, project = _context(store, run_id, agent)
    now = utc_now()
    n = len(records.restoration_ids(store, agent, run_id=run_id)) + 1
    ctx = RestorationContext(
        restoration_id=f"conductor-{anchor.hex}-{n}", agent=agent, seed=seed, lost_marker=anchor.marker,
        lost_at=now, session_id=anchor.session_id, pattern=anchor.injection, new_session_required=False,
        project=project, reason="the conductor re-injected the marker", run_id=run_id)
    outcome = drive(restore(ctx, new_marker=records.store_issuer(store)),
                    _answer(router, run_id, store, agent, anchor.injection),
                    lambda note: records.persist_note(store, note))
    notes, _ = outcome_notes(outcome, pattern=anchor.injection, run_id=run_id, lost_hex=anchor.hex, seed=seed,
                             turn=None)
    for note in notes:
        records.persist_note(store, note)
    return _changes(run_id)


__all__ = ["inject", "recite"]
