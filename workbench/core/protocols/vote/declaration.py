"""The ``vote`` control, declared (SPEC §7, §8): each agent answers alone and the run's answer is
the plurality of theirs, scored by the project layer against the item's known answer."""

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
from workbench.core.protocols.vote.run import run_vote
from workbench.core.protocols.vote.steps import IDENTITY


class VoteRunOptions(AnswerPanel):
    """``vote``'s part of a run configuration: only its panel (``agents`` or ``clusters``, whose
    order breaks ties)."""


def generator(cfg, prompts: Prompts):
    return run_vote(cfg.query, agents_of(cfg), answer_type_of(cfg), prompts)


def finish(cfg, run_id: str, result) -> Finished:
    found = result["final"]
    return Finished({"answer": found.to_json()}, (final_answer(found, result["answers"]),))


def report(view) -> list[str]:
    return report_lines(view, how="Each agent answers the question alone; the run's answer is the plurality of their "
                                  "answers, compared as the scorer reads them (an answer nothing could be read from "
                                  "takes no part), a tie going to the agent that comes first in the config.")


PROTOCOL = replace(
    IDENTITY, config=VoteRunOptions, generator=generator, read=read, finish=finish,
    validity=ANSWER_VALIDITY, report=report, sim="workbench.core.sim.vote",
    metrics=ANSWER_METRICS,
)
