"""Batches of runs (questions × provider mixes × replicates): started in one go, resumed in one go.

A batch's runs are all created (each "interrupted", so resumable) before the first one runs, in
the batch's own order. A batch killed at any moment is resumed by its id: the runs it never got
to create are created, and every run not completed runs (or resumes) in order, so the finished
batch holds exactly the runs an uninterrupted one would.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from workbench.core.errors import WorkbenchError
from workbench.core.project import runs as run_rows
from workbench.core.project.store import Store, utc_now
from workbench.core.runs.batch import expand_batch


def new_batch_id() -> str:
    return f"batch-{utc_now()[:19].replace(':', '').replace('-', '')}-{os.urandom(2).hex()}"


def create_batch(store: Store, data: dict, runner) -> tuple[str, list[str]]:
    """Record the batch and create every run of it; returns the batch id and the run ids."""
    spec, planned = expand_batch(data)
    batch_id = new_batch_id()
    run_rows.create_batch(store, batch_id, spec.name, data)
    ids = [runner.create(r.config, label=r.label, batch_id=batch_id, replicate=r.replicate) for r in planned]
    return batch_id, ids


def complete_batch(store: Store, batch_id: str, runner) -> list[str]:
    """Create the runs a killed batch never got to, and return every run of the batch in order."""
    data = run_rows.batch_config(store, batch_id)
    if data is None:
        raise WorkbenchError(f"There is no run or batch {batch_id!r} in this project.")
    _, planned = expand_batch(data)
    made = run_rows.batch_runs(store, batch_id)
    for r in planned[len(made):]:  # runs are made in the batch's order: the missing ones are the tail
        runner.create(r.config, label=r.label, batch_id=batch_id, replicate=r.replicate)
    return [r.id for r in run_rows.batch_runs(store, batch_id)]


# A batch's summary adds up its runs' counts (SPEC §6), and its share missing is over them all.
BATCH_COUNTS = ("calls", "failed_calls", "invalid_calls", "votes_expected", "votes_cast", "votes_abstained",
                "votes_invalid", "votes_failed")


def batch_counts(summaries: list[dict]) -> dict:
    counts = {k: sum(s.get(k, 0) or 0 for s in summaries) for k in BATCH_COUNTS}
    missing = counts["votes_invalid"] + counts["votes_failed"]
    counts["missing_share"] = round(missing / counts["votes_expected"], 6) if counts["votes_expected"] else 0.0
    from workbench.core.protocols.shared.truth import batch_scored

    scored = batch_scored(summaries)  # SPEC §8: a batch over a dataset's items says how it did
    if scored is not None:
        counts["scored"] = scored
    return counts


def run_batch(store: Store, run_ids: list[str], execute: Callable[[str], dict],
              on_run: Callable[[str], None] = lambda _id: None) -> list[dict]:
    """Run each not-completed run in order; stop at a run left interrupted (cancelled,
    rate-limited, waiting for a person) or stopped at the batch's cap: the rest waits for the
    resume. A run stopped at its own cap (``run_budget``) does not stop the batch. Returns the summaries."""
    summaries = []
    for run_id in run_ids:
        run = run_rows.get_run(store, run_id)
        if run.status == "completed":  # a degraded run is resumed with the rest: its failed calls again
            summaries.append(run.summary)
            continue
        on_run(run_id)
        summary = execute(run_id)
        summaries.append(summary)
        if summary.get("status") == "interrupted" or stopped_by_batch_cap(summary):
            break
    return summaries


def stopped_by_batch_cap(summary: dict) -> bool:
    """The run stopped at the batch's own cap (not its run_budget): no later run of the batch starts."""
    return summary.get("status") == "stopped_at_cap" and (summary.get("budget") or {}).get("scope") == "batch"
