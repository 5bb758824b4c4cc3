"""The panel a project is configured with: providers, clusters and agents (SPEC §6 shapes).

A provider names where its API key lives, never the key: ``key_env`` is the name of an
environment variable and ``key_keyring`` a keyring entry. Anything that looks like a pasted key
is refused, so a key cannot reach the project file, a log or an export by this route.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from workbench.core.errors import InputError
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
    SEED_MAX,
    SEED_MIN,
)
from workbench.core.protocols.rcp.config import DEFAULT_WEIGHT, Theta, Weight

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SIM_MODEL = "sim"

# Sampling and output (SPEC §6): on a provider, and overridden per agent by its ``sampling``.
SAMPLING_KEYS = ("temperature", "top_p", "max_tokens", "seed", "stop")
MAX_OUTPUT_TOKENS = 131_072  # the largest output cap accepted (no model writes more in one reply)
MAX_STOP_STRINGS = 4  # OpenAI's limit, which most servers share
MAX_STOP_CHARS = 200
STRUCTURED_OUTPUT = ("auto", "json_schema", "json_object", "off")
StructuredOutput = Literal["auto", "json_schema", "json_object", "off"]
MAX_REASK = 2
DEFAULT_REASK = 1
# Provider settings kept in the ``providers`` row's ``options_json`` (the row's own columns hold the rest).
PROVIDER_OPTIONS = (*SAMPLING_KEYS, "structured_output", "reask", "deployments")
_DEFAULT_OPTIONS: dict[str, Any] = {"structured_output": "auto", "reask": DEFAULT_REASK, "deployments": []}
MAX_DEPLOYMENTS = 32
MAX_TPM = 1_000_000_000


class SamplingFields(BaseModel):
    """``temperature``, ``top_p``, ``max_tokens``, ``seed`` and ``stop``: each unset (None) unless
    given, and then sent as given. A seed is sent only where it is set here; the run seed never is."""

    model_config = ConfigDict(strict=True, extra="forbid")

    temperature: float | None = Field(None, ge=0.0, le=2.0, allow_inf_nan=False)
    top_p: float | None = Field(None, gt=0.0, le=1.0, allow_inf_nan=False)
    max_tokens: int | None = Field(None, ge=1, le=MAX_OUTPUT_TOKENS)
    seed: int | None = Field(None, ge=SEED_MIN, le=SEED_MAX)
    stop: list[str] | None = Field(None, max_length=MAX_STOP_STRINGS)

    @field_validator("stop")
    @classmethod
    def _stop_strings(cls, value: list[str] | None) -> list[str] | None:
        for s in value or ():
            if not s or len(s) > MAX_STOP_CHARS:
                raise ValueError(f"each stop string must have 1 to {MAX_STOP_CHARS} characters")
        return value

    def sampling(self) -> dict[str, Any]:
        """The sampling keys that are set."""
        return {k: getattr(self, k) for k in SAMPLING_KEYS if getattr(self, k) is not None}


class Sampling(SamplingFields):
    """An agent's ``sampling`` object: the provider's keys, overridden for this agent."""


def merged_sampling(provider: SamplingFields | None, agent: SamplingFields | None) -> dict[str, Any]:
    """The provider's sampling keys with the agent's set ones over them."""
    return {**(provider.sampling() if provider is not None else {}),
            **(agent.sampling() if agent is not None else {})}


def capped(max_tokens: int | None, cap: int | None) -> int | None:
    """The smaller of a configured ``max_tokens`` and a call kind's cap (either may be unset)."""
    given = [v for v in (max_tokens, cap) if v is not None]
    return min(given) if given else None


