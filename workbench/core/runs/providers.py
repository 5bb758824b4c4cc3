"""The panel a project is configured with: providers, clusters and agents (SPEC §6 shapes).

A provider names where its API key lives, never the key: ``key_env`` is the name of an
environment variable and ``key_keyring`` a keyring entry. Anything that looks like a pasted key
is refused (SPEC §11): in ``key_env``, ``key_keyring`` or ``model``, and in ``api_base`` as
credentials before the host or a query parameter. The refusal never repeats the value, so a key
cannot reach the project file, a terminal, a log or an export by this route.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal, Union
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from workbench.core.errors import InputError
from workbench.core.limits import (
    MAX_BATCH_POLL_S,
    MAX_CONCURRENCY,
    MAX_NAME_CHARS,
    MAX_NOTES_CHARS,
    MAX_OUTPUT_TOKENS,
    MAX_PARAMS,
    MAX_PERSONA_CHARS,
    MAX_RETRIES,
    MAX_RPM,
    MAX_RUN_AGENTS,
    MAX_TIMEOUT_S,
    MAX_URL_CHARS,
    MAX_WAIT_S,
    SEED_MAX,
    SEED_MIN,
)
from workbench.core.protocols.rcp.config import DEFAULT_WEIGHT, Theta, Weight
from workbench.core.protocols.shared.validation import NameCheck, NameStr

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SIM_MODEL = "sim"

# -- keys typed where a name or an address belongs (SPEC §11) -------------------------------------
# How vendors' API keys begin: OpenAI and Anthropic (sk-), Google (AIza), Groq, xAI, Hugging Face,
# Replicate, Perplexity, NVIDIA, Cerebras, Fireworks, Together, GitHub, GitLab, AWS access keys.
KEY_PREFIXES = ("sk-", "sk_", "rk_", "AIza", "gsk_", "xai-", "hf_", "r8_", "pplx-", "nvapi-", "csk-", "fw_",
                "tgp_", "ghp_", "gho_", "github_pat_", "glpat-", "AKIA")
KEY_MIN_CHARS = 32  # a value this long with no space is a key, not a name (SPEC §11)
_AFTER_PREFIX = 8  # "sk-" alone, or "hf_token", is a name; a prefix and 8 more characters is a key
# A variable's name in capitals, of words of at most 16 characters (AZURE_OPENAI_API_KEY_PRODUCTION_EAST),
# is a name however long: a key is never written so.
_ENV_STYLE = re.compile(r"^[A-Z][A-Z0-9]{0,15}(?:_[A-Z0-9]{1,16})*$")
# Query parameters that carry a credential whatever their value looks like (compared in lower
# case, "-" read as "_").
CREDENTIAL_PARAMETERS = frozenset({
    "key", "api_key", "apikey", "x_api_key", "access_token", "token", "auth", "auth_token", "authorization",
    "secret", "client_secret", "password", "pass", "pwd", "sig", "signature", "subscription_key",
    "ocp_apim_subscription_key", "code"})
NAME_A_KEY = "name the key with api_key_env or key_keyring instead"


def looks_like_key(value: str) -> bool:
    """True for a value that reads as an API key: no white space, and a vendor's key prefix with
    8 or more characters after it, or 32 characters or more."""
    if not value or any(c.isspace() for c in value):
        return False
    prefix = next((p for p in KEY_PREFIXES if value.startswith(p)), None)
    return len(value) >= KEY_MIN_CHARS or (prefix is not None and len(value) >= len(prefix) + _AFTER_PREFIX)


def key_in_address(url: str) -> str | None:
    """Where ``url`` holds a key, in words that never quote it (None when it holds none):
    credentials before the host (``user:key@``), or a query parameter that is a credential by its
    name (``?api-key=``, ``?key=``) or by the look of its value."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        return "holds credentials before the host (user:key@)"
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        normal = name.strip().lower().replace("-", "_")
        if looks_like_key(name) or looks_like_key(value) or (value and normal in CREDENTIAL_PARAMETERS):
            known = f" ({name.strip()})" if normal in CREDENTIAL_PARAMETERS else ""  # a known word, never a key
            return f"holds a key in a query parameter{known}"
    return None


