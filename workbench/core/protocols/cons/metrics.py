"""CONS's outcome metrics for studies (SPEC §9): a run decides one question, so each share is the
run's 1 or 0 (its verdict, whether it escalated to a person), and an arm's mean over its runs is
the share of its questions. Its thresholds only classify the stored ballots, unless a different
verdict opens another challenge round (then the arm runs: SPEC §9 "rule-only arms")."""

from __future__ import annotations

from workbench.core.protocols.shared.declaration import Metrics, RunView

VERDICTS = {"proven_share": "PROVEN", "refuted_share": "REFUTED", "contested_share": "CONTESTED",
            "insufficient_share": "INSUFFICIENT_EVIDENCE"}
NAMES = (*VERDICTS, "escalated_share")
RULES = ("/consensus_threshold", "/count_threshold", "/min_voters")


def compute(view: RunView) -> dict[str, float | None]:
    outcome = view.summary.get("cons")
    if not isinstance(outcome, dict):
        return dict.fromkeys(NAMES)
    out: dict[str, float | None] = {name: float(outcome.get("verdict") == verdict) for name, verdict in VERDICTS.items()}
    out["escalated_share"] = float(bool(outcome.get("escalations")))
    return out


METRICS = Metrics(names=NAMES, compute=compute, shares=frozenset(NAMES), rules=RULES)
