"""The version of the SQLite library this process uses (for Help > About and bug reports)."""

from __future__ import annotations

import sqlite3


def sqlite_version() -> str:
    return sqlite3.sqlite_version
