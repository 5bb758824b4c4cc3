"""A run configuration (SPEC §6): which protocol, which panel, which providers, which seed.

One JSON (or YAML) document configures a run for the GUI, ``rwb run`` and batches alike. It
names providers by where their keys live, never by the keys. :func:`protocol_generator` turns
it into the protocol's step generator; the same configuration and seed give the same prompts.

:data:`RunConfig` is a union tagged by ``protocol``: one model per protocol, each made of the
fields every run shares (:class:`RunConfigBase`) and that protocol's options model, whose
defaults are defined once, in the protocol's own ``config`` module:

    rcp       RunConfigRcp       RcpOptions (rcp/config.py), at the top level
    findings  RunConfigFindings  FindingsOptions (findings/config.py), at the top level
    cons      RunConfigCons      ConsOptions (cons/config.py), at the top level
    arm       RunConfigArm       ArmOptions (arm/config.py), under ``arm``
    (any)     ``echo``           EchoOptions (echo/config.py)

Every model is strict (a boolean is not a number, a string is not a number) and refuses an
unknown key with its path, so a typo such as ``temprature`` is never ignored; free text goes under
``notes``. The cross-field rules (every agent's provider exists, cluster names and agents are
unique, the reference cluster exists, ...) are checked here too, so a configuration is refused
whole before anything is spent. A stored configuration (``runs.config_json``, a
``model_dump(mode="json", by_alias=True)``) parses back to the same configuration.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from workbench.core.errors import InputError
from workbench.core.limits import (
    MAX_CLUSTERS,
    MAX_INPUT_BYTES,
    MAX_NAME_CHARS,
    MAX_NOTES_CHARS,
    MAX_PERSONA_CHARS,
    MAX_PROVIDERS,
    MAX_QUERY_CHARS,
    MAX_RUN_AGENTS,
    SEED_MAX,
    SEED_MIN,
    check_bytes,
    check_json,
    decode_json,
    out_of_range,
    too_many,
)
from workbench.core.protocols.arm.config import ROLES as ARM_ROLES, ArmOptions
from workbench.core.protocols.cons.config import ConsOptions
from workbench.core.protocols.echo.config import EchoOptions, check_patterns
from workbench.core.protocols.findings.config import FindingsOptions
from workbench.core.protocols.rcp.config import TIERS, RcpConfig, RcpOptions, Theta, Weight, check_config
from workbench.core.protocols.shared.validation import input_error, shown
from workbench.core.runs.providers import ProviderConfig, Sampling

PROTOCOLS = ("rcp", "arm", "findings", "cons")
DISPATCH = "concurrent"  # a run's default dispatch; ARM's own default is its options' (sequential)


class AgentSpec(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    id: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    provider: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    persona: str = Field("", max_length=MAX_PERSONA_CHARS)
    role: str | None = Field(None, max_length=MAX_NAME_CHARS)  # findings: scout | auditor | dev; ARM: alpha | beta | gamma | silent
    params: dict[str, Any] = Field(default_factory=dict)  # simulated-agent persona parameters
    sampling: Sampling | None = None  # overrides the provider's temperature, top_p, max_tokens, seed, stop


class ClusterSpec(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    agents: list[AgentSpec] = Field(min_length=1, max_length=MAX_RUN_AGENTS)
    theta: Theta | None = None  # RCP: this cluster's theta (default: the run's)
    weight: Weight | None = None  # RCP: this cluster's weight when ``weighted``


class Budget(BaseModel):
    """A spending cap (SPEC §6 "Budgets"): a run stops, resumable, once its spend (plus the calls in
    flight) reaches either cap; each is unset (None) unless given."""

    model_config = ConfigDict(strict=True, extra="forbid")

    max_usd: float | None = Field(None, gt=0, le=1_000_000, allow_inf_nan=False)
    max_tokens: int | None = Field(None, ge=1, le=10**12)

    @property
    def empty(self) -> bool:
        return self.max_usd is None and self.max_tokens is None


class RunConfigBase(BaseModel):
    """The fields every run shares (SPEC §6), and the rules on the panel."""

    model_config = ConfigDict(strict=True, extra="forbid")
    needs_query: ClassVar[bool] = True

    protocol: str
    query: str = Field("", max_length=MAX_QUERY_CHARS)
    seed: int = Field(0, description=f"a whole number from {SEED_MIN} to 2**63 - 1")
    dispatch: Literal["sequential", "concurrent"] = DISPATCH
    providers: dict[str, ProviderConfig] = Field(max_length=MAX_PROVIDERS)
    clusters: list[ClusterSpec] = Field(min_length=1, max_length=MAX_CLUSTERS)
    reference: str | None = Field(None, max_length=MAX_NAME_CHARS)  # RCP's reference cluster, kept with any panel
    label: str = Field("", max_length=MAX_NAME_CHARS)
    # SPEC §1: a run whose missing votes (invalid or failed, not abstentions) exceed this share of
    # those expected ends `degraded`, not `completed`.
    max_missing_share: float = Field(0.2, ge=0.0, le=1.0)
    budget: Budget | None = None  # a cap on what the run may spend (SPEC §6 "Budgets")
    cache: bool = False  # reuse identical replies (off for sampling studies; the sample index is in the key)
    echo: EchoOptions | None = None  # Resonance Echo around every agent (see echo.wrap)
    notes: str = Field("", max_length=MAX_NOTES_CHARS)  # free text: what the run is for, never sent to a model

    @field_validator("seed")
    @classmethod
    def _seed_in_range(cls, value: int, info: ValidationInfo) -> int:
        # Stored as SQLite INTEGER (signed 64-bit); negative seeds are refused too, so one range
        # holds everywhere (a batch adds the replicate index to it). A run stored before the range
        # existed may hold a negative seed: it still resumes.
        low = -SEED_MAX - 1 if (info.context or {}).get("stored") else SEED_MIN
        if not low <= value <= SEED_MAX:
            raise ValueError(out_of_range(value, SEED_MIN, SEED_MAX))
        return value

    @model_validator(mode="before")
    @classmethod
    def _provider_names(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("providers"), dict):
            data = {**data, "providers": {name: {"name": name, **spec} if isinstance(spec, dict) else spec
                                          for name, spec in data["providers"].items()}}
        return data

    @model_validator(mode="after")
    def _panel(self) -> RunConfigBase:
        if self.needs_query and not self.query.strip():
            raise InputError("query", f"required: the question a {self.protocol.upper()} run puts to its agents")
        agents = sum(len(c.agents) for c in self.clusters)
        if agents > MAX_RUN_AGENTS:  # an RCP round makes n(n-1) vote calls, each holding an artifact
            raise InputError("clusters", too_many(agents, MAX_RUN_AGENTS, "agents"))
        for i, cluster in enumerate(self.clusters):
            for j, agent in enumerate(cluster.agents):
                if agent.provider not in self.providers:
                    raise InputError(f"clusters[{i}].agents[{j}].provider",
                                     f"no provider named {agent.provider!r} "
                                     f"(providers: {', '.join(sorted(self.providers)) or 'none'})")
        # Cluster names and agents are unique: RCP's rules for its classification input, which
        # any panel keeps (each agent id keys its calls).
        check_config(self._classification_panel().model_copy(update={"reference": self.reference}))
        if self.echo is not None:
            check_patterns(self.echo, [(a.id, a.role) for a in self.agents])
        self._check_personas()
        return self

    def _classification_panel(self) -> RcpConfig:
        clusters = [{"name": c.name, "agents": [a.id for a in c.agents],
                     **({"theta": c.theta} if c.theta is not None else {}),
                     **({"weight": c.weight} if c.weight is not None else {})} for c in self.clusters]
        return RcpConfig.model_validate({"clusters": clusters})

    def _check_personas(self) -> None:
        """A simulated agent's persona parameters, which the simulated panel reads at its first call."""
        if not any(p.simulated for p in self.providers.values()):
            return
        from workbench.core.sim.persona import SimPersona

        for i, cluster in enumerate(self.clusters):
            for j, agent in enumerate(cluster.agents):
                if self.providers[agent.provider].simulated:
                    SimPersona.from_params(agent.params, where=f"clusters[{i}].agents[{j}].params")

    @property
    def agents(self) -> list[AgentSpec]:
        return [a for c in self.clusters for a in c.agents]

    def agent(self, agent_id: str) -> AgentSpec | None:
        return next((a for a in self.agents if a.id == agent_id or a.role == agent_id), None)

    @property
    def simulated(self) -> bool:
        """Every agent answers through the simulated panel."""
        return all(self.providers[a.provider].simulated for a in self.agents)

    def providers_used(self) -> list[str]:
        """The providers the run calls, each once, in the panel's order."""
        return list(dict.fromkeys(a.provider for a in self.agents))


