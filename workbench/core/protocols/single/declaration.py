"""The ``single`` control, declared (SPEC §7, §8): one agent answers alone; its reply is the run's
answer, scored by the project layer against the item's known answer."""

from __future__ import annotations

from dataclasses import replace

from workbench.core.protocols.shared.answer_metrics import ANSWER_METRICS
from workbench.core.protocols.shared.answers import (
    ANSWER_VALIDITY,
    AnswerPanel,
    agents_of,
    answer_type_of,
    final_answer,
    read,
    report_lines,
)
from workbench.core.protocols.shared.declaration import Finished, Prompts
from workbench.core.protocols.single.run import run_single
from workbench.core.protocols.single.steps import IDENTITY


class SingleRunOptions(AnswerPanel):
    """``single``'s part of a run configuration: only its panel (``agents`` or ``clusters``); the
    first agent answers."""


def generator(cfg, prompts: Prompts):
    return run_single(cfg.query, agents_of(cfg)[0], answer_type_of(cfg), prompts)


def finish(cfg, run_id: str, result) -> Finished:
    found = result["final"]
    return Finished({"answer": found.to_json()}, (final_answer(found, result["answers"]),))


def report(view) -> list[str]:
    return report_lines(view, how="One agent (the first of the config) answers the question alone; its reply is "
                                  "the run's answer. It is the control a multi-agent protocol has to beat.")


PROTOCOL = replace(
    IDENTITY, config=SingleRunOptions, generator=generator, read=read, finish=finish,
    validity=ANSWER_VALIDITY, report=report, sim="workbench.core.sim.single",
    metrics=ANSWER_METRICS,
)
