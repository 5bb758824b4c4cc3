"""Ground truth in results (SPEC §8): texts scored against a known answer, counted. Pure: the
verdicts come in (the project layer scored them when it stored each text), counts go out, for the
run summary, the reports, the Quadrant and the exports alike.

- **accuracy** is the share of scored texts that are ``correct``: an ``unscorable`` one (no answer
  could be read from it) counts against it, as a wrong answer would.
- **AUROC** of the resonance score against correctness: the probability that a correct artifact has
  a higher score than one that is not (incorrect or unscorable), ties counting half; Mann–Whitney's
  U over the product of the group sizes (``core.statistics.auc``, scipy, SPEC §9). Artifacts with no
  score (unclassified: no vote was cast) take no part; None when either group is empty.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from workbench.core import report_md as md

VERDICTS = ("correct", "incorrect", "unscorable")
TIER_ORDER = ("positive_consensus", "positive_polar", "negative_polar", "negative_consensus", "unclassified")


@dataclass(frozen=True)
class Tally:
    """How many scored texts got each verdict."""

    correct: int = 0
    incorrect: int = 0
    unscorable: int = 0

    @property
    def scored(self) -> int:
        return self.correct + self.incorrect + self.unscorable

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.scored if self.scored else None

    def to_json(self) -> dict:
        return {"correct": self.correct, "incorrect": self.incorrect, "unscorable": self.unscorable,
                "accuracy": self.accuracy}


def tally(verdicts: Iterable[str | None]) -> Tally:
    counts = dict.fromkeys(VERDICTS, 0)
    for v in verdicts:
        if v in counts:
            counts[v] += 1
    return Tally(**counts)


@dataclass(frozen=True)
class TierAccuracy:
    by_tier: dict[str, Tally]  # tier -> its artifacts' verdicts (tiers in SPEC §1 order, those present)
    overall: Tally
    auroc: float | None  # the resonance score against correctness
    auroc_n: tuple[int, int]  # (correct, not correct) artifacts with a score

    def to_json(self) -> dict:
        return {"by_tier": {t: v.to_json() for t, v in self.by_tier.items()}, "overall": self.overall.to_json(),
                "auroc": self.auroc, "auroc_n": list(self.auroc_n)}


def accuracy_by_tier(states: Iterable[Mapping], verdicts: Mapping[str, str | None]) -> TierAccuracy | None:
    """Accuracy per tier from resonance states (``artifact``, ``tier``, ``score``: a run summary's
    ``rounds[].states[]``) and each artifact's verdict by key. None when no artifact of the states
    was scored (the run has no known answer)."""
    from workbench.core.statistics import auc

    per: dict[str, list[str]] = {}
    correct, other = [], []
    for s in states:
        verdict = verdicts.get(s.get("artifact"))
        if verdict is None:
            continue
        per.setdefault(s.get("tier") or "unclassified", []).append(verdict)
        value = s.get("score")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            (correct if verdict == "correct" else other).append(float(value))
    if not per:
        return None
    order = [*TIER_ORDER, *sorted(set(per) - set(TIER_ORDER))]
    area = auc(correct, other) if correct and other else None
    return TierAccuracy({t: tally(per[t]) for t in order if t in per}, tally(v for vs in per.values() for v in vs),
                        area, (len(correct), len(other)))


def run_states(summary: Mapping) -> list[dict]:
    """Every resonance state of a run summary (each round's), in order."""
    return [s for rnd in summary.get("rounds") or [] if isinstance(rnd, dict)
            for s in rnd.get("states") or [] if isinstance(s, dict)]


def batch_scored(summaries: Iterable[Mapping]) -> dict | None:
    """What a batch's runs scored, added up (the batch summary's ``scored``): the runs' final
    answers and their artifacts, with their accuracy; None when no run scored anything."""
    parts = [s["scored"] for s in summaries if isinstance(s.get("scored"), Mapping)]
    if not parts:
        return None
    finals = tally(a.get("score") for p in parts for a in p.get("answers") or [] if isinstance(a, Mapping))
    arts = Tally(*(sum(int((p.get("artifacts") or {}).get(v) or 0) for p in parts) for v in VERDICTS))
    return {"runs": len(parts), **({"answers": finals.to_json()} if finals.scored else {}), "artifacts": arts.to_json()}


def accuracy_text(t: Tally) -> str:
    """``4 of 6 correct (67%)``, with the unscorable ones named."""
    if not t.scored:
        return "nothing scored"
    text = f"{t.correct} of {t.scored} correct ({md.pct(t.accuracy)})"
    return text + (f", {t.unscorable} unscorable" if t.unscorable else "")


def tier_lines(acc: TierAccuracy, labels: Mapping[str, str], answer: str | None) -> list[str]:
    """A report's section: accuracy per tier and the AUROC, against the item's known answer."""
    lines = ["## Against the known answer", ""]
    if answer is not None:
        lines += [f"The question has a known answer: **{md.text(answer)}**. Each artifact was scored *correct*, "
                  "*incorrect* or *unscorable* (no answer could be read from it: it counts as not correct).", ""]
    rows = [[md.text(labels.get(t, md.label(t))), str(v.scored), str(v.correct), str(v.incorrect), str(v.unscorable),
             md.pct(v.accuracy)] for t, v in acc.by_tier.items()]
    o = acc.overall
    rows.append(["**All**", str(o.scored), str(o.correct), str(o.incorrect), str(o.unscorable), md.pct(o.accuracy)])
    lines += md.table(["Tier", "Artifacts", "Correct", "Incorrect", "Unscorable", "Accuracy"], rows)
    pos, neg = acc.auroc_n
    if acc.auroc is None:
        lines += ["", f"- **AUROC of the resonance score against correctness**: not defined ({pos} correct and "
                      f"{neg} other artifacts with a score: it needs both)."]
    else:
        lines += ["", f"- **AUROC of the resonance score against correctness**: {md.num(acc.auroc)} over {pos} correct "
                      f"and {neg} other artifacts (0.5: the score says nothing about correctness; 1: every correct "
                      "artifact scores above every other)."]
    return lines + [""]


__all__ = ["TIER_ORDER", "Tally", "TierAccuracy", "VERDICTS", "accuracy_by_tier", "accuracy_text", "batch_scored",
           "run_states",
           "tally", "tier_lines"]
