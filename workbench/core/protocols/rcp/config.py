"""Resonant Consensus Protocol: options and input models, validation and configuration warnings.

SPEC §1 decides the rules; docs/protocols.md (RCP section) explains every decision in words.
Every RCP default is defined once: :data:`DEFAULT_THETA` and :data:`DEFAULT_TAU` in
:mod:`.defaults` (re-exported here), the fields of :class:`RcpSettings` and :class:`RcpOptions`
here. The engine (:mod:`.classify`), the run generator (:mod:`.run`) and the run configuration
take theirs from these.
Pure functions, no I/O, no numpy: the classification maths lives in :mod:`.classify`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from workbench.core.errors import InputError, from_pydantic
from workbench.core.limits import (
    MAX_ARTIFACTS,
    MAX_CLASSIFY_AGENTS,
    MAX_CLUSTERS,
    MAX_NAME_CHARS,
    MAX_VOTE_CELLS,
    too_many,
)
from workbench.core.protocols.rcp.defaults import DEFAULT_TAU, DEFAULT_THETA, DEFAULT_WEIGHT  # noqa: F401 — re-exported

# Tier names, in the order results are listed (SPEC §1 "Order of results"), are named once, in shared.tiers.
from workbench.core.protocols.shared.tiers import TIERS  # noqa: F401 — re-exported: rcp.run imports it from here
from workbench.core.protocols.shared.validation import NameCheck, NameStr, input_error

# Every comparison against theta and tau allows this much floating-point slack (SPEC §1).
TOL = 1e-9
# Above this many distinct weighted sums the empty-polar check gives up instead of enumerating.
_MAX_SUMS = 1 << 16
MAX_REFINEMENT_ROUNDS = 5


def _agent_id(value: object) -> object:
    """An agent is its id string, or an object with an ``id`` (the run-configuration form)."""
    if isinstance(value, Mapping):
        if "id" not in value:
            raise ValueError("an agent is a string or an object with an 'id'")
        return value["id"]
    return value


def _vote(value: object) -> int | None:
    """1 / 0 / null; JSON true / false and the floats 1.0 / 0.0 are read as 1 / 0."""
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float) and value in (0, 1):
        return int(value)
    raise ValueError(f"a vote is 1, 0 or null (true/false also accepted), got {value!r}")


AgentId = Annotated[str, BeforeValidator(_agent_id), Field(min_length=1, max_length=MAX_NAME_CHARS), NameCheck]
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS), NameCheck]
Vote = Annotated[int | None, BeforeValidator(_vote)]


def _check_theta(value: float) -> float:
    if not 0.0 < value <= 1.0:
        raise ValueError(f"must be greater than 0 and at most 1, got {value!r}")
    return value


def _check_tau(value: float) -> float:
    if not 0.5 < value <= 1.0:
        raise ValueError(f"must be greater than 0.5 and at most 1, got {value!r}")
    return value


def _check_weight(value: float) -> float:
    if not (value > 0.0 and math.isfinite(value)):
        raise ValueError(f"must be a positive finite number, got {value!r}")
    return value


# SPEC §1 ranges, as types (strict: a boolean or a string is not a number).
Theta = Annotated[float, Field(strict=True), AfterValidator(_check_theta)]  # (0, 1]
Tau = Annotated[float, Field(strict=True), AfterValidator(_check_tau)]  # (0.5, 1]
Weight = Annotated[float, Field(strict=True), AfterValidator(_check_weight)]  # > 0, finite


class Cluster(BaseModel):
    """One adversarial cluster. ``theta`` and ``weight`` default to the global theta and to 1."""

    model_config = ConfigDict(strict=True, frozen=True)

    name: Name
    agents: list[AgentId] = Field(max_length=MAX_CLASSIFY_AGENTS)
    theta: Theta | None = None
    weight: Weight | None = None

    @field_validator("agents")
    @classmethod
    def _agents_not_empty(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("empty")
        return value


class RcpSettings(BaseModel):
    """The thresholds of a classification, shared by the ``rwb classify rcp`` input and a run."""

    model_config = ConfigDict(strict=True)

    reference: NameStr | None = Field(None, max_length=MAX_NAME_CHARS, description="the reference cluster; default: the first")
    theta: Theta = DEFAULT_THETA
    tau: Tau = DEFAULT_TAU
    weighted: bool = False


class RcpOptions(RcpSettings):
    """An RCP run's options: the thresholds, and how the run asks for votes."""

    model_config = ConfigDict(strict=True, extra="forbid")

    ballot_mode: bool = Field(False, description="one ballot call per voter instead of one call per vote")
    refinement_rounds: int = Field(0, ge=0, le=MAX_REFINEMENT_ROUNDS)


