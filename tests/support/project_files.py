"""What the kill drills and migration tests ask of a project file with plain sqlite3, never through
the workbench: its integrity and its schema version (a file the workbench may not open yet)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def _pragma(project: Path, name: str):
    """The first value ``PRAGMA name`` gives, on a connection of its own (closed after)."""
    conn = sqlite3.connect(project)
    try:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        conn.close()


def integrity(project: Path) -> str:
    """``PRAGMA integrity_check``'s first line: ``ok`` for a sound file."""
    return _pragma(project, "integrity_check")


def user_version(project: Path) -> int:
    """The file's schema version (``PRAGMA user_version``)."""
    return _pragma(project, "user_version")