class RunConfigRcp(RcpOptions, RunConfigBase):
    """A Resonant Consensus run: :class:`RcpOptions` (theta, tau, reference, ...) at the top level."""

    protocol: Literal["rcp"]

    def classification_panel(self) -> list[dict]:
        """The clusters as the engine's input takes them: names, agent ids, theta and weight."""
        return [c.model_dump(exclude_none=True) for c in self._classification_panel().clusters]


class RunConfigFindings(FindingsOptions, RunConfigBase):
    """A Consensus Server findings run: :class:`FindingsOptions` at the top level."""

    needs_query: ClassVar[bool] = False
    protocol: Literal["findings"]

    @model_validator(mode="after")
    def _tiers(self) -> RunConfigFindings:
        for k, tier in enumerate(self.findings_tiers):
            if tier not in TIERS:
                raise InputError(f"findings_tiers[{k}]", f"must be one of {', '.join(TIERS)}, got {tier!r}")
        return self


class RunConfigCons(ConsOptions, RunConfigBase):
    """A CONS run: :class:`ConsOptions` at the top level; the question is the run's ``query``."""

    protocol: Literal["cons"]


class RunConfigArm(RunConfigBase):
    """An ARM run: :class:`ArmOptions` under ``arm``; each role's provider defaults to its agent's."""

    protocol: Literal["arm"]
    arm: ArmOptions = Field(default_factory=ArmOptions)

    @model_validator(mode="after")
    def _roles(self) -> RunConfigArm:
        roles = {a.role: a for a in self.agents if a.role}
        for role in ARM_ROLES:
            if role not in self.arm.providers and role not in roles:
                raise InputError("clusters", f"no agent has the role {role!r} (an ARM run needs "
                                             f"alpha, beta and gamma; the silent baseline is optional)")
        for where, name in self._arm_providers().items():
            if name not in self.providers:
                raise InputError(where, f"no provider named {name!r} "
                                        f"(providers: {', '.join(sorted(self.providers))})")
        return self

    def _arm_providers(self) -> dict[str, str]:
        named = {f"arm.providers.{role}": name for role, name in self.arm.providers.items()}
        if self.arm.silent_provider is not None:
            named["arm.silent_provider"] = self.arm.silent_provider
        return named

    def role_providers(self) -> dict[str, str]:
        """alpha, beta, gamma -> the provider that answers as that role."""
        by_role = {a.role: a.provider for a in self.agents if a.role in ARM_ROLES}
        return {role: self.arm.providers.get(role) or by_role[role] for role in ARM_ROLES}

    def providers_used(self) -> list[str]:
        """The providers ARM calls: each role's, and the silent baseline's (by default the silent
        agent's, else the provider of the silent draw, one of the roles')."""
        used = list(self.role_providers().values())
        silent = next((a.provider for a in self.agents if a.role == "silent"), None)
        used.append(self.arm.silent_provider or silent or used[0])
        return list(dict.fromkeys(used))


