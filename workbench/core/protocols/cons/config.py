"""CONS run options (SPEC §3): the thresholds and rounds of a question, each default defined once.

The run configuration takes :class:`ConsOptions` as its CONS part; the engine's input model
(:class:`~.models.ConsQuestion`) and the run generator (:class:`~.run.ConsRunConfig`) take their
defaults and their ranges from here.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from workbench.core.errors import InputError
from workbench.core.limits import MAX_BALLOTS, MAX_NAME_CHARS, MAX_OPTIONS, MAX_ROUNDS
from workbench.core.protocols.shared.validation import NameCheck

DEFAULT_QUESTION_ID = "CONS-001"
DEFAULT_CONSENSUS_THRESHOLD = 0.8  # actualConsensus a verdict needs (consensusThreshold)
DEFAULT_COUNT_THRESHOLD = 0.8  # share of accepting voters that also suffices: 4 of 5
DEFAULT_MIN_VOTERS = 3  # fewer non-abstaining voters: INSUFFICIENT_EVIDENCE
DEFAULT_MAX_CHALLENGE_ROUNDS = 2  # then CONTESTED

Threshold = Annotated[float, Field(strict=True, gt=0, le=1)]
MinVoters = Annotated[int, Field(strict=True, ge=1, le=MAX_BALLOTS)]
Rounds = Annotated[int, Field(strict=True, ge=0, le=MAX_ROUNDS)]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_NAME_CHARS), NameCheck]


class ConsOptions(BaseModel):
    """A CONS run's question settings; the question itself is the run's ``query``."""

    model_config = ConfigDict(strict=True, extra="forbid")

    question_id: Name = DEFAULT_QUESTION_ID
    options: list[Name] = Field(min_length=1, max_length=MAX_OPTIONS, description="the options the agents vote on")
    consensus_threshold: Threshold = DEFAULT_CONSENSUS_THRESHOLD
    count_threshold: Threshold = DEFAULT_COUNT_THRESHOLD
    min_voters: MinVoters = DEFAULT_MIN_VOTERS
    max_challenge_rounds: Rounds = DEFAULT_MAX_CHALLENGE_ROUNDS

    @model_validator(mode="after")
    def _distinct_options(self) -> ConsOptions:
        first: dict[str, int] = {}
        for j, option in enumerate(self.options):
            if option in first:
                raise InputError(f"options[{j}]", f"duplicate option {option!r} (also options[{first[option]}])")
            first[option] = j
        return self
