"""The ``vote`` control's step (SPEC §8): each agent answers alone. Its identity and its one step;
the declaration (:mod:`.declaration`) adds the rest."""

from __future__ import annotations

from workbench.core.protocols.shared.answers import ANSWER_FORMAT, PERSONA, QUERY
from workbench.core.protocols.shared.declaration import Protocol
from workbench.core.protocols.shared.templates import Step

STEPS = (
    Step("answer", "answer", "Each agent answers the question alone.", (QUERY, PERSONA, ANSWER_FORMAT), "answer.j2"),
)

IDENTITY = Protocol(
    name="vote", title="Majority vote (control)", version="1.0", package="workbench.core.protocols.vote",
    summary="Each agent answers alone; the run's answer is the plurality of their answers (ties to the agent "
            "that comes first): the control that explains most of what debate gains.",
    steps=STEPS,
)
