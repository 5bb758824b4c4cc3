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


def text_clause(text: str, alias: str = "") -> tuple[str, tuple] | None:
    """The clause matching ``text`` in a finding's id or claim, and its parameters (None for no
    text). ``alias`` prefixes the columns (``"f."`` in a join)."""
    if not text.strip():
        return None
    like = "%" + _sql.escape_like(text.strip()) + "%"
    return f"({alias}id LIKE ? ESCAPE '\\' OR {alias}claim LIKE ? ESCAPE '\\')", (like, like)


def order_by(sort: str, descending: bool, alias: str = "") -> str:
    """ORDER BY for a sort key of SORT_COLUMNS (never user text in the SQL), empty values last."""
    column = alias + SORT_COLUMNS.get(sort, "rowid")
    nulls = f"{column} IS NULL, " if sort in ("score", "last_vote") else ""
    return f"{nulls}{column} {'DESC' if descending else 'ASC'}, {alias}rowid"


def _where(status: str | None, text: str) -> tuple[str, tuple]:
    clauses, params = [], []
    if status and status != "all":
        clauses.append("status = ?")
        params.append(status)
    if (match := text_clause(text)) is not None:
        clauses.append(match[0])
        params += match[1]
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", tuple(params)


def count(store: Store, *, status: str | None = None, text: str = "") -> int:
    where, params = _where(status, text)
    return _sql.tuples(store, f"SELECT count(*) FROM findings {where}", params)[0][0]


def window(store: Store, *, offset: int, limit: int, status: str | None = None, text: str = "",
           sort: str = "created", descending: bool = False) -> list[FindingRow]:
    """One window of findings, in creation order unless sorted by another column."""
    where, params = _where(status, text)
    order = order_by(sort, descending)
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
