"""Full-text search over claims, reasoning and raw replies, for the Trace Inspector's list.

Where SQLite has FTS5 (3.40 here does), an index is kept in the project file beside the
versioned schema, not in it: ``search_index``, a contentless FTS5 table (it stores the index,
never a second copy of the text), and ``search_state``, how far each table is indexed. It is
derived data: built in the background when the window shows a writable project (or at the
first search), brought up to date from the rows
added since (each table is append-only, so its last indexed id is its watermark), and dropped
or rebuilt at will (:func:`drop_index`, :func:`rebuild_index`). A search never waits for it:
rows past a table's watermark are matched with ``LIKE``, so the answer is complete even while
the index lags behind a running run.

Without FTS5, or in a project that cannot be written (read-only, or newer than this
workbench), every search is ``LIKE`` over the same columns: slower, and it says so.

An FTS row's rowid is the record's id plus ``KIND_NO[kind] << 40``, so one index serves every
table. Findings (text keys, few) are always matched with ``LIKE``. A protocol's own records
(``protocol_records``: a plugin's kinds) are searched in their kind, key and data.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field

from workbench.core.project import _sql
from workbench.core.project.changes import Changes
from workbench.core.project.store import Store

SHIFT = 1 << 40
KIND_NO = {"call": 1, "trace": 2, "vote": 3, "ballot": 4, "finding_vote": 5, "protocol_record": 6}
FTS = "FTS5"
LIKE = "LIKE"


@dataclass(frozen=True)
class _Text:
    """Where a kind of record keeps its text: claim, reasoning and raw reply (SQL over its table,
    unqualified), and the columns ``LIKE`` looks in."""

    table: str
    claim: str
    reasoning: str
    raw: str
    like: tuple[str, ...]


_TRACE_REASONING_COLUMNS = (
    "reasoning_frame", "decision_basis", "flags_json", "explicit_assumptions_json", "critical_path_json",
    "discarded_paths_json", "challenge_surface_json", "self_check_json", "influenced_by_json", "challenged_json",
    "drift_note", "disagreement_notes", "values_in_conflict_json", "rlhf_audit_json")
_TRACE_REASONING = " || ' ' || ".join(f"coalesce({c}, '')" for c in _TRACE_REASONING_COLUMNS)
TEXTS: dict[str, _Text] = {
    "call": _Text("llm_calls", "NULL", "NULL", "coalesce(reply_text, '') || ' ' || coalesce(error, '')",
                  ("reply_text", "error")),
    "trace": _Text("traces", "claim", _TRACE_REASONING,
                   "coalesce(raw_reasoning_attempt, '') || ' ' || coalesce(failure_reason, '')",
                   ("claim", *_TRACE_REASONING_COLUMNS, "raw_reasoning_attempt", "failure_reason")),
    "vote": _Text("votes", "NULL", "reason", "raw", ("reason", "raw")),
    "ballot": _Text("cons_ballots", "option", "coalesce(rationale, '') || ' ' || coalesce(evidence_json, '')",
                    "coalesce(raw, '') || ' ' || coalesce(invalid_reason, '')",
                    ("option", "rationale", "evidence_json", "raw", "invalid_reason")),
    "finding_vote": _Text("finding_votes", "NULL", "reason", "coalesce(raw, '') || ' ' || coalesce(invalid_reason, '')",
                          ("reason", "raw", "invalid_reason")),
    "finding": _Text("findings", "claim", "NULL", "NULL", ("claim",)),
    "protocol_record": _Text("protocol_records", "coalesce(key, '')", "coalesce(data_json, '')", "kind",
                             ("kind", "key", "data_json")),
}

_fts5: bool | None = None


def fts5_available() -> bool:
    """Whether this SQLite has FTS5 (checked once, on a private in-memory database)."""
    global _fts5
    if _fts5 is None:
        conn = sqlite3.connect(":memory:")
        try:
            conn.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
            _fts5 = True
        except sqlite3.Error:
            _fts5 = False
        finally:
            conn.close()
    return _fts5


@dataclass(frozen=True)
class IndexState:
    """What the index covers: each kind's last indexed id (None: there is no index)."""

    indexed: dict[str, int] | None
    pending: int = 0  # rows added since (matched with LIKE until the next update)

    @property
    def exists(self) -> bool:
        return self.indexed is not None


def index_state(store: Store, *, count_pending: bool = False) -> IndexState:
    if not fts5_available() or not _sql.tuples(
            store, "SELECT 1 FROM sqlite_master WHERE type IN ('table') AND name = 'search_state'"):
        return IndexState(None)
    indexed = dict.fromkeys(KIND_NO, 0)
    indexed.update(dict(_sql.tuples(store, "SELECT kind, last_id FROM search_state")))
    pending = 0
    if count_pending:
        for kind, last in indexed.items():
            pending += _sql.tuples(store, f"SELECT count(*) FROM {TEXTS[kind].table} WHERE id > ?", (last,))[0][0]
    return IndexState(indexed, pending)


def mode(store: Store, *, writable: bool | None = None) -> tuple[str, str]:
    """``(FTS or LIKE, why)``: how a search in this project runs. ``writable`` says whether the
    project can take an index (a panel reads through a read-only connection to a writable file)."""
    if not fts5_available():
        return LIKE, "this SQLite has no FTS5"
    if not (not store.read_only if writable is None else writable) and not index_state(store).exists:
        return LIKE, "the project is read-only, so no index can be made in it"
    return FTS, "indexed; rows added since the last update are matched with LIKE"


