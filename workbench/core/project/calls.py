"""Model calls (``llm_calls``): what a resumed run reuses, a run's call counts, and the call
lists the panels page through.

Lists are read as plain tuples in windows (``LIMIT``/``OFFSET``): a list of 200,000 calls costs
one window of rows, never 200,000 objects.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from workbench.core.project import _sql
from workbench.core.project.store import Store


@dataclass(frozen=True)
class StoredReply:
    """A recorded reply a resumed (or replayed) run answers from instead of calling again."""

    step_key: str
    text: str | None
    meta: dict[str, Any]


@dataclass(frozen=True)
class CallCounts:
    calls: int = 0
    failed: int = 0  # error, rate-limited or cancelled
    invalid: int = 0  # answered, but the reply could not be read


def completed_replies(store: Store, run_id: str) -> list[StoredReply]:
    """The run's answered calls (``ok`` or ``invalid``) in the order they were recorded; not the
    replies a re-ask superseded (kept for the auditor, never read again by the protocol)."""
    out = []
    for row in _sql.rows(store, "llm_calls", "run_id = ? AND status IN ('ok', 'invalid') "
                                             "AND purpose NOT LIKE '%/superseded'", (run_id,),
                         order_by="id"):
        meta = (row["response_json"] or {}).get("reply_meta") or {"provider": row["provider"], "model": row["model"]}
        out.append(StoredReply(row["step_key"], row["reply_text"], meta))
    return out


_COUNTS = ("SELECT run_id, count(*), coalesce(sum(status NOT IN ('ok', 'invalid')), 0), "
           "coalesce(sum(status = 'invalid'), 0) FROM llm_calls WHERE run_id IN ({ids}) GROUP BY run_id")


def counts_by_run(store: Store, run_ids: Iterable[str]) -> dict[str, CallCounts]:
    """Call counts of these runs (one indexed query; runs without calls are absent)."""
    ids = list(dict.fromkeys(run_ids))
    out: dict[str, CallCounts] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        for run_id, calls, failed, invalid in _sql.tuples(store, _COUNTS.format(ids=", ".join("?" * len(chunk))), chunk):
            out[run_id] = CallCounts(calls, failed, invalid)
    return out


def counts(store: Store, run_id: str) -> CallCounts:
    return counts_by_run(store, [run_id]).get(run_id, CallCounts())


def commonest_error(store: Store, run_id: str) -> str:
    """The error most of the run's failed calls ended with, and how many ended so."""
    rows = _sql.tuples(store, "SELECT coalesce(error, error_kind, status), count(*) AS n FROM llm_calls "
                              "WHERE run_id = ? AND status NOT IN ('ok', 'invalid') "
                              "GROUP BY 1 ORDER BY n DESC, 1 LIMIT 1", (run_id,))
    if not rows:
        return "no error recorded"
    error, n = rows[0]
    return f"{n} × {error}" if n > 1 else str(error)


# ----- one run's call log (the Live Run panel) ----------------------------------------------------
@dataclass(frozen=True)
class LoggedCall:
    id: int
    step_key: str
    agent_id: str | None
    purpose: str
    status: str
    latency_ms: float | None
    attempts: int
    simulated: bool
    round_idx: int | None
    round_kind: str | None
    reason: str | None  # why an invalid or failed call is grey
    tokens: int | None = None  # total, or prompt + completion; None when the provider reported none
    cost_usd: float | None = None  # None: unknown (never $0)
    cost_source: str | None = None
    model: str | None = None  # "manual" for a person
    n: int | None = None  # the call's number in its run, from 1 (ids count across the project)


