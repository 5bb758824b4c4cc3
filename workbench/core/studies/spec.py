"""A study file (SPEC §9): read, its arms resolved, and every arm's run configuration checked
before anything is spent.

::

    {"study": "theta and strictness", "base": "rcp-sim.json", "dataset": "items.jsonl",
     "replicates": 10, "baseline": "as configured",
     "arms": [{"name": "as configured"},
              {"name": "two of three", "set": {"theta": 0.6666666667}},
              {"name": "stricter critics", "patch": [{"op": "replace",
                 "path": "/clusters/1/agents/0/params/strictness", "value": 0.6}]}],
     "budget": {"max_usd": 5}}

- ``base``: a run configuration, a path relative to the study file or inline; its own files
  (prompt templates, a dataset item) are read relative to its folder. A batch is not a base.
- An arm's ``set`` is a JSON Merge Patch (RFC 7396, :mod:`.merge_patch`) and its ``patch`` a JSON
  Patch (RFC 6902, the ``jsonpatch`` library), applied in that order over the base. ``tags`` label
  the arm (``{"contaminated": true}``); ``notes`` are free text.
- An arm that switches ``protocol`` drops the base's keys the new protocol does not take (θ, τ,
  weights...), listed in its ``dropped``; a key the arm writes itself is never dropped, so a config
  written by hand stays strict.
- ``dataset`` (relative to the study file) gives the items; without it the base's question (its
  ``query``, or its dataset ``item``) is the one item.
- Pairing: replicate r of every arm runs with seed ``base seed + r``; an arm cannot change the seed.
- ``baseline`` names the arm the others are compared with (default: the first).

Every refusal is an :class:`InputError` naming the arm (``arms[2] (stricter critics): ...``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from workbench.core.errors import InputError
from workbench.core.limits import (
    MAX_NAME_CHARS,
    MAX_NOTES_CHARS,
    MAX_PATCH_OPS,
    MAX_STUDY_ARMS,
    MAX_STUDY_REPLICATES,
    MAX_STUDY_RUNS,
    MAX_STUDY_TAGS,
    SEED_MAX,
    too_many,
)
from workbench.core.protocols.shared.validation import NameStr, input_error
from workbench.core.runs.config import Budget, DatasetItem, RunConfig, parse_run_config
from workbench.core.studies.merge_patch import merge_patch
from workbench.core.studies.paths import changed_paths, split, without

DEFAULT_ITEM = "Q1"  # the one item of a study without a dataset: the base's own question
QUESTION_KEYS = ("query", "item", "dataset")  # what a dataset's items replace in the base
Tag = bool | int | float | Annotated[str, Field(max_length=MAX_NAME_CHARS)]


class ArmSpec(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    name: NameStr = Field(min_length=1, max_length=MAX_NAME_CHARS)
    set: dict[str, Any] | None = None
    patch: list[Any] | None = Field(None, max_length=MAX_PATCH_OPS)
    tags: dict[NameStr, Tag] = Field(default_factory=dict, max_length=MAX_STUDY_TAGS)
    notes: str = Field("", max_length=MAX_NOTES_CHARS)


class StudySpec(BaseModel):
    """The study file as stored: ``base`` inline and the dataset's items read into ``items``."""

    model_config = ConfigDict(strict=True, extra="forbid")

    study: NameStr = Field("", max_length=MAX_NAME_CHARS)
    base: dict[str, Any]
    dataset: str | None = Field(None, min_length=1, max_length=4_096)
    items: list[DatasetItem] | None = Field(None, min_length=1, max_length=MAX_STUDY_RUNS)
    replicates: int = Field(1, ge=1, le=MAX_STUDY_REPLICATES)
    baseline: NameStr | None = Field(None, max_length=MAX_NAME_CHARS)
    arms: list[ArmSpec] = Field(min_length=1, max_length=MAX_STUDY_ARMS)
    budget: Budget | None = None
    notes: str = Field("", max_length=MAX_NOTES_CHARS)

    @model_validator(mode="after")
    def _names(self) -> StudySpec:
        seen: dict[str, int] = {}
        for i, arm in enumerate(self.arms):
            if arm.name in seen:
                raise InputError(f"arms[{i}].name", f"duplicate arm name {arm.name!r} (also arms[{seen[arm.name]}])")
            seen[arm.name] = i
        if self.dataset is not None and self.items is None:
            raise InputError("dataset", "is read only from a study file (relative to its folder): run the file, "
                                        "or give the items themselves in items")
        return self


