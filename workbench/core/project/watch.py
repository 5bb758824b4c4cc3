"""Noticing commits made by other programs (the CLI, an MCP server, another window).

:class:`ChangeWatcher` is polled from a background thread with its own read-only connection.
``PRAGMA data_version`` tells cheaply whether anyone else committed; only then are the
per-table change counters read (see :mod:`.changes`) and compared, so a poll that finds nothing
costs one PRAGMA, and one that finds something names exactly the tables that moved, the rows
appended to them, and the runs those rows belong to.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from workbench.core.project import _sql
from workbench.core.project.changes import Changes, diff_counters, read_counters
from workbench.core.project.store import Store

# Append-mostly tables whose new rows name a run: the watcher reports which runs they touched.
RUN_TABLES = ("llm_calls", "votes", "artifacts", "traces", "rounds", "finding_votes")


def data_version(store: Store) -> int:
    """Changes whenever another connection (any thread or process) commits."""
    return _sql.tuples(store, "PRAGMA data_version")[0][0]


def counters(store: Store) -> dict[str, int]:
    return read_counters(store._connection())


@dataclass
class Snapshot:
    """What the watcher saw last: the data version, each table's counter and last rowid."""

    version: int | None = None
    counters: dict[str, int] = field(default_factory=dict)
    last_rowid: dict[str, int] = field(default_factory=dict)


class ChangeWatcher:
    """Polls one store (give it a reader: ``store.reader()``) from a single thread."""

    def __init__(self, store: Store):
        self.store = store
        self.seen = Snapshot()

    def start(self) -> dict[str, int]:
        """Take the first snapshot; returns the counters (the baseline of later diffs)."""
        self.seen = Snapshot(data_version(self.store), counters(self.store), self._last_rowids())
        return dict(self.seen.counters)

    def poll(self) -> Changes | None:
        """What other connections committed since the last poll, or None (also when a writer
        kept the file locked past the busy timeout: the next poll sees what it wrote)."""
        try:
            return self._poll()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                return None
            raise

    def _poll(self) -> Changes | None:
        version = data_version(self.store)
        if version == self.seen.version:
            return None
        now = counters(self.store)
        moved = diff_counters(self.seen.counters, now)
        runs: set[str] = set()
        last = dict(self.seen.last_rowid)
        for table in RUN_TABLES:
            if table in moved:
                last[table], found = self._new_runs(table, last.get(table, 0))
                runs |= found
        self.seen = Snapshot(version, now, last)
        if not moved:
            return None
        return Changes(tables=frozenset(moved), runs=frozenset(runs), counters=now, external=True)

    def close(self) -> None:
        self.store.close_connection()

    def _last_rowids(self) -> dict[str, int]:
        return {t: _sql.tuples(self.store, f"SELECT coalesce(max(rowid), 0) FROM {t}")[0][0] for t in RUN_TABLES}

    def _new_runs(self, table: str, after: int) -> tuple[int, set[str]]:
        # The rows appended since the last poll, by rowid: a range scan, however big the table.
        rows = _sql.tuples(self.store, f"SELECT max(rowid), group_concat(DISTINCT run_id) FROM "
                                       f"(SELECT rowid, run_id FROM {table} WHERE rowid > ?)", (after,))
        top, names = rows[0]
        return max(top or after, after), set(names.split(",")) if names else set()
