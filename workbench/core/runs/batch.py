"""Batches for studies: question set × provider mix × replicates, from one configuration.

A batch configuration is a run configuration with a ``batch`` section::

    {"protocol": "arm", ..., "batch": {"name": "mesh study", "questions": ["Q1", "Q2"],
     "provider_mixes": [{"name": "all-sim", "providers": {"*": "sim"}},
                        {"name": "mixed", "providers": {"alpha": "local", "*": "sim"}}],
     "replicates": 3}}

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

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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
from workbench.core.runs.config import Budget, RunConfig, parse_run_config

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
    provider_mixes: list[ProviderMix] = Field(default_factory=list, max_length=MAX_BATCH_MIXES)  # empty: as configured
    replicates: int = Field(1, ge=1, le=MAX_REPLICATES)


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
    first = parse_run_config(base)  # the base must be a valid run on its own
    questions = spec.questions or [base.get("query", "")]
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
    for qi, question in enumerate(questions):
        for mix in mixes:
            for r in range(spec.replicates):
                data_r = {**base, "query": question, "seed": int(base.get("seed", 0)) + r,
                          "clusters": _with_mix(base["clusters"], mix, f"batch.provider_mixes[{mix.name}]")}
                cfg = parse_run_config(data_r)
                position = f"Q{qi + 1} · {mix.name} · rep {r + 1}"
                runs.append(BatchRun(cfg, f"{configured} · {position}" if configured else position, r))
    return spec, [_placed(run, index) for index, run in enumerate(runs)]


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
