"""CONS models (SPEC §3): ballots, the question, and the shapes of conflicts and escalations.

Input models validate CONS-001..003 and refuse bad input with an :class:`InputError` that names
the field (``votes[1].rationale: required (CONS-002)``). Python attributes are snake_case; the
JSON keys are the seed's camelCase (``agentId``, ``consensusThreshold``); both are accepted.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from workbench.core.errors import InputError, from_pydantic
from workbench.core.limits import (
    MAX_BALLOTS,
    MAX_EVIDENCE,
    MAX_NAME_CHARS,
    MAX_OPTIONS,
    MAX_QUERY_CHARS,
    MAX_RATIONALE_CHARS,
    MAX_SUPPLIED_CONFLICTS,
    check_name,
    too_long,
    too_many,
)
from workbench.core.protocols.cons.config import (
    DEFAULT_CONSENSUS_THRESHOLD,
    DEFAULT_COUNT_THRESHOLD,
    DEFAULT_MAX_CHALLENGE_ROUNDS,
    DEFAULT_MIN_VOTERS,
    MinVoters,
    Rounds,
    Threshold,
)
from workbench.core.protocols.shared.validation import plain_message, shown

Vote = Literal["accept", "reject", "abstain"]
Verdict = Literal["PROVEN", "REFUTED", "CONTESTED", "INSUFFICIENT_EVIDENCE"]
ConflictType = Literal["contradiction", "partial-overlap", "scope-difference", "priority-difference"]
Severity = Literal["critical", "high", "medium", "low"]
NextAction = Literal["none", "challenge_round", "escalate_to_human", "request_investigation"]
EscalationReason = Literal[
    "contested_verdict", "critical_conflict", "insufficient_evidence", "suspicious_unanimity"
]

VOTES: tuple[str, ...] = ("accept", "reject", "abstain")
VERDICTS: tuple[str, ...] = ("PROVEN", "REFUTED", "CONTESTED", "INSUFFICIENT_EVIDENCE")
COUNTER_PROOF = "counter-proof"
TOL = 1e-9  # every threshold comparison allows this much float error

# The CONS rule a missing key breaks, for the "required (CONS-00x)" messages.
_REQUIRED_RULE = {"agentId": "CONS-001", "option": "CONS-001", "vote": "CONS-001",
                  "rationale": "CONS-002", "confidence": "CONS-003"}


def _show(value: object) -> str:
    """A value as JSON, for a message; a huge one is never serialised whole."""
    return shown(value, 200)


def _text(value: object, rule: str = "", limit: int = MAX_NAME_CHARS) -> str:
    """Non-blank text of at most ``limit`` characters, stripped."""
    tag = f" ({rule})" if rule else ""
    if value is None:
        raise ValueError(f"required{tag}")
    if not isinstance(value, str):
        raise ValueError(f"must be text{tag}, got {_show(value)[:60]}")
    if len(value) > limit:
        raise ValueError(too_long(len(value), limit))
    if not value.strip():
        raise ValueError(f"required{tag}")
    return value.strip()


def _name(value: object, rule: str = "") -> str:
    """An id or a name: :func:`_text` with no control character (SPEC §11)."""
    return check_name(_text(value, rule))


def _unit(value: object, rule: str = "") -> float:
    """A confidence: a finite number in [0, 1]; booleans and strings refused, naming the CONS rule."""
    tag = f" ({rule})" if rule else ""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) \
            or not 0.0 <= value <= 1.0:
        raise ValueError(f"must be a number in [0, 1]{tag}, got {_show(value)}")
    return float(value)


def norm_evidence_type(value: str) -> str:
    """Evidence types compare lowercased, trimmed, with ``_`` and spaces read as ``-``."""
    return value.strip().lower().replace("_", "-").replace(" ", "-")


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")


class Evidence(BaseModel):
    """One citation: ``{file, section, type, ...}``; extra keys (url, line, ...) are kept."""

    model_config = ConfigDict(extra="allow", frozen=True)

    file: str | None = Field(None, max_length=MAX_RATIONALE_CHARS)
    section: str | None = Field(None, max_length=MAX_RATIONALE_CHARS)
    type: str

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, v: object) -> str:
        return _text(v)  # model-written: text, not an id (shown escaped)

    @property
    def is_counter_proof(self) -> bool:
        return norm_evidence_type(self.type) == COUNTER_PROOF


class Ballot(_Model):
    """One agent's position on one option (CONS-001..003)."""

    agent_id: str
    option: str
    vote: Vote
    confidence: float
    rationale: str
    evidence: tuple[Evidence, ...] = ()

    @field_validator("agent_id", "option", mode="before")
    @classmethod
    def _ids(cls, v: object) -> str:
        return _name(v, "CONS-001")

    @field_validator("vote", mode="before")
    @classmethod
    def _vote(cls, v: object) -> str:
        if isinstance(v, str) and v.strip().lower() in VOTES:
            return v.strip().lower()
        if v is None:
            raise ValueError("required (CONS-001)")
        raise ValueError(f"must be accept, reject or abstain (CONS-001), got {_show(v)}")

    @field_validator("confidence", mode="before")
    @classmethod
    def _confidence(cls, v: object) -> float:
        if v is None:
            raise ValueError("required (CONS-003)")
        return _unit(v, "CONS-003")

    @field_validator("rationale", mode="before")
    @classmethod
    def _rationale(cls, v: object) -> str:
        return _text(v, "CONS-002", MAX_RATIONALE_CHARS)

    @field_validator("evidence", mode="before")
    @classmethod
    def _evidence(cls, v: object) -> object:
        if v is None:
            return ()
        if not isinstance(v, (list, tuple)):
            raise ValueError(f"must be a list of evidence objects, got {_show(v)[:60]}")
        if len(v) > MAX_EVIDENCE:
            raise ValueError(too_many(len(v), MAX_EVIDENCE))
        return v

    @property
    def has_evidence(self) -> bool:
        return bool(self.evidence)

    @property
    def has_counter_proof(self) -> bool:
        return any(e.is_counter_proof for e in self.evidence)