_RUN_LOG = """
SELECT c.id, c.step_key, c.agent_id, c.purpose, c.status, c.latency_ms, c.attempts, c.simulated,
       r.idx, r.kind,
       CASE WHEN c.status != 'ok' THEN coalesce(c.error,  -- looked up for the few grey rows only
           (SELECT group_concat(v.reason, '; ') FROM votes v
            WHERE v.run_id = c.run_id AND v.call_id = c.id AND v.status != 'valid'),
           (SELECT b.invalid_reason FROM cons_ballots b WHERE b.call_id = c.id AND b.status != 'valid'),
           (SELECT f.invalid_reason FROM finding_votes f
            WHERE f.run_id = c.run_id AND f.call_id = c.id AND f.status != 'valid'),
           (SELECT t.failure_reason FROM traces t WHERE t.run_id = c.run_id AND t.call_id = c.id AND t.ok = 0),
           (SELECT group_concat(json_extract(p.data_json, '$.problem'), '; ') FROM protocol_records p
            WHERE p.call_id = c.id AND json_valid(p.data_json)),
           'the reply could not be read') END,
       coalesce(c.total_tokens, c.prompt_tokens + c.completion_tokens, c.prompt_tokens, c.completion_tokens),
       c.cost_usd, c.cost_source, c.model, row_number() OVER (ORDER BY c.id)
FROM llm_calls c LEFT JOIN rounds r ON r.id = c.round_id
WHERE c.run_id = ? ORDER BY c.id
"""


def run_log(store: Store, run_id: str) -> list[LoggedCall]:
    """Every call of one run, in order, with the reason behind each grey one."""
    return [LoggedCall(i, key, agent, purpose, status, latency, attempts, bool(sim), idx, kind, reason,
                       tokens, cost, source, model, n)
            for i, key, agent, purpose, status, latency, attempts, sim, idx, kind, reason, tokens, cost, source, model, n
            in _sql.tuples(store, _RUN_LOG, (run_id,))]


# ----- one call, whole (the Live Run panel's call detail; the runner's call events) ---------------
@dataclass(frozen=True)
class CallOutcome:
    """How a recorded call ended, as stored (its status may have become ``invalid`` when the
    protocol could not read the reply)."""

    id: int
    status: str
    latency_ms: float | None
    tokens: int | None
    cost_usd: float | None  # None: unknown, never $0
    cost_source: str | None
    attempts: int
    error: str | None
    model: str | None = None


_OUTCOME = ("SELECT id, status, latency_ms, coalesce(total_tokens, prompt_tokens + completion_tokens, prompt_tokens, "
            "completion_tokens), cost_usd, cost_source, attempts, error, model FROM llm_calls WHERE id = ?")


def call_outcome(store: Store, call_id: int) -> CallOutcome | None:
    found = _sql.tuples(store, _OUTCOME, (call_id,))
    return CallOutcome(*found[0]) if found else None


@dataclass(frozen=True)
class CallDetail:
    """Everything stored about one call: the exact request (its messages, and the fence its
    untrusted text was wrapped in), the reply, the provider's raw body, and what it cost."""

    id: int
    run_id: str
    step_key: str
    agent_id: str | None
    purpose: str
    provider: str | None
    model: str | None
    status: str
    round_kind: str | None
    request: dict[str, Any]
    messages: list[dict]
    fence: dict[str, Any] | None  # {"delimiter", "escapes"}, or None when nothing was fenced
    reply_text: str | None
    response_raw: str | None
    error: str | None
    error_kind: str | None
    reason: str | None  # why an answered call is invalid (from the protocol's own rows)
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    cost_usd: float | None
    cost_source: str | None
    latency_ms: float | None
    attempts: int
    cached: bool
    simulated: bool
    started_at: str | None
    finished_at: str | None


_DETAIL = """
SELECT c.*, r.kind AS round_kind,
       CASE WHEN c.status = 'invalid' THEN coalesce(
           (SELECT group_concat(v.reason, '; ') FROM votes v
            WHERE v.run_id = c.run_id AND v.call_id = c.id AND v.status != 'valid'),
           (SELECT b.invalid_reason FROM cons_ballots b WHERE b.call_id = c.id AND b.status != 'valid'),
           (SELECT f.invalid_reason FROM finding_votes f
            WHERE f.run_id = c.run_id AND f.call_id = c.id AND f.status != 'valid'),
           (SELECT t.failure_reason FROM traces t WHERE t.run_id = c.run_id AND t.call_id = c.id AND t.ok = 0),
           (SELECT group_concat(json_extract(p.data_json, '$.problem'), '; ') FROM protocol_records p
            WHERE p.call_id = c.id AND json_valid(p.data_json)),
           'the reply could not be read') END AS reason
FROM llm_calls c LEFT JOIN rounds r ON r.id = c.round_id WHERE c.id = ?
"""


