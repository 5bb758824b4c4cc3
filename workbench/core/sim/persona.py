"""A simulated agent's parameters (:class:`SimPersona`) and what sim returns (:class:`SimReply`).

Every parameter has a documented effect per protocol (docs/simulated-panel.md). Out-of-range
values are refused with an error that names the field; unknown parameters are refused too, so a
misspelt parameter in a project file is caught instead of silently ignored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from workbench.core.errors import InputError, WorkbenchError, from_pydantic
from workbench.core.protocols.echo.context import BEHAVIOURS
from workbench.core.protocols.shared.steps import AgentReply

SIM_MODEL = "sim"
UNIT_FIELDS = ("stance", "strictness", "sycophancy", "confidence", "drift", "verbosity", "flip_rate",
               "malformed_rate", "misreport_rate", "conformity")


class SimError(WorkbenchError):
    """sim cannot answer this call (a human's decision, an unknown purpose, a bad persona)."""


class SimPersona(BaseModel):
    """The knobs of one simulated agent. Every number in [0, 1] unless said otherwise."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stance: float = Field(0.5, description="0 firmly against the proposal .. 1 firmly for it")
    strictness: float = Field(0.5, description="how demanding a voter is: higher approves and confirms less")
    sycophancy: float = Field(0.2, description="pull towards peers and the majority shown; general agreeableness")
    confidence: float = Field(0.7, description="the base self-reported confidence")
    drift: float = Field(0.1, description="how far confidence moves under peer exposure (ARM round 2)")
    verbosity: float = Field(0.5, description="how long artifacts, rationales and replies are")
    context_budget: int = Field(8000, description="Echo: the context window in tokens (one token per word)")
    overflow: Literal["compaction", "hard_rejection", "silent_truncation"] = Field(
        "silent_truncation", description="Echo: what happens when the context window overflows")
    flip_rate: float = Field(0.05, description="ARM: chance that gamma reverses a firm verdict in round 2")
    contaminated: bool = Field(False, description="ARM: round 2 is swayed by peer content, not by reasons")
    malformed_rate: float = Field(0.0, description="chance that a structured reply is invalid (e.g. 'Maybe.')")
    misreport_rate: float = Field(0.1, description="ARM: chance of self-reporting a confidence delta off by 0.03-0.05")
    footers: bool = Field(False, description="Echo: stamp a resonance footer on replies while the marker is held")
    # SPEC §8, on a question with a known answer. Unset (None): RCP writes and votes as without one,
    # and the answer protocols (single, vote, debate) answer with DEFAULT_SKILL (sim/answers.py).
    skill: float | None = Field(None, description="the probability that its answer to a question with a known "
                                                  "answer is correct (a wrong one is the item's one distractor)")
    conformity: float = Field(0.0, description="debate: the probability of adopting the plurality of the peers' "
                                               "previous answers instead of answering afresh")

    @field_validator(*UNIT_FIELDS, mode="before")
    @classmethod
    def _unit(cls, value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"must be a number from 0 to 1, got {value!r}")
        number = float(value)
        if not math.isfinite(number) or not 0.0 <= number <= 1.0:
            raise ValueError(f"must be a number from 0 to 1, got {value!r}")
        return number

    @field_validator("skill", mode="before")
    @classmethod
    def _unit_or_unset(cls, value: object) -> float | None:
        return None if value is None else cls._unit(value)

    @field_validator("context_budget", mode="before")
    @classmethod
    def _budget(cls, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"must be a whole number of tokens >= 1, got {value!r}")
        return value

    @field_validator("overflow", mode="before")
    @classmethod
    def _overflow(cls, value: object) -> str:
        if value not in BEHAVIOURS:
            raise ValueError(f"must be one of {', '.join(BEHAVIOURS)}, got {value!r}")
        return value  # type: ignore[return-value]

    @field_validator("contaminated", "footers", mode="before")
    @classmethod
    def _flag(cls, value: object) -> bool:
        if not isinstance(value, bool):
            raise ValueError(f"must be true or false, got {value!r}")
        return value

    @classmethod
    def from_params(cls, params: SimPersona | dict[str, Any] | None, where: str = "") -> SimPersona:
        """A persona from an agent's ``params``; a bad value raises :class:`InputError` whose
        ``field`` names it (prefixed by ``where``, e.g. ``personas.a1.stance``)."""
        if isinstance(params, SimPersona):
            return params
        if params is None:
            return cls()
        if not isinstance(params, dict):
            raise InputError(where, f"persona parameters must be a JSON object, got {params!r}")
        try:
            return cls.model_validate(params)
        except ValidationError as exc:
            err = from_pydantic(exc)
            if exc.errors()[0].get("type") == "extra_forbidden":
                err = InputError(err.field, "unknown persona parameter (check its spelling)")
            path = ".".join(p for p in (where, err.field) if p)
            raise InputError(path, err.message) from None


@dataclass(frozen=True)
class SimReply:
    """The reply TEXT a model would return, and the metadata a provider would (``simulated: True``).

    ``error`` is set (and ``text`` is None) when the simulated agent refuses, as a real one would
    at its context wall; such a reply becomes a failed :class:`AgentReply`."""

    text: str | None
    meta: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.text is not None and self.error is None

    def to_agent_reply(self, key: str) -> AgentReply:
        return AgentReply(key=key, text=self.text, error=self.error, meta=dict(self.meta))
