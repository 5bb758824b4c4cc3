"""The gateway's optional response cache (off unless a :class:`ResponseCache` is passed in).

The key is a SHA-256 over the canonical JSON of what decides the reply: the model string, the
api_base, the messages (their fence names masked: each call has fresh ones), the sampling
parameters and the sample index. Two samples of the same
prompt (sample_index 0 and 1) therefore have different keys and are both real calls; the same
sample asked again is a hit. Only successful results are stored.

Storage is pluggable: anything with ``get(key) -> dict | None`` and ``put(key, dict)`` will do.
:class:`MemoryCacheBackend` is the in-process default; a run with ``"cache": true`` uses
:class:`ProjectCacheBackend`, the project file's ``reply_cache`` table, shared by every run of the
project, whose keys add the run's seed and replicate (so sampling replicates never share an entry).
Values are the JSON-safe dicts of ``CallResult.to_dict()``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from typing import Any, Protocol, runtime_checkable

from workbench.core.protocols.shared.fencing import MASK, mask_fences

log = logging.getLogger(__name__)
# Every form a fence name takes in a prompt: FENCE-<32 hex> (and the older ARTIFACT-<16 hex>) in its
# fence lines and in the prompt's words, in any case, and the escaped form (FENCE_<hex>) an
# untrusted text holding the call's own name is shown with (fencing.escape).
_FENCE_FORMS = re.compile(r"(?:FENCE[-_][0-9A-F]{32}|ARTIFACT[-_][0-9A-F]{16})", re.IGNORECASE)


def mask_fence_forms(text: str) -> str:
    return _FENCE_FORMS.sub(MASK, mask_fences(text))


@runtime_checkable
class CacheBackend(Protocol):
    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, value: dict[str, Any]) -> None: ...


class MemoryCacheBackend:
    """A thread-safe dict."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            value = self._data.get(key)
            return dict(value) if value is not None else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._data[key] = dict(value)

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)


def cache_key(model: str, api_base: str | None, messages: list[dict], params: dict[str, Any],
              sample_index: int) -> str:
    # Fence names are fresh for every call (SPEC §6): the same prompt with another fence is the
    # same question, so the key masks them.
    messages = [{**m, "content": mask_fence_forms(m["content"])} if isinstance(m.get("content"), str) else m
                for m in messages]
    payload = {"model": model, "api_base": api_base, "messages": messages,
               "params": {k: v for k, v in sorted(params.items()) if v is not None},
               "sample_index": sample_index}
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """Counts hits and misses over a backend (a :class:`MemoryCacheBackend` by default)."""

    def __init__(self, backend: CacheBackend | None = None) -> None:
        self.backend: CacheBackend = backend if backend is not None else MemoryCacheBackend()
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        value = self.backend.get(key)
        with self._lock:
            if value is None:
                self.misses += 1
            else:
                self.hits += 1
        return value

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.backend.put(key, value)


class ProjectCacheBackend:
    """The reply cache in the project file (``reply_cache``, :mod:`workbench.core.project.reply_cache`).

    The gateway's key (model, api_base, messages with fence names masked, sampling parameters, sample
    index) is hashed again with the run's ``seed`` and ``replicate``: a re-run of a configuration (same
    seed) is answered from the entries of the run before, while a batch's replicates (seed + r) and a
    run with another seed are asked anew. The gateway calls it from the run's call threads: each
    opens its own connection to the file, closed after use (the run's own thread keeps its one).
    A failure to read or write the cache is logged and never fails the call.
    """

    def __init__(self, store, *, seed: int, replicate: int | None = None, run_id: str | None = None):
        self.store = store
        self.namespace = f"seed={int(seed)};replicate={int(replicate or 0)}"
        self.run_id = run_id
        self._owner = threading.get_ident()

    def key(self, key: str) -> str:
        return hashlib.sha256(f"{self.namespace}\n{key}".encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        from workbench.core.project import reply_cache

        try:
            return reply_cache.get(self.store, self.key(key))
        except Exception:
            log.warning("the reply cache could not be read", exc_info=True)
            return None
        finally:
            self._done()

    def put(self, key: str, value: dict[str, Any]) -> None:
        from workbench.core.project import reply_cache

        try:
            reply_cache.put(self.store, self.key(key), value, model=str(value.get("model") or ""), run_id=self.run_id)
        except Exception:
            log.warning("the reply cache could not be written", exc_info=True)
        finally:
            self._done()

    def _done(self) -> None:
        if threading.get_ident() != self._owner:
            self.store.close_connection()