class Position(_Model):
    """One side's stance in a conflict, as in the seed: agentId, position, confidence."""

    agent_id: str
    position: str
    confidence: float

    @field_validator("agent_id", mode="before")
    @classmethod
    def _t(cls, v: object) -> str:
        return _name(v)

    @field_validator("position", mode="before")
    @classmethod
    def _p(cls, v: object) -> str:
        return _text(v, limit=MAX_RATIONALE_CHARS)

    @field_validator("confidence", mode="before")
    @classmethod
    def _c(cls, v: object) -> float:
        return _unit(v, "CONS-003")


class SuppliedConflict(_Model):
    """A conflict the ballots cannot show (e.g. scope-difference), given with the input."""

    conflict_type: ConflictType
    positions: tuple[Position, ...] = Field(max_length=MAX_BALLOTS)
    severity: Severity | None = None  # None: computed by the documented rule

    @model_validator(mode="after")
    def _sides(self) -> SuppliedConflict:
        if len({p.position for p in self.positions}) < 2:
            raise InputError("positions", "a conflict needs at least two different positions")
        return self


class ConsQuestion(_Model):
    """The SPEC §3 input: the question, its settings and the standing ballots."""

    question_id: str
    question: str
    options: tuple[str, ...] | None = None  # None: derived from the votes, first seen first
    single_claim: bool | None = None  # None: true exactly when there is one option
    consensus_threshold: Threshold = DEFAULT_CONSENSUS_THRESHOLD
    count_threshold: Threshold = DEFAULT_COUNT_THRESHOLD
    min_voters: MinVoters = DEFAULT_MIN_VOTERS
    challenge_rounds: Rounds = 0
    max_challenge_rounds: Rounds = DEFAULT_MAX_CHALLENGE_ROUNDS
    votes: tuple[Ballot, ...] = Field(max_length=MAX_BALLOTS)
    conflicts: tuple[SuppliedConflict, ...] = Field((), max_length=MAX_SUPPLIED_CONFLICTS)

    @field_validator("question_id", mode="before")
    @classmethod
    def _t(cls, v: object) -> str:
        return _name(v)

    @field_validator("question", mode="before")
    @classmethod
    def _q(cls, v: object) -> str:
        return _text(v, limit=MAX_QUERY_CHARS)

    @field_validator("options", mode="before")
    @classmethod
    def _opts(cls, v: object) -> object:
        if v is None:
            return None
        if not isinstance(v, (list, tuple)):
            raise ValueError(f"must be a list of option names, got {_show(v)[:60]}")
        if len(v) > MAX_OPTIONS:
            raise ValueError(too_many(len(v), MAX_OPTIONS))
        return tuple(_name(o) if isinstance(o, str) else o for o in v)

    @field_validator("single_claim", mode="before")
    @classmethod
    def _sc(cls, v: object) -> object:
        if v is not None and not isinstance(v, bool):
            raise ValueError(f"must be true, false or null, got {_show(v)}")
        return v

    @field_validator("votes", "conflicts", mode="before")
    @classmethod
    def _lists(cls, v: object) -> object:
        if not isinstance(v, (list, tuple)):
            raise ValueError(f"must be a list, got {_show(v)[:60]}")
        return v

    @model_validator(mode="after")
    def _cross(self) -> ConsQuestion:
        if self.options is not None:
            seen: dict[str, int] = {}
            for j, o in enumerate(self.options):
                if o in seen:
                    raise InputError(f"options[{j}]", f"duplicate option {_show(o)}")
                seen[o] = j
        else:
            derived = len(self.option_order())
            if derived > MAX_OPTIONS:
                raise InputError("votes", f"names too many options ({derived:,}; at most {MAX_OPTIONS:,})")
        allowed = frozenset(self.options) if self.options is not None else None
        first: dict[tuple[str, str], int] = {}
        for j, b in enumerate(self.votes):
            if allowed is not None and b.option not in allowed:
                raise InputError(f"votes[{j}].option", f"unknown option {_show(b.option)}; "
                                 f"options are {_show(list(self.options))}")
            key = (b.agent_id, b.option)
            if key in first:
                raise InputError(f"votes[{j}]", f"duplicate ballot: agent {_show(b.agent_id)} already "
                                 f"voted on option {_show(b.option)} at votes[{first[key]}]")
            first[key] = j
        if self.single_claim and len(self.option_order()) > 1:
            raise InputError("singleClaim", "a single-claim question has exactly one option, "
                             f"found {len(self.option_order())}")
        return self

    def option_order(self) -> tuple[str, ...]:
        """Explicit options, else the options of the ballots in first-seen order."""
        if self.options is not None:
            return self.options
        return tuple(dict.fromkeys(b.option for b in self.votes))

    def is_single_claim(self) -> bool:
        if self.single_claim is not None:
            return self.single_claim
        return len(self.option_order()) == 1


