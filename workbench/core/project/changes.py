"""What a write changed, so each screen decides whether to refresh (Anki's ``OpChanges``).

Every write returns a :class:`Changes`: the tables it touched, the keys of the rows it wrote
where known, the runs those rows belong to, and the change counters of the tables it touched
as they stood when it committed.

The counters are the schema's per-table watermarks: triggers add one to a table's counter in
``change_counters`` for every row inserted, updated or deleted, by any program (this one, the
CLI, the MCP server, the ``sqlite3`` shell). A commit by another process is therefore worked out
precisely: :func:`diff_counters` compares two snapshots and names the tables that moved, never
"everything". A write made here carries its own snapshot, so the GUI does not announce the same
write twice when its watcher later sees the counters move.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

# Tables that only keep bookkeeping: never shown, never watched.
BOOKKEEPING_TABLES = ("change_counters",)


@dataclass(frozen=True)
class Changes:
    """Tables touched by a write, the keys of the rows written where known, and their runs."""

    tables: frozenset[str] = frozenset()
    keys: tuple[tuple[str, object], ...] = ()
    runs: frozenset[str] = frozenset()
    # Each touched table's change counter after the write; empty when unknown.
    counters: Mapping[str, int] = field(default_factory=dict, compare=False)
    # True when it came from another program (the watcher), False for a write made here.
    external: bool = False

    @classmethod
    def of(cls, table: str, key: object = None, *, run: str | None = None) -> Changes:
        return cls(frozenset({table}), ((table, key),) if key is not None else (),
                   frozenset({run}) if run else frozenset())

    def __or__(self, other: Changes) -> Changes:
        return Changes(self.tables | other.tables, self.keys + other.keys, self.runs | other.runs,
                       {**self.counters, **other.counters}, self.external and other.external)

    def __bool__(self) -> bool:
        return bool(self.tables)

    def touches(self, *tables: str) -> bool:
        return any(t in self.tables for t in tables)

    def keys_of(self, table: str) -> list[object]:
        return [key for t, key in self.keys if t == table]

    def with_counters(self, counters: Mapping[str, int]) -> Changes:
        return replace(self, counters={t: counters[t] for t in self.tables if t in counters})


def read_counters(conn: sqlite3.Connection) -> dict[str, int]:
    """Every table's change counter (one small read of a ~25-row table)."""
    return dict(conn.execute("SELECT tbl, seq FROM change_counters"))


def diff_counters(before: Mapping[str, int], after: Mapping[str, int]) -> frozenset[str]:
    """The tables whose counter moved between two snapshots."""
    return frozenset(t for t, seq in after.items() if before.get(t) != seq)