# ----- keeping the index --------------------------------------------------------------------------
def update_index(store: Store, *, batch: int = 20_000, cancel=None) -> Changes:
    """Create the index if it is missing and add the rows written since; one short transaction
    per ``batch`` rows, so a run writing meanwhile waits at most one batch. A table whose rows
    were deleted from its end since (its ids could be reused) makes the whole index be rebuilt.
    Returns no changes: the index is not project data, and nothing shown depends on it."""
    if not fts5_available():
        return Changes()
    with _sql.write(store) as tx:
        _create(tx)
        for kind in KIND_NO:
            last = _last(tx, kind)
            top = tx.query(f"SELECT coalesce(max(id), 0) AS m FROM {TEXTS[kind].table}")[0]["m"]
            if top < last:
                _drop(tx)
                _create(tx)
                break
    for kind in KIND_NO:
        while True:
            if cancel is not None and cancel.is_set():  # a threading.Event: stop between batches
                return Changes()
            with _sql.write(store) as tx:
                if not _index_batch(tx, kind, batch):
                    break
    return Changes()


def rebuild_index(store: Store) -> Changes:
    drop_index(store)
    return update_index(store)


def drop_index(store: Store) -> Changes:
    with _sql.write(store) as tx:
        _drop(tx)
    return Changes()


def _create(tx) -> None:
    tx.execute("CREATE VIRTUAL TABLE IF NOT EXISTS search_index USING fts5(claim, reasoning, raw, content='', "
               "tokenize='unicode61 remove_diacritics 2')", tables=())
    tx.execute("CREATE TABLE IF NOT EXISTS search_state (kind TEXT PRIMARY KEY, last_id INTEGER NOT NULL)", tables=())


def _drop(tx) -> None:
    tx.execute("DROP TABLE IF EXISTS search_index", tables=())
    tx.execute("DROP TABLE IF EXISTS search_state", tables=())


def _last(tx, kind: str) -> int:
    rows = tx.query("SELECT last_id FROM search_state WHERE kind = ?", (kind,))
    return rows[0]["last_id"] if rows else 0


def _index_batch(tx, kind: str, batch: int) -> bool:
    """Index the next ``batch`` rows of one kind; False when there were none."""
    text, last = TEXTS[kind], _last(tx, kind)
    top = tx.query(f"SELECT max(id) AS m FROM (SELECT id FROM {text.table} WHERE id > ? ORDER BY id LIMIT ?)",
                   (last, batch))[0]["m"]
    if top is None:
        return False
    tx.execute(f"INSERT INTO search_index (rowid, claim, reasoning, raw) SELECT id + ?, {text.claim}, "
               f"{text.reasoning}, {text.raw} FROM {text.table} WHERE id > ? AND id <= ? ORDER BY id",
               (KIND_NO[kind] * SHIFT, last, top), tables=())
    tx.execute("INSERT INTO search_state (kind, last_id) VALUES (?, ?) "
               "ON CONFLICT (kind) DO UPDATE SET last_id = excluded.last_id", (kind, top), tables=())
    return True


# ----- searching ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchPlan:
    """How one search text is matched: by the index (``FTS5``) or by ``LIKE``, and the words."""

    text: str
    mode: str
    indexed: dict[str, int] = field(default_factory=dict)  # kind -> last indexed id (FTS5 only)

    @property
    def active(self) -> bool:
        return bool(words(self.text))


def words(text: str) -> list[str]:
    """The words a search looks for (every one must match), at most 12."""
    return re.findall(r"\w+", text or "")[:12]


def plan(store: Store, text: str) -> SearchPlan:
    """How ``text`` will be searched in this project now (reads the index's watermarks)."""
    state = index_state(store) if fts5_available() else IndexState(None)
    if state.exists:
        return SearchPlan(text, FTS, dict(state.indexed or {}))
    return SearchPlan(text, LIKE)


def fts_query(text: str) -> str:
    """The FTS5 query for ``text``: each word quoted (so no user text is FTS syntax) and matched
    as a prefix; all of them must occur."""
    return " ".join('"' + w.replace('"', '""') + '"*' for w in words(text))


def condition(search: SearchPlan, kind: str, alias: str) -> tuple[str, tuple]:
    """A WHERE condition (and its parameters) that keeps the records of ``kind`` (its table under
    ``alias``) matching the search; ``("", ())`` when there is nothing to search for."""
    terms = words(search.text)
    if not terms:
        return "", ()
    like_sql, like_params = _like(kind, alias, terms)
    if search.mode != FTS or kind not in KIND_NO:
        return like_sql, like_params
    base, last = KIND_NO[kind] * SHIFT, search.indexed.get(kind, 0)
    sql = (f"({alias}.id IN (SELECT rowid - ? FROM search_index WHERE search_index MATCH ? AND rowid > ? "
           f"AND rowid <= ?) OR ({alias}.id > ? AND {like_sql}))")
    return sql, (base, fts_query(search.text), base, base + last, last, *like_params)


def _like(kind: str, alias: str, terms: list[str]) -> tuple[str, tuple]:
    columns = TEXTS[kind].like
    parts, params = [], []
    for term in terms:
        pattern = "%" + _sql.escape_like(term) + "%"
        parts.append("(" + " OR ".join(f"{alias}.{c} LIKE ? ESCAPE '\\'" for c in columns) + ")")
        params += [pattern] * len(columns)
    return "(" + " AND ".join(parts) + ")", tuple(params)