def check_key_env(value: str | None) -> str | None:
    """``key_env``, when it names an environment variable; a ValueError otherwise."""
    if value is None:
        return value
    if not ENV_NAME.match(value) or (looks_like_key(value) and not _ENV_STYLE.match(value)):
        raise ValueError("must name an environment variable (like OPENAI_API_KEY), not hold the key itself")
    return value


def check_key_keyring(value: str | None) -> str | None:
    """``key_keyring``, when it names a keyring entry; a ValueError otherwise (the value unsaid)."""
    if value is not None and looks_like_key(value):
        raise ValueError("looks like a key, not the name of a keyring entry (32 characters or more with no "
                         "space, or a key's prefix such as sk-): store the key with 'keyring set "
                         "resonance-workbench NAME' and give NAME here")
    return value


def check_api_base(value: str | None) -> str | None:
    """``api_base``, when it is an address that holds no key; a ValueError otherwise (the value unsaid)."""
    if not value:
        return value
    try:
        _ = urlsplit(value).port  # an unclosed "[", or a port that is no number, raises here
    except ValueError:
        raise ValueError("is not a valid address (like http://127.0.0.1:8000/v1)") from None
    where = key_in_address(value)
    if where:
        raise ValueError(f"{where}: {NAME_A_KEY}, and give the address without it")
    return value


def check_model_name(value: str | None) -> str | None:
    """``model``, unless it starts like a key (a key pasted in the wrong box)."""
    if value and value.startswith(KEY_PREFIXES) and looks_like_key(value):
        raise ValueError(f"looks like an API key, not a model: {NAME_A_KEY}")
    return value

# Sampling and output (SPEC §6): on a provider, and overridden per agent by its ``sampling``.
SAMPLING_KEYS = ("temperature", "top_p", "max_tokens", "seed", "stop")
MAX_STOP_STRINGS = 4  # OpenAI's limit, which most servers share
MAX_STOP_CHARS = 200
STRUCTURED_OUTPUT = ("auto", "json_schema", "json_object", "off")
StructuredOutput = Literal["auto", "json_schema", "json_object", "off"]
MAX_REASK = 2
DEFAULT_REASK = 1
# Provider settings kept in the ``providers`` row's ``options_json`` (the row's own columns hold the rest).
DEFAULT_MAX_WAIT_S = 300.0  # SPEC §10: a call ends rate_limited only after this long of 429s
DEFAULT_BATCH_POLL_S = 30.0  # a provider batch takes minutes to hours: polled this often
PROVIDER_OPTIONS = (*SAMPLING_KEYS, "structured_output", "reask", "deployments", "max_wait_s", "batch_api",
                    "batch_poll_s")
_DEFAULT_OPTIONS: dict[str, Any] = {"structured_output": "auto", "reask": DEFAULT_REASK, "deployments": [],
                                    "max_wait_s": DEFAULT_MAX_WAIT_S, "batch_api": False,
                                    "batch_poll_s": DEFAULT_BATCH_POLL_S}
