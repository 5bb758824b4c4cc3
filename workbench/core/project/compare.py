"""Two project files compared row for row, as SPEC §6 "Reproducibility" defines "the same".

Used by ``rwb samples --check`` and the sample tests: a sample project regenerated from its
committed configurations must hold the same content as the committed file. The comparison
ignores what differs between two faithful builds and nothing else:

- **timestamps**: any ISO 8601 date-time, alone or inside text and JSON (``<time>``);
- **run, batch and study ids**: each is replaced by its position among the file's runs (batches, studies), in
  the order they were created (``<run 1>``, ``<batch 1>``), wherever it appears, including inside
  other keys such as a CONS question id (``CONS-101@<run 1>``);
- **fence tokens**: the per-call delimiter names, fresh from a CSPRNG (``FENCE-*``);
- **process bookkeeping that is a kind of time or place**: ``runs.owner_json`` (the host and pid
  that ran it), a summary's ``duration_s`` and a call's ``latency_ms`` (wall-clock measurements),
  and ``project.created_by_version`` (the program version that made the file, not its content);
- **derived bookkeeping**: the change counters and full-text index tables (rebuilt from the rows).

Everything else is compared exactly, row by row in rowid order, floats included: the simulated
panel is deterministic, so two builds with sequential dispatch give identical rows.

:func:`compact` makes a finished project file small for committing (one-kilobyte pages, vacuumed).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.core.protocols.shared.fencing import mask_fences

TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")
TIME_MASK = "<time>"
# Tables that only mirror other rows (counters for change notifications).
SKIP_TABLES = frozenset({"change_counters"})
# (table, column) pairs that say when, where or by which build, never what.
# A text's hash is derived from its body, which is compared (normalised); a body that names a run
# or a time hashes differently in each build.
SKIP_COLUMNS = frozenset({("runs", "owner_json"), ("project", "created_by_version"), ("texts", "sha256")})
# Since schema step 12 a call's texts are stored split (``llm_call_rows`` + ``texts``, by hash) and
# read whole through the ``llm_calls`` view: the view is compared, the split is how it is stored
# (a request written whole through the view and one split at its fences are the same call; since
# step 15 the view also gives back the fence and template hash the rows keep once).
STORED_CALLS = "llm_call_rows"
# Keys of JSON values that are wall-clock measurements.
SKIP_KEYS = frozenset({"duration_s", "latency_ms"})
SAMPLE_PAGE_SIZE = 1024


@dataclass(frozen=True)
class Difference:
    table: str
    row: int | None  # 1-based position in rowid order; None for a table-level difference
    column: str | None
    left: Any
    right: Any

    def __str__(self) -> str:
        where = self.table if self.row is None else f"{self.table} row {self.row}"
        if self.column:
            where += f" column {self.column}"
        return f"{where}: {_short(self.left)} != {_short(self.right)}"


def _short(value: Any, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _connect(path: Path | str) -> sqlite3.Connection:
    uri = Path(path).absolute().as_uri() + "?mode=ro"
    return sqlite3.connect(uri, uri=True)


def _tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                        "ORDER BY name").fetchall()
    virtual = [name for name, sql in rows if (sql or "").upper().startswith("CREATE VIRTUAL")]
    names = [name for name, _ in rows if name not in SKIP_TABLES and name not in virtual
             and not any(name.startswith(v + "_") for v in virtual)]
    if STORED_CALLS in names:  # schema step 12: the calls as read (whole texts), not as split for storage
        names = sorted({*names, "llm_calls"} - {STORED_CALLS, "texts", "template_hashes"})
    return names


class _Normaliser:
    """Rewrites the values of one file so two faithful builds read the same."""

    def __init__(self, conn: sqlite3.Connection):
        names: dict[str, str] = {}
        for table, label in (("runs", "run"), ("batches", "batch"), ("studies", "study")):
            if conn.execute("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", (table,)).fetchone():
                for n, (key,) in enumerate(conn.execute(f"SELECT id FROM {table} ORDER BY rowid"), 1):
                    names[key] = f"<{label} {n}>"
        self.names = names
        self.pattern = (re.compile("|".join(re.escape(k) for k in sorted(names, key=len, reverse=True)))
                        if names else None)

    def text(self, value: str) -> str:
        if self.pattern is not None:
            value = self.pattern.sub(lambda m: self.names[m.group(0)], value)
        return TIMESTAMP.sub(TIME_MASK, mask_fences(value))

    def json_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.json_value(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k): self.json_value(v) for k, v in value.items() if k not in SKIP_KEYS}
        return value

    def value(self, column: str, value: Any) -> Any:
        if isinstance(value, bytes):
            return value
        if isinstance(value, str):
            if column.endswith("_json") or value.startswith(("[", "{")):
                try:
                    parsed = json.loads(value)
                except ValueError:
                    parsed = None
                else:
                    if isinstance(parsed, (dict, list)):
                        return json.dumps(self.json_value(parsed), sort_keys=True, ensure_ascii=False)
            return self.text(value)
        return value


def table_rows(path: Path | str) -> dict[str, tuple[list[str], list[tuple]]]:
    """Every compared table of the file: its compared columns and its normalised rows in rowid order."""
    conn = _connect(path)
    try:
        norm = _Normaliser(conn)
        out: dict[str, tuple[list[str], list[tuple]]] = {}
        for table in _tables(conn):
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")
                       if (table, r[1]) not in SKIP_COLUMNS]
            quoted = ", ".join(f'"{c}"' for c in columns)
            order = "id" if table == "llm_calls" else "rowid" if _has_rowid(conn, table) else "1"
            rows = [tuple(norm.value(c, v) for c, v in zip(columns, row))
                    for row in conn.execute(f"SELECT {quoted} FROM {table} ORDER BY {order}")]
            out[table] = (columns, rows)
        return out
    finally:
        conn.close()


def _has_rowid(conn: sqlite3.Connection, table: str) -> bool:
    sql = conn.execute("SELECT sql FROM sqlite_schema WHERE name = ?", (table,)).fetchone()[0] or ""
    return "WITHOUT ROWID" not in sql.upper()


def differences(left: Path | str, right: Path | str) -> Iterator[Difference]:
    """What differs between two project files, table by table and row by row (nothing: the same)."""
    versions = [_user_version(p) for p in (left, right)]
    if versions[0] != versions[1]:
        yield Difference("schema version", None, None, versions[0], versions[1])
    a, b = table_rows(left), table_rows(right)
    for table in sorted(set(a) | set(b)):
        if table not in a or table not in b:
            yield Difference(table, None, None, "present" if table in a else "absent",
                             "present" if table in b else "absent")
            continue
        (cols_a, rows_a), (cols_b, rows_b) = a[table], b[table]
        if cols_a != cols_b:
            yield Difference(table, None, "columns", cols_a, cols_b)
            continue
        for n, (ra, rb) in enumerate(zip(rows_a, rows_b), 1):
            for column, va, vb in zip(cols_a, ra, rb):
                if va != vb:
                    yield Difference(table, n, column, va, vb)
        if len(rows_a) != len(rows_b):
            yield Difference(table, None, "rows", len(rows_a), len(rows_b))


def _user_version(path: Path | str) -> int:
    conn = _connect(path)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def same_content(left: Path | str, right: Path | str) -> bool:
    return next(differences(left, right), None) is None


def compact(path: Path | str, page_size: int = SAMPLE_PAGE_SIZE) -> None:
    """Rewrite a closed project file as small as it goes: rollback journal, small pages, vacuumed.
    Nothing else may have the file open."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute(f"PRAGMA page_size = {int(page_size)}")
        conn.execute("VACUUM")
    finally:
        conn.close()


__all__ = ["Difference", "compact", "differences", "same_content", "table_rows"]