class Deployment(BaseModel):
    """One server behind a provider (SPEC §6 ``deployments``): its ``model`` and ``timeout_s``
    default to the provider's, its key to the provider's key; ``max_concurrency``, ``rpm`` and
    ``tpm`` limit this deployment alone (unset: no limit of its own)."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)

    api_base: str = Field(min_length=1, max_length=MAX_URL_CHARS)
    model: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS)
    key_env: str | None = Field(None, alias="api_key_env", max_length=MAX_NAME_CHARS)
    key_keyring: str | None = Field(None, max_length=MAX_NAME_CHARS)
    timeout_s: float | None = Field(None, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    max_concurrency: int | None = Field(None, ge=1, le=MAX_CONCURRENCY)
    rpm: int | None = Field(None, ge=1, le=MAX_RPM)
    tpm: int | None = Field(None, ge=1, le=MAX_TPM)

    @field_validator("key_env")
    @classmethod
    def _names_a_variable(cls, value: str | None) -> str | None:
        if value is not None and not ENV_NAME.match(value):
            raise ValueError("must name an environment variable (like OPENAI_API_KEY), not hold the key itself")
        return value

    @field_validator("api_base")
    @classmethod
    def _is_a_url(cls, value: str) -> str:
        if not re.match(r"^https?://[^\s/]+", value):
            raise ValueError("must be an http:// or https:// address, like http://10.0.0.2:8000/v1")
        return value

    @field_validator("model")
    @classmethod
    def _not_sim(cls, value: str | None) -> str | None:
        if value == SIM_MODEL:
            raise ValueError("a deployment serves a real model: 'sim' has no server")
        return value


class ProviderConfig(SamplingFields):
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
    structured_output: StructuredOutput = Field("auto", description="how a JSON reply's schema is sent")
    reask: int = Field(DEFAULT_REASK, ge=0, le=MAX_REASK, description="re-asks after an unreadable reply")
    deployments: list[Deployment] = Field(default_factory=list, max_length=MAX_DEPLOYMENTS,
                                          description="several servers behind this provider (litellm's Router)")

    @model_validator(mode="before")
    @classmethod
    def _from_row(cls, data: Any) -> Any:
        """A ``providers`` row keeps these settings in ``options_json``: unfolded here."""
        if isinstance(data, dict) and "options_json" in data:
            data = dict(data)
            options = data.pop("options_json")
            if isinstance(options, str):
                options = json.loads(options or "{}")
            for key, value in (options or {}).items():
                data.setdefault(key, value)
        return data

    @field_validator("key_env")
    @classmethod
    def _names_a_variable(cls, value: str | None) -> str | None:
        if value is not None and not ENV_NAME.match(value):
            raise ValueError("must name an environment variable (like OPENAI_API_KEY), not hold the key itself")
        return value

    @model_validator(mode="after")
    def _deployments_fit(self) -> ProviderConfig:
        if self.deployments and self.simulated:
            raise InputError("deployments", "the simulated panel ('sim') has no servers to spread calls over")
        if self.deployments and self.api_base:
            raise InputError("api_base", "give each deployment its own api_base, not the provider one as well")
        return self

    @property
    def simulated(self) -> bool:
        return self.model == SIM_MODEL

    def record(self) -> dict:
        """The row for the ``providers`` table: sampling, ``structured_output`` and ``reask`` go in
        its ``options_json`` (only those that differ from the defaults)."""
        data = self.model_dump(by_alias=False)
        options = {k: data.pop(k) for k in PROVIDER_OPTIONS}
        options["deployments"] = [d.model_dump(by_alias=True, exclude_none=True) for d in self.deployments]
        data["options_json"] = {k: v for k, v in options.items() if v is not None and _DEFAULT_OPTIONS.get(k) != v}
        return data

    def options(self) -> dict:
        """The settings ``record`` keeps in ``options_json``, as a run configuration writes them."""
        return self.record()["options_json"]


class AgentConfig(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    id: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    provider: str | None = Field(None, max_length=MAX_NAME_CHARS)
    role: str | None = Field(None, max_length=MAX_NAME_CHARS)
    persona: str = Field("", max_length=MAX_PERSONA_CHARS)
    params: dict = Field(default_factory=dict, description="simulated-agent persona parameters")
    sampling: Sampling | None = None


class ClusterConfig(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    agents: list[AgentConfig] = Field(max_length=MAX_RUN_AGENTS)
    theta: Theta | None = None
    weight: Weight = DEFAULT_WEIGHT
    reference: bool = False
    description: str = Field("", max_length=MAX_NOTES_CHARS)