# ----- reading ----------------------------------------------------------------------------------------

def read_study_file(path: Path | str) -> dict:
    """The study file's document with every file it names read (the base, the dataset, the base's
    own templates and item), so the stored study needs no file again. Not yet validated."""
    from workbench.core.runs.config import read_config_file

    path = Path(path)
    data = read_config_file(path)  # JSON or YAML, bounded, FIFOs refused
    return with_study_files_read(data, path.parent, default_name=path.stem)


def with_study_files_read(data: object, folder: Path, *, default_name: str = "") -> dict:
    from workbench.core.datasets import dataset_items
    from workbench.core.runs.config import read_config_file, with_files_read

    if not isinstance(data, dict):
        raise InputError("study", "a study file is a JSON object with base and arms")
    data = dict(data)
    if "batch" in data or "protocol" in data:
        raise InputError("study", "this is a run configuration, not a study file (a study has base and arms): "
                                  "run it with rwb run")
    base = data.get("base")
    if isinstance(base, str):
        data["base"] = read_config_file(_inside(folder, base, "base"))
    elif isinstance(base, dict):
        data["base"] = with_files_read(base, folder)
    elif base is None:
        raise InputError("base", "required: the run configuration the arms change (a path, or the object itself)")
    else:
        raise InputError("base", "must be a path to a run configuration, or the configuration itself")
    if isinstance(data.get("dataset"), str) and "items" not in data:
        data["items"] = [i.to_json() for i in dataset_items(folder, data["dataset"], "dataset")]
    if not data.get("study") and default_name:
        data["study"] = default_name
    return data


def _inside(folder: Path, name: str, where: str) -> Path:
    if not name.strip():
        raise InputError(where, "is an empty path")
    return folder / name


# ----- resolving --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StudyItem:
    id: str
    keys: dict  # what a run config takes to ask it: {"query": "", "item": {...}} or {} (the base's own)


@dataclass(frozen=True)
class Arm:
    index: int
    name: str
    document: dict  # the arm's run configuration, before an item and a seed are put in it
    protocol: str
    changes: tuple[str, ...]  # the JSON Pointers where it differs from the base
    dropped: tuple[str, ...] = ()  # the base's keys its protocol does not take
    tags: dict = field(default_factory=dict)
    notes: str = ""
    source: str | None = None  # a rule-only arm: the arm whose calls it re-classifies

    @property
    def rule_only(self) -> bool:
        return self.source is not None

    def to_json(self) -> dict:
        return {"name": self.name, "protocol": self.protocol, "changes": list(self.changes),
                "dropped": list(self.dropped), "tags": dict(self.tags), "rule_only_of": self.source}


