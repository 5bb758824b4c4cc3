"""The provider batches a run's phase was sent as (SPEC §10), kept with the phase's round.

No schema change: ``rounds.detail_json["batch"]["jobs"]`` lists the round's batches in the order
they were submitted, each::

    {"id": "batch_abc", "provider": "gpt", "input_file_id": "file-xyz", "submitted_at": ISO,
     "status": "in_progress", "counts": {"total": 72, "completed": 40, "failed": 0}, "ended_at": ISO|null,
     "lines": [{"key": "<call's step key>", "reask": 0, "fence": {"delimiter": ..., "fence_escapes": 0}}]}

A line's ``custom_id`` is its index in ``lines``; ``reask`` is the re-ask it carries (0: the call
itself); ``fence`` is the fence name its prompt was sent with, so the reply is recorded with the
request that was really sent even when a resumed run made the call afresh. The batch's id is
written the moment it is created, so a resume finds it (``rwb resume`` collects it).
"""

from __future__ import annotations

import json

from workbench.core.project import _sql
from workbench.core.project.changes import Changes
from workbench.core.project.store import Store

_SET = "UPDATE rounds SET detail_json = json_set(detail_json, '$.batch', json(?)) WHERE id = ?"
_ROUNDS = ("SELECT id, idx, kind, json_extract(detail_json, '$.batch.jobs') AS jobs FROM rounds "
           "WHERE run_id = ? ORDER BY idx")
ENDED = ("completed", "expired", "failed", "cancelled")


def load(store: Store, round_id: int) -> list[dict]:
    """The round's batches, oldest first (empty when it sent none)."""
    row = _sql.get(store, "rounds", round_id)
    detail = (row or {}).get("detail_json") or {}
    jobs = (detail.get("batch") or {}).get("jobs") if isinstance(detail, dict) else None
    return [j for j in jobs if isinstance(j, dict)] if isinstance(jobs, list) else []


def save(store: Store, run_id: str, round_id: int, jobs: list[dict]) -> Changes:
    """Keep the round's batches (the whole list: a submission or a poll's new status)."""
    with _sql.write(store) as tx:
        tx.execute(_SET, (json.dumps({"jobs": jobs}, ensure_ascii=False), round_id), tables=("rounds",), run=run_id)
    return tx.changes


def open_jobs(store: Store, run_id: str) -> list[dict]:
    """The run's batches that have not ended, with their round's ``idx`` and ``phase``: what a
    waiting run waits for."""
    out = []
    for row in _sql.query(store, _ROUNDS, (run_id,)):
        jobs = json.loads(row["jobs"]) if isinstance(row["jobs"], str) else []
        for job in jobs if isinstance(jobs, list) else []:
            if isinstance(job, dict) and job.get("status") not in ENDED:
                out.append({**job, "round_idx": row["idx"], "phase": row["kind"]})
    return out
