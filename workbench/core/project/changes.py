"""What a write changed, so each screen can decide whether to refresh (Anki's "changes")."""

from __future__ import annotations

from dataclasses import dataclass

EVERYTHING = "*"


@dataclass(frozen=True)
class Changes:
    """Tables touched by a write, and the keys of the rows written where known."""

    tables: frozenset[str] = frozenset()
    keys: tuple[tuple[str, object], ...] = ()

    @classmethod
    def of(cls, table: str, key: object = None) -> Changes:
        return cls(frozenset({table}), ((table, key),) if key is not None else ())

    @classmethod
    def everything(cls) -> Changes:
        """An outside writer (another process) changed the file: refresh all."""
        return cls(frozenset({EVERYTHING}))

    def __or__(self, other: Changes) -> Changes:
        return Changes(self.tables | other.tables, self.keys + other.keys)

    def __bool__(self) -> bool:
        return bool(self.tables)

    def touches(self, *tables: str) -> bool:
        return EVERYTHING in self.tables or any(t in self.tables for t in tables)

    def keys_of(self, table: str) -> list[object]:
        return [key for t, key in self.keys if t == table]