@dataclass(frozen=True)
class Study:
    name: str
    document: dict  # the study as stored (base and items inline)
    arms: tuple[Arm, ...]
    items: tuple[StudyItem, ...]
    replicates: int
    baseline: str
    seed: int  # the base's: replicate r runs with seed + r
    budget: dict | None
    label: str  # the base's label (each run's keeps it, followed by its place in the study)

    def arm(self, name: str) -> Arm:
        return next(a for a in self.arms if a.name == name)

    @property
    def runs(self) -> int:
        return len(self.arms) * len(self.items) * self.replicates

    def base_document(self, item: StudyItem, replicate: int = 0) -> dict:
        """The base as a run of ``item`` and ``replicate`` (what every arm's changes are from)."""
        base = self.document["base"]
        base = {k: v for k, v in base.items() if k not in QUESTION_KEYS} if item.keys else base
        return {**base, **item.keys, "seed": self.seed + replicate}

    def document_of(self, arm: Arm, item: StudyItem, replicate: int) -> dict:
        return {**arm.document, **item.keys, "seed": self.seed + replicate}

    def config(self, arm: Arm, item: StudyItem, replicate: int) -> RunConfig:
        return parse_run_config(self.document_of(arm, item, replicate))

    def label_of(self, arm: Arm, item: StudyItem, replicate: int) -> str:
        place = f"{arm.name} · {item.id} · rep {replicate}"  # replicates count from 0 (SPEC §9)
        return f"{self.label} · {place}" if self.label else place

    def units(self) -> Iterator[tuple[int, StudyItem, Arm]]:
        """Every (replicate, item, arm), in the order a study runs them: replicate by replicate, so
        a study stopped half way holds whole pairs."""
        for r in range(self.replicates):
            for item in self.items:
                for arm in self.arms:
                    yield r, item, arm

    def plan(self) -> dict:
        """What ``studies.plan_json`` keeps: the arms as resolved."""
        return {"baseline": self.baseline, "replicates": self.replicates, "seed": self.seed,
                "items": [i.id for i in self.items], "arms": [a.to_json() for a in self.arms]}


def parse_study(data: object) -> Study:
    """The study resolved: every arm's configuration built and checked as a run configuration for
    every item (exit 2 naming the arm), the baseline found, the rule-only arms told apart."""
    if not isinstance(data, dict):
        raise InputError("study", "a study file is a JSON object with base and arms")
    try:
        spec = StudySpec.model_validate(data)
    except ValidationError as exc:
        raise input_error(exc) from None
    base = spec.base
    if "batch" in base:
        raise InputError("base", "is a batch configuration; a study's base is one run configuration")
    items = _items(spec)
    seed = base.get("seed", 0)
    if isinstance(seed, int) and not isinstance(seed, bool) and seed + spec.replicates - 1 > SEED_MAX:
        raise InputError("replicates", f"with {spec.replicates:,} replicates the last seed would be "
                         f"{seed + spec.replicates - 1:,}, past the largest, {SEED_MAX:,}")
    total = len(spec.arms) * len(items) * spec.replicates
    if total > MAX_STUDY_RUNS:
        raise InputError("arms", too_many(total, MAX_STUDY_RUNS, "runs (arms x items x replicates)"))
    baseline = spec.baseline or spec.arms[0].name
    if baseline not in {a.name for a in spec.arms}:
        raise InputError("baseline", f"no arm named {baseline!r} (arms: {', '.join(a.name for a in spec.arms)})")
    arms = [_arm(i, a, base, items) for i, a in enumerate(spec.arms)]
    arms = _with_sources(arms, baseline, items[0])
    label = str(base.get("label") or spec.study or "").strip()
    return Study(spec.study, data, tuple(arms), tuple(items), spec.replicates, baseline,
                 int(seed) if isinstance(seed, int) else 0,
                 spec.budget.model_dump(exclude_none=True) if spec.budget is not None else None, label)


def _items(spec: StudySpec) -> list[StudyItem]:
    if spec.items is not None:
        seen: set[str] = set()
        out = []
        for k, item in enumerate(spec.items):
            if item.id in seen:
                raise InputError(f"items[{k}].id", f"duplicate item id {item.id!r}")
            seen.add(item.id)
            keys = {"query": "", "item": item.model_dump(exclude_none=True)}
            if spec.dataset:
                keys["dataset"] = spec.dataset
            out.append(StudyItem(item.id, keys))
        return out
    item = spec.base.get("item")
    name = item.get("id") if isinstance(item, dict) and isinstance(item.get("id"), str) else DEFAULT_ITEM
    return [StudyItem(name, {})]


