"""The findings as a list that pages: one window of rows at a time, sorted and filtered in SQL.

Each finding's consensus is kept on its row (:mod:`.finding_scores`), so a window of 200 rows
out of 5,000 findings with 60,000 votes is one indexed query, whatever the number of votes.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.project import _sql
from workbench.core.project.store import Store

# Columns a list may sort by, to the SQL that sorts them (never user text in the SQL).
SORT_COLUMNS = {"status": "status", "id": "id", "claim": "claim", "score": "score", "k": "k",
                "votes_total": "votes_valid", "last_vote": "last_vote_at", "created": "rowid"}
STATUSES = ("confirmed", "challenged", "pending")


@dataclass(frozen=True)
class FindingRow:
    id: str
    claim: str
    status: str
    score: float | None
    threshold: float | None
    k: int
    votes_valid: int
    votes_invalid: int
    last_vote_at: str | None


def _where(status: str | None, text: str) -> tuple[str, tuple]:
    clauses, params = [], []
    if status and status != "all":
        clauses.append("status = ?")
        params.append(status)
    if text.strip():
        like = "%" + _sql.escape_like(text.strip()) + "%"
        clauses.append("(id LIKE ? ESCAPE '\\' OR claim LIKE ? ESCAPE '\\')")
        params += [like, like]
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", tuple(params)


def count(store: Store, *, status: str | None = None, text: str = "") -> int:
    where, params = _where(status, text)
    return _sql.tuples(store, f"SELECT count(*) FROM findings {where}", params)[0][0]


def window(store: Store, *, offset: int, limit: int, status: str | None = None, text: str = "",
           sort: str = "created", descending: bool = False) -> list[FindingRow]:
    """One window of findings, in creation order unless sorted by another column."""
    where, params = _where(status, text)
    column = SORT_COLUMNS.get(sort, "rowid")
    nulls = f"{column} IS NULL, " if column in ("score", "last_vote_at") else ""  # nulls last
    order = f"{nulls}{column} {'DESC' if descending else 'ASC'}, rowid"
    sql = (f"SELECT id, claim, status, score, threshold, k, votes_valid, votes_invalid, last_vote_at "
           f"FROM findings {where} ORDER BY {order} LIMIT ? OFFSET ?")
    return [FindingRow(*row) for row in _sql.tuples(store, sql, (*params, limit, offset))]


def status_counts(store: Store) -> dict[str, int]:
    """How many findings have each status, and ``all``."""
    found = dict(_sql.tuples(store, "SELECT status, count(*) FROM findings GROUP BY status"))
    out = {s: found.get(s, 0) for s in STATUSES}
    return {"all": sum(out.values()), **out}


def cons_overview(store: Store) -> tuple[int, int]:
    """(CONS questions, open escalations to a human)."""
    return (_sql.count(store, "cons_questions"), _sql.count(store, "cons_escalations", "status = 'open'"))
