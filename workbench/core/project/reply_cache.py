"""The reply cache that survives (schema step 6, ``reply_cache``): a model's successful reply,
kept in the project and shared by every run whose configuration says ``"cache": true``.

The gateway computes the key (:func:`workbench.services.llm.cache.cache_key`, fence names masked)
and the backend (:class:`workbench.services.llm.cache.ProjectCacheBackend`) adds the run's seed and
replicate to it; this module only stores and finds entries. The first reply stored under a key
stays: a later put of the same key (two calls that missed at the same moment) changes nothing.
"""

from __future__ import annotations

from typing import Any

from workbench.core.project import _sql
from workbench.core.project.store import Store, utc_now


def get(store: Store, key: str) -> dict[str, Any] | None:
    """The stored value for ``key`` (a ``CallResult`` as a dict), or None."""
    found = _sql.query(store, "SELECT value_json FROM reply_cache WHERE key = ?", (key,))
    return found[0]["value_json"] if found else None


def put(store: Store, key: str, value: dict[str, Any], *, model: str = "", run_id: str | None = None) -> bool:
    """Keep ``value`` under ``key`` unless an entry is there already; True when it was added."""
    record = _sql.encode({"value_json": value})
    with _sql.write(store) as tx:
        added = tx.execute("INSERT OR IGNORE INTO reply_cache (key, model, run_id, value_json, created_at) "
                           "VALUES (?, ?, ?, ?, ?)", (key, model or "", run_id, record["value_json"], utc_now()),
                           tables=("reply_cache",))
    return added > 0


def count(store: Store) -> int:
    return _sql.count(store, "reply_cache")
