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

Each model is made from the registry (:mod:`workbench.core.registry`): the shared fields and the
protocol declaration's ``config``, so a plugin's protocol is configured like a built-in one.

Every model is strict (a boolean is not a number, a string is not a number) and refuses an
unknown key with its path, so a typo such as ``temprature`` is never ignored; free text goes under
``notes``. The cross-field rules (every agent's provider exists, cluster names and agents are
unique, the reference cluster exists, ...) are checked here too, so a configuration is refused
whole before anything is spent. A stored configuration (``runs.config_json``, a
``model_dump(mode="json", by_alias=True)``) parses back to the same configuration.
"""

from __future__ import annotations

import functools
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

from workbench.core.datasets import MAX_PATH_CHARS
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
from workbench.core.protocols.echo.config import EchoOptions, check_patterns
from workbench.core.protocols.rcp.config import RcpConfig, Theta, Weight, check_config
from workbench.core.protocols.shared.templates import MAX_TEMPLATE_CHARS
from workbench.core.protocols.shared.validation import NAMES_CHECKED, NameStr, input_error, shown
from workbench.core.runs.providers import MAX_PARAMS, Params, ProviderConfig, Sampling

MAX_PROMPT_STEPS = 50  # a config's template overrides: one per step
MAX_TEMPLATE_BYTES = 4 * MAX_TEMPLATE_CHARS  # a template file, in UTF-8
DISPATCH = "concurrent"  # a run's default dispatch; ARM's own default is its options' (sequential)


class AgentSpec(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    id: NameStr = Field(min_length=1, max_length=MAX_NAME_CHARS)
    provider: NameStr = Field(min_length=1, max_length=MAX_NAME_CHARS)
    persona: str = Field("", max_length=MAX_PERSONA_CHARS)
    role: NameStr | None = Field(None, max_length=MAX_NAME_CHARS)  # findings: scout | auditor | dev; ARM: alpha | beta | gamma | silent
    params: Params = Field(default_factory=dict, max_length=MAX_PARAMS)  # simulated-agent persona parameters
    sampling: Sampling | None = None  # overrides the provider's temperature, top_p, max_tokens, seed, stop


class ClusterSpec(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    name: NameStr = Field(min_length=1, max_length=MAX_NAME_CHARS)
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


class DatasetItem(BaseModel):
    """A question with its known answer (SPEC §8), as a run configuration holds it. A config file
    names it by id beside its ``dataset`` (``read_config_file`` reads the file and puts the item
    here), so a stored configuration is self-contained: it re-parses without the dataset file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    question: str
    answer: str | None = None
    answer_type: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _checked(cls, data: Any) -> Any:
        from workbench.core.datasets import item_from

        if isinstance(data, (str, int)) and not isinstance(data, bool):
            raise InputError("", "names an item of the dataset, which is read only from a config file (relative "
                                 "to its folder): run the file with rwb run, or give the item itself "
                                 "({\"id\", \"question\", \"answer\", \"answer_type\"})")
        if not isinstance(data, dict):
            raise InputError("", "must be an item's id (with dataset) or an object with id and question")
        return item_from(data, join=".").to_json()  # the dataset's own rules, field by field

    @property
    def truth(self) -> dict[str, str] | None:
        """What scoring and the simulated panel need (never a prompt): the answer and its type."""
        if self.answer is None:
            return None
        return {"item": self.id, "answer": self.answer, "answer_type": self.answer_type or "exact"}


