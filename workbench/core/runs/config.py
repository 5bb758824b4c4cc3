"""A run configuration (SPEC §6): which protocol, which panel, which providers, which seed.

One JSON (or YAML) document configures a run for the GUI, ``rwb run`` and batches alike. It
names providers by where their keys live, never by the keys. :func:`protocol_generator` turns
it into the protocol's step generator; the same configuration and seed give the same prompts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from workbench.core.errors import InputError, from_pydantic
from workbench.core.runs.providers import ProviderConfig

PROTOCOLS = ("rcp", "arm", "findings", "cons")


class AgentSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    provider: str = Field(min_length=1)
    persona: str = ""
    role: str | None = None  # findings: scout | auditor | dev; ARM: alpha | beta | gamma | silent
    params: dict[str, Any] = Field(default_factory=dict)  # simulated-agent persona parameters


class ClusterSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    agents: list[AgentSpec] = Field(min_length=1)
    theta: float | None = Field(None, gt=0, le=1)
    weight: float | None = Field(None, gt=0)


class RunConfig(BaseModel):
    """SPEC §6; keys beyond these are kept (``extra``) so a config can carry notes."""

    model_config = ConfigDict(extra="allow")

    protocol: Literal["rcp", "arm", "findings", "cons"]
    query: str = ""
    seed: int = 0
    dispatch: Literal["sequential", "concurrent"] = "concurrent"
    providers: dict[str, ProviderConfig]
    clusters: list[ClusterSpec] = Field(min_length=1)
    label: str = ""
    cache: bool = False  # reuse identical replies (off for sampling studies; the sample index is in the key)
    echo: dict[str, Any] | None = None  # Resonance Echo around every agent (see echo_wrap)
    # RCP
    theta: float = 0.5
    tau: float = 0.6
    weighted: bool = False
    reference: str | None = None
    ballot_mode: bool = False
    refinement_rounds: int = Field(0, ge=0, le=5)
    # Consensus Server findings
    findings: list[dict[str, Any]] = Field(default_factory=list)
    findings_from_run: str | None = None  # take the findings from another run's artifacts
    findings_tiers: list[str] = Field(default_factory=list)  # of an RCP run: only these tiers (empty: all)
    threshold: float = 0.6
    # CONS
    question_id: str = "CONS-001"
    options: list[str] = Field(default_factory=list)
    consensus_threshold: float = Field(0.8, gt=0, le=1)
    min_voters: int = Field(3, ge=1)
    max_challenge_rounds: int = Field(2, ge=0)
    # ARM: any ArmRunConfig field except the question (providers by role default from the agents)
    arm: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _provider_names(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("providers"), dict):
            data = {**data, "providers": {name: {"name": name, **spec} if isinstance(spec, dict) else spec
                                          for name, spec in data["providers"].items()}}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> RunConfig:
        seen: set[str] = set()
        for i, cluster in enumerate(self.clusters):
            for j, agent in enumerate(cluster.agents):
                where = f"clusters[{i}].agents[{j}]"
                if agent.id in seen:
                    raise ValueError(f"{where}.id: agent {agent.id!r} appears twice")
                seen.add(agent.id)
                if agent.provider not in self.providers:
                    raise ValueError(f"{where}.provider: no provider named {agent.provider!r} "
                                     f"(providers: {', '.join(sorted(self.providers)) or 'none'})")
        if self.protocol in ("rcp", "arm", "cons") and not self.query.strip():
            raise ValueError("query: required for this protocol")
        if self.protocol == "findings" and not self.findings and not self.findings_from_run:
            raise ValueError("findings: at least one finding is required (or findings_from_run)")
        if self.protocol == "cons" and len(self.options) < 1:
            raise ValueError("options: at least one option is required")
        if self.echo is not None:  # refused now, not when the run starts
            from workbench.core.protocols.echo.wrap import echo_options

            try:
                echo_options(self)
            except InputError as exc:
                raise ValueError(str(exc)) from None
        return self

    @property
    def agents(self) -> list[AgentSpec]:
        return [a for c in self.clusters for a in c.agents]

    def agent(self, agent_id: str) -> AgentSpec | None:
        return next((a for a in self.agents if a.id == agent_id or a.role == agent_id), None)

    @property
    def simulated(self) -> bool:
        """Every agent answers through the simulated panel."""
        return all(self.providers[a.provider].simulated for a in self.agents)


def parse_run_config(data: object) -> RunConfig:
    if not isinstance(data, dict):
        raise InputError("config", "a run configuration is a JSON object")
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        error = from_pydantic(exc)
        if ": " in error.message and not error.field:  # a message that names its own field
            field, message = error.message.split(": ", 1)
            raise InputError(field, message) from None
        raise error from None


def load_run_config(path: Path | str) -> RunConfig:
    """Read a run configuration from a JSON or YAML file."""
    return parse_run_config(read_config_file(path))


def read_config_file(path: Path | str) -> object:
    """The document in a JSON or YAML configuration file, not yet validated."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(path), "no such file") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InputError(path.name, f"not valid YAML: {exc}") from None
    else:
        try:
            data = json.loads(text)
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

        clusters = tuple({"name": c.name, "agents": [a.id for a in c.agents],
                          **({"theta": c.theta} if c.theta is not None else {}),
                          **({"weight": c.weight} if c.weight is not None else {})} for c in cfg.clusters)
        agents = tuple(RcpAgent(a.id, c.name, a.persona) for c in cfg.clusters for a in c.agents)
        return run_rcp(RcpRunConfig(query=cfg.query, seed=cfg.seed, agents=agents, clusters=clusters,
                                    reference=cfg.reference, theta=cfg.theta, tau=cfg.tau, weighted=cfg.weighted,
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
                                      consensus_threshold=cfg.consensus_threshold, min_voters=cfg.min_voters,
                                      max_challenge_rounds=cfg.max_challenge_rounds))
    from workbench.core.protocols.arm.api import ArmRunConfig, run_arm

    options = dict(cfg.arm)
    options.setdefault("providers", {a.role: a.provider for a in cfg.agents if a.role in ("alpha", "beta", "gamma")})
    silent = next((a for a in cfg.agents if a.role == "silent"), None)
    if silent is not None:
        options.setdefault("silent_provider", silent.provider)
    options.setdefault("dispatch", cfg.dispatch)
    return run_arm(ArmRunConfig(question=cfg.query, **options))