class RcpConfig(RcpSettings):
    """The panel and thresholds: everything but the artifacts. Unknown keys are ignored."""

    model_config = ConfigDict(strict=True, frozen=True)

    clusters: list[Cluster] = Field(max_length=MAX_CLUSTERS)

    @field_validator("clusters")
    @classmethod
    def _clusters_not_empty(cls, value: list[Cluster]) -> list[Cluster]:
        if not value:
            raise ValueError("empty")
        return value

    # Resolved views (valid once check_config has passed).
    @property
    def names(self) -> list[str]:
        return [c.name for c in self.clusters]

    @property
    def reference_index(self) -> int:
        return 0 if self.reference is None else self.names.index(self.reference)

    @property
    def reference_name(self) -> str:
        return self.clusters[self.reference_index].name

    @property
    def thetas(self) -> list[float]:
        return [self.theta if c.theta is None else c.theta for c in self.clusters]

    @property
    def weights(self) -> list[float]:
        return [DEFAULT_WEIGHT if c.weight is None else c.weight for c in self.clusters]

    @property
    def agent_cluster(self) -> dict[str, int]:
        """Agent id -> index of its cluster."""
        return {a: i for i, c in enumerate(self.clusters) for a in c.agents}


class Artifact(BaseModel):
    """An artifact and its votes. ``author`` null or absent: from outside the panel."""

    model_config = ConfigDict(strict=True, frozen=True)

    id: Name
    author: NameStr | None = Field(None, max_length=MAX_NAME_CHARS)
    # one vote per agent at most: a longer object names agents that are not in the panel
    votes: dict[Annotated[str, Field(max_length=MAX_NAME_CHARS), NameCheck], Vote] = Field(
        default_factory=dict, max_length=MAX_CLASSIFY_AGENTS)


CLUSTER_KEYS = frozenset({"name", "agents", "theta", "weight"})
ARTIFACT_KEYS = frozenset({"id", "author", "votes", "text"})  # text: as an export carries it
# A run configuration may be passed as it is: its other keys are read elsewhere, not typos.
RUN_CONFIG_KEYS = frozenset({"protocol", "query", "seed", "dispatch", "providers", "label", "cache", "echo",
                             "notes", "ballot_mode", "refinement_rounds"})


class RcpInput(RcpConfig):
    """The whole ``rwb classify rcp`` input (SPEC §1). A key it does not know is refused with its
    path (a typo such as ``taus`` is never ignored), as in a run configuration: here by the
    model, in the clusters and artifacts by :func:`parse_input` (their models also read the panel
    of a run configuration, where other keys are at home)."""

    model_config = ConfigDict(strict=True, frozen=True)  # unknown keys: see parse_input

    artifacts: list[Artifact] = Field(max_length=MAX_ARTIFACTS)




def check_config(cfg: RcpConfig) -> None:
    """Cross-field rules pydantic cannot place on a field path; raises :class:`InputError`."""
    agents = sum(len(c.agents) for c in cfg.clusters)
    if agents > MAX_CLASSIFY_AGENTS:
        raise InputError("clusters", too_many(agents, MAX_CLASSIFY_AGENTS, "agents"))
    seen_names: dict[str, int] = {}
    owner: dict[str, int] = {}
    for i, cluster in enumerate(cfg.clusters):
        if cluster.name in seen_names:
            raise InputError(
                f"clusters[{i}].name",
                f"duplicate cluster name {cluster.name!r} (also clusters[{seen_names[cluster.name]}])",
            )
        seen_names[cluster.name] = i
        for j, agent in enumerate(cluster.agents):
            if agent in owner:
                where = cfg.clusters[owner[agent]].name
                raise InputError(
                    f"clusters[{i}].agents[{j}]",
                    f"agent {agent!r} is already in cluster {where!r}"
                    if owner[agent] != i
                    else f"agent {agent!r} is listed twice",
                )
            owner[agent] = i
    if cfg.reference is not None and cfg.reference not in seen_names:
        raise InputError("reference", f"no cluster named {cfg.reference!r}")


