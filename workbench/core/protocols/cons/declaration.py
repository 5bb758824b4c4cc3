"""CONS, declared (SPEC §7): ballots, verdicts, conflicts and escalation to a human. Its settings,
its steps and templates (the opening ballot, the challenge rounds, the conductor's decision), its
replies, its records, validity, summary, report and simulated behaviour, in the one object central
code reads."""

from __future__ import annotations

from dataclasses import replace

from workbench.core.protocols.cons.config import ConsOptions
from workbench.core.protocols.cons.metrics import METRICS
from workbench.core.protocols.cons.report import outcome_json, section
from workbench.core.protocols.cons.run import (
    BallotReply,
    ConsAgent,
    ConsRunConfig,
    ballot_reply_model,
    read,
    run_cons,
)
from workbench.core.protocols.cons.steps import IDENTITY
from workbench.core.protocols.shared.declaration import Finished, Prompts, Record, ValidityUnit
from workbench.core.protocols.shared.steps import AgentCall


class ConsRunOptions(ConsOptions):
    """CONS's part of a run configuration: :class:`ConsOptions` at the top level; the question is
    the run's ``query``."""


def generator(cfg, prompts: Prompts):
    return run_cons(ConsRunConfig(seed=cfg.seed, question_id=cfg.question_id, question=cfg.query,
                                  options=tuple(cfg.options), agents=tuple(ConsAgent(a.id, a.persona) for a in cfg.agents),
                                  consensus_threshold=cfg.consensus_threshold, count_threshold=cfg.count_threshold,
                                  min_voters=cfg.min_voters, max_challenge_rounds=cfg.max_challenge_rounds), prompts)


def reply_model(call: AgentCall):
    """A ballot's model, its ``option`` one of the call's options; the conductor's decision is free text."""
    if call.reply_schema != "cons_ballot":
        return None
    options = call.meta.get("options")
    return ballot_reply_model(tuple(options)) if options else BallotReply


def report(view) -> list[str]:
    """The run report's CONS section (:func:`.report.section`), the stored outcome evaluated again."""
    from workbench.core.protocols.cons.tally import evaluate

    return section(view, evaluate)


def prepare(cfg, run_id: str) -> tuple[Record, ...]:
    """The question, before the first call (its id is unique per run: ``question@run``)."""
    return (Record("cons_question", {"question": cfg.question_id, "text": cfg.query, "options": list(cfg.options),
                                     "consensus_threshold": cfg.consensus_threshold, "min_voters": cfg.min_voters,
                                     "max_challenge_rounds": cfg.max_challenge_rounds}),)


def finish(cfg, run_id: str, result) -> Finished:
    """The verdict, conflicts and escalations (with the conductor's decision, if one was given)."""
    data = outcome_json(result.outcome)
    return Finished({"cons": {**data, "humanDecision": result.human_decision}},
                    (Record("cons_outcome", {"question": cfg.question_id, "outcome": result.outcome, "data": data,
                                             "human_decision": result.human_decision}),))


PROTOCOL = replace(
    IDENTITY, config=ConsRunOptions, generator=generator, read=read, reply_model=reply_model, prepare=prepare,
    finish=finish, validity=ValidityUnit("cons_ballot", "ballots", step_kind="ballot"), report=report,
    metrics=METRICS, sim="workbench.core.sim.cons",
)
