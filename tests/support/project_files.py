"""What the kill drills and migration tests ask of a project file with plain sqlite3, never through
the workbench: its integrity and its schema version (a file the workbench may not open yet)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def integrity(project: Path) -> str:
    """``PRAGMA integrity_check``'s first line: ``ok`` for a sound file."""
    conn = sqlite3.connect(project)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def user_version(project: Path) -> int:
    """The file's schema version (``PRAGMA user_version``)."""
    conn = sqlite3.connect(project)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()
