"""Runs, their rounds and batches: the rows a run leaves in the project file.

The runner, ``rwb run|resume|runs`` and the Live Run panel all go through these functions;
none of them writes SQL. Every write returns the :class:`Changes` it made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workbench.core.project import _sql
from workbench.core.project.changes import Changes
from workbench.core.project.schema import RUN_STATUSES
from workbench.core.project.store import Store, utc_now

# The statuses a run can have (the schema's CHECK constraint holds the same list), and those of a
# run that is over with results that stand (a degraded run's are marked so, and a resume may still
# issue its failed calls again: docs/runs.md).
STATUSES = RUN_STATUSES
FINISHED = ("completed", "degraded")


@dataclass(frozen=True)
class Run:
    """One row of ``runs``, typed."""

    id: str
    protocol: str
    label: str
    status: str
    simulated: bool
    source: str
    seed: int | None
    dispatch: str | None
    batch_id: str | None
    replicate: int | None
    config_id: int | None
    config: dict[str, Any]
    summary: dict[str, Any]
    provenance: dict[str, Any]
    error: str | None
    owner: dict[str, Any] | None
    started_at: str
    finished_at: str | None
    study_id: str | None = None  # a study's run (schema step 11): its study, arm and item
    arm: str | None = None
    item: str | None = None

    @classmethod
    def from_row(cls, r: dict) -> Run:
        return cls(id=r["id"], protocol=r["protocol"], label=r["label"], status=r["status"],
                   simulated=bool(r["simulated"]), source=r["source"], seed=r["seed"], dispatch=r["dispatch"],
                   batch_id=r["batch_id"], replicate=r["replicate"], config_id=r["config_id"],
                   config=r["config_json"] or {}, summary=r["summary_json"] or {},
                   provenance=r["provenance_json"] or {}, error=r["error"], owner=r["owner_json"],
                   started_at=r["started_at"], finished_at=r["finished_at"], study_id=r.get("study_id"),
                   arm=r.get("arm"), item=r.get("item"))


# ----- reading -------------------------------------------------------------------------------
def get_run(store: Store, run_id: str) -> Run | None:
    row = _sql.get(store, "runs", run_id)
    return Run.from_row(row) if row else None


def list_runs(store: Store) -> list[Run]:
    """Every run, oldest first."""
    return [Run.from_row(r) for r in _sql.rows(store, "runs", order_by="started_at, id")]


@dataclass(frozen=True)
class RunListRow:
    """What a list of runs shows, and what every list or picker of runs names a run by (its label,
    protocol, status and start time: the GUI's ``run_title``). No configuration or summary is
    decoded for it. The call counts are the summary's for a run that has ended, None for one
    still going."""

    id: str
    protocol: str
    label: str
    status: str
    simulated: bool
    started_at: str
    error: str | None
    calls: int | None
    failed: int | None
    invalid: int | None
    batch_id: str | None = None
    replicate: int | None = None
    source: str = "run"  # run (made here), import (ARM traces read from a file)
    study_id: str | None = None  # a study's run: its study, arm and item (SPEC §9)
    arm: str | None = None
    item: str | None = None


_RUN_LIST = """
SELECT id, protocol, label, status, simulated, started_at, error,
       CASE WHEN status IN ('completed', 'degraded', 'failed') THEN json_extract(summary_json, '$.calls') END,
       CASE WHEN status IN ('completed', 'degraded', 'failed') THEN json_extract(summary_json, '$.failed_calls') END,
       CASE WHEN status IN ('completed', 'degraded', 'failed') THEN json_extract(summary_json, '$.invalid_calls') END,
       batch_id, replicate, source, study_id, arm, item
FROM runs {where} ORDER BY started_at DESC, rowid DESC LIMIT ?
"""
# The runs some lists are about, by name (never text from outside in the SQL).
_ONLY = {None: "", "echo": "WHERE id IN (SELECT run_id FROM echo_anchors WHERE run_id IS NOT NULL)"}


def run_list(store: Store, limit: int = 2000, *, protocol: str | None = None, only: str | None = None) -> list[RunListRow]:
    """The newest ``limit`` runs, newest first, light enough to re-read on every change: of one
    ``protocol``, or ``only`` those with Echo records ("echo"). Every list and picker of runs
    reads its runs here, so each names them alike."""
    where, params = _ONLY[only], []
    if protocol is not None:
        where = f"{where} {'AND' if where else 'WHERE'} protocol = ?"
        params.append(protocol)
    return [RunListRow(i, protocol_, label or "", status, bool(sim), started, error, calls, failed, invalid,
                       batch, replicate, source or "run", study, arm, item)
            for i, protocol_, label, status, sim, started, error, calls, failed, invalid, batch, replicate, source,
            study, arm, item in _sql.tuples(store, _RUN_LIST.format(where=where), (*params, limit))]


def batch_runs(store: Store, batch_id: str) -> list[Run]:
    """The runs of a batch, in the order they were made (the batch's own order)."""
    return [Run.from_row(r) for r in _sql.rows(store, "runs", "batch_id = ?", (batch_id,), order_by="rowid")]


def batch_config(store: Store, batch_id: str) -> dict | None:
    """The configuration a batch was started from, or None when there is no such batch."""
    row = _sql.get(store, "batches", batch_id)
    return row["config_json"] if row else None


# ----- writing -------------------------------------------------------------------------------
def create_run(store: Store, *, run_id: str, protocol: str, label: str, config: dict, seed: int | None,
               dispatch: str | None, simulated: bool, batch_id: str | None = None,
               replicate: int | None = None, source: str = "run", study: tuple[str, str, str] | None = None) -> Changes:
    """A new run, "interrupted" until a runner takes it (so a crash before that leaves it resumable).
    ``study``: the (study id, arm, item) a study's run belongs to."""
    study_id, arm, item = study or (None, None, None)
    _, changes = _sql.insert(store, "runs", {
        "id": run_id, "protocol": protocol, "label": label, "config_json": config, "batch_id": batch_id,
        "replicate": replicate, "seed": seed, "dispatch": dispatch, "status": "interrupted",
        "simulated": int(simulated), "source": source, "started_at": utc_now(), "owner_json": None,
        **({"study_id": study_id, "arm": arm, "item": item} if study else {})})
    return changes


def create_batch(store: Store, batch_id: str, name: str, config: dict) -> Changes:
    _, changes = _sql.insert(store, "batches", {"id": batch_id, "name": name, "config_json": config,
                                                "created_at": utc_now()})
    return changes


def claim_run(store: Store, run_id: str, owner: dict) -> Changes:
    """The calling process runs it now."""
    return _sql.update(store, "runs", run_id, {"status": "running", "owner_json": owner, "error": None})


def end_run(store: Store, run_id: str, status: str, *, error: str | None, summary: dict) -> Changes:
    """Record how a run ended; an interrupted run keeps no finish time (it will go on)."""
    return _sql.update(store, "runs", run_id, {
        "status": status, "error": error, "summary_json": summary,
        "finished_at": utc_now() if status != "interrupted" else None})


def set_provenance(store: Store, run_id: str, provenance: dict) -> Changes:
    return _sql.update(store, "runs", run_id, {"provenance_json": provenance})


def set_config_id(store: Store, run_id: str, config_id: int) -> Changes:
    """Which saved protocol configuration a run was started from (the GUI's runs)."""
    return _sql.update(store, "runs", run_id, {"config_id": config_id})


def mark_stale_runs(store: Store, alive: Callable[[dict | None], bool]) -> int:
    """Runs left "running" by a process that is gone become "interrupted" (resumable).

    ``alive(owner)`` tells whether the process named in a run's owner still runs."""
    stale = [r for r in _sql.rows(store, "runs", "status = 'running'") if not alive(r["owner_json"])]
    for r in stale:
        pid = (r["owner_json"] or {}).get("pid")
        _sql.update(store, "runs", r["id"], {
            "status": "interrupted", "error": f"the process running it stopped (pid {pid}); resume it to finish"})
    return len(stale)


# ----- rounds ----------------------------------------------------------------------------------
def ensure_round(store: Store, run_id: str, idx: int, kind: str) -> int:
    """The id of round ``idx`` of the run, made on first use."""
    existing = _sql.rows(store, "rounds", "run_id = ? AND idx = ?", (run_id, idx))
    if existing:
        return existing[0]["id"]
    return _sql.insert(store, "rounds", {"run_id": run_id, "idx": idx, "kind": kind or f"batch {idx}",
                                         "started_at": utc_now()})[0]


def complete_round(store: Store, round_id: int) -> Changes:
    return _sql.update(store, "rounds", round_id, {"status": "completed", "finished_at": utc_now()})
