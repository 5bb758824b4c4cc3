"""The history of each deployment's adaptive concurrency limit (SPEC §10), kept with its run.

No schema change: each round (a phase of the run) keeps, in ``rounds.detail_json``,

- ``concurrency``: the limit's events during that phase, in order, each
  ``{at, key, provider, deployment, limit, previous, ceiling, why, retry_after_s, pause_s}``:
  ``key`` names the deployment (``local[1]``) or the provider when it has none (``local``);
  ``why`` is ``start`` (the limit as the run found it), ``rate_limited`` (a 429 cut it; ``pause_s``
  is how long the deployment was paused) or ``grew`` (a step up after clean calls);
- ``refusals``: the 429s each deployment answered during that phase, ``{key: count}``.

:func:`series` is the query Live Run draws beside the calls (time on the calls' own UTC clock);
:func:`run_summary` and :func:`provider_summary` are what ``rwb run``'s summary and ``rwb providers
stats`` report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from workbench.core.project import _sql
from workbench.core.project.changes import Changes
from workbench.core.project.store import Store

_APPEND = ("UPDATE rounds SET detail_json = json_insert(CASE WHEN json_type(detail_json, '$.concurrency') = 'array' "
           "THEN detail_json ELSE json_set(detail_json, '$.concurrency', json('[]')) END, '$.concurrency[#]', json(?)) "
           "WHERE id = ?")
_ADD_REFUSALS = ("UPDATE rounds SET detail_json = json_set(detail_json, '$.refusals.' || json_quote(?), "
                 "coalesce(json_extract(detail_json, '$.refusals.' || json_quote(?)), 0) + ?) WHERE id = ?")
_ENSURE_REFUSALS = ("UPDATE rounds SET detail_json = json_set(detail_json, '$.refusals', json('{}')) "
                    "WHERE id = ? AND json_type(detail_json, '$.refusals') IS NOT 'object'")
_ROUNDS = ("SELECT idx, kind, json_extract(detail_json, '$.concurrency') AS events, "
           "json_extract(detail_json, '$.refusals') AS refusals, run_id FROM rounds {where} ORDER BY run_id, idx")


@dataclass(frozen=True)
class LimitPoint:
    """One change of one deployment's limit, for a chart: a step at ``at`` to ``limit``."""

    at: str  # ISO 8601 UTC, comparable with llm_calls.started_at
    round_idx: int
    phase: str
    key: str
    provider: str
    deployment: int | None
    limit: int
    previous: int | None
    ceiling: int
    why: str  # start | rate_limited | grew
    retry_after_s: float | None = None
    pause_s: float | None = None


def record(store: Store, run_id: str, round_id: int, events: list[dict], refusals: dict[str, int]) -> Changes:
    """Append ``events`` to the round's history and add ``refusals`` (429s by key), in one transaction."""
    if not events and not any(refusals.values()):
        return Changes()
    with _sql.write(store) as tx:
        for event in events:
            tx.execute(_APPEND, (json.dumps(event, ensure_ascii=False), round_id), tables=("rounds",), run=run_id)
        if any(refusals.values()):
            tx.execute(_ENSURE_REFUSALS, (round_id,), tables=("rounds",), run=run_id)
        for key, count in refusals.items():
            if count:
                tx.execute(_ADD_REFUSALS, (key, key, int(count), round_id), tables=("rounds",), run=run_id)
    return tx.changes


def series(store: Store, run_id: str) -> list[LimitPoint]:
    """Every limit change of the run, in time order: what Live Run draws beside its calls (a step
    chart per ``key``, each starting at its ``start`` point)."""
    points = []
    for row in _sql.query(store, _ROUNDS.format(where="WHERE run_id = ?"), (run_id,)):
        for e in _decoded(row["events"], list):
            points.append(LimitPoint(
                at=e.get("at") or "", round_idx=row["idx"], phase=row["kind"], key=str(e.get("key")),
                provider=str(e.get("provider")), deployment=e.get("deployment"), limit=int(e.get("limit") or 0),
                previous=e.get("previous"), ceiling=int(e.get("ceiling") or 0), why=str(e.get("why")),
                retry_after_s=e.get("retry_after_s"), pause_s=e.get("pause_s")))
    return sorted(points, key=lambda p: p.at)  # stable: a phase's own order is kept for equal stamps


