"""ARM traces into a project and back out: import, export, and the column mapping between them.

An imported file becomes one run (protocol ``arm``, source ``import``) with a round per ARM
round and a ``traces`` row per agent trace. Every trace field has its own column (queries and
the Trace Inspector read those); a value whose type does not fit its column, and every field
the schema does not name, is kept verbatim in ``extra_json``. The run keeps its provenance
(source file, sha256, schema generation, the file's own run-level JSON) and the SPEC §4
metrics report, recomputed next to the stored values.

Export rebuilds ARM's JSON from the rows. The mapping between a trace's fields and its columns,
and its source stored once, live in :mod:`.trace_columns`.
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
from workbench.core.project.trace_columns import (
    store_source_once,
    trace_columns,
    trace_from_columns,
    trace_source,
)
from workbench.core.protocols.arm import metrics_report, parse_run, parse_trace, trace_to_upstream

ROUND_KINDS = {1: "isolation", 2: "deliberation"}


@dataclass(frozen=True)
class ImportResult:
    path: str
    run_id: str
    schema_version: str
    traces: int
    already_imported: bool = False


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
