"""Design guardrails (SPEC §9): settings that look like a change and are not, or that cannot be
read from a result. Each is a warning, never a refusal: it shows in ``rwb run``'s summary (for one
config), ``--estimate``, ``rwb study run`` and the report.

- **A threshold far from its face value.** With k voters a cluster's approval rate is a share
  j/k, so θ acts as the smallest such share at or above it (the protocol's ``thresholds``): θ =
  0.67 with three voters acts as 1, unanimity. Warned when they are more than
  :data:`EFFECTIVE_GAP` apart, giving both.
- **Two arms that cannot differ**: equal but for classification rules, and with the same effective
  thresholds everywhere (the protocol's ``signature``): every vote is classified alike.
- **Too few pairs for p < 0.05** (:func:`min_p_warnings`, from the report's comparisons): with k
  non-zero paired differences the sign-flip test cannot go below 2^(1−k).
- **One change that reaches more than one step's prompt** (a persona is the system prompt of
  generation and of voting): found by ``services.runs.studies`` from the prompts each step sends.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from workbench.core.studies.paths import without

if TYPE_CHECKING:
    from workbench.core.runs.config import RunConfig

EFFECTIVE_GAP = 0.05
MIN_P_LEVEL = 0.05


def _number(value: float) -> str:
    return f"{value:.4g}"


def _effective_word(value: float) -> str:
    return f"{_number(value)} (unanimity)" if value >= 1.0 else _number(value)


def threshold_warnings(cfg: RunConfig) -> list[str]:
    """A threshold of ``cfg`` whose effective value is more than 0.05 from its face value, with both."""
    from workbench.core import registry

    declared = registry.get(cfg.protocol).metrics
    if declared is None or declared.thresholds is None:
        return []
    grouped: dict[tuple[str, str, float], list[tuple[int, float]]] = {}
    for t in declared.thresholds(cfg):
        if abs(t.effective - t.value) > EFFECTIVE_GAP + 1e-12:
            grouped.setdefault((t.path, t.cluster, t.value), []).append((t.voters, t.effective))
    out = []
    for (path, cluster, value), far in grouped.items():
        acts = " and ".join(f"{_effective_word(e)} with {k} voter{'s' if k != 1 else ''}" for k, e in far)
        out.append(f"{path} = {_number(value)} of cluster {cluster!r} acts as {acts}: its effective threshold "
                   f"(the smallest share at or above it that the cluster's voters can give) is more than "
                   f"{EFFECTIVE_GAP} from {_number(value)}")
    return out


def cannot_differ(configs: Iterable[tuple[str, RunConfig]]) -> list[tuple[str, str]]:
    """Pairs of arms (by name) that differ only in classification rules whose effective values are
    equal everywhere: their results are the same on any votes."""
    from workbench.core import registry

    keyed: list[tuple[str, object, object]] = []
    for name, cfg in configs:
        declared = registry.get(cfg.protocol).metrics
        if declared is None or declared.signature is None:
            continue
        signature = declared.signature(cfg)
        if signature is None:
            continue
        rest = without(cfg.model_dump(mode="json", by_alias=True), declared.rules)
        keyed.append((name, rest, signature))
    pairs = []
    for i, (a, rest_a, sig_a) in enumerate(keyed):
        for b, rest_b, sig_b in keyed[i + 1:]:
            if rest_a == rest_b and sig_a == sig_b:
                pairs.append((a, b))
    return pairs


def min_p_warnings(comparisons: Iterable[dict]) -> list[dict]:
    """Per arm, the comparisons whose test cannot reach p < 0.05 (min_p ≥ 0.05), naming the
    metrics: those with too few non-zero paired differences, and those equal on every pair."""
    by_arm: dict[tuple[str, str], list[dict]] = {}
    for c in comparisons:
        if c.get("min_p") is not None and c["min_p"] >= MIN_P_LEVEL:
            by_arm.setdefault((c["arm"], c["baseline"]), []).append(c)
    out = []
    for (arm, baseline), found in by_arm.items():
        few = [c for c in found if c["nonzero"]]
        same = [c["metric"] for c in found if not c["nonzero"]]
        if few:
            nonzero = sorted({c["nonzero"] for c in few})
            fewest = min(c["min_p"] for c in few)
            out.append({"kind": "min_p", "arm": arm, "metrics": [c["metric"] for c in few], "min_p": fewest,
                        "message": f"arm {arm!r} against {baseline!r}: with {_pairs_text(nonzero)} non-zero paired "
                                   f"difference(s) the sign-flip test cannot go below p = {fewest:.4g}, so no p < "
                                   f"{MIN_P_LEVEL} is possible for {', '.join(c['metric'] for c in few)}; "
                                   "add replicates or items"})
        if same:
            out.append({"kind": "min_p", "arm": arm, "metrics": same, "min_p": 1.0,
                        "message": f"arm {arm!r} equals {baseline!r} on every pair for {', '.join(same)} (min_p 1: "
                                   "no difference to test)"})
    return out


def _pairs_text(counts: list[int]) -> str:
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
