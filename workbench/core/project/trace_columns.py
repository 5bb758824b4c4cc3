"""An ARM trace and its ``traces`` row: the column each field has, the row a trace becomes, the
trace a row gives back, and its source stored once (schema step 13, SPEC §10).

Every trace field has its own column (queries and the Trace Inspector read those); a value whose
type does not fit its column, and every field the schema does not name, is kept verbatim in
``extra_json``, and ``key_order_json`` keeps the keys as written. The trace as read (or as a run
wrote it) is stored in ``source_json`` only where the columns cannot give it back byte for byte:
where they can, ``source_rebuilt`` is 1 and :func:`trace_source` rebuilds it. In the corpus, 117
of 119 traces rebuild exactly; the other two wrote a whole number (``0``) where the column keeps a
real (``0.0``), so their source is kept.

No import of the project store: schema step 13's migration (``schema.AFTER_STEP``) runs
:func:`store_sources_once` on the migrating connection.
"""

from __future__ import annotations

import json

from workbench.core.protocols.arm.fields import TRACE_FIELD_MAP

# Trace field -> (column, kind). kind: "text", "real", "bool" (INTEGER 0/1) or "json".
FIELD_COLUMNS: dict[str, tuple[str, str]] = {
    "claim": ("claim", "text"), "verdict": ("verdict", "text"), "confidence": ("confidence", "real"),
    "reasoning_frame": ("reasoning_frame", "text"), "decision_basis": ("decision_basis", "text"),
    "drift_note": ("drift_note", "text"), "disagreement_classification": ("disagreement_classification", "text"),
    "disagreement_notes": ("disagreement_notes", "text"), "reconciliation_status": ("reconciliation_status", "text"),
    "failure_reason": ("failure_reason", "text"), "raw_reasoning_attempt": ("raw_reasoning_attempt", "text"),
    "self_delta_vs_baseline": ("self_delta_vs_baseline", "real"),
    "harness_self_delta_vs_baseline": ("harness_self_delta_vs_baseline", "real"),
    "self_delta_mismatch": ("self_delta_mismatch", "bool"), "polarity_gate_fired": ("polarity_gate_fired", "bool"),
    **{name: (f"{name}_json", "json") for name in (
        "explicit_assumptions", "critical_path", "discarded_paths", "challenge_surface", "flags", "self_check",
        "influenced_by", "challenged", "drift_score", "agent_decision_bases", "values_in_conflict", "rlhf_audit",
        "schema_warnings", "polarity_audit", "verdict_shift")},
    "meta": ("meta_json", "json"),
}
_UPSTREAM_KEY = {name: key for key, name in TRACE_FIELD_MAP}


def _fits(value: object, kind: str) -> bool:
    if value is None or kind == "json":
        return True
    if kind == "text":
        return isinstance(value, str)
    if kind == "real":
        return isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool))
    return isinstance(value, bool)


def trace_columns(trace) -> dict:
    """The ``traces`` columns for a parsed ARM trace (no run, round or bookkeeping columns)."""
    row: dict = {"extra_json": dict(trace.extra)}
    for name, (column, kind) in FIELD_COLUMNS.items():
        value = getattr(trace, name)
        if _fits(value, kind):
            row[column] = int(value) if kind == "bool" and value is not None else value
        else:  # kept verbatim rather than coerced into a column of another type
            row[column] = None
            row["extra_json"][_UPSTREAM_KEY[name]] = value
    if trace.ok_flag is not None:
        row["extra_json"]["_ok"] = trace.ok_flag
    row.update({
        "ok": int(trace.ok), "delta_mismatch": _bool_or_none(trace.delta_mismatch),
        "override_reason": trace.override_reason if isinstance(trace.override_reason, str) else None,
        "provider": _str_or_none(trace.provider), "model": _str_or_none(trace.model),
        "stop_reason": _str_or_none(trace.stop_reason), "usage_json": trace.usage,
        "prompt_tokens": _int_or_none(trace.prompt_tokens), "completion_tokens": _int_or_none(trace.completion_tokens),
        "latency_ms": trace.latency_ms if _fits(trace.latency_ms, "real") else None,
        "key_order_json": trace.upstream_keys,
    })
    return row


def trace_from_columns(row: dict) -> dict:
    """Rebuild ARM's JSON for one trace from its columns alone (not from ``source_json``)."""
    extra = dict(row.get("extra_json") or {})
    order = row.get("key_order_json")
    data: dict = {}
    for name, (column, kind) in FIELD_COLUMNS.items():
        key = _UPSTREAM_KEY[name]
        value = row.get(column)
        if key in extra:
            value = extra.pop(key)
        elif kind == "bool" and value is not None:
            value = bool(value)
        if value is not None or (order is not None and key in order):
            data[key] = value
    data.update(extra)
    if order is not None:  # the keys as the trace wrote them
        data = {key: data[key] for key in order if key in data} | {k: v for k, v in data.items() if k not in order}
    return data


def trace_source(row: dict) -> object | None:
    """A stored trace as it was read or written: ``source_json``, or rebuilt from the columns where
    they give it back exactly (``source_rebuilt``); None for a trace that never had one."""
    if row.get("source_rebuilt"):
        return trace_from_columns(row)
    return row.get("source_json")


def _rebuilds_exactly(row: dict) -> bool:
    """Whether the columns of ``row`` (as stored, ``*_json`` decoded) give back its source_json,
    down to the text the project would store (``_sql.encode``)."""
    source = row.get("source_json")
    if source is None:
        return False
    return (json.dumps(trace_from_columns(row), ensure_ascii=False) == json.dumps(source, ensure_ascii=False))


def store_source_once(conn, trace_id: int) -> None:
    """Drop the stored copy of trace ``trace_id``'s source where its columns rebuild it exactly.
    ``conn`` is the writer's sqlite3 connection: the row is read back as stored (a whole number
    in a real column comes back a real), so the comparison is with what a reader will get."""
    cursor = conn.execute("SELECT * FROM traces WHERE id = ?", (trace_id,))
    names = [d[0] for d in cursor.description]
    values = cursor.fetchone()
    if values is not None and _rebuilds_exactly(_decoded(dict(zip(names, values, strict=True)))):
        conn.execute("UPDATE traces SET source_json = NULL, source_rebuilt = 1 WHERE id = ?", (trace_id,))


def store_sources_once(conn) -> int:
    """Schema step 13 on an existing project: every trace whose columns rebuild its source exactly
    loses the copy (in the step's transaction). Returns how many did."""
    ids = [i for (i,) in conn.execute("SELECT id FROM traces WHERE source_json IS NOT NULL AND source_rebuilt = 0")]
    for trace_id in ids:
        store_source_once(conn, trace_id)
    (dropped,) = conn.execute("SELECT count(*) FROM traces WHERE source_rebuilt = 1").fetchone()
    return dropped


def _decoded(row: dict) -> dict:
    """A row as the project's readers get it: ``*_json`` columns decoded (as ``_sql.decode``)."""
    return {k: (json.loads(v) if k.endswith("_json") and isinstance(v, str) else v) for k, v in row.items()}


def _bool_or_none(value: object) -> int | None:
    return int(value) if isinstance(value, bool) else None


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