def to_input_error(exc: ValidationError) -> InputError:
    """The first problem of a pydantic error as an :class:`InputError` naming its field."""
    first = exc.errors()[0]
    base = from_pydantic(exc)
    original = (first.get("ctx") or {}).get("error")
    if isinstance(original, InputError):
        path = base.field
        if original.field:
            sep = "" if original.field.startswith("[") or not path else "."
            path = f"{path}{sep}{original.field}"
        return InputError(path, original.message)
    if first.get("type") == "missing":
        rule = _REQUIRED_RULE.get(str(first["loc"][-1]))
        return InputError(base.field, f"required ({rule})" if rule else "required")
    if first.get("type") == "extra_forbidden":
        return InputError(base.field, "unknown key (check its spelling)")
    if first.get("type") in ("model_type", "model_attributes_type", "dict_type"):
        return InputError(base.field, f"must be a JSON object, got {_show(first.get('input'))}")
    return InputError(base.field, plain_message(first))


def parse_question(payload: object) -> ConsQuestion:
    """Validate a SPEC §3 payload (a dict, as parsed from JSON) into a :class:`ConsQuestion`."""
    if isinstance(payload, ConsQuestion):
        return payload
    if not isinstance(payload, dict):
        raise InputError("", f"the input must be a JSON object, got {_show(payload)[:60]}")
    try:
        return ConsQuestion.model_validate(payload)
    except ValidationError as exc:
        raise to_input_error(exc) from None


def parse_ballots(items: object, field: str = "votes") -> tuple[Ballot, ...]:
    """Validate a list of ballot dicts (e.g. one challenge round's new ballots)."""
    if not isinstance(items, (list, tuple)):
        raise InputError(field, f"must be a list, got {_show(items)[:60]}")
    if len(items) > MAX_BALLOTS:
        raise InputError(field, too_many(len(items), MAX_BALLOTS))
    out = []
    for j, item in enumerate(items):
        if isinstance(item, Ballot):
            out.append(item)
            continue
        if not isinstance(item, dict):
            raise InputError(f"{field}[{j}]", f"must be a JSON object, got {_show(item)[:60]}")
        try:
            out.append(Ballot.model_validate(item))
        except ValidationError as exc:
            err = to_input_error(exc)
            raise InputError(f"{field}[{j}].{err.field}" if err.field else f"{field}[{j}]",
                             err.message) from None
    return tuple(out)