def check_artifacts(inp: RcpInput) -> None:
    """Authors, voters and ids of every artifact; raises :class:`InputError`."""
    agents = inp.agent_cluster
    cells = len(inp.artifacts) * len(agents)
    if cells > MAX_VOTE_CELLS:  # the engine's vote matrix is artifacts x agents
        raise InputError("artifacts", f"{too_many(len(inp.artifacts), MAX_VOTE_CELLS // max(len(agents), 1))} "
                         f"for a panel of {len(agents):,} agents: artifacts x agents is {cells:,}, "
                         f"at most {MAX_VOTE_CELLS:,}")
    seen_ids: dict[str, int] = {}
    for k, art in enumerate(inp.artifacts):
        if art.id in seen_ids:
            raise InputError(
                f"artifacts[{k}].id", f"duplicate artifact id {art.id!r} (also artifacts[{seen_ids[art.id]}])"
            )
        seen_ids[art.id] = k
        if art.author is not None and art.author not in agents:
            raise InputError(f"artifacts[{k}].author", f"{art.author!r} is not an agent of any cluster")
        for voter, value in art.votes.items():
            if voter not in agents:
                raise InputError(f"artifacts[{k}].votes.{voter}", f"{voter!r} is not an agent of any cluster")
            if voter == art.author and value is not None:
                raise InputError(
                    f"artifacts[{k}].votes.{voter}", "the author never votes on their own artifact"
                )


def _validate(model: type[RcpConfig], payload: object) -> RcpConfig:
    if not isinstance(payload, Mapping):
        raise InputError("", "the input must be a JSON object with 'clusters' and 'artifacts'")
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        if exc.errors()[0].get("type") in ("string_too_long", "too_long"):  # a limit: both sizes, in words
            raise input_error(exc) from None
        raise from_pydantic(exc) from None


def parse_input(payload: object) -> RcpInput:
    """Validate a decoded ``rwb classify rcp`` payload; any problem is an :class:`InputError`."""
    if isinstance(payload, Mapping):
        unknown = sorted(set(payload) - set(RcpInput.model_fields) - RUN_CONFIG_KEYS, key=str)
        if unknown:
            raise InputError(str(unknown[0]), "unknown key (check its spelling)")
        for field, allowed in (("clusters", CLUSTER_KEYS), ("artifacts", ARTIFACT_KEYS)):
            items = payload.get(field)
            for k, item in enumerate(items if isinstance(items, list) else []):
                unknown = sorted(set(item) - allowed, key=str) if isinstance(item, Mapping) else []
                if unknown:
                    raise InputError(f"{field}[{k}].{unknown[0]}", "unknown key (check its spelling)")
    inp = _validate(RcpInput, payload)
    assert isinstance(inp, RcpInput)
    check_config(inp)
    check_artifacts(inp)
    return inp


def parse_config(config: RcpConfig | Mapping[str, Any]) -> RcpConfig:
    """Accept a validated model or a payload (its ``artifacts``, if any, are not inspected)."""
    cfg = config if isinstance(config, RcpConfig) else _validate(RcpConfig, config)
    check_config(cfg)
    return cfg


# ---------------------------------------------------------------- configuration warnings


def tier_for(rho: float, reference_approves: bool, tau: float) -> str:
    """Algorithm 1 of the paper for one artifact, in order, with the SPEC §1 tolerance."""
    if rho >= tau - TOL:
        return "positive_consensus"
    if rho <= 1.0 - tau + TOL:
        return "negative_consensus"
    return "positive_polar" if reference_approves else "negative_polar"