class RunConfigBase(BaseModel):
    """The fields every run shares (SPEC §6), and the rules on the panel."""

    model_config = ConfigDict(strict=True, extra="forbid")
    needs_query: ClassVar[bool] = True

    protocol: str
    query: str = Field("", max_length=MAX_QUERY_CHARS)
    seed: int = Field(0, description=f"a whole number from {SEED_MIN} to 2**63 - 1")
    dispatch: Literal["sequential", "concurrent"] = DISPATCH
    providers: dict[NameStr, ProviderConfig] = Field(max_length=MAX_PROVIDERS)
    clusters: list[ClusterSpec] = Field(min_length=1, max_length=MAX_CLUSTERS)
    reference: NameStr | None = Field(None, max_length=MAX_NAME_CHARS)  # RCP's reference cluster, kept with any panel
    label: NameStr = Field("", max_length=MAX_NAME_CHARS)
    # SPEC §1: a run whose missing votes (invalid or failed, not abstentions) exceed this share of
    # those expected ends `degraded`, not `completed`.
    max_missing_share: float = Field(0.2, ge=0.0, le=1.0)
    budget: Budget | None = None  # a cap on what the run may spend (SPEC §6 "Budgets")
    cache: bool = False  # reuse identical replies (off for sampling studies; the sample index is in the key)
    echo: EchoOptions | None = None  # Resonance Echo around every agent (see echo.wrap)
    notes: str = Field("", max_length=MAX_NOTES_CHARS)  # free text: what the run is for, never sent to a model
    # SPEC §7: a named prompt set saved in the project, and single steps' templates over it (a
    # {"file": path} in a config file is read, relative to it, by read_config_file).
    prompt_set: NameStr | None = Field(None, max_length=MAX_NAME_CHARS)
    prompts: dict[NameStr, str] = Field(default_factory=dict, max_length=MAX_PROMPT_STEPS)
    # SPEC §8: a question with a known answer instead of a query. ``dataset`` is the file it came
    # from (relative to the config file; kept to say where the item came from), ``item`` the item
    # itself once read_config_file has looked it up there. Its question becomes the run's query.
    dataset: NameStr | None = Field(None, min_length=1, max_length=MAX_PATH_CHARS)
    item: DatasetItem | None = None

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

    @model_validator(mode="before")
    @classmethod
    def _question_of_item(cls, data: Any) -> Any:
        """A dataset item's question is the run's query (SPEC §8): another query beside it is
        refused. A configuration the workbench stored holds both, the query being the item's
        question, and re-parses."""
        if not isinstance(data, dict):
            return data
        item = data.get("item")
        if item is None:
            if data.get("dataset") is not None:
                raise InputError("item", "required with dataset: the id of the item to ask "
                                         "(a batch runs every item: batch.dataset)")
            return data
        question = item.get("question") if isinstance(item, dict) else None
        query = data.get("query")
        if query not in (None, "") and query != question:
            raise InputError("query", "a run asks a query or a dataset item, not both: remove one")
        return {**data, "query": question} if isinstance(question, str) else data

    @model_validator(mode="after")
    def _panel(self) -> RunConfigBase:
        if self.item is not None and not self.needs_query:
            raise InputError("item", f"a {self.protocol} run puts no question to its agents, so it takes no item")
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
        self._check_prompts()
        return self

    def _check_prompts(self) -> None:
        """Each override is a template its step can use (SPEC §7): a known step, valid syntax, only
        the step's variables, every required one; else exit 2 naming ``prompts.STEP``. Resonance
        Echo's steps are ``prompts.echo.STEP``, for a run that has ``echo``."""
        if not self.prompts:
            return
        from workbench.core import registry
        from workbench.core.protocols.echo.inject import rehearse
        from workbench.core.protocols.shared.declaration import check_overrides
        from workbench.core.runs.provenance import ECHO, ECHO_PREFIX, split_prompts

        own, echo = split_prompts(self.prompts)
        if echo and self.echo is None:
            raise InputError(f"prompts.{ECHO_PREFIX}{next(iter(echo))}",
                             'is a step of Resonance Echo, and this run has no "echo" object')
        groups = ((registry.get(self.protocol), own, ""), (registry.get(ECHO), echo, ECHO_PREFIX))
        for protocol, overrides, prefix in groups:
            try:
                check_overrides(protocol, overrides)
                if prefix:  # Echo renders some steps late (a restoration): render them once now
                    rehearse(overrides)
            except ValueError as exc:
                where, _, message = str(exc).partition(": ")
                raise InputError(where.replace("prompts.", f"prompts.{prefix}", 1), message) from None

    def _classification_panel(self) -> RcpConfig:
        clusters = [{"name": c.name, "agents": [a.id for a in c.agents],
                     **({"theta": c.theta} if c.theta is not None else {}),
                     **({"weight": c.weight} if c.weight is not None else {})} for c in self.clusters]
        return RcpConfig.model_validate({"clusters": clusters}, context=NAMES_CHECKED)  # checked as AgentSpec/ClusterSpec

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


