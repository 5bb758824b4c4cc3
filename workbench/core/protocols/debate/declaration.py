"""Multi-agent debate, declared (SPEC §7, §8): Du et al.'s protocol, its settings (``rounds``), its
two steps and templates, its records (each round's answers are artifacts; the plurality of the
last round is the run's answer, scored by the project layer), validity, report and simulated
behaviour (skill and conformity, docs/simulated-panel.md)."""

from __future__ import annotations

from dataclasses import replace

from pydantic import Field, model_validator

from workbench.core.errors import InputError
from workbench.core.protocols.debate.run import DEFAULT_ROUNDS, MAX_ROUNDS, run_debate
from workbench.core.protocols.debate.steps import IDENTITY
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


class DebateRunOptions(AnswerPanel):
    """Debate's part of a run configuration: its panel (``agents`` or ``clusters``, at least two
    agents) and ``rounds``, the rounds after the first in which each agent reads the others."""

    rounds: int = Field(DEFAULT_ROUNDS, ge=1, le=MAX_ROUNDS)

    @model_validator(mode="after")
    def _peers(self):
        if sum(len(c.agents) for c in getattr(self, "clusters", ())) < 2:
            raise InputError("agents", "a debate needs at least two agents: each reads the others' answers")
        return self


def generator(cfg, prompts: Prompts):
    return run_debate(cfg.query, agents_of(cfg), answer_type_of(cfg), cfg.rounds, prompts)


def finish(cfg, run_id: str, result) -> Finished:
    found = result["final"]
    return Finished({"answer": found.to_json(), "debate_rounds": len(result["rounds"])},
                    (final_answer(found, result["answers"]),))


def report(view) -> list[str]:
    rounds = view.config.get("rounds", DEFAULT_ROUNDS)
    return report_lines(view, how=f"Multi-agent debate (Du et al. 2023): every agent answers alone, then for {rounds} "
                                  "round(s) each agent reads the answers the others gave in the round before and "
                                  "answers again. The run's answer is the plurality of the last round, a tie going "
                                  "to the agent that comes first in the config.")


PROTOCOL = replace(
    IDENTITY, config=DebateRunOptions, generator=generator, read=read, finish=finish,
    validity=ANSWER_VALIDITY, report=report, sim="workbench.core.sim.debate",
    metrics=ANSWER_METRICS,
)