MAX_DEPLOYMENTS = 32
MAX_TPM = 1_000_000_000
# An agent's ``params`` (the simulated persona's knobs, SPEC §8): at most MAX_PARAMS named scalars.
ParamValue = Union[StrictBool, int, float, Annotated[str, Field(max_length=MAX_NAME_CHARS)], None]  # noqa: UP007 — one long alias: Union[...] keeps its members apart
Params = dict[Annotated[str, Field(max_length=MAX_NAME_CHARS), NameCheck], ParamValue]


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

    api_base: NameStr = Field(min_length=1, max_length=MAX_URL_CHARS)  # no control character, like a name
    model: NameStr | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS)
    key_env: str | None = Field(None, alias="api_key_env", max_length=MAX_NAME_CHARS)
    key_keyring: NameStr | None = Field(None, max_length=MAX_NAME_CHARS)
    timeout_s: float | None = Field(None, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    max_concurrency: int | None = Field(None, ge=1, le=MAX_CONCURRENCY)
    rpm: int | None = Field(None, ge=1, le=MAX_RPM)
    tpm: int | None = Field(None, ge=1, le=MAX_TPM)

    _names_a_variable = field_validator("key_env")(check_key_env)
    _names_an_entry = field_validator("key_keyring")(check_key_keyring)

    @field_validator("api_base")
    @classmethod
    def _is_a_url(cls, value: str) -> str:
        if not re.match(r"^https?://[^\s/]+", value):
            raise ValueError("must be an http:// or https:// address, like http://10.0.0.2:8000/v1")
        return check_api_base(value)  # type: ignore[return-value]

    @field_validator("model")
    @classmethod
    def _not_sim(cls, value: str | None) -> str | None:
        if value == SIM_MODEL:
            raise ValueError("a deployment serves a real model: 'sim' has no server")
        return check_model_name(value)


class ProviderConfig(SamplingFields):
    model_config = ConfigDict(strict=True, extra="forbid")

    name: NameStr = Field(min_length=1, max_length=MAX_NAME_CHARS)
    model: NameStr = Field(min_length=1, max_length=MAX_NAME_CHARS, description="a litellm model string, or 'sim'")
    api_base: NameStr | None = Field(None, max_length=MAX_URL_CHARS)  # no control character, like a name
    key_env: str | None = Field(None, alias="api_key_env", max_length=MAX_NAME_CHARS)
    key_keyring: NameStr | None = Field(None, max_length=MAX_NAME_CHARS)
    max_concurrency: int = Field(4, ge=1, le=MAX_CONCURRENCY)
    rpm: int | None = Field(None, ge=1, le=MAX_RPM)
    timeout_s: float = Field(60.0, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    max_retries: int = Field(3, ge=0, le=MAX_RETRIES, description="retries after a failure other than a 429")
    max_wait_s: float = Field(DEFAULT_MAX_WAIT_S, ge=0, le=MAX_WAIT_S, allow_inf_nan=False,
                              description="seconds of 429 refusals a call waits out before it ends rate_limited")
    batch_api: StrictBool = Field(False, description="send each phase's calls as one batch (the provider's batch API)")
    batch_poll_s: float = Field(DEFAULT_BATCH_POLL_S, gt=0, le=MAX_BATCH_POLL_S, allow_inf_nan=False,
                                description="how often a submitted batch is polled, in seconds")
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

    _names_a_variable = field_validator("key_env")(check_key_env)
    _names_an_entry = field_validator("key_keyring")(check_key_keyring)
    _holds_no_key = field_validator("api_base")(check_api_base)
    _is_a_model = field_validator("model")(check_model_name)

    @model_validator(mode="after")
    def _deployments_fit(self) -> ProviderConfig:
        if self.deployments and self.simulated:
            raise InputError("deployments", "the simulated panel ('sim') has no servers to spread calls over")
        if self.deployments and self.api_base:
            raise InputError("api_base", "give each deployment its own api_base, not the provider one as well")
        if self.batch_api and (self.simulated or self.model == "manual"):
            raise InputError("batch_api", f"{self.model!r} answers at once: there is no batch API to send to")
        if self.batch_api and self.deployments:
            raise InputError("batch_api", "a batch goes to one server: give a provider with deployments no batch_api, "
                             "or one provider per server")
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

    id: NameStr = Field(min_length=1, max_length=MAX_NAME_CHARS)
    provider: NameStr | None = Field(None, max_length=MAX_NAME_CHARS)
    role: NameStr | None = Field(None, max_length=MAX_NAME_CHARS)
    persona: str = Field("", max_length=MAX_PERSONA_CHARS)
    params: Params = Field(default_factory=dict, max_length=MAX_PARAMS, description="simulated-agent persona parameters")
    sampling: Sampling | None = None


class ClusterConfig(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    name: NameStr = Field(min_length=1, max_length=MAX_NAME_CHARS)
    agents: list[AgentConfig] = Field(max_length=MAX_RUN_AGENTS)
    theta: Theta | None = None
    weight: Weight = DEFAULT_WEIGHT
    reference: bool = False
    description: str = Field("", max_length=MAX_NOTES_CHARS)
