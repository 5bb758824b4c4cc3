"""RCP's outcome metrics for studies (SPEC §9), its classification settings and its thresholds as
the votes can meet them. Pure: a stored run's summary and artifacts in, numbers out.

A run's metrics read its final round (the run's result; a refinement round's earlier rounds are
steps towards it): each tier's share of that round's artifacts, the mean resonance score of those
with a score, and the accelerators among them (n = 2 only, SPEC §1). With a known answer (SPEC §8):
``accuracy`` over the round's artifacts (an unscorable one counts as not correct, as in
``shared.truth``), ``accuracy_positive_consensus`` over its positive consensus artifacts, and
``score_auroc``, the AUROC of the resonance score against correctness.

The effective threshold (the guardrails' word): a cluster's votes are shares j/k of the k voters
who cast one, so θ acts as the smallest such share at or above it (SPEC §1's tolerance included).
θ = 0.67 with three voters acts as 1: unanimity.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from workbench.core.protocols.rcp.config import TOL, tier_for
from workbench.core.protocols.shared.declaration import Metrics, RunView, Threshold
from workbench.core.protocols.shared.tiers import TIERS, UNCLASSIFIED

CLASSES = (*TIERS, UNCLASSIFIED)  # every artifact of a round is in one of them
TIER_SHARES = tuple(f"{tier}_share" for tier in CLASSES)
NAMES = (*TIER_SHARES, "mean_score", "accelerators", "accuracy", "accuracy_positive_consensus", "score_auroc")
SHARES = frozenset((*TIER_SHARES, "accuracy", "accuracy_positive_consensus"))
# The settings that only classify stored votes (SPEC §9 "rule-only arms").
RULES = ("/theta", "/tau", "/weighted", "/reference", "/clusters/*/theta", "/clusters/*/weight")
MAX_SIGNATURE_CLUSTERS = 12  # 2^n approval sets are listed; above this, no "cannot differ" check


def final_states(summary: Mapping[str, Any]) -> list[dict]:
    rounds = [r for r in summary.get("rounds") or [] if isinstance(r, dict)]
    return [s for s in (rounds[-1].get("states") or []) if isinstance(s, dict)] if rounds else []


def compute(view: RunView) -> dict[str, float | None]:
    states = final_states(view.summary)
    m = len(states)
    out: dict[str, float | None] = {name: (sum(s.get("tier") == tier for s in states) / m if m else None)
                                    for name, tier in zip(TIER_SHARES, CLASSES)}
    scores = [float(s["score"]) for s in states if _number(s.get("score"))]
    out["mean_score"] = math.fsum(scores) / len(scores) if scores else None
    out["accelerators"] = float(sum(s.get("persuasion_kind") == "accelerator" for s in states)) if m else None
    out.update(_against_truth(view, states))
    return out


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _against_truth(view: RunView, states: list[dict]) -> dict[str, float | None]:
    from workbench.core.statistics import auc

    verdicts = {a["key"]: a.get("score") for a in view.records("artifact")}
    scored = [(s, verdicts.get(s.get("artifact"))) for s in states]
    scored = [(s, v) for s, v in scored if v is not None]
    if not scored:
        return {"accuracy": None, "accuracy_positive_consensus": None, "score_auroc": None}
    agreed = [v for s, v in scored if s.get("tier") == "positive_consensus"]
    right = [float(s["score"]) for s, v in scored if v == "correct" and _number(s.get("score"))]
    wrong = [float(s["score"]) for s, v in scored if v != "correct" and _number(s.get("score"))]
    return {"accuracy": sum(v == "correct" for _s, v in scored) / len(scored),
            "accuracy_positive_consensus": sum(v == "correct" for v in agreed) / len(agreed) if agreed else None,
            "score_auroc": auc(right, wrong) if right and wrong else None}


# ----- thresholds as votes meet them --------------------------------------------------------------

def effective(theta: float, voters: int) -> float:
    """The smallest share j/voters at or above ``theta`` (SPEC §1's tolerance): what θ acts as."""
    for j in range(voters + 1):
        if j / voters >= theta - TOL:
            return j / voters
    return 1.0


def _panel(cfg) -> list[tuple[str, str, float, float, int]]:
    """Each cluster: (name, where its θ is set, θ, weight, size)."""
    out = []
    for i, c in enumerate(cfg.clusters):
        where = f"clusters[{i}].theta" if c.theta is not None else "theta"
        out.append((c.name, where, c.theta if c.theta is not None else cfg.theta,
                    c.weight if c.weight is not None else 1.0, len(c.agents)))
    return out


def thresholds(cfg) -> Iterator[Threshold]:
    """θ of each cluster as a full cluster's votes meet it: k = its size on another cluster's
    artifact, k = its size − 1 on a member's own (the author never votes on it)."""
    for name, where, theta, _w, size in _panel(cfg):
        for voters in sorted({size, size - 1} - {0}, reverse=True):
            yield Threshold(where, name, theta, voters, effective(theta, voters))


def signature(cfg) -> tuple | None:
    """What decides every tier: each cluster's effective θ for every number of votes it may cast,
    and the tier of every approval set (τ, weights and the reference). Two configs with the same
    signature classify any votes alike. None for a panel too large to list its approval sets."""
    panel = _panel(cfg)
    n = len(panel)
    if n > MAX_SIGNATURE_CLUSTERS:
        return None
    names = [name for name, *_ in panel]
    ref = names.index(cfg.reference) if cfg.reference in names else 0
    weights = [w for *_, w, _s in panel] if cfg.weighted else [1.0] * n
    total = sum(weights)
    tiers = []
    for mask in range(1 << n):
        rho = sum(w for i, w in enumerate(weights) if mask >> i & 1) / total
        tiers.append(tier_for(rho, bool(mask >> ref & 1), cfg.tau))
    effective_thetas = tuple(tuple(effective(theta, k) for k in range(1, size + 1))
                             for _n, _w, theta, _wt, size in panel)
    return effective_thetas, ref, tuple(tiers)


METRICS = Metrics(names=NAMES, compute=compute, shares=SHARES, rules=RULES, thresholds=thresholds,
                  signature=signature)
