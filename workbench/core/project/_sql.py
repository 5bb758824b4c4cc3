"""Rows in, rows out: the generic SQL helpers the record modules of this package share.

Only modules inside :mod:`workbench.core.project` import this one (a layering test checks it);
everything else asks a record module (``runs``, ``calls``, ``findings``...) for typed records.
The rules it keeps:
- every write is one short ``BEGIN IMMEDIATE`` transaction (:func:`write`) that records what it
  changed, so the caller can announce precise :class:`Changes`;
- JSON lives in columns whose names end in ``_json``: encoded on the way in, decoded on the way
  out, so a JSON string or number round-trips as well as a dict.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from typing import TYPE_CHECKING

from workbench.core.project import call_texts
from workbench.core.project.changes import BOOKKEEPING_TABLES, Changes, read_counters
from workbench.core.project.schema import COPIED_FROM_CALL

if TYPE_CHECKING:
    from workbench.core.project.store import Store


def jsonify(value):
    """A dict or list as its JSON text, anything else as it is (sqlite-utils' rule for a row's
    values). sqlite_utils is imported on the first write, not with this module: the window
    imports the project layer before it is shown, and sqlite_utils costs 130 ms of that."""
    from sqlite_utils.db import jsonify_if_needed

    return jsonify_if_needed(value)


def decode(row: dict) -> dict:
    return {k: (json.loads(v) if k.endswith("_json") and isinstance(v, str) else v) for k, v in row.items()}


def encode(record: dict) -> dict:
    return {k: (json.dumps(v, ensure_ascii=False) if k.endswith("_json") and v is not None else v)
            for k, v in record.items()}


# A view that stands for a table under another name (schema step 12: ``llm_calls`` reads the calls
# of ``llm_call_rows`` with their texts whole; step 14: ``votes`` and ``artifacts`` read a copy of
# their call's reply from the call). Inserts, updates and deletes by key go to the stored rows
# (whole: a column written clears its copy's flag); changes are reported under the view's name,
# the one every reader and counter uses.
STORED_AS = {call_texts.VIEW: call_texts.TABLE, **{view: table for view, (table, _) in COPIED_FROM_CALL.items()}}


class Transaction:
    """The writes of one ``BEGIN IMMEDIATE`` transaction; it records what it changed."""

    def __init__(self, store: Store):
        self.store = store
        self._db = store._database()
        self.changes = Changes()

    @property
    def conn(self):
        """The transaction's sqlite3 connection, for a read-back inside it (arm_import)."""
        return self._db.conn

    def touch(self, table: str, pk: object = None, *, run: str | None = None) -> None:
        self.changes = self.changes | Changes.of(table, pk, run=run)

    def insert(self, table: str, record: dict) -> object:
        """Insert one row; returns its primary key (the rowid for INTEGER PRIMARY KEY tables).

        Plain SQL, values converted as sqlite-utils would: its ``Table.insert`` re-read the
        schema (three queries) for every row, a third of the cost of recording a call."""
        row = encode(record)
        if table == call_texts.VIEW:  # a call: its texts stored once
            pk = call_texts.insert_call(self._db.conn, row)
            self.touch(table, pk, run=_run_of(table, record, pk))
            return pk
        columns, stored = ", ".join(f"[{c}]" for c in row), STORED_AS.get(table, table)  # rows stored whole
        cursor = self._db.conn.execute(f"INSERT INTO [{stored}] ({columns}) VALUES ({', '.join('?' * len(row))})",
                                       [jsonify(v) for v in row.values()])
        pks = _primary_key(self._db.conn, stored)
        pk = record.get(pks[0]) if pks != ("rowid",) and record.get(pks[0]) is not None else cursor.lastrowid
        self.touch(table, pk, run=_run_of(table, record, pk))
        return pk

    def upsert(self, table: str, record: dict) -> None:
        t = self._db.table(table)
        t.upsert(encode(record), pk=t.pks)
        self.touch(table, record.get(t.pks[0]), run=_run_of(table, record, record.get(t.pks[0])))

    def update(self, table: str, pk: object, updates: dict) -> None:
        stored = encode(updates)
        for column, flag in COPIED_FROM_CALL.get(table, (None, {}))[1].items():
            if column in stored:  # written whole: no longer read from the call
                stored[flag] = 0
        self._db.table(STORED_AS.get(table, table)).update(pk, stored)
        self.touch(table, pk, run=_run_of(table, updates, pk))

    def delete(self, table: str, pk: object) -> None:
        self._db.table(STORED_AS.get(table, table)).delete(pk)
        self.touch(table, pk, run=pk if table == "runs" else None)

    def execute(self, sql: str, params: tuple | dict = (), *, tables: tuple[str, ...],
                run: str | None = None) -> int:
        """A raw write statement; ``tables`` names what it changes. Returns the row count."""
        cursor = self._db.conn.execute(sql, params)
        for table in tables:
            self.touch(table, run=run)
        return cursor.rowcount

    def query(self, sql: str, params: tuple | dict = ()) -> list[dict]:
        """A read inside the transaction (it sees the transaction's own writes)."""
        return query(self.store, sql, params)


