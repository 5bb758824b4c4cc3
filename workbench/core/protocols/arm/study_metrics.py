"""ARM's outcome metrics for studies (SPEC §9), from a run's recomputed metrics (its summary's
``arm`` part, FORMAT.md's rules): each agent's confidence drift (``delta``: CR2 − CR1 for alpha and
beta, against the silent baseline for gamma, SPEC §4), the round-1 convergence (Jaccard, the value
ARM stores as ``convergence``), and whether the polarity gate fired (1 or 0: an arm's mean is the
share of its runs). Arms tagged contaminated or clean are told apart by each drift's ROC AUC
(``separations``). (``metrics.py`` is ARM's own trace metrics, FORMAT.md's.)"""

from __future__ import annotations

import math

from workbench.core.protocols.shared.declaration import Metrics, RunView

DRIFTS = ("drift_alpha", "drift_beta", "drift_gamma")
NAMES = (*DRIFTS, "convergence_r1", "gate_fired_share")


def _value(value: object) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def compute(view: RunView) -> dict[str, float | None]:
    arm = view.summary.get("arm")
    if not isinstance(arm, dict):
        return dict.fromkeys(NAMES)
    agents = arm.get("agents") or {}
    out = {f"drift_{role}": _value((agents.get(role) or {}).get("delta")) for role in ("alpha", "beta", "gamma")}
    out["convergence_r1"] = _value(arm.get("jaccard_convergence"))
    gate = arm.get("polarity_gate")
    out["gate_fired_share"] = float(bool(gate.get("fired"))) if isinstance(gate, dict) else None
    return out


METRICS = Metrics(names=NAMES, compute=compute, shares=frozenset({"gate_fired_share"}), separations=DRIFTS)
