"""A study's report (SPEC §9): each arm's metrics with their intervals, each arm against the
baseline, the contaminated-against-clean separations, and the warnings. Pure: the stored results'
metric values in, the report's JSON out (numbers unrounded; an undefined one is null).

Definitions (docs/studies.md states them for readers):

- **Units.** An arm's runs are grouped into units: the items when the study has several, else the
  replicates. A unit's value is the mean of its runs' values (runs where the metric is undefined
  take no part). ``n`` counts the units with a value.
- **An arm's metric**: ``mean`` is the mean over its runs; ``ci95`` the percentile bootstrap of the
  mean over the units (2,000 resamples, ``default_rng(0)``: :func:`workbench.core.statistics.estimate`).
- **A comparison** of an arm with the baseline, per metric: a pair is one (item, replicate) where
  both have a value; ``diff`` the mean paired difference (arm − baseline), ``ci95`` the same
  bootstrap over the pairs, ``p`` the two-sided paired sign-flip test (exact up to 20 non-zero
  differences, else 100,000 resamples), ``p_holm`` Holm's correction over the study's comparisons of
  that metric, ``min_p`` the smallest p the test can reach, min(1, 2^(1−k)) for k non-zero differences.
- **A separation**, for each metric a protocol declares as one (ARM's drift), where arms are tagged
  ``contaminated`` true and false: the ROC AUC of the runs' values, contaminated against clean
  (Mann–Whitney's U over the product of the group sizes).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from workbench.core import statistics
from workbench.core.studies.guardrails import min_p_warnings

CONTAMINATED = "contaminated"  # the tag that splits arms for separations (SPEC §9)


@dataclass(frozen=True)
class Result:
    """One stored result of a study: an arm's run (or re-classification) for an item and replicate."""

    arm: str
    item: str
    replicate: int
    metrics: Mapping[str, float | None]


def metric_order() -> list[str]:
    """Every metric the registered protocols declare, in their order (a wrapper's after)."""
    from workbench.core import registry

    names: list[str] = []
    for protocol in sorted(registry.protocols().values(), key=lambda p: not p.runnable):
        for name in protocol.metrics.names if protocol.metrics is not None else ():
            if name not in names:
                names.append(name)
    return names


def separation_metrics(protocols: Iterable[str]) -> list[str]:
    from workbench.core import registry

    out: list[str] = []
    for name in protocols:
        declared = registry.protocols().get(name)
        for metric in declared.metrics.separations if declared is not None and declared.metrics is not None else ():
            if metric not in out:
                out.append(metric)
    return out


