"""The ``single`` control's step (SPEC §8): one agent answers alone. Its identity and its one
step; the declaration (:mod:`.declaration`) adds the rest."""

from __future__ import annotations

from workbench.core.protocols.shared.answers import ANSWER_FORMAT, PERSONA, QUERY
from workbench.core.protocols.shared.declaration import Protocol
from workbench.core.protocols.shared.templates import Step

STEPS = (
    Step("answer", "answer", "The first agent answers the question alone.", (QUERY, PERSONA, ANSWER_FORMAT),
         "answer.j2"),
)

IDENTITY = Protocol(
    name="single", title="Single agent (control)", version="1.0", package="workbench.core.protocols.single",
    summary="One agent answers the question alone: the baseline every multi-agent protocol must beat.",
    steps=STEPS,
)
