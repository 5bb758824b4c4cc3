"""Each finding's consensus, kept on its row so lists page and sort in SQL.

The score, k, status and vote counts of a finding are the engine's
(:func:`workbench.core.protocols.findings.book.consensus` over each agent's latest valid vote).
Every writer of ``finding_votes`` calls :func:`refresh` for the findings it voted on, inside
the same transaction, so the row can never disagree with the votes. A list of 5,000 findings
then costs one indexed query, not a pass over 60,000 votes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from workbench.core.protocols.findings.book import DEFAULT_THRESHOLD, Vote, consensus

if TYPE_CHECKING:
    from workbench.core.project._sql import Transaction

# Each agent's latest valid vote on the given findings, in first-vote order.
_LATEST = """
SELECT v.finding_id, v.agent, v.vote_type, v.confidence, v.reason
FROM finding_votes v
JOIN (SELECT max(id) AS last_id, min(id) AS first_id FROM finding_votes
      WHERE status = 'valid' AND finding_id IN ({ids}) GROUP BY finding_id, agent) g ON v.id = g.last_id
ORDER BY v.finding_id, g.first_id
"""
_COUNTS = """
SELECT finding_id, sum(status = 'valid'), sum(status = 'invalid'), max(created_at)
FROM finding_votes WHERE finding_id IN ({ids}) GROUP BY finding_id
"""
_CHUNK = 500  # SQLite's parameter limit is far above this; it keeps each statement small


def vote_time(conn: sqlite3.Connection, finding_id: str, now: str) -> str:
    """The timestamp for a vote on ``finding_id`` written now, inside the writer's transaction.

    A reviewer's decision resolves a finding until a newer vote arrives (finding_review compares
    the two times). Timestamps have millisecond steps, so a vote in the decision's own millisecond
    would look as old as the decision and leave it resolved; the vote is dated one step after the
    decision instead, so the order of the two writes (serialised by their transactions) holds.
    """
    row = conn.execute("SELECT max(created_at) FROM audit_notes WHERE record_kind = 'finding' "
                       "AND record_id = ? AND verdict IN ('ok', 'wrong')", (finding_id,)).fetchone()
    decided = row[0] if row else None
    if decided is None or now > decided:
        return now
    after = datetime.fromisoformat(decided.replace("Z", "+00:00")) + timedelta(milliseconds=1)
    return after.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def refresh(conn: sqlite3.Connection, finding_ids: Iterable[str]) -> None:
    """Recompute and store the consensus of these findings (inside the caller's transaction)."""
    ids = sorted(set(finding_ids))
    for start in range(0, len(ids), _CHUNK):
        _refresh_chunk(conn, ids[start:start + _CHUNK])


def refresh_scores(tx: Transaction, finding_ids: Iterable[str]) -> None:
    """:func:`refresh` inside a write transaction, which then reports the findings as changed."""
    ids = sorted(set(finding_ids))
    refresh(tx.store._connection(), ids)
    for fid in ids:
        tx.touch("findings", fid)


def refresh_all(conn: sqlite3.Connection) -> None:
    refresh(conn, [row[0] for row in conn.execute("SELECT id FROM findings")])


def _refresh_chunk(conn: sqlite3.Connection, ids: list[str]) -> None:
    marks = ", ".join("?" * len(ids))
    latest: dict[str, list[Vote]] = {}
    for fid, agent, vote_type, confidence, reason in conn.execute(_LATEST.format(ids=marks), ids):
        latest.setdefault(fid, []).append(
            Vote(agent=agent, vote_type=vote_type, confidence=confidence, reason=reason or ""))
    counts = {row[0]: row[1:] for row in conn.execute(_COUNTS.format(ids=marks), ids)}
    thresholds = dict(conn.execute(f"SELECT id, threshold FROM findings WHERE id IN ({marks})", ids))
    for fid in ids:
        if fid not in thresholds:
            continue
        threshold = thresholds[fid] if thresholds[fid] is not None else DEFAULT_THRESHOLD
        result = consensus(latest.get(fid, []), threshold)
        valid, invalid, last = counts.get(fid, (0, 0, None))
        conn.execute("UPDATE findings SET score = ?, k = ?, status = ?, votes_valid = ?, votes_invalid = ?, "
                     "last_vote_at = ? WHERE id = ?",
                     (result.consensus_score, result.k, result.status.value, valid or 0, invalid or 0, last, fid))
