"""The panel a project is configured with: providers, clusters and agents (SPEC §6 shapes).

A provider names where its API key lives, never the key: ``key_env`` is the name of an
environment variable and ``key_keyring`` a keyring entry. Anything that looks like a pasted key
is refused, so a key cannot reach the project file, a log or an export by this route.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from workbench.core.limits import (
    MAX_CONCURRENCY,
    MAX_NAME_CHARS,
    MAX_NOTES_CHARS,
    MAX_PERSONA_CHARS,
    MAX_RETRIES,
    MAX_RPM,
    MAX_RUN_AGENTS,
    MAX_TIMEOUT_S,
    MAX_URL_CHARS,
)
from workbench.core.protocols.rcp.config import DEFAULT_WEIGHT, Theta, Weight

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SIM_MODEL = "sim"


class ProviderConfig(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    model: str = Field(min_length=1, max_length=MAX_NAME_CHARS, description="a litellm model string, or 'sim'")
    api_base: str | None = Field(None, max_length=MAX_URL_CHARS)
    key_env: str | None = Field(None, alias="api_key_env", max_length=MAX_NAME_CHARS)
    key_keyring: str | None = Field(None, max_length=MAX_NAME_CHARS)
    max_concurrency: int = Field(4, ge=1, le=MAX_CONCURRENCY)
    rpm: int | None = Field(None, ge=1, le=MAX_RPM)
    timeout_s: float = Field(60.0, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    max_retries: int = Field(3, ge=0, le=MAX_RETRIES)

    @field_validator("key_env")
    @classmethod
    def _names_a_variable(cls, value: str | None) -> str | None:
        if value is not None and not ENV_NAME.match(value):
            raise ValueError("must name an environment variable (like OPENAI_API_KEY), not hold the key itself")
        return value

    @property
    def simulated(self) -> bool:
        return self.model == SIM_MODEL

    def record(self) -> dict:
        """The row for the ``providers`` table."""
        return self.model_dump(by_alias=False)


class AgentConfig(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    id: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    provider: str | None = Field(None, max_length=MAX_NAME_CHARS)
    role: str | None = Field(None, max_length=MAX_NAME_CHARS)
    persona: str = Field("", max_length=MAX_PERSONA_CHARS)
    params: dict = Field(default_factory=dict, description="simulated-agent persona parameters")


class ClusterConfig(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    agents: list[AgentConfig] = Field(max_length=MAX_RUN_AGENTS)
    theta: Theta | None = None
    weight: Weight = DEFAULT_WEIGHT
    reference: bool = False
    description: str = Field("", max_length=MAX_NOTES_CHARS)