# The run configuration of each registered protocol: the fields every run shares and the
# protocol's own (its declaration's ``config``), tagged by ``protocol``. Built from the registry
# on first use, so a plugin's protocol is configured like a built-in one.
RunConfig = RunConfigBase  # the type of any run configuration (each is a subclass)

# Keys every stored configuration carried before each protocol had its own model (one model held
# every protocol's fields, and dumped them all). A stored configuration may still hold them; a
# protocol never read another's, so they are dropped when a stored configuration is read back.
_LEGACY_KEYS = ("theta", "tau", "weighted", "ballot_mode", "refinement_rounds", "findings",
                "findings_from_run", "findings_tiers", "threshold", "question_id", "options",
                "consensus_threshold", "min_voters", "max_challenge_rounds", "arm")


@functools.cache
def _models() -> dict[str, type[RunConfigBase]]:
    from workbench.core import registry

    models = {}
    for name, protocol in registry.runnable().items():
        bases = (protocol.config, RunConfigBase) if protocol.config is not None else (RunConfigBase,)
        models[name] = type(f"RunConfig{name.title().replace('_', '')}", bases, {
            "__module__": __name__, "__doc__": f"A run of {protocol.title} ({name}).",
            "__annotations__": {"protocol": Literal[name]}, "needs_query": protocol.needs_query})
    return models


@functools.cache
def _adapter() -> TypeAdapter:
    members = tuple(_models().values())
    union = members[0] if len(members) == 1 else Union[members]  # noqa: UP007 - built at run time
    return TypeAdapter(Annotated[union, Field(discriminator="protocol")])


def model_for(protocol: str) -> type[RunConfigBase]:
    """The run configuration model of ``protocol`` (KeyError when none is registered)."""
    return _models()[protocol]


def protocol_names() -> tuple[str, ...]:
    return tuple(_models())


