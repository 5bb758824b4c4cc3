"""The outcome metric of a protocol that answers a question (SPEC §9: the controls ``single`` and
``vote``, and ``debate``): ``accuracy``, the share of the run's final answers scored correct against
the item's known answer (an unscorable answer counts as not correct, as in :mod:`.truth`). A run
gives one final answer, so its value is 1 or 0 and an arm's mean is the share of its runs answered
correctly; None for a run whose item has no known answer. RCP's ``accuracy`` (over its artifacts)
has the same name, so a study compares it across protocols."""

from __future__ import annotations

from workbench.core.protocols.shared.declaration import Metrics, RunView

NAMES = ("accuracy",)


def compute(view: RunView) -> dict[str, float | None]:
    answers = [a for a in view.records("answer") if a.get("score") is not None]
    return {"accuracy": sum(a["score"] == "correct" for a in answers) / len(answers) if answers else None}


ANSWER_METRICS = Metrics(names=NAMES, compute=compute, shares=frozenset(NAMES))