def _json_number(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _interval(ci: tuple[float, float]) -> list[float | None]:
    return [_json_number(ci[0]), _json_number(ci[1])]


class _Values:
    """Every result's value of every metric, as one array per arm and metric over the study's
    (item, replicate) pairs in a fixed order (NaN where a result is missing or undefined), so
    grouping into units and pairing arms are array operations on 50,000 results."""

    def __init__(self, arms: list[str], results: Iterable[Result]):
        import numpy as np

        results = [r for r in results if r.arm in arms]
        self.keys = sorted({(r.item, r.replicate) for r in results})
        index = {key: i for i, key in enumerate(self.keys)}
        self.items = np.array(_codes([item for item, _r in self.keys]), dtype=np.int64)
        self.runs = dict.fromkeys(arms, 0)
        self.by: dict[str, dict[str, object]] = {a: {} for a in arms}
        for r in results:
            self.runs[r.arm] += 1
            row = index[(r.item, r.replicate)]
            per = self.by[r.arm]
            for name, value in r.metrics.items():
                if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue
                column = per.get(name)
                if column is None:
                    column = per[name] = np.full(len(self.keys), np.nan)
                column[row] = value
        for per in self.by.values():
            for name in list(per):
                column = per[name]
                column[~np.isfinite(column)] = np.nan
                if np.isnan(column).all():
                    del per[name]

    def metrics(self, arm: str) -> dict:
        return self.by[arm]


def _codes(values: list[str]) -> list[int]:
    seen: dict[str, int] = {}
    return [seen.setdefault(v, len(seen)) for v in values]


def build_report(study_id: str, plan: Mapping, results: Iterable[Result], *, warnings: Iterable[str] = ()) -> dict:
    """The report JSON of SPEC §9 from the plan (``studies.plan_json``) and the stored results."""
    arms = [a["name"] for a in plan["arms"]]
    baseline = plan["baseline"]
    several_items = len(plan.get("items") or []) > 1
    values = _Values(arms, results)
    statistics.reserve(len(values.keys))  # the resampled tests' draws, made once for the largest
    order = metric_order()
    order += sorted({m for a in arms for m in values.metrics(a)} - set(order))
    report_arms = []
    for arm in arms:
        per = values.metrics(arm)
        report_arms.append({"name": arm, "runs": values.runs[arm],
                            "metrics": {name: _estimate(per[name], values, several_items)
                                        for name in order if name in per}})
    comparisons = _comparisons(arms, baseline, values, order)
    separations = _separations(plan, values)
    found = [*warnings, *(w["message"] for w in min_p_warnings(comparisons))]
    for c in comparisons:
        del c["nonzero"]
    return {"study_id": study_id, "arms": report_arms, "comparisons": comparisons, "separations": separations,
            "warnings": found}


def _estimate(column, values: _Values, several_items: bool) -> dict:
    """The mean over the arm's runs; the bootstrap over its units (items, else replicates)."""
    import numpy as np

    defined = ~np.isnan(column)
    if several_items:  # a unit's value is the mean of its runs; units in the items' order
        sums = np.bincount(values.items[defined], weights=column[defined])
        counts = np.bincount(values.items[defined])
        units = (sums[counts > 0] / counts[counts > 0]).tolist()
    else:  # one item: each run is its replicate's unit
        units = column[defined].tolist()
    est = statistics.estimate(units)
    mean = math.fsum(column[defined].tolist()) / int(defined.sum())
    return {"mean": _json_number(mean), "ci95": _interval(est.ci95), "n": est.n}


def _comparisons(arms: list[str], baseline: str, values: _Values, order: list[str]) -> list[dict]:
    import numpy as np

    out = []
    for name in order:
        base = values.metrics(baseline).get(name)
        if base is None:
            continue
        found = []
        for arm in arms:
            mine = values.metrics(arm).get(name)
            if arm == baseline or mine is None:
                continue
            both = ~np.isnan(mine) & ~np.isnan(base)
            if not both.any():
                continue
            p = statistics.paired(mine[both].tolist(), base[both].tolist())
            found.append({"arm": arm, "baseline": baseline, "metric": name, "diff": _json_number(p.diff),
                          "ci95": _interval(p.ci95), "p": p.p, "p_holm": None, "pairs": p.pairs, "min_p": p.min_p,
                          "nonzero": p.nonzero})
        for c, adjusted in zip(found, statistics.holm([c["p"] for c in found])):
            c["p_holm"] = adjusted
        out += found
    return out


def _separations(plan: Mapping, values: _Values) -> list[dict]:
    import numpy as np

    tagged = {a["name"]: a.get("tags", {}).get(CONTAMINATED) for a in plan["arms"]}
    positive = [a for a, t in tagged.items() if t is True]
    negative = [a for a, t in tagged.items() if t is False]
    if not positive or not negative:
        return []
    protocols = [a.get("protocol") for a in plan["arms"] if a["name"] in positive + negative]

    def runs_of(arms: list[str], metric: str) -> list[float]:
        columns = [values.metrics(a).get(metric) for a in arms]
        return [v for c in columns if c is not None for v in c[~np.isnan(c)].tolist()]

    out = []
    for metric in separation_metrics(p for p in dict.fromkeys(protocols) if p):
        pos, neg = runs_of(positive, metric), runs_of(negative, metric)
        auc = statistics.auc(pos, neg) if pos and neg else None
        out.append({"metric": metric, "positive_arms": positive, "negative_arms": negative,
                    "auc": _json_number(auc) if auc is not None else None})
    return out
