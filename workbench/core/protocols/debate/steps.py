"""Multi-agent debate's steps (Du et al. 2023; SPEC §8): every agent answers alone, then for
``rounds`` rounds reads the others' previous answers and answers again. Its identity and steps;
the declaration (:mod:`.declaration`) adds the rest."""

from __future__ import annotations

from workbench.core.protocols.shared.answers import ANSWER_FORMAT, PERSONA, QUERY
from workbench.core.protocols.shared.declaration import Protocol
from workbench.core.protocols.shared.templates import Step, Variable

STEPS = (
    Step("answer", "answer", "Round 1: each agent answers the question alone.", (QUERY, PERSONA, ANSWER_FORMAT),
         "answer.j2"),
    Step("debate", "answer", "Each later round: an agent reads the others' answers of the round before and answers "
                             "again.",
         (QUERY, PERSONA,
          Variable("peer_answers", "the other agents' answers of the round before, in the config's order, each fenced "
                                   "(an agent whose answer could not be read is left out)", untrusted=True,
                   example=["One answer: 42.", "Another answer: 41."]),
          Variable("own_answer", "this agent's own answer of the round before, fenced (empty when it could not be "
                                 "read); the default template leaves it out", untrusted=True,
                   example="My answer: 42."),
          ANSWER_FORMAT),
         "debate.j2"),
)

IDENTITY = Protocol(
    name="debate", title="Multi-agent debate", version="1.0", package="workbench.core.protocols.debate",
    summary="Du et al. (2023): every agent answers alone, then for a number of rounds reads the others' previous "
            "answers and answers again; the run's answer is the plurality of the last round.",
    steps=STEPS,
)