def run_summary(store: Store, run_id: str | None = None) -> dict[str, dict]:
    """Per deployment key, over one run (or the whole project): ``ceiling``, ``final`` (the limit
    at the last change), ``lowest``, ``cuts``, ``grew`` and ``refusals`` (429s answered)."""
    where, params = ("WHERE run_id = ?", (run_id,)) if run_id else ("", ())
    out: dict[str, dict] = {}
    for row in _sql.query(store, _ROUNDS.format(where=where), params):
        for e in _decoded(row["events"], list):
            key = str(e.get("key"))
            s = out.setdefault(key, {"provider": e.get("provider"), "deployment": e.get("deployment"),
                                     "ceiling": 0, "final": None, "lowest": None, "cuts": 0, "grew": 0,
                                     "refusals": 0})
            limit = int(e.get("limit") or 0)
            s["ceiling"] = max(s["ceiling"], int(e.get("ceiling") or 0))
            s["final"] = limit
            s["lowest"] = limit if s["lowest"] is None else min(s["lowest"], limit)
            s["cuts"] += e.get("why") == "rate_limited"
            s["grew"] += e.get("why") == "grew"
        for key, count in _decoded(row["refusals"], dict).items():
            if key in out:
                out[key]["refusals"] += int(count or 0)
    return out


def provider_summary(store: Store, run_id: str | None = None) -> dict[str, dict]:
    """Per provider: its deployments' summaries (:func:`run_summary`) and their totals."""
    out: dict[str, dict] = {}
    for key, s in sorted(run_summary(store, run_id).items()):
        p = out.setdefault(str(s["provider"]), {"cuts": 0, "grew": 0, "refusals": 0, "lowest": None,
                                                "deployments": {}})
        p["cuts"] += s["cuts"]
        p["grew"] += s["grew"]
        p["refusals"] += s["refusals"]
        if s["lowest"] is not None:
            p["lowest"] = s["lowest"] if p["lowest"] is None else min(p["lowest"], s["lowest"])
        p["deployments"][key] = s
    return out


def _decoded(value, kind):
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return kind()
    return value if isinstance(value, kind) else kind()


# ----- what Live Run draws ---------------------------------------------------------------------
# Each call's answered request, on the wire from (finished_at - latency_ms) to finished_at: the
# requests really in flight, which the limit holds down (a call's queueing and its waits for a
# pause are not in it). Cached and simulated calls sent nothing.
_ANSWERED = ("SELECT finished_at, latency_ms FROM llm_calls WHERE run_id = ? AND finished_at IS NOT NULL "
             "AND latency_ms IS NOT NULL AND NOT coalesce(cached, 0) AND NOT coalesce(simulated, 0)")


@dataclass(frozen=True)
class LimitChart:
    """A run's limits as a chart draws them, in seconds since ``t0`` (the first limit event, when
    the run first asked for a slot): per deployment ``key`` its steps ``(s, limit)``, the cuts
    ``(s, limit after, key, pause_s)``, the highest ``ceiling``, the requests in flight as steps
    ``(s, n)``, and ``end_s``, where the last step ends (the last request's answer, or the last event)."""

    t0: str
    steps: dict[str, list[tuple[float, int]]]
    cuts: list[tuple[float, int, str, float | None]]
    grew: int
    ceiling: int
    in_flight: list[tuple[float, int]]
    end_s: float


def chart(store: Store, run_id: str) -> LimitChart | None:
    """The run's limit history for Live Run's chart; None when it has none (no model call yet, or
    only the simulated panel)."""
    points = series(store, run_id)
    if not points:
        return None
    t0 = _seconds(points[0].at)
    steps: dict[str, list[tuple[float, int]]] = {}
    cuts = []
    for p in points:
        at = round(_seconds(p.at) - t0, 3)
        steps.setdefault(p.key, []).append((at, p.limit))
        if p.why == "rate_limited":
            cuts.append((at, p.limit, p.key, p.pause_s))
    changes = []
    for finished, latency in _sql.tuples(store, _ANSWERED, (run_id,)):
        end = _seconds(finished) - t0
        changes += [(end - float(latency) / 1000.0, 1), (end, -1)]
    changes.sort()
    flight, n = [], 0
    for at, step in changes:  # a request ending and another starting at the same moment: the end first
        n += step
        flight.append((round(at, 3), n))
    last = max([s[-1][0] for s in steps.values()] + [flight[-1][0] if flight else 0.0])
    return LimitChart(points[0].at, steps, cuts, sum(p.why == "grew" for p in points),
                      max(p.ceiling for p in points), flight, last)


def _seconds(stamp: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(stamp).timestamp()  # Python 3.11 reads the Z
    except (ValueError, AttributeError):
        return 0.0