def _arm(index: int, spec: ArmSpec, base: dict, items: list[StudyItem]) -> Arm:
    where = f"arms[{index}] ({spec.name})"
    document = copy.deepcopy(base)
    try:
        if spec.set is not None:
            document = merge_patch(document, spec.set)
        if spec.patch is not None:
            document = _json_patch(document, spec.patch, where)
        if not isinstance(document, dict):
            raise InputError("", "the patched configuration is not a JSON object")
        written = _written(spec)
        if "seed" in written or document.get("seed") != base.get("seed"):
            raise InputError("seed", "an arm cannot change the seed: replicate r of every arm runs with seed "
                                     "base seed + r, so that arms are compared on the same seeds")
        if items[0].keys:  # a dataset's items replace the base's own question
            base = _without_question(base)
            document = _without_question(document)
        document, dropped = _dropped(document, base, written)
        for item in items:  # every item's run config, valid before anything is spent
            parse_run_config({**document, **item.keys})
    except InputError as exc:
        raise InputError(where, str(exc)) from None
    return Arm(index, spec.name, document, str(document.get("protocol")), tuple(changed_paths(base, document)),
               tuple(dropped), dict(spec.tags), spec.notes)


def _without_question(document: dict) -> dict:
    return {k: v for k, v in document.items() if k not in QUESTION_KEYS}


def _json_patch(document: dict, patch: list, where: str) -> object:
    import jsonpatch
    import jsonpointer

    try:
        return jsonpatch.JsonPatch(patch).apply(document)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
        raise InputError("patch", f"cannot be applied: {exc}") from None
    except (TypeError, KeyError, ValueError, AttributeError, IndexError) as exc:
        raise InputError("patch", f"is not a JSON Patch (RFC 6902: a list of {{op, path, ...}}): {exc}") from None


def _written(spec: ArmSpec) -> set[str]:
    """The top-level keys the arm writes itself (its ``set``, its patch's paths)."""
    keys = set(spec.set or {})
    for op in spec.patch or []:
        for key in ("path", "from"):
            parts = split(op.get(key, "")) if isinstance(op, dict) and isinstance(op.get(key), str) else ()
            if parts:
                keys.add(parts[0])
    return keys


def _dropped(document: dict, base: dict, written: set[str]) -> tuple[dict, list[str]]:
    """An arm that switches protocol drops the base's keys the new protocol does not take (SPEC §8)."""
    from workbench.core.runs.config import model_for

    protocol = document.get("protocol")
    if protocol == base.get("protocol") or not isinstance(protocol, str):
        return document, []
    try:
        fields = model_for(protocol).model_fields
    except KeyError:
        return document, []  # refused by the run config's own check, naming the protocols
    taken = {f.alias or name for name, f in fields.items()}
    dropped = [k for k in document if k not in taken and k in base and k not in written]
    return {k: v for k, v in document.items() if k not in dropped}, dropped


def _with_sources(arms: list[Arm], baseline: str, first: StudyItem) -> list[Arm]:
    """Each rule-only arm's source: the arm it equals but for the settings its protocol declares
    as classification rules (the baseline first, else the earliest such arm that runs)."""
    from workbench.core import registry

    def neutral(arm: Arm):
        declared = registry.get(arm.protocol).metrics
        rules = declared.rules if declared is not None else ()
        if not rules:
            return None
        dump = parse_run_config({**arm.document, **first.keys}).model_dump(mode="json", by_alias=True)
        return without(dump, rules)

    keys = {a.name: neutral(a) for a in arms}
    order = sorted(arms, key=lambda a: (a.name != baseline, a.index))
    runs: list[Arm] = []
    out = {}
    for arm in order:
        twin = next((r for r in runs if keys[arm.name] is not None and keys[r.name] == keys[arm.name]), None)
        out[arm.name] = twin.name if twin is not None else None
        if twin is None:
            runs.append(arm)
    return [Arm(a.index, a.name, a.document, a.protocol, a.changes, a.dropped, a.tags, a.notes, out[a.name])
            for a in arms]