def _subset_sums(weights: list[float]) -> list[float] | None:
    """Distinct sums over all subsets of ``weights`` (None when there are too many)."""
    sums = {0.0}
    for w in weights:
        sums |= {s + w for s in sums}
        sums = {round(s, 12) for s in sums}
        if len(sums) > _MAX_SUMS:
            return None
    return sorted(sums)


def achievable_ratios(cfg: RcpConfig) -> dict[bool, list[float]] | None:
    """Every resonance ratio an approval set can reach, split by whether it holds the reference.

    Any approval set is reachable with some votes (all 1 makes a cluster approve, all 0 makes it
    refuse, since theta is in (0, 1]). None when a weighted panel has too many subsets to list.
    """
    n, ref = len(cfg.clusters), cfg.reference_index
    if not cfg.weighted:
        return {True: [k / n for k in range(1, n + 1)], False: [k / n for k in range(n)]}
    weights = cfg.weights
    total = sum(weights)
    others = _subset_sums([w for i, w in enumerate(weights) if i != ref])
    if others is None:
        return None
    return {True: [(weights[ref] + s) / total for s in others], False: [s / total for s in others]}


def reachable_tiers(cfg: RcpConfig) -> set[str] | None:
    """The tiers this configuration can ever produce (None when unknown: too many weighted subsets)."""
    ratios = achievable_ratios(cfg)
    if ratios is None:
        return None
    return {tier_for(rho, ref_in, cfg.tau) for ref_in, values in ratios.items() for rho in values}


def _fmt_ratio(rho: float) -> str:
    frac = Fraction(rho).limit_denominator(1000)
    if abs(float(frac) - rho) < 1e-12 and frac.denominator > 1:
        return f"{frac.numerator}/{frac.denominator}"
    return f"{rho:.4g}"


def _polar_warning(cfg: RcpConfig) -> str | None:
    """Warn when no approval set lands in the polar band (both polar tiers empty).

    The two polar tiers are empty together or not at all: the band (1 - tau, tau) is symmetric
    about 1/2, and an approval set without the reference lies in it exactly when its complement,
    which holds the reference, does (rho of the complement is 1 - rho).
    """
    ratios = achievable_ratios(cfg)
    tiers = reachable_tiers(cfg)
    if ratios is None or tiers is None or {"positive_polar", "negative_polar"} & tiers:
        return None
    n, tau = len(cfg.clusters), cfg.tau
    values = sorted({round(r, 12) for vs in ratios.values() for r in vs})
    shown = [_fmt_ratio(v) for v in values]
    listed = ", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) <= 12 else f"{len(shown)} values"
    kind = "weighted resonance ratios" if cfg.weighted else "resonance ratios"
    return (
        f"tau = {tau:.4g} with {n} cluster{'s' if n != 1 else ''} leaves both polar tiers empty: "
        f"the achievable {kind} are {listed}, and none lies strictly between 1 - tau = {1 - tau:.4g} "
        f"and tau = {tau:.4g}, so every artifact is positive or negative consensus "
        "(the paper's §3.5: the protocol runs in binary mode)."
    )


def config_warnings(config: RcpConfig | Mapping[str, Any]) -> list[str]:
    """Legal but doubtful settings, in words (the CLI prints them on stderr, the GUI shows them).

    Raises :class:`InputError` if ``config`` itself is invalid.
    """
    cfg = parse_config(config)
    out: list[str] = []
    polar = _polar_warning(cfg)
    if polar:
        out.append(polar)
    for i, cluster in enumerate(cfg.clusters):
        if len(cluster.agents) < 2:
            out.append(
                f"clusters[{i}] {cluster.name!r} has {len(cluster.agents)} agent: the paper (§10.2) needs "
                "at least 2 agents per cluster for a meaningful approval rate, and recommends 3; on an "
                "artifact its only agent wrote, this cluster casts no vote and cannot approve."
            )
    if not cfg.weighted and any(c.weight not in (None, DEFAULT_WEIGHT) for c in cfg.clusters):
        out.append("cluster weights are ignored because 'weighted' is false: rho = |S| / n.")
    return out
