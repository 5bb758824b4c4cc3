"""ARM traces into a project and back out: import, export, and the column mapping between them.

An imported file becomes one run (protocol ``arm``, source ``import``) with a round per ARM
round and a ``traces`` row per agent trace. Every trace field has its own column (queries and
the Trace Inspector read those); a value whose type does not fit its column, and every field
the schema does not name, is kept verbatim in ``extra_json``. The run keeps its provenance
(source file, sha256, schema generation, the file's own run-level JSON) and the SPEC §4
metrics report, recomputed next to the stored values.

Export rebuilds ARM's JSON from the rows. The trace as read (or as a run wrote it) is stored in
``source_json`` only where the columns cannot give it back byte for byte (SPEC §10: each text
once): where they can, ``source_rebuilt`` is 1 and :func:`trace_source` rebuilds it. In the
corpus, 117 of 119 traces rebuild exactly; the other two wrote a whole number (``0``) where the
column keeps a real (``0.0``), so their source is kept.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from workbench.core import limits
from workbench.core.errors import InputError
from workbench.core.limits import decode_json
from workbench.core.project import _sql
from workbench.core.project.store import Store, utc_now
from workbench.core.protocols.arm import metrics_report, parse_run, parse_trace, trace_to_upstream
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
ROUND_KINDS = {1: "isolation", 2: "deliberation"}


@dataclass(frozen=True)
class ImportResult:
    path: str
    run_id: str
    schema_version: str
    traces: int
    already_imported: bool = False


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
    if values is not None and _rebuilds_exactly(_sql.decode(dict(zip(names, values, strict=True)))):
        conn.execute("UPDATE traces SET source_json = NULL, source_rebuilt = 1 WHERE id = ?", (trace_id,))


def store_sources_once(conn) -> int:
    """Schema step 13 on an existing project: every trace whose columns rebuild its source exactly
    loses the copy (in the step's transaction). Returns how many did."""
    ids = [i for (i,) in conn.execute("SELECT id FROM traces WHERE source_json IS NOT NULL AND source_rebuilt = 0")]
    for trace_id in ids:
        store_source_once(conn, trace_id)
    (dropped,) = conn.execute("SELECT count(*) FROM traces WHERE source_rebuilt = 1").fetchone()
    return dropped


def import_arm_file(store: Store, path: Path | str) -> ImportResult:
    path = Path(path)
    raw = _read_trace_file(path)
    try:
        data = decode_json(raw.decode("utf-8"), path.name)  # within the depth and size limits
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(path.name, f"not an ARM trace: it is not valid JSON ({exc})") from None
    return import_arm_json(store, data, source=path.name, sha256=hashlib.sha256(raw).hexdigest())


def _read_trace_file(path: Path) -> bytes:
    """The file's bytes: a regular file (or a pipe) of at most ``limits.MAX_INPUT_BYTES``; else InputError."""
    import os
    import stat

    try:
        with path.open("rb") as fh:
            mode = os.fstat(fh.fileno()).st_mode
            if stat.S_ISDIR(mode):
                raise InputError(str(path), "is a folder, not a trace file")
            if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
                raise InputError(str(path), "is not a regular file (a socket or a device)")
            raw = fh.read(limits.MAX_INPUT_BYTES + 1)
    except FileNotFoundError:
        raise InputError(str(path), "no such file") from None
    except IsADirectoryError:
        raise InputError(str(path), "is a folder, not a trace file") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot be read: {exc.strerror or exc}") from None
    if len(raw) > limits.MAX_INPUT_BYTES:
        raise InputError(str(path), f"is too large (more than {limits.MAX_INPUT_BYTES:,} bytes, "
                                    "the most a command reads)")
    return raw


def import_arm_json(store: Store, data: object, *, source: str, sha256: str) -> ImportResult:
    if not isinstance(data, dict) or "r1" not in data:
        raise InputError(source, "not an ARM trace: expected a JSON object with 'r1' (and usually 'r2')")
    run = parse_run(data)
    run_id = f"arm-{sha256[:12]}"
    if (already := _already_imported(store, run_id, sha256, source, run.generation)) is not None:
        return already
    report = metrics_report(data)
    now = utc_now()
    upstream = {k: v for k, v in data.items() if k not in ("r1", "r2")}
    with _sql.write(store) as tx:
        # Checked again inside the write transaction: two imports of one file at once store it once.
        if (already := _already_imported(store, run_id, sha256, source, run.generation)) is not None:
            return already
        tx.insert("runs", {
            "id": run_id, "protocol": "arm", "label": Path(source).stem, "status": "completed", "source": "import",
            "config_json": {"question": run.question, "providers": run.providers},
            "provenance_json": {"source_file": source, "sha256": sha256, "schema_version": run.generation,
                                "arm_version": run.arm_version, "imported_at": now, "key_order": list(data),
                                "round_keys": {r: list(data.get(r) or {}) for r in ("r1", "r2")},
                                "upstream": upstream},
            "summary_json": report, "started_at": now, "finished_at": now,
        })
        count = 0
        for round_no in (1, 2):
            traces = data.get(f"r{round_no}")
            if not isinstance(traces, dict):
                continue
            round_id = tx.insert("rounds", {"run_id": run_id, "idx": round_no, "kind": ROUND_KINDS[round_no],
                                            "status": "completed", "started_at": now, "finished_at": now})
            for role, trace_json in traces.items():
                trace = parse_trace(trace_json, f"r{round_no}.{role}") if isinstance(trace_json, dict) else None
                columns = trace_columns(trace) if trace else {"ok": 0, "extra_json": {"_value": trace_json}}
                trace_id = tx.insert("traces", {"run_id": run_id, "round_id": round_id, "round_no": round_no,
                                                "role": role, "agent_id": role, "source_json": trace_json,
                                                "created_at": now, **columns})
                store_source_once(tx.conn, trace_id)
                count += 1
    return ImportResult(source, run_id, run.generation, count)


def _already_imported(store: Store, run_id: str, sha256: str, source: str, generation: str) -> ImportResult | None:
    """The earlier import of the same file (same sha256), or None. A run that holds this id for
    different content is never merged with it: the import is refused."""
    existing = _sql.get(store, "runs", run_id)
    if existing is None:
        return None
    stored = (existing["provenance_json"] or {}).get("sha256") if existing["source"] == "import" else None
    if stored != sha256:
        raise InputError(source, f"its run id {run_id} is already taken by another run in this project "
                                 "(different content); it was not imported")
    return ImportResult(source, run_id, generation, _sql.count(store, "traces", "run_id = ?", (run_id,)), True)


def export_arm_run(store: Store, run_id: str) -> dict:
    """ARM's JSON for a stored run: an imported file comes back with every field it had."""
    run = _sql.get(store, "runs", run_id)
    if run is None or run["protocol"] != "arm":
        raise InputError("run", f"no ARM run {run_id!r} in this project")
    provenance = run["provenance_json"]
    rounds: dict[str, dict] = {}
    for row in _sql.rows(store, "traces", "run_id = ? AND is_current = 1", (run_id,), order_by="round_no, id"):
        source = trace_source(row)
        trace = source if source is not None else trace_to_upstream(parse_trace(trace_from_columns(row)))
        rounds.setdefault(f"r{row['round_no']}", {})[row["role"]] = trace
    for key, roles in provenance.get("round_keys", {}).items():  # the roles in the file's order
        if key in rounds:
            rounds[key] = {role: rounds[key][role] for role in roles if role in rounds[key]}
    upstream = provenance.get("upstream", {})
    order = provenance.get("key_order") or ["r1", "r2", *upstream]
    return {key: (rounds[key] if key in ("r1", "r2") else upstream[key])
            for key in order if key in rounds or key in upstream}


def _bool_or_none(value: object) -> int | None:
    return int(value) if isinstance(value, bool) else None


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
