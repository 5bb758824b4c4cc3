"""The gateway's optional response cache (off unless a :class:`ResponseCache` is passed in).

The key is a SHA-256 over the canonical JSON of what decides the reply: the model string, the
api_base, the messages (their fence names masked: each call has fresh ones), the sampling
parameters and the sample index. Two samples of the same
prompt (sample_index 0 and 1) therefore have different keys and are both real calls; the same
sample asked again is a hit. Only successful results are stored.

Storage is pluggable: anything with ``get(key) -> dict | None`` and ``put(key, dict)`` will do.
:class:`MemoryCacheBackend` is the in-process default; the runner can back it with the project
file. Values are the JSON-safe dicts of ``CallResult.to_dict()``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any, Protocol, runtime_checkable

from workbench.core.protocols.shared.fencing import mask_fences


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
    messages = [{**m, "content": mask_fences(m["content"])} if isinstance(m.get("content"), str) else m
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
