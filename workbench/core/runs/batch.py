"""Batches for studies: question set × provider mix × replicates, from one configuration.

A batch configuration is a run configuration with a ``batch`` section::

    {"protocol": "arm", ..., "batch": {"name": "mesh study", "questions": ["Q1", "Q2"],
     "provider_mixes": [{"name": "all-sim", "providers": {"*": "sim"}},
                        {"name": "mixed", "providers": {"alpha": "local", "*": "sim"}}],
     "replicates": 3}}

A batch may take its questions from a dataset instead (SPEC §8): ``"batch": {"dataset":
"items.jsonl", ...}`` runs each item (its id in the run's label), the file read relative to the
config file by ``read_config_file``, which puts the items in ``batch.items`` (stored with the
batch, so a resumed batch needs no file).

A mix maps agent ids (or ARM roles) to provider names, ``*`` for every other agent. Replicate
``r`` of every question and mix uses seed ``seed + r``, so mixes are compared on the same
seeds (a paired design). A protocol's configuration may place each run in its batch: when its
model has ``in_batch(index)``, run ``index`` (from 0) is configured by it (ARM's: the provider
playing the silent baseline takes turns over the batch's providers, its rotating baseline).

Budgets (SPEC §6): beside ``batch``, ``budget`` caps the whole batch (all its runs' spend together)
and ``run_budget`` caps each run (it becomes every run's own ``budget``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from workbench.core.datasets import MAX_PATH_CHARS
from workbench.core.errors import InputError
from workbench.core.limits import (
    MAX_BATCH_MIXES,
    MAX_BATCH_QUESTIONS,
    MAX_BATCH_RUNS,
    MAX_NAME_CHARS,
    MAX_QUERY_CHARS,
    MAX_RUN_AGENTS,
    SEED_MAX,
    too_many,
)
from workbench.core.protocols.shared.validation import NameCheck, NameStr, input_error
from workbench.core.runs.config import Budget, DatasetItem, RunConfig, parse_run_config

MAX_REPLICATES = 1000
Name = Annotated[str, Field(max_length=MAX_NAME_CHARS), NameCheck]


class ProviderMix(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    name: NameStr = Field(min_length=1, max_length=MAX_NAME_CHARS)
    providers: dict[Name, Name] = Field(default_factory=dict, max_length=MAX_RUN_AGENTS + 1)


class BatchSpec(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    name: NameStr = Field("", max_length=MAX_NAME_CHARS)
    questions: list[Annotated[str, Field(max_length=MAX_QUERY_CHARS)]] = Field(
        default_factory=list, max_length=MAX_BATCH_QUESTIONS)  # empty: the base config's query
    # SPEC §8: the questions of a dataset, one run per item. ``dataset`` is the file (relative to
    # the config file), ``items`` what read_config_file read from it (or items given inline).
    dataset: NameStr | None = Field(None, min_length=1, max_length=MAX_PATH_CHARS)
    items: list[DatasetItem] | None = Field(None, min_length=1, max_length=MAX_BATCH_RUNS)
    provider_mixes: list[ProviderMix] = Field(default_factory=list, max_length=MAX_BATCH_MIXES)  # empty: as configured
    replicates: int = Field(1, ge=1, le=MAX_REPLICATES)

    @model_validator(mode="after")
    def _one_source_of_questions(self) -> BatchSpec:
        if self.dataset is not None and self.items is None:
            raise InputError("dataset", "is read only from a config file (relative to its folder): run the "
                                        "file with rwb run, or give the items themselves in batch.items")
        if self.items is not None and self.questions:
            raise InputError("questions", "a batch takes its questions from a list or from a dataset, not both")
        return self


@dataclass(frozen=True)
class BatchRun:
    config: RunConfig
    label: str
    replicate: int


def is_batch(data: object) -> bool:
    return isinstance(data, dict) and "batch" in data


BATCH_KEYS = ("batch", "budget", "run_budget")  # a batch document's own keys, beside a run's


def batch_budget(data: dict) -> Budget | None:
    """The cap on the whole batch (its ``budget``), or None."""
    return _budget(data, "budget")


def _budget(data: dict, key: str) -> Budget | None:
    if data.get(key) is None:
        return None
    try:
        return Budget.model_validate(data[key])
    except ValidationError as exc:
        raise input_error(exc, key) from None


def expand_batch(data: dict) -> tuple[BatchSpec, list[BatchRun]]:
    try:
        spec = BatchSpec.model_validate(data["batch"])
    except ValidationError as exc:
        raise input_error(exc, "batch") from None
    batch_budget(data)
    run_budget = _budget(data, "run_budget")
    base = {k: v for k, v in data.items() if k not in BATCH_KEYS}
    if run_budget is not None:  # each run's own cap
        base["budget"] = run_budget.model_dump(exclude_none=True)
    questions = _questions(spec, base)
    first = parse_run_config({**base, **questions[0][1]})  # the base must be a valid run on its own
    clusters = first_clusters(base, first)
    base = {k: v for k, v in base.items() if k != "agents"}  # a flat list of agents is now its cluster
    mixes = spec.provider_mixes or [ProviderMix(name="as configured")]
    total = len(questions) * len(mixes) * spec.replicates
    if total > MAX_BATCH_RUNS:
        raise InputError("batch", too_many(total, MAX_BATCH_RUNS, "runs (questions x provider mixes x replicates)"))
    if first.seed + spec.replicates - 1 > SEED_MAX:  # replicate r runs with seed + r
        raise InputError("seed", f"with {spec.replicates:,} replicates the last seed would be "
                         f"{first.seed + spec.replicates - 1:,}, past the largest, {SEED_MAX:,}")
    runs: list[BatchRun] = []
    # A run keeps the label it was configured with, and says where it sits in the batch.
    configured = str(base.get("label") or spec.name or "").strip()
    for name, question in questions:
        for mix in mixes:
            for r in range(spec.replicates):
                data_r = {**base, **question, "seed": int(base.get("seed", 0)) + r,
                          "clusters": _with_mix(clusters, mix, f"batch.provider_mixes[{mix.name}]")}
                cfg = parse_run_config(data_r)
                position = f"{name} · {mix.name} · rep {r + 1}"
                runs.append(BatchRun(cfg, f"{configured} · {position}" if configured else position, r))
    return spec, [_placed(run, index) for index, run in enumerate(runs)]


def _questions(spec: BatchSpec, base: dict) -> list[tuple[str, dict]]:
    """Each run's question as (its name in the run's label, the config keys that ask it): the
    batch's questions (Q1, Q2...), or a dataset's items (by id), else the base's own query."""
    if spec.items is not None:
        for key in ("query", "item"):
            if base.get(key) not in (None, ""):
                raise InputError(key, "a batch over a dataset asks each of its items: remove the base's " + key)
        return [(item.id, {"query": "", "item": item.model_dump(exclude_none=True)}) for item in spec.items]
    if spec.questions:
        return [(f"Q{i + 1}", {"query": q}) for i, q in enumerate(spec.questions)]
    return [("Q1", {})]  # the base's own question: a query, or an item


def first_clusters(base: dict, first: RunConfig) -> list[dict]:
    """The panel as the base gives it, clusters (a protocol may take a flat ``agents`` list: its
    first parsed config says which clusters that made)."""
    if isinstance(base.get("clusters"), list):
        return base["clusters"]
    return [c.model_dump(mode="json", exclude_none=True) for c in first.clusters]


def _with_mix(clusters: list[dict], mix: ProviderMix, where: str) -> list[dict]:
    if not mix.providers:
        return clusters
    out = []
    for cluster in clusters:
        agents = []
        for agent in cluster["agents"]:
            key = agent["id"] if agent["id"] in mix.providers else agent.get("role") if agent.get("role") in mix.providers else "*"
            provider = mix.providers.get(key, agent["provider"])
            agents.append({**agent, "provider": provider})
        out.append({**cluster, "agents": agents})
    return out


def _placed(run: BatchRun, index: int) -> BatchRun:
    """The run as its protocol configures the ``index``-th run of a batch (its config model's
    ``in_batch``, when it has one; most protocols have none: the run is as expanded)."""
    in_batch = getattr(run.config, "in_batch", None)
    return run if in_batch is None else BatchRun(in_batch(index), run.label, run.replicate)