_PRIMARY_KEYS: dict[str, tuple[str, ...]] = {}  # a table's key is the same in every schema version


def _primary_key(conn: sqlite3.Connection, table: str) -> tuple[str, ...]:
    """The table's primary key columns, in order; ``("rowid",)`` for a table without one."""
    found = _PRIMARY_KEYS.get(table)
    if found is None:
        info = sorted((r[5], r[1]) for r in conn.execute(f"PRAGMA table_info([{table}])") if r[5])
        found = _PRIMARY_KEYS[table] = tuple(name for _, name in info) or ("rowid",)
    return found


def _run_of(table: str, record: dict, pk: object) -> str | None:
    if table == "runs":
        return pk if isinstance(pk, str) else None
    run = record.get("run_id")
    return run if isinstance(run, str) else None


@contextlib.contextmanager
def write(store: Store) -> Iterator[Transaction]:
    """One short ``BEGIN IMMEDIATE`` transaction: all of it commits, or none of it.

    Before it commits, the transaction reads the change counters its writes advanced (the
    schema's triggers keep them), so the :class:`Changes` it reports carry the watermarks
    the GUI uses to tell its own writes from other processes' (see :mod:`.changes`).
    """
    from workbench.core.project.store import explain, immediate

    if store.read_only:
        from workbench.core.project.files import ProjectError

        raise ProjectError("read_only", store.path, store.report.read_only_reason or "read-only")
    if not store.checked:  # opened with check_later: nothing is written before the file is checked
        store.check()
    conn = store._connection()
    try:
        with immediate(conn):
            tx = Transaction(store)
            yield tx
            if tx.changes:
                tx.changes = tx.changes.with_counters(read_counters(conn))
    except sqlite3.OperationalError as exc:
        raise explain(store.path, exc) from None


def insert(store: Store, table: str, record: dict) -> tuple[object, Changes]:
    """Insert one row in its own transaction; returns its key and the changes."""
    with write(store) as tx:
        pk = tx.insert(table, record)
    return pk, tx.changes


def update(store: Store, table: str, pk: object, updates: dict) -> Changes:
    with write(store) as tx:
        tx.update(table, pk, updates)
    return tx.changes


def delete(store: Store, table: str, pk: object) -> Changes:
    with write(store) as tx:
        tx.delete(table, pk)
    return tx.changes


def rows(store: Store, table: str, where: str | None = None, params: tuple | dict = (),
         order_by: str | None = None, limit: int | None = None) -> list[dict]:
    """Rows of ``table`` as dicts, with ``*_json`` columns decoded."""
    found = _readable(store, table).rows_where(where, params, order_by=order_by, limit=limit)
    return [decode(row) for row in found]


def get(store: Store, table: str, pk: object) -> dict | None:
    t = store._database().table(STORED_AS.get(table, table))  # a view has no key of its own
    key = "rowid" if t.pks == ["rowid"] else t.pks[0]
    found = rows(store, table, f"[{key}] = ?", (pk,), limit=1)
    return found[0] if found else None


def count(store: Store, table: str, where: str | None = None, params: tuple | dict = ()) -> int:
    sql = f"SELECT count(*) FROM [{table}]" + (f" WHERE {where}" if where else "")
    return store._connection().execute(sql, params).fetchone()[0]


def query(store: Store, sql: str, params: tuple | dict = ()) -> list[dict]:
    """A read-only query for this package's joins; ``*_json`` columns are decoded."""
    cursor = store._connection().execute(sql, params)
    names = [d[0] for d in cursor.description or ()]
    return [decode(dict(zip(names, row))) for row in cursor]


def tuples(store: Store, sql: str, params: tuple | dict = ()) -> list[tuple]:
    """A read returning plain tuples: the cheapest shape for long lists (no dict per row)."""
    return store._connection().execute(sql, params).fetchall()


def tables(store: Store) -> list[str]:
    """The project's tables, without the bookkeeping ones; a table read through a view
    (``STORED_AS``) by the view's name, and ``texts`` and ``template_hashes`` (part of how calls
    are stored) left out."""
    stored = {v: k for k, v in STORED_AS.items()}
    return [stored.get(t, t) for t in store._database().table_names()
            if t not in BOOKKEEPING_TABLES and t not in call_texts.PART_TABLES]


def columns(store: Store, table: str) -> dict[str, str]:
    return {c.name: c.type for c in _readable(store, table).columns}


def _readable(store: Store, table: str):
    """sqlite-utils' handle for reading ``table``: ``db.table`` refuses a view (``llm_calls``), and
    ``db[name]`` asks the schema which one it is (``llm_calls`` is still a table in a file of an
    older schema open read-only), so only for those names."""
    db = store._database()
    return db[table] if table in STORED_AS else db.table(table)


def escape_like(text: str) -> str:
    """``text`` matched literally by ``LIKE ? ESCAPE '\\'`` (its % and _ are not wildcards)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
