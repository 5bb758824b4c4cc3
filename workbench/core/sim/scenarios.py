"""The scenario bank of the simulated panel: the readable material sim composes its replies from.

The bank lives in ``resources/sim_scenarios.json``. Each :class:`Scenario` is one question with
statements (each with a stance in [0, 1]: 0 firmly against, 1 firmly for), the one-sentence
positions an answer opens with, assumptions, challenges, CONS options, findings with their ground
truth, or an Echo session's work. A scenario names the protocols it is written for; the
``generic`` entry is a template (``{question}``, ``{option}``, ``{claim}``) used for any
question the bank does not know, so sim stays coherent on questions nobody wrote material for.

Matching (:meth:`ScenarioBank.find`): the question (or an alias) appears word for word in the
text, else the closest question by word overlap (Jaccard of words of 3+ letters >= 0.6), else
the generic template filled with the question.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from workbench.core.errors import InputError, from_pydantic
from workbench.core.resources import resource_path

Protocol = Literal["rcp", "arm", "cons", "findings", "echo"]
PROTOCOLS: tuple[str, ...] = ("rcp", "arm", "cons", "findings", "echo")
VERDICTS: tuple[str, ...] = ("yes", "no", "conditional")
POSITION_STANCE = {"yes": 0.85, "no": 0.15, "conditional": 0.5}  # the stance a position sentence carries
BANK_FILE = "sim_scenarios.json"
FUZZY_MIN = 0.6
_WORD = re.compile(r"[a-z0-9]{3,}")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _unit(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"must be a number from 0 to 1, got {value!r}")
    return float(value)


class Statement(_Model):
    text: str = Field(min_length=1)
    stance: float  # 0 = firmly against the proposal, 1 = firmly for it

    @field_validator("stance", mode="before")
    @classmethod
    def _stance(cls, v: object) -> float:
        return _unit(v)


class EvidenceRef(_Model):
    type: str = Field(min_length=1)  # code | doc | test | counter-proof
    file: str = Field(min_length=1)
    section: str = ""


class Option(_Model):
    name: str = Field(min_length=1)
    support: float  # how well the evidence supports it, 0..1
    stance: float = 0.5  # where it sits between the two camps, for stance-driven voters
    reasons: list[str] = Field(min_length=2)
    objections: list[str] = Field(default_factory=list)
    evidence: list[EvidenceRef] = Field(min_length=1)
    counter_proof: EvidenceRef | None = None

    @field_validator("support", "stance", mode="before")
    @classmethod
    def _units(cls, v: object) -> float:
        return _unit(v)


class FindingItem(_Model):
    id: str = Field(min_length=1)
    claim: str = Field(min_length=1)
    truth: bool | None  # the ground truth; None only in the generic template
    context: dict = Field(default_factory=dict)
    for_reasons: list[str] = Field(min_length=1)
    against_reasons: list[str] = Field(min_length=1)


class EchoTurn(_Model):
    query: str = Field(min_length=1)
    points: list[str] = Field(min_length=1)


class EchoMaterial(_Model):
    persona: str = Field(min_length=1)
    active_tasks: list[str] = Field(default_factory=list)
    settled_decisions: list[str] = Field(default_factory=list)
    turns: list[EchoTurn] = Field(min_length=1)


class Scenario(_Model):
    id: str = Field(min_length=1)
    protocols: list[Protocol] = Field(min_length=1)
    title: str = ""
    question: str = Field(min_length=1)
    aliases: list[str] = Field(default_factory=list)
    notes: str = ""
    positions: dict[Literal["yes", "no", "conditional"], list[str]] = Field(default_factory=dict)
    statements: list[Statement] = Field(default_factory=list)
    assumptions: list[Statement] = Field(default_factory=list)
    challenges: list[Statement] = Field(default_factory=list)
    values: list[str] = Field(default_factory=list)  # [the value behind a yes, the value behind a no]
    frame_lean: dict[str, float] = Field(default_factory=dict)  # frame -> stance shift
    disagreement: Literal["values", "reasoning", "information"] = "reasoning"
    options: list[Option] = Field(default_factory=list)
    findings: list[FindingItem] = Field(default_factory=list)
    echo: EchoMaterial | None = None

    @model_validator(mode="after")
    def _complete(self) -> Scenario:
        need = []
        if {"rcp", "arm"} & set(self.protocols):
            if any(not self.positions.get(v) for v in VERDICTS):
                need.append("positions for yes, no and conditional")
            if len(self.statements) < 4:
                need.append("at least 4 statements")
        if "arm" in self.protocols and (len(self.assumptions) < 3 or len(self.challenges) < 2):
            need.append("at least 3 assumptions and 2 challenges")
        if "cons" in self.protocols and not self.options:
            need.append("at least one option")
        if "findings" in self.protocols and not self.findings:
            need.append("at least one finding")
        if "echo" in self.protocols and self.echo is None:
            need.append("an echo section")
        if need:
            raise ValueError(f"scenario {self.id!r} needs " + ", ".join(need))
        return self

    def phrases(self) -> list[tuple[str, float]]:
        """Every sentence whose presence in a text reveals a stance: positions and statements."""
        out = [(text, POSITION_STANCE[v]) for v in VERDICTS for text in self.positions.get(v, [])]
        return out + [(s.text, s.stance) for s in self.statements]

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if norm(o.name) == norm(name)), None)


def norm(text: str) -> str:
    """Lowercase, single spaces, no trailing full stop: how sentences are compared."""
    return " ".join(text.lower().split()).rstrip(".")


def words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else 0.0


def _fill(value: object, subs: dict[str, str]) -> object:
    if isinstance(value, str):
        for key, sub in subs.items():
            value = value.replace("{" + key + "}", sub)
        return value
    if isinstance(value, list):
        return [_fill(v, subs) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, subs) for k, v in value.items()}
    return value


class ScenarioBank:
    """The scenarios plus the generic template, with matching by question text."""

    def __init__(self, scenarios: list[Scenario], generic: dict):
        ids = [s.id for s in scenarios]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise InputError("scenarios", f"duplicate scenario id(s): {', '.join(dupes)}")
        self.scenarios = scenarios
        self.generic_template = generic
        self.fill_generic("A test question?")  # the template must produce a valid scenario

    @classmethod
    def from_json(cls, data: dict) -> ScenarioBank:
        if not isinstance(data, dict) or "scenarios" not in data or "generic" not in data:
            raise InputError("", "a scenario bank is a JSON object with 'generic' and 'scenarios'")
        scenarios = []
        for i, item in enumerate(data["scenarios"]):
            try:
                scenarios.append(Scenario.model_validate(item))
            except ValidationError as exc:
                err = from_pydantic(exc)
                raise InputError(f"scenarios[{i}].{err.field}".rstrip("."), err.message) from None
        return cls(scenarios, data["generic"])

    @classmethod
    def load(cls, path: str | Path | None = None) -> ScenarioBank:
        """The bank in ``path``, or the repository's ``resources/sim_scenarios.json``."""
        file = Path(path) if path is not None else resource_path(BANK_FILE)
        return cls.from_json(json.loads(file.read_text(encoding="utf-8")))

    def for_protocol(self, protocol: str) -> list[Scenario]:
        return [s for s in self.scenarios if protocol in s.protocols]

    def get(self, scenario_id: str) -> Scenario:
        for s in self.scenarios:
            if s.id == scenario_id:
                return s
        raise KeyError(scenario_id)

    def fill_generic(self, question: str, *, options: Iterable[str] = (), claim: str = "") -> Scenario:
        """The generic template as a scenario about ``question`` (deterministic in its inputs)."""
        q = " ".join(question.split()) or "the question"
        data = _fill(self.generic_template, {"question": q, "claim": claim or q})
        opts = list(options)
        if opts:
            (template,) = data["options"]
            data["options"] = [_fill(template, {"option": o}) | {"name": o, **_option_tilt(q, o)} for o in opts]
        else:
            data["options"] = [_fill(data["options"][0], {"option": "The proposal"})]
        digest = hashlib.sha256(f"{q}|{'|'.join(opts)}|{claim}".encode()).hexdigest()[:8]
        data.update(id=f"generic-{digest}", question=q)
        try:
            return Scenario.model_validate(data)
        except ValidationError as exc:
            err = from_pydantic(exc)
            raise InputError(f"generic.{err.field}".rstrip("."), err.message) from None

    def find(self, text: str, protocol: str | None = None, *, question: str | None = None) -> Scenario | None:
        """The bank scenario ``text`` is about, or None. ``question`` (the question as extracted
        from the prompt) is used for the fuzzy match; the exact match searches all of ``text``."""
        haystack = norm(text)
        ranked = sorted(self.scenarios, key=lambda s: protocol not in s.protocols)  # the protocol's own first
        for s in ranked:
            if any(norm(q) and norm(q) in haystack for q in [s.question, *s.aliases]):
                return s
        target = words(question if question is not None else text)
        best, score = None, 0.0
        for s in ranked:
            for q in [s.question, *s.aliases]:
                j = jaccard(target, words(q))
                if j > score + 1e-12:
                    best, score = s, j
        return best if score >= FUZZY_MIN else None

    def find_finding(self, claim: str) -> tuple[Scenario, FindingItem] | None:
        """The bank finding whose claim is ``claim`` (exactly, else by word overlap >= 0.6)."""
        target, best, score = norm(claim), None, 0.0
        for s in self.scenarios:
            for f in s.findings:
                if norm(f.claim) == target:
                    return s, f
                j = jaccard(words(claim), words(f.claim))
                if j > score + 1e-12:
                    best, score = (s, f), j
        return best if score >= FUZZY_MIN else None

    def find_echo_turn(self, query: str) -> tuple[Scenario, EchoTurn] | None:
        target, best, score = norm(query), None, 0.0
        for s in self.scenarios:
            for t in (s.echo.turns if s.echo else []):
                if norm(t.query) and norm(t.query) in target:
                    return s, t
                j = jaccard(words(query), words(t.query))
                if j > score + 1e-12:
                    best, score = (s, t), j
        return best if score >= FUZZY_MIN else None


def _option_tilt(question: str, option: str) -> dict:
    """A deterministic support and stance for an option the bank does not know, from its name."""
    h = int(hashlib.sha256(f"{question}|{option}".encode()).hexdigest()[:8], 16)
    return {"support": round(0.4 + (h % 1000) / 1000 * 0.3, 3), "stance": round(((h >> 10) % 1000) / 1000, 3)}


_DEFAULT: ScenarioBank | None = None


def default_bank() -> ScenarioBank:
    """The repository's bank, loaded once."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = ScenarioBank.load()
    return _DEFAULT
