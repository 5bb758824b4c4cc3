"""What was scored against a known answer (SPEC §8), read back: a run's counts and final answers,
and an RCP run's accuracy per tier with the AUROC of its resonance score against correctness.

The writers score (``protocol_records``: ``artifacts.score``, ``answers.score``); this module only
reads and counts, with the definitions of :mod:`workbench.core.protocols.shared.truth` (accuracy
counts an unscorable text as not correct). The run summary's ``scored`` part, the Quadrant's
accuracy per tier and the reports all read from here.
"""

from __future__ import annotations

from collections.abc import Mapping

from workbench.core.project import _sql
from workbench.core.project.store import Store
from workbench.core.protocols.shared.truth import TierAccuracy, accuracy_by_tier, run_states, tally


def artifact_scores(store: Store, run_id: str) -> dict[str, tuple[str | None, str | None]]:
    """``{artifact key: (extracted, score)}`` of a run's artifacts."""
    return {key: (extracted, score) for key, extracted, score in _sql.tuples(
        store, "SELECT key, extracted, score FROM artifacts WHERE run_id = ? ORDER BY id", (run_id,))}


def answers(store: Store, run_id: str) -> list[dict]:
    """A run's final answers (``answers`` rows), in the order written."""
    return [{"key": r["key"], "agent": r["author_agent"], "text": r["text"], "extracted": r["extracted"],
             "score": r["score"], "detail": r["detail_json"] or {}}
            for r in _sql.rows(store, "answers", "run_id = ?", (run_id,), order_by="id")]


def run_scores(store: Store, run_id: str, truth: Mapping[str, str]) -> dict:
    """The run summary's ``scored`` part: the item, its answer, the artifacts' verdicts counted
    (with their accuracy) and each final answer's verdict."""
    arts = tally(s for _e, s in artifact_scores(store, run_id).values())
    return {"item": truth.get("item"), "answer": truth["answer"], "answer_type": truth["answer_type"],
            "artifacts": arts.to_json(),
            "answers": [{k: a[k] for k in ("key", "agent", "extracted", "score")} for a in answers(store, run_id)]}


def run_tier_accuracy(store: Store, run_id: str) -> TierAccuracy | None:
    """Accuracy per tier of a stored run whose summary classifies artifacts into tiers (RCP's), over
    all its rounds, and the AUROC of the resonance score; None when the run scored nothing."""
    run = _sql.get(store, "runs", run_id)
    if run is None:
        return None
    verdicts = {key: score for key, (_e, score) in artifact_scores(store, run_id).items()}
    return accuracy_by_tier(run_states(run["summary_json"] or {}), verdicts)


__all__ = ["answers", "artifact_scores", "run_scores", "run_tier_accuracy"]
