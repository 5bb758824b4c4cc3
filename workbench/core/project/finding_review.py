"""Human review of Consensus Server findings: the challenged queue, the reviewer's decision, the
clients that voted, and the document of a re-research run.

A reviewer's decision is an audit note on the finding (:mod:`.audit`, ``record_kind = 'finding'``):
confirm is the verdict ``ok``, reject is ``wrong`` and needs a reason. A finding is *resolved*
when such a note is at least as new as its last vote: a vote that arrives after the decision
reopens it, and a still challenged finding goes back to the queue. Nothing here changes the
votes or the score; the decision stands beside them, with who made it and why.

The lists page like :mod:`.finding_list` (one window of rows, sorted and filtered in SQL).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench.core.errors import InputError
from workbench.core.project import _sql, audit
from workbench.core.project.changes import Changes
from workbench.core.project.finding_list import order_by, text_clause
from workbench.core.project.store import Store

CONFIRM, REJECT = "confirm", "reject"
DECISION_VERDICT = {CONFIRM: "ok", REJECT: "wrong"}
QUEUES = ("all", "challenged", "pending", "confirmed", "resolved")
LOCAL_CLIENTS = ("gui", "cli", "run")  # votes written by this program, not by an MCP client
REVIEWER = "reviewer"

# The newest decision note on each finding (ok or wrong), and whether it is newer than the votes.
_DECISION = ("(SELECT n.id FROM audit_notes n WHERE n.record_kind = 'finding' AND n.record_id = f.id "
             "AND n.verdict IN ('ok', 'wrong') ORDER BY n.id DESC LIMIT 1)")
_RESOLVED = (f"EXISTS (SELECT 1 FROM audit_notes d WHERE d.id = {_DECISION} "
             "AND d.created_at >= coalesce(f.last_vote_at, ''))")


@dataclass(frozen=True)
class ReviewRow:
    id: str
    claim: str
    status: str
    score: float | None
    threshold: float | None
    k: int
    votes_valid: int
    votes_invalid: int
    last_vote_at: str | None
    decision: str | None  # confirm | reject | None (never decided)
    decision_note: str
    decided_by: str
    decided_at: str | None
    resolved: bool  # decided, and no vote since

    @property
    def in_review(self) -> bool:
        return self.status == "challenged" and not self.resolved


@dataclass(frozen=True)
class ClientSeen:
    client: str
    votes: int
    agents: int
    last_vote_at: str | None


_SELECT = ("SELECT f.id, f.claim, f.status, f.score, f.threshold, f.k, f.votes_valid, f.votes_invalid, "
           "f.last_vote_at, d.verdict, d.note, d.author, d.created_at "
           f"FROM findings f LEFT JOIN audit_notes d ON d.id = {_DECISION}")


def _where(queue: str | None, text: str) -> tuple[str, tuple]:
    clauses, params = [], []
    if queue == "challenged":
        clauses.append(f"f.status = 'challenged' AND NOT {_RESOLVED}")
    elif queue == "resolved":
        clauses.append(_RESOLVED)
    elif queue in ("pending", "confirmed"):
        clauses.append("f.status = ?")
        params.append(queue)
    if (match := text_clause(text, "f.")) is not None:
        clauses.append(match[0])
        params += match[1]
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", tuple(params)


def count(store: Store, *, queue: str | None = None, text: str = "") -> int:
    where, params = _where(queue, text)
    return _sql.tuples(store, f"SELECT count(*) FROM findings f {where}", params)[0][0]


def window(store: Store, *, offset: int, limit: int, queue: str | None = None, text: str = "",
           sort: str = "created", descending: bool = False) -> list[ReviewRow]:
    """One window of findings of a queue, with their review decision."""
    where, params = _where(queue, text)
    sql = f"{_SELECT} {where} ORDER BY {order_by(sort, descending, 'f.')} LIMIT ? OFFSET ?"
    return [_review_row(r) for r in _sql.tuples(store, sql, (*params, limit, offset))]


def _review_row(r: tuple) -> ReviewRow:
    *head, verdict, note, author, decided_at = r
    decision = {"ok": CONFIRM, "wrong": REJECT}.get(verdict) if verdict else None
    resolved = decision is not None and (decided_at or "") >= (head[8] or "")
    return ReviewRow(*head, decision, note or "", author or "", decided_at, resolved)


def row(store: Store, finding_id: str) -> ReviewRow | None:
    rows = _sql.tuples(store, f"{_SELECT} WHERE f.id = ?", (finding_id,))
    return _review_row(rows[0]) if rows else None


def queue_counts(store: Store) -> dict[str, int]:
    """How many findings each queue holds (``challenged``: those still to review)."""
    return {q: count(store, queue=q) for q in QUEUES}


def decide(store: Store, finding_id: str, decision: str, reason: str = "", *,
           reviewer: str = REVIEWER) -> Changes:
    """A reviewer confirms or rejects a finding; a rejection needs a reason."""
    if decision not in DECISION_VERDICT:
        raise InputError("decision", f"must be {CONFIRM!r} or {REJECT!r}, not {decision!r}")
    reason = reason.strip()
    if decision == REJECT and not reason:
        raise InputError("reason", "a rejection needs a reason")
    _, changes = audit.add_note(store, "finding", finding_id, DECISION_VERDICT[decision],
                                reason or "confirmed on review", author=reviewer)
    return changes


def clients_seen(store: Store, limit: int = 50) -> list[ClientSeen]:
    """The MCP clients whose votes are in the project, the most recent first."""
    marks = ", ".join("?" * len(LOCAL_CLIENTS))
    rows = _sql.tuples(store, "SELECT client, count(*), count(DISTINCT agent), max(created_at) FROM finding_votes "
                              f"WHERE client IS NOT NULL AND client NOT IN ({marks}) GROUP BY client "
                              "ORDER BY max(created_at) DESC LIMIT ?", (*LOCAL_CLIENTS, limit))
    return [ClientSeen(*r) for r in rows]


# The crew a re-research run puts the finding to (the sample's three roles, all simulated).
RERESEARCH_AGENTS = (("scout", "scout", {}), ("auditor", "auditor", {"strictness": 0.8}), ("dev", "dev", {}))


def reresearch_document(store: Store, finding_id: str, *, seed: int = 1) -> dict[str, Any]:
    """A SPEC §6 findings run on one finding, with the simulated provider (no model is paid)."""
    f = _sql.get(store, "findings", finding_id)
    if f is None:
        raise InputError("finding", f"no finding {finding_id!r} in this project")
    spec: dict[str, Any] = {"id": f["id"], "claim": f["claim"]}
    if f.get("context_json"):
        spec["context"] = f["context_json"]
    if f.get("threshold") is not None:
        spec["threshold"] = f["threshold"]
    return {
        "protocol": "findings", "label": f"Re-research {finding_id} (simulated)", "seed": seed,
        "providers": {"sim": {"model": "sim"}},
        "findings": [spec],
        "clusters": [{"name": "re-research", "agents": [
            {"id": agent, "provider": "sim", "persona": "", "role": role, **({"params": params} if params else {})}
            for agent, role, params in RERESEARCH_AGENTS]}],
    }
