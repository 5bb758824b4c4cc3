"""An auditor's verdicts and notes on any record (schema v4's ``audit_notes``).

A note names its record by kind and key (:class:`~workbench.core.project.refs.RecordRef`): a
call, trace, vote, ballot, finding, finding vote or artifact. A record may collect several notes;
its verdict is its newest note's. Notes are kept in the project file, so they travel with it,
and they are exported with their run (see :mod:`.export`).
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project.changes import Changes
from workbench.core.project.refs import KINDS
from workbench.core.project.store import Store, utc_now

VERDICTS = ("ok", "suspect", "wrong")
MAX_NOTE_CHARS = 20_000


@dataclass(frozen=True)
class AuditNote:
    id: int
    record_kind: str
    record_id: str
    run_id: str | None
    verdict: str
    note: str
    author: str
    created_at: str


_COLUMNS = "id, record_kind, record_id, run_id, verdict, note, author, created_at"


def add_note(store: Store, kind: str, record_id: int | str, verdict: str, note: str = "", *,
             author: str = "", run_id: str | None = None, created_at: str | None = None) -> tuple[int, Changes]:
    """Attach a verdict (``ok``, ``suspect`` or ``wrong``) and a note to a record; returns the
    note's id and the changes. The record must exist; ``run_id`` is looked up when not given."""
    if kind not in KINDS or kind == "run":
        raise InputError("record_kind", f"cannot audit a {kind!r}; one of "
                                        f"{', '.join(k for k in KINDS if k != 'run')}")
    if verdict not in VERDICTS:
        raise InputError("verdict", f"must be one of {', '.join(VERDICTS)}, not {verdict!r}")
    if len(note) > MAX_NOTE_CHARS:
        raise InputError("note", f"is longer than {MAX_NOTE_CHARS:,} characters")
    with _sql.write(store) as tx:
        found = _record_run(store, kind, record_id)
        if found is None:
            raise InputError("record", f"no {kind} {record_id!r} in this project")
        note_id = tx.insert("audit_notes", {
            "record_kind": kind, "record_id": str(record_id), "run_id": run_id if run_id is not None else found[0],
            "verdict": verdict, "note": note, "author": author, "created_at": created_at or utc_now()})
    return int(note_id), tx.changes  # type: ignore[arg-type]


def delete_note(store: Store, note_id: int) -> Changes:
    """Remove one note (what undoing :func:`add_note` does)."""
    with _sql.write(store) as tx:
        tx.execute("DELETE FROM audit_notes WHERE id = ?", (note_id,), tables=("audit_notes",))
    return tx.changes


def restore_note(store: Store, note: AuditNote) -> Changes:
    """Put back a note removed by :func:`delete_note`, with its id and time (redo after undo)."""
    with _sql.write(store) as tx:
        tx.insert("audit_notes", {"id": note.id, "record_kind": note.record_kind, "record_id": note.record_id,
                                  "run_id": note.run_id, "verdict": note.verdict, "note": note.note,
                                  "author": note.author, "created_at": note.created_at})
    return tx.changes


def notes_for(store: Store, kind: str, record_id: int | str) -> list[AuditNote]:
    """Every note on one record, newest first."""
    rows = _sql.tuples(store, f"SELECT {_COLUMNS} FROM audit_notes WHERE record_kind = ? AND record_id = ? "
                              "ORDER BY id DESC", (kind, str(record_id)))
    return [AuditNote(*row) for row in rows]


def note(store: Store, note_id: int) -> AuditNote | None:
    rows = _sql.tuples(store, f"SELECT {_COLUMNS} FROM audit_notes WHERE id = ?", (note_id,))
    return AuditNote(*rows[0]) if rows else None


def notes_of_run(store: Store, run_id: str) -> list[AuditNote]:
    """The notes on the records of one run, oldest first (for the run's export)."""
    rows = _sql.tuples(store, f"SELECT {_COLUMNS} FROM audit_notes WHERE run_id = ? ORDER BY id", (run_id,))
    return [AuditNote(*row) for row in rows]


def verdict_of(store: Store, kind: str, record_id: int | str) -> str | None:
    """The record's verdict: its newest note's, or None when it has none."""
    rows = _sql.tuples(store, "SELECT verdict FROM audit_notes WHERE record_kind = ? AND record_id = ? "
                              "ORDER BY id DESC LIMIT 1", (kind, str(record_id)))
    return rows[0][0] if rows else None


def verdict_counts(store: Store) -> dict[str, int]:
    """How many records stand at each verdict (their newest note's)."""
    rows = _sql.tuples(store, "SELECT verdict, count(*) FROM audit_notes WHERE id IN "
                              "(SELECT max(id) FROM audit_notes GROUP BY record_kind, record_id) GROUP BY verdict")
    counts = dict.fromkeys(VERDICTS, 0)
    counts.update({v: n for v, n in rows})
    return counts


# Where each kind of record keeps its run (ballots through their question).
_RUN_OF = {
    "call": "SELECT run_id FROM llm_calls WHERE id = ?",
    "trace": "SELECT run_id FROM traces WHERE id = ?",
    "vote": "SELECT run_id FROM votes WHERE id = ?",
    "ballot": "SELECT q.run_id FROM cons_ballots b LEFT JOIN cons_questions q ON q.id = b.question_id WHERE b.id = ?",
    "finding": "SELECT run_id FROM findings WHERE id = ?",
    "finding_vote": "SELECT run_id FROM finding_votes WHERE id = ?",
    "protocol_record": "SELECT run_id FROM protocol_records WHERE id = ?",
    "artifact": "SELECT run_id FROM artifacts WHERE id = ?",
}


def _record_run(store: Store, kind: str, record_id: int | str) -> tuple[str | None] | None:
    """``(run_id,)`` of an existing record, or None when there is no such record."""
    key: int | str = record_id
    if kind != "finding":
        try:
            key = int(record_id)
        except (TypeError, ValueError):
            return None
    rows = _sql.tuples(store, _RUN_OF[kind], (key,))
    return (rows[0][0],) if rows else None
