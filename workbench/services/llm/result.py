"""What one gateway call returns: :class:`CallResult`, rich enough for an ``AgentReply`` and an
``llm_calls`` row. Standard library only."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

STATUSES = ("ok", "error", "rate_limited", "cancelled")
# error_kind values; the retryable ones are retried up to the provider's max_retries.
ERROR_KINDS = ("timeout", "rate_limited", "server_error", "connection", "auth", "bad_request",
               "not_found", "bad_response", "missing_key", "cancelled", "internal")
RETRYABLE = frozenset({"timeout", "rate_limited", "server_error", "connection"})
UNKNOWN_COST = "unknown"


@dataclass(frozen=True)
class CallResult:
    """One call through the gateway, after all its attempts.

    - ``status``: ``ok``, ``error``, ``rate_limited`` (still throttled when the retries ran out,
      or the server asked for a longer wait than allowed) or ``cancelled``.
    - ``attempts``: requests actually sent (0 for a cache hit, a missing key, or a call
      cancelled before its first request).
    - ``request``: the request as sent, without the key: model, api_base, messages, params.
    - ``response_raw``: the body of the last response exactly as received (or the error text
      when no body came back).
    - ``cost_usd``: ``None`` when unknown, never 0 for unknown; ``cost_source`` says where the
      figure came from: ``"litellm:<pricing model>"``, ``"cache"`` (a hit costs nothing) or
      ``"unknown"``.
    - ``latency_ms``: the last attempt's request time; ``queued_ms``: time spent waiting for a
      concurrency slot, the rate limiter and backoff; ``started_at``/``finished_at`` bound the
      whole call (ISO 8601 UTC).
    - ``attempt_log``: one dict per attempt (``http_status``, ``error_kind``, ``latency_ms``,
      ``retry_after_s``, ``waited_s`` before the next one).
    """

    status: str
    provider: str
    model: str
    text: str | None = None
    error: str | None = None
    error_kind: str | None = None
    attempts: int = 0
    request: dict[str, Any] = field(default_factory=dict)
    response_raw: str | None = None
    http_status: int | None = None
    finish_reason: str | None = None  # the provider's stop reason ("stop", "length"...): "length" is a cut-off reply
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cost_usd: float | None = None
    cost_source: str = UNKNOWN_COST
    latency_ms: float | None = None
    queued_ms: float = 0.0
    started_at: str = ""
    finished_at: str = ""
    sample_index: int = 0
    cached: bool = False
    key_source: str = "none"  # where the key came from ("env:NAME", "keyring:S/U", "none"), never the key
    attempt_log: tuple[dict[str, Any], ...] = ()
    # A provider with ``deployments``: which one answered (its index and api_base); None otherwise.
    deployment: int | None = None
    api_base: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def meta(self) -> dict[str, Any]:
        """What the runner puts in ``AgentReply.meta``."""
        return {
            "provider": self.provider, "model": self.model, "status": self.status,
            "error_kind": self.error_kind, "attempts": self.attempts, "sample_index": self.sample_index,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens, "cost_usd": self.cost_usd, "cost_source": self.cost_source,
            "latency_ms": self.latency_ms, "queued_ms": self.queued_ms, "cached": self.cached,
            "finish_reason": self.finish_reason,
            "started_at": self.started_at, "finished_at": self.finished_at,
            **({"deployment": self.deployment, "api_base": self.api_base} if self.deployment is not None else {}),
        }

    def agent_reply(self, key: str) -> Any:
        """The ``AgentReply`` a protocol generator expects: text on success, else the error."""
        from workbench.core.protocols.shared.steps import AgentReply

        if self.ok:
            return AgentReply(key=key, text=self.text, meta=self.meta())
        return AgentReply(key=key, text=None, error=f"{self.error_kind}: {self.error}", meta=self.meta())

    def record(self) -> dict[str, Any]:
        """The gateway's share of an ``llm_calls`` row (the runner adds run, step, agent, purpose;
        ``response_json`` is the runner's parsed structured reply, so it is left to the runner).
        Note the table's ``attempts >= 1`` check: the runner decides how to store a cache hit."""
        return {
            "provider": self.provider, "model": self.model, "sample_index": self.sample_index,
            "attempts": self.attempts,
            "request_json": json.dumps(self.request, ensure_ascii=False, sort_keys=True),
            "response_raw": self.response_raw, "status": self.status, "error": self.error,
            "error_kind": self.error_kind, "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens, "total_tokens": self.total_tokens,
            "cost_usd": self.cost_usd, "cost_source": self.cost_source, "latency_ms": self.latency_ms,
            "cached": int(self.cached), "started_at": self.started_at, "finished_at": self.finished_at,
        }

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["attempt_log"] = [dict(a) for a in self.attempt_log]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CallResult:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["attempt_log"] = tuple(dict(a) for a in values.get("attempt_log") or ())
        return cls(**values)

    def but(self, **changes: Any) -> CallResult:
        return replace(self, **changes)
