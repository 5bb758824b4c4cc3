"""Classification variants: a run's stored replies classified again under other settings, with no
model call, kept beside the run (``classification_variants``); the run itself is never touched.

One writer for both places that make one: the Quadrant's "Save as new classification" (a what-if
over a round's stored votes: :func:`workbench.core.project.quadrant.save_variant`) and a study's
rule-only arm (the protocol's steps replayed over another arm's stored replies with the arm's
settings: ``services.runs.studies``). A row holds the settings, the resonance states of one round
(``states_json``) and, for a study's variant, the protocol's whole summary under those settings
(``summary_json``, from which the study's metrics are computed).
"""

from __future__ import annotations

from workbench.core.project import _sql
from workbench.core.project.changes import Changes
from workbench.core.project.store import Store, utc_now


def insert_variant(tx, run_id: str, *, label: str, settings: dict, states: list, round_no: int = 1,
                   summary: dict | None = None, created_at: str | None = None) -> int:
    """One variant row, inside the caller's transaction; returns its id."""
    return tx.insert("classification_variants", {
        "run_id": run_id, "round": int(round_no), "label": label, "settings_json": settings, "states_json": states,
        "summary_json": summary, "created_at": created_at or utc_now()})


def save_classification(store: Store, run_id: str, label: str, settings: dict,
                        states_by_round: dict[int, list[dict]], summary: dict | None = None) -> Changes:
    """Store a labelled classification of ``run_id`` (one row per round, the summary on the last)."""
    now = utc_now()
    last = max(states_by_round) if states_by_round else None
    with _sql.write(store) as tx:
        for round_no, states in sorted(states_by_round.items()):
            insert_variant(tx, run_id, label=label, settings=settings, states=states, round_no=round_no,
                           summary=summary if round_no == last else None, created_at=now)
    return tx.changes


def variant_summary(store: Store, variant_id: int) -> dict | None:
    row = _sql.get(store, "classification_variants", variant_id)
    return (row["summary_json"] or None) if row else None


__all__ = ["insert_variant", "save_classification", "variant_summary"]