RunConfig = Annotated[Union[RunConfigRcp, RunConfigArm, RunConfigFindings, RunConfigCons],  # noqa: UP007
                      Field(discriminator="protocol")]
_ADAPTER: TypeAdapter[RunConfigBase] = TypeAdapter(RunConfig)

# Keys every stored configuration carried before each protocol had its own model (one model held
# every protocol's fields, and dumped them all). A stored configuration may still hold them; a
# protocol never read another's, so they are dropped when a stored configuration is read back.
_LEGACY_KEYS = ("theta", "tau", "weighted", "ballot_mode", "refinement_rounds", "findings",
                "findings_from_run", "findings_tiers", "threshold", "question_id", "options",
                "consensus_threshold", "min_voters", "max_challenge_rounds", "arm")
_MODELS: dict[str, type[RunConfigBase]] = {"rcp": RunConfigRcp, "arm": RunConfigArm,
                                           "findings": RunConfigFindings, "cons": RunConfigCons}


def parse_run_config(data: object, *, stored: bool = False) -> RunConfig:
    """Validate a run configuration whole; any problem is an :class:`InputError` naming its field.

    ``stored``: ``data`` is a run's ``config_json``, possibly written by an earlier version (see
    ``_LEGACY_KEYS``)."""
    if not isinstance(data, dict):
        raise InputError("config", "a run configuration is a JSON object")
    if stored and data.get("protocol") in _MODELS:
        fields = _MODELS[data["protocol"]].model_fields
        data = {k: v for k, v in data.items() if k in fields or k not in _LEGACY_KEYS}
    try:
        return _ADAPTER.validate_python(data, context={"stored": stored})
    except ValidationError as exc:
        first = exc.errors()[0]
        if first["type"] in ("union_tag_invalid", "union_tag_not_found"):
            got = f", got {shown(data['protocol'])}" if "protocol" in data else ""
            raise InputError("protocol", f"must be one of {', '.join(PROTOCOLS)}{got}") from None
        raise input_error(exc, clean=_without_tag) from None