def __getattr__(name: str):
    # RunConfigRcp, RunConfigArm, ...: the built-in protocols' models, by the names they had.
    legacy = {"RunConfigRcp": "rcp", "RunConfigArm": "arm", "RunConfigFindings": "findings", "RunConfigCons": "cons"}
    if name in legacy:
        return model_for(legacy[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_run_config(data: object, *, stored: bool = False) -> RunConfig:
    """Validate a run configuration whole; any problem is an :class:`InputError` naming its field.

    ``stored``: ``data`` is a run's ``config_json``, possibly written by an earlier version (see
    ``_LEGACY_KEYS``)."""
    if not isinstance(data, dict):
        raise InputError("config", "a run configuration is a JSON object")
    models = _models()
    if stored and data.get("protocol") in models:
        fields = models[data["protocol"]].model_fields
        data = {k: v for k, v in data.items() if k in fields or k not in _LEGACY_KEYS}
    try:
        return _adapter().validate_python(data, context={"stored": stored})
    except ValidationError as exc:
        first = exc.errors()[0]
        if first["type"] in ("union_tag_invalid", "union_tag_not_found"):
            got = f", got {shown(data['protocol'])}" if "protocol" in data else ""
            raise InputError("protocol", f"must be one of {', '.join(models)}{got}") from None
        raise _as_written(input_error(exc, clean=_without_tag), data) from None


def _as_written(error: InputError, data: dict) -> InputError:
    """An error in a flat ``agents`` list (the answer protocols', SPEC §8), named as the config
    wrote it: the list became the panel's one cluster, so pydantic names ``clusters[0].agents``."""
    if "agents" not in data or "clusters" in data:
        return error
    for made in ("clusters[0].agents", "clusters[0]"):
        if error.field == made or error.field.startswith((made + ".", made + "[")):
            return InputError("agents" + error.field[len(made):], error.message)
    return error


def _without_tag(loc: list) -> list:
    """A member of the tagged union puts the tag first in an error's location: not a key."""
    return loc[1:] if loc and loc[0] in _models() else loc


def _yaml_problem(exc: Exception) -> str:
    """A YAML error's problem and where it is, without PyYAML's quote of the line: that line may
    hold a key pasted by mistake (SPEC §11), and the quote would print it."""
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None)
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if not problem:  # a ReaderError: a character YAML refuses, by its code and position only
        return str(exc)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else problem


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
            raise InputError(path.name, f"not valid YAML: {_yaml_problem(exc)}") from None
        except RecursionError:
            raise InputError(path.name, "nests too deeply") from None
        check_json(data, path.name)  # depth, and values counted through YAML aliases
    else:
        try:
            data = decode_json(text, path.name)
        except json.JSONDecodeError as exc:
            raise InputError(path.name, f"not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    return with_files_read(data, path.parent)


def with_files_read(data: object, folder: Path) -> object:
    """``data`` with the files it names read, each path relative to ``folder`` (the config file's),
    so what is stored needs no file again: each ``prompts.STEP`` given as ``{"file": path}``
    replaced by that file's text (SPEC §7), and a ``dataset``'s ``item`` (an id) replaced by the
    item, a ``batch.dataset``'s items put in ``batch.items`` (SPEC §8)."""
    return _templates_read(_datasets_read(data, folder), folder)


def _datasets_read(data: object, folder: Path) -> object:
    from workbench.core.datasets import dataset_items, find_item

    if not isinstance(data, dict):
        return data
    item, dataset = data.get("item"), data.get("dataset")
    if isinstance(dataset, str) and isinstance(item, (str, int)) and not isinstance(item, bool):
        found = find_item(dataset_items(folder, dataset, "dataset"), str(item), dataset)
        data = {**data, "item": found.to_json()}
    batch = data.get("batch")
    if isinstance(batch, dict) and isinstance(batch.get("dataset"), str) and "items" not in batch:
        items = dataset_items(folder, batch["dataset"], "batch.dataset")
        data = {**data, "batch": {**batch, "items": [i.to_json() for i in items]}}
    return data


def _templates_read(data: object, folder: Path) -> object:
    prompts = data.get("prompts") if isinstance(data, dict) else None
    if not isinstance(prompts, dict) or not any(isinstance(v, dict) for v in prompts.values()):
        return data
    read = {}
    for step, value in prompts.items():
        if isinstance(value, dict):
            if set(value) != {"file"} or not isinstance(value["file"], str):
                raise InputError(f"prompts.{step}", 'a template is its text, or {"file": "path"}')
            read[step] = _template_file(folder / value["file"], f"prompts.{step}.file")
        else:
            read[step] = value
    return {**data, "prompts": read}


def _template_file(path: Path, where: str) -> str:
    try:
        if path.exists() and not path.is_file():
            raise InputError(where, f"{path} is not a regular file")
        check_bytes(path.stat().st_size, where, MAX_TEMPLATE_BYTES)
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(where, f"no such file: {path}") from None
    except UnicodeDecodeError as exc:
        raise InputError(where, f"{path.name} is not UTF-8 text (byte {exc.start})") from None


def protocol_generator(cfg: RunConfig, *, run_id: str | None = None, issue_marker=None, prompts=None):
    """The protocol's step generator for this configuration, wrapped in Resonance Echo when the
    configuration asks for it (``issue_marker(key) -> Marker`` gives each agent its markers).
    ``prompts`` (:class:`~workbench.core.runs.provenance.RunPrompts`): the run's templates, Echo's
    among them (``.echo``); by default the protocols', with the config's ``prompts`` over them."""
    from workbench.core.runs.provenance import prompts_for

    prompts = prompts or prompts_for(cfg)
    gen = _protocol_generator(cfg, prompts)
    if cfg.echo is not None:
        from workbench.core.protocols.echo.wrap import with_echo

        gen = with_echo(gen, cfg, run_id=run_id, issue_marker=issue_marker, prompts=getattr(prompts, "echo", None))
    return gen


def _protocol_generator(cfg: RunConfig, prompts):
    from workbench.core import registry

    return registry.get(cfg.protocol).generator(cfg, prompts)
