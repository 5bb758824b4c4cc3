"""The project row (name, description) and its key/value settings."""

from __future__ import annotations

import json

from workbench.core.project import _sql
from workbench.core.project.changes import Changes
from workbench.core.project.store import Store


def project_row(store: Store) -> dict:
    return _sql.get(store, "project", 1) or {}


def project_name(store: Store) -> str:
    return project_row(store).get("name") or store.path.stem


def setting(store: Store, key: str, default: object = None) -> object:
    row = _sql.get(store, "settings", key)
    return row["value_json"] if row else default


def set_setting(store: Store, key: str, value: object) -> Changes:
    # Written by hand so that a value of None is stored as JSON null, not as SQL NULL.
    with _sql.write(store) as tx:
        tx.execute("INSERT INTO settings (key, value_json) VALUES (?, ?) "
                   "ON CONFLICT (key) DO UPDATE SET value_json = excluded.value_json",
                   (key, json.dumps(value, ensure_ascii=False)), tables=("settings",))
    return tx.changes