def _without_tag(loc: list) -> list:
    """A member of the tagged union puts the tag first in an error's location: not a key."""
    return loc[1:] if loc and loc[0] in PROTOCOLS else loc


def read_config_file(path: Path | str) -> object:
    """The document in a JSON or YAML configuration file, not yet validated."""
    path = Path(path)
    if path.exists() and not path.is_dir() and not path.is_file():  # a FIFO or a device: never waited on
        raise InputError(str(path), "is not a regular file")
    try:
        check_bytes(path.stat().st_size, path.name, MAX_INPUT_BYTES)
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(path), "no such file") from None
    except IsADirectoryError:
        raise InputError(str(path), "is a folder, not a file") from None
    except UnicodeDecodeError as exc:
        raise InputError(path.name, f"not UTF-8 text (byte {exc.start})") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InputError(path.name, f"not valid YAML: {exc}") from None
        except RecursionError:
            raise InputError(path.name, "nests too deeply") from None
        check_json(data, path.name)  # depth, and values counted through YAML aliases
    else:
        try:
            data = decode_json(text, path.name)
        except json.JSONDecodeError as exc:
            raise InputError(path.name, f"not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    return data


def protocol_generator(cfg: RunConfig, *, run_id: str | None = None, issue_marker=None):
    """The protocol's step generator for this configuration, wrapped in Resonance Echo when the
    configuration asks for it (``issue_marker(key) -> Marker`` gives each agent its markers)."""
    gen = _protocol_generator(cfg)
    if cfg.echo is not None:
        from workbench.core.protocols.echo.wrap import with_echo

        gen = with_echo(gen, cfg, run_id=run_id, issue_marker=issue_marker)
    return gen


def _protocol_generator(cfg: RunConfig):
    if cfg.protocol == "rcp":
        from workbench.core.protocols.rcp.run import RcpAgent, RcpRunConfig, run_rcp

        agents = tuple(RcpAgent(a.id, c.name, a.persona) for c in cfg.clusters for a in c.agents)
        return run_rcp(RcpRunConfig(query=cfg.query, seed=cfg.seed, agents=agents,
                                    clusters=tuple(cfg.classification_panel()), reference=cfg.reference,
                                    theta=cfg.theta, tau=cfg.tau, weighted=cfg.weighted,
                                    ballot_mode=cfg.ballot_mode, refinement_rounds=cfg.refinement_rounds))
    if cfg.protocol == "findings":
        from workbench.core.protocols.findings.run import FindingsAgent, FindingsRunConfig, run_findings

        agents = tuple(FindingsAgent(a.id, a.role or "scout", a.persona) for a in cfg.agents)
        return run_findings(FindingsRunConfig(seed=cfg.seed, agents=agents, findings=tuple(cfg.findings),
                                              threshold=cfg.threshold))
    if cfg.protocol == "cons":
        from workbench.core.protocols.cons.run import ConsAgent, ConsRunConfig, run_cons

        return run_cons(ConsRunConfig(seed=cfg.seed, question_id=cfg.question_id, question=cfg.query,
                                      options=tuple(cfg.options), agents=tuple(ConsAgent(a.id, a.persona) for a in cfg.agents),
                                      consensus_threshold=cfg.consensus_threshold, count_threshold=cfg.count_threshold,
                                      min_voters=cfg.min_voters, max_challenge_rounds=cfg.max_challenge_rounds))
    from workbench.core.protocols.arm.rounds import ArmRunConfig, run_arm

    options = cfg.arm.model_dump(exclude={"providers", "silent_provider", "dispatch"})
    silent = next((a for a in cfg.agents if a.role == "silent"), None)
    return run_arm(ArmRunConfig(question=cfg.query, providers=cfg.role_providers(),
                                silent_provider=cfg.arm.silent_provider or (silent.provider if silent else None),
                                dispatch=cfg.arm.dispatch or cfg.dispatch, **options))
