"""The protocol's own settings, mixed into a run configuration (with the fields every run shares:
``query``, ``seed``, ``providers``, ``clusters``...). Its defaults are defined here, once.

Like every run configuration, it is strict (a string is not a number) and refuses an unknown
key, so ``critique_max_word`` is an error, never a silently ignored option.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from workbench.core.errors import InputError

DEFAULT_CRITIQUE_MAX_WORDS = 80
MIN_CRITIQUE_WORDS, MAX_CRITIQUE_WORDS = 10, 400  # below 10 no issue fits; above 400 it is an essay


class AcrOptions(BaseModel):
    """ACR's part of a run configuration, at its top level: ``{"protocol": "acr",
    "critique_max_words": 60, ...}``."""

    model_config = ConfigDict(strict=True, extra="forbid")

    critique_max_words: int = Field(DEFAULT_CRITIQUE_MAX_WORDS, ge=MIN_CRITIQUE_WORDS, le=MAX_CRITIQUE_WORDS,
                                    description="the most words a critique may use, its issues and summary together")

    @model_validator(mode="after")
    def _two_agents(self):
        # Mixed into the run configuration, where ``agents`` is the panel (RunConfigBase).
        agents = getattr(self, "agents", None)
        if agents is not None and len(agents) < 2:
            raise InputError("clusters", "ACR needs at least 2 agents (each critiques another's answer), "
                                         f"got {len(agents)}")
        return self