def call_detail(store: Store, call_id: int) -> CallDetail | None:
    """One call as stored, whole (the request with its fence, the reply, the raw body)."""
    found = _sql.query(store, _DETAIL, (call_id,))
    if not found:
        return None
    r = found[0]
    request = r["request_json"] if isinstance(r["request_json"], dict) else {}
    messages = [m for m in request.get("messages") or [] if isinstance(m, dict)]
    fence = request.get("fence") if isinstance(request.get("fence"), dict) else None
    return CallDetail(
        id=r["id"], run_id=r["run_id"], step_key=r["step_key"], agent_id=r["agent_id"], purpose=r["purpose"],
        provider=r["provider"], model=r["model"], status=r["status"], round_kind=r["round_kind"],
        request=request, messages=messages, fence=fence, reply_text=r["reply_text"],
        response_raw=r["response_raw"], error=r["error"], error_kind=r["error_kind"], reason=r["reason"],
        prompt_tokens=r["prompt_tokens"], completion_tokens=r["completion_tokens"],
        total_tokens=r["total_tokens"], cost_usd=r["cost_usd"], cost_source=r["cost_source"],
        latency_ms=r["latency_ms"], attempts=r["attempts"], cached=bool(r["cached"]),
        simulated=bool(r["simulated"]), started_at=r["started_at"], finished_at=r["finished_at"])


# ----- every call in the project (the Trace Inspector's list) --------------------------------------
# Columns a list may sort by, to the SQL that sorts them (never user text in the SQL).
CALL_LIST_COLUMNS = {
    "id": "c.id", "run_id": "c.run_id", "agent_id": "c.agent_id", "purpose": "c.purpose",
    "status": "c.status", "provider": "c.provider", "model": "c.model", "latency_ms": "c.latency_ms",
    "total_tokens": "c.total_tokens", "simulated": "c.simulated", "started_at": "c.started_at",
}
_CALL_LIST = ("SELECT c.id, c.run_id, c.step_key, c.agent_id, c.purpose, c.status, c.provider, c.model, "
              "c.latency_ms, c.total_tokens, c.simulated, c.started_at, substr(c.reply_text, 1, 160) "
              "FROM llm_calls c {where} ORDER BY {order} LIMIT ? OFFSET ?")


def _call_filter(text: str) -> tuple[str, tuple]:
    text = text.strip()
    if not text:
        return "", ()
    like = "%" + _sql.escape_like(text) + "%"
    cols = ("c.run_id", "c.agent_id", "c.purpose", "c.status", "c.step_key", "c.model")
    return "WHERE " + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in cols), (like,) * len(cols)


def count_calls(store: Store, text: str = "") -> int:
    where, params = _call_filter(text)
    return _sql.tuples(store, f"SELECT count(*) FROM llm_calls c {where}", params)[0][0]


def call_window(store: Store, *, offset: int, limit: int, sort: str = "id", descending: bool = False,
                text: str = "") -> list[tuple]:
    """One window of the project's calls: (id, run_id, step_key, agent_id, purpose, status,
    provider, model, latency_ms, total_tokens, simulated, started_at, reply preview)."""
    column = CALL_LIST_COLUMNS.get(sort, "c.id")
    order = f"{column} {'DESC' if descending else 'ASC'}" + (", c.id" if column != "c.id" else "")
    where, params = _call_filter(text)
    return _sql.tuples(store, _CALL_LIST.format(where=where, order=order), (*params, limit, offset))
