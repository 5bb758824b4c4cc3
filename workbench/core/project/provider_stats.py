"""Provider health (issue 19): per provider and model, how its calls went.

For each ``(provider, model)`` of the stored calls (of one run, or of the whole project):

- ``calls``, and how many came back ``ok`` (a reply the protocol could read), ``invalid`` (a
  reply it could not) or ``failed`` (no reply: an error, a rate limit, a cancellation);
- ``valid_rate``: ok / calls;
- ``latency_p50_ms`` and ``latency_p95_ms`` over the calls actually sent (a cache hit, which
  sends nothing, is left out), nearest-rank percentiles computed here from the stored latencies;
- ``prompt_tokens`` and ``completion_tokens``: sums over the calls that reported them, with
  ``tokens_unknown`` counting the calls that did not;
- ``cost_usd``: the sum, or None (unknown) as soon as one call's cost is unknown — never $0 for
  unknown; ``cost_known_usd`` is the sum of the known part and ``cost_unknown_calls`` says how
  many calls are missing from it;
- ``flags``: the reply quality flags (:mod:`.quality`) of its calls, and its voters' rubber stamps;
- ``concurrency``: its adaptive concurrency limit (SPEC §10, :mod:`.limit_history`): the 429s its
  deployments answered (``refusals``), the cuts and steps up, the lowest limit, and per deployment
  its ``ceiling`` (max_concurrency), ``final`` and ``lowest`` limits; empty when it never ran a call.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field

from workbench.core.project import _sql, limit_history, quality
from workbench.core.project.store import Store

_ROWS = ("SELECT coalesce(provider, '?') AS provider, coalesce(model, '?') AS model, status, cached, latency_ms, "
         "prompt_tokens, completion_tokens, cost_usd, simulated FROM llm_calls {where} ORDER BY id")


@dataclass(frozen=True)
class ProviderStats:
    provider: str
    model: str
    calls: int = 0
    ok: int = 0
    invalid: int = 0
    failed: int = 0
    valid_rate: float | None = None
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_unknown: int = 0
    cost_usd: float | None = None  # None: unknown (at least one call's cost is unknown)
    cost_known_usd: float = 0.0
    cost_unknown_calls: int = 0
    simulated: bool = False
    flags: dict[str, int] = field(default_factory=dict)
    concurrency: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def percentile(values: list[float], pct: float) -> float | None:
    """The nearest-rank percentile (``pct`` in 0..100) of ``values``; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def provider_stats(store: Store, run_id: str | None = None) -> list[ProviderStats]:
    """One row per ``(provider, model)``, sorted by provider then model; of one run when given."""
    where, params = ("WHERE run_id = ?", (run_id,)) if run_id else ("", ())
    groups: dict[tuple[str, str], dict] = {}
    for r in _sql.query(store, _ROWS.format(where=where), params):
        g = groups.setdefault((r["provider"], r["model"]), {
            "calls": 0, "ok": 0, "invalid": 0, "failed": 0, "lat": [], "pt": 0, "ct": 0, "tu": 0,
            "cost": 0.0, "cu": 0, "sim": True})
        g["calls"] += 1
        status = r["status"]
        g["ok" if status == "ok" else "invalid" if status == "invalid" else "failed"] += 1
        if r["latency_ms"] is not None and not r["cached"]:
            g["lat"].append(float(r["latency_ms"]))
        if r["prompt_tokens"] is None and r["completion_tokens"] is None:
            g["tu"] += 1
        g["pt"] += r["prompt_tokens"] or 0
        g["ct"] += r["completion_tokens"] or 0
        if r["cost_usd"] is None:
            g["cu"] += 1
        else:
            g["cost"] += float(r["cost_usd"])
        g["sim"] = g["sim"] and bool(r["simulated"])
    flags = _flag_counts(store, run_id)
    limits = limit_history.provider_summary(store, run_id)
    out = []
    for (provider, model), g in sorted(groups.items()):
        out.append(ProviderStats(
            provider=provider, model=model, calls=g["calls"], ok=g["ok"], invalid=g["invalid"], failed=g["failed"],
            valid_rate=g["ok"] / g["calls"] if g["calls"] else None,
            latency_p50_ms=percentile(g["lat"], 50), latency_p95_ms=percentile(g["lat"], 95),
            prompt_tokens=g["pt"], completion_tokens=g["ct"], tokens_unknown=g["tu"],
            cost_usd=None if g["cu"] else round(g["cost"], 10), cost_known_usd=round(g["cost"], 10),
            cost_unknown_calls=g["cu"], simulated=g["sim"],
            flags={code: n for code in quality.FLAGS if (n := flags.get((provider, model), Counter())[code])},
            concurrency=limits.get(provider, {})))
    return out


def _flag_counts(store: Store, run_id: str | None) -> dict[tuple[str, str], Counter]:
    """``{(provider, model): Counter(flag -> calls, or voters for rubber stamps)}``."""
    runs = [run_id] if run_id else [r for (r,) in _sql.tuples(store, "SELECT id FROM runs ORDER BY id")]
    out: dict[tuple[str, str], Counter] = {}
    for rid in runs:
        q = quality.run_quality(store, rid)
        for call_id, flags in q.calls.items():
            _agent, provider, model = q.call_owner.get(call_id, (None, None, None))
            out.setdefault((provider or "?", model or "?"), Counter()).update(f.code for f in flags)
        for (_kind, voter), _flag in q.stamps.items():
            provider, model = q.voter_provider.get(voter, (None, None))
            out.setdefault((provider or "?", model or "?"), Counter())["rubber_stamp"] += 1
    return out
