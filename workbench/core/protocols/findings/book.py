"""Consensus Server findings engine (SPEC §2): confidence-weighted votes on findings.

Pure logic, no I/O. The maths lives in :func:`consensus` (and its step generator :func:`replay`);
:class:`FindingsBook` is a thin in-memory aggregate over it that a SQLite-backed store or an MCP
server can reuse; :func:`classify_payload` is the ``rwb classify findings`` contract.

Rules, with the decisions SPEC §2 leaves open (see docs/protocols.md (findings section)):

- confirm = +1, challenge = -1, uncertain = 0; confidence is a finite number in [0, 1].
- Votes are chronological in the order given. An agent's later vote replaces its earlier one;
  every vote stays in the history.
- ``k`` counts agents whose latest vote is not uncertain; ``voting_agents`` are exactly those
  agents, in the order of their first vote.
- ``score = fsum(direction * confidence) / k``: fsum is exactly rounded, so the score does not
  depend on vote order. The score is output unrounded.
- ``confirmed`` when ``score >= threshold - 1e-9``, else ``challenged``; ``k == 0`` gives
  ``pending`` with a null score.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from workbench.core.errors import InputError, field_path
from workbench.core.limits import (
    MAX_CLAIM_CHARS,
    MAX_COUNT,
    MAX_FINDING_VOTES,
    MAX_FINDINGS,
    MAX_NAME_CHARS,
    MAX_RATIONALE_CHARS,
    check_context,
    check_name,
    check_text,
    too_long,
    too_many,
)
from workbench.core.protocols.findings.config import DEFAULT_THRESHOLD, THRESHOLD_RANGE
from workbench.core.protocols.shared.validation import plain_message

#: Scores within this distance below the threshold still count as reaching it.
TOLERANCE = 1e-9


class VoteType(StrEnum):
    CONFIRM = "confirm"
    CHALLENGE = "challenge"
    UNCERTAIN = "uncertain"

    @property
    def direction(self) -> int:
        return _DIRECTIONS[self]


_DIRECTIONS = {VoteType.CONFIRM: 1, VoteType.CHALLENGE: -1, VoteType.UNCERTAIN: 0}
_VOTE_TYPES = ", ".join(t.value for t in VoteType)


class FindingStatus(StrEnum):
    CONFIRMED = "confirmed"
    CHALLENGED = "challenged"
    PENDING = "pending"


#: The status vocabulary, in the order the GUI lists it.
STATUSES: tuple[str, ...] = tuple(s.value for s in FindingStatus)


def _number(value: object, low: int, high: int) -> float:
    """A finite real number (not a bool, not a string) in [low, high], as float; else ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"must be a number, not {_describe(value)}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"must be a finite number, not {value!r}")
    if not low <= number <= high:
        raise ValueError(f"must be between {low} and {high}, not {value!r}")
    return number


def _check_confidence(value: object) -> float:
    return _number(value, 0, 1)


def _check_threshold_value(value: object) -> float:
    return _number(value, *THRESHOLD_RANGE)


def check_threshold(value: object, field: str = "threshold") -> float:
    """A finite number in [-1, 1], or :class:`InputError` naming ``field``."""
    try:
        return _check_threshold_value(value)
    except ValueError as exc:
        raise InputError(field, str(exc)) from None


def _limited(value: object, limit: int) -> object:
    """A string of at most ``limit`` characters (its type is checked by the field itself)."""
    if isinstance(value, str) and len(value) > limit:
        raise ValueError(too_long(len(value), limit))
    return value


def _check_name(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"must be a string, not {_describe(value)}")
    check_text(value, MAX_NAME_CHARS, "")
    name = value.strip()
    if not name:
        raise ValueError("must not be empty")
    return check_name(name)  # SPEC §11: no control character in an id


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Real):
        return "a number"
    names = {str: "a string", list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


class Vote(BaseModel):
    """One agent's vote on a finding. ``timestamp``, ``sequence``, ``client`` and ``source`` are
    carried for stores and MCP clients; they never reorder votes (list order is chronological)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str
    vote_type: VoteType
    confidence: float
    reason: str = ""
    timestamp: datetime | None = None
    sequence: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    client: str | None = None
    source: str | None = None

    @field_validator("agent", mode="before")
    @classmethod
    def _agent(cls, value: object) -> str:
        return _check_name(value)

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, value: object) -> object:
        return "" if value is None else _limited(value, MAX_RATIONALE_CHARS)

    @field_validator("client", "source", mode="before")
    @classmethod
    def _names(cls, value: object) -> object:
        return _limited(value, MAX_NAME_CHARS)

    @field_validator("vote_type", mode="before")
    @classmethod
    def _vote_type(cls, value: object) -> VoteType:
        if isinstance(value, VoteType):
            return value
        if isinstance(value, str):
            try:
                return VoteType(value.strip().lower())
            except ValueError:
                pass
        shown = repr(value) if isinstance(value, str) else _describe(value)
        raise ValueError(f"unknown vote_type {shown}; expected one of {_VOTE_TYPES}")

    @field_validator("confidence", mode="before")
    @classmethod
    def _confidence(cls, value: object) -> float:
        return _check_confidence(value)

    @property
    def direction(self) -> int:
        return self.vote_type.direction

    @property
    def weight(self) -> float:
        """Signed contribution ``direction * confidence`` (0 for uncertain)."""
        return self.direction * self.confidence


class Finding(BaseModel):
    """A claim under review with its full vote history (chronological). ``threshold`` overrides the
    book's or payload's threshold for this finding when set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    claim: str = ""
    context: dict[str, Any] = Field(default_factory=dict)
    votes: tuple[Vote, ...] = Field((), max_length=MAX_FINDING_VOTES)
    threshold: float | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, value: object) -> str:
        return _check_name(value)

    @field_validator("claim", mode="before")
    @classmethod
    def _claim(cls, value: object) -> object:
        return _limited(value, MAX_CLAIM_CHARS)

    @field_validator("context")
    @classmethod
    def _context(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_context(value, "")  # sent to every voter, like the claim
        return value

    @field_validator("threshold", mode="before")
    @classmethod
    def _threshold(cls, value: object) -> float | None:
        return None if value is None else _check_threshold_value(value)


class ConsensusResult(BaseModel):
    """The state of one set of votes. ``latest_votes`` holds each agent's latest vote (uncertain
    included) in first-vote order; ``voting_agents`` are the ``k`` agents counted in the score."""

    model_config = ConfigDict(frozen=True)

    consensus_score: float | None
    status: FindingStatus
    threshold: float
    k: int
    voting_agents: tuple[str, ...]
    uncertain_agents: tuple[str, ...]
    latest_votes: tuple[Vote, ...]
    votes_total: int
    weighted_sum: float


class FindingResult(ConsensusResult):
    """A :class:`ConsensusResult` for a named finding."""

    id: str
    claim: str = ""

    def to_output(self) -> dict[str, Any]:
        """The ``rwb classify findings`` entry: the SPEC keys first, then extras."""
        return {
            "id": self.id,
            "consensus_score": self.consensus_score,
            "status": self.status.value,
            "voting_agents": list(self.voting_agents),
            "k": self.k,
            "uncertain_agents": list(self.uncertain_agents),
            "votes_total": self.votes_total,
            "threshold": self.threshold,
        }


def status_for(score: float | None, threshold: float = DEFAULT_THRESHOLD) -> FindingStatus:
    """``pending`` for no score; ``confirmed`` when ``score >= threshold - TOLERANCE``."""
    if score is None:
        return FindingStatus.PENDING
    if score >= threshold - TOLERANCE:
        return FindingStatus.CONFIRMED
    return FindingStatus.CHALLENGED


def _tally(latest: Mapping[str, Vote], threshold: float, votes_total: int) -> ConsensusResult:
    counted = [v for v in latest.values() if v.vote_type is not VoteType.UNCERTAIN]
    k = len(counted)
    # fsum is exactly rounded, so the total does not depend on the order of the votes (and it
    # never returns -0.0, so a lone challenge at confidence 0 scores a plain 0.0).
    weighted_sum = math.fsum(v.weight for v in counted)
    score = weighted_sum / k if k else None
    return ConsensusResult(
        consensus_score=score,
        status=status_for(score, threshold),
        threshold=threshold,
        k=k,
        voting_agents=tuple(v.agent for v in counted),
        uncertain_agents=tuple(
            v.agent for v in latest.values() if v.vote_type is VoteType.UNCERTAIN
        ),
        latest_votes=tuple(latest.values()),
        votes_total=votes_total,
        weighted_sum=weighted_sum,
    )


def _as_votes(votes: Iterable[Vote | Mapping[str, Any]], field: str) -> list[Vote]:
    out = []
    for i, vote in enumerate(votes):
        out.append(vote if isinstance(vote, Vote) else _validate(Vote, vote, f"{field}[{i}]"))
    return out


def replay(
    votes: Iterable[Vote | Mapping[str, Any]], threshold: float = DEFAULT_THRESHOLD
) -> Iterator[ConsensusResult]:
    """Yield the consensus after each vote in turn (a step generator for the GUI and tests)."""
    threshold = check_threshold(threshold)
    latest: dict[str, Vote] = {}
    for n, vote in enumerate(_as_votes(votes, "votes"), start=1):
        # Assigning to an existing key keeps its first-vote position in the dict.
        latest[vote.agent] = vote
        yield _tally(latest, threshold, n)


def consensus(
    votes: Iterable[Vote | Mapping[str, Any]], threshold: float = DEFAULT_THRESHOLD
) -> ConsensusResult:
    """The consensus of a chronological vote history (SPEC §2). Plain mappings are validated."""
    threshold = check_threshold(threshold)
    history = _as_votes(votes, "votes")
    latest: dict[str, Vote] = {}
    for vote in history:
        latest[vote.agent] = vote
    return _tally(latest, threshold, len(history))


def evaluate(finding: Finding, threshold: float = DEFAULT_THRESHOLD) -> FindingResult:
    """The result of one finding; its own ``threshold`` wins over ``threshold``."""
    effective = threshold if finding.threshold is None else finding.threshold
    result = consensus(finding.votes, effective)
    return FindingResult(id=finding.id, claim=finding.claim, **dict(result))


class FindingsBook:
    """Findings and their votes, in memory. Results are computed on demand from each agent's
    latest vote, so a threshold change re-classifies everything, and a vote costs O(agents), not
    O(history). Queues list findings in creation order. A finding holds at most
    :data:`~workbench.core.limits.MAX_FINDING_VOTES` votes."""

    def __init__(self, threshold: float = DEFAULT_THRESHOLD, findings: Iterable[Finding] = ()):
        self._threshold = check_threshold(threshold)
        self._findings: dict[str, Finding] = {}  # each without its votes, which live below
        self._votes: dict[str, list[Vote]] = {}  # the history, chronological
        self._latest: dict[str, dict[str, Vote]] = {}  # agent -> latest vote, in first-vote order
        for finding in findings:
            self._add(finding)

    @property
    def threshold(self) -> float:
        return self._threshold

    @threshold.setter
    def threshold(self, value: float) -> None:
        self._threshold = check_threshold(value)

    def __len__(self) -> int:
        return len(self._findings)

    def __contains__(self, finding_id: object) -> bool:
        return finding_id in self._findings

    def create_finding(
        self,
        finding_id: str,
        claim: str = "",
        context: Mapping[str, Any] | None = None,
        threshold: float | None = None,
    ) -> Finding:
        context = {} if context is None else context
        data = {"id": finding_id, "claim": claim, "context": context, "threshold": threshold}
        return self._add(_validate(Finding, data, ""))

    def _add(self, finding: Finding) -> Finding:
        if finding.id in self._findings:
            raise InputError("id", f"duplicate finding id {finding.id!r}")
        self._findings[finding.id] = finding.model_copy(update={"votes": ()})
        self._votes[finding.id] = list(finding.votes)
        latest: dict[str, Vote] = {}
        for vote in finding.votes:
            latest[vote.agent] = vote  # an existing key keeps its first-vote position
        self._latest[finding.id] = latest
        return finding

    def _get(self, finding_id: str) -> Finding:
        try:
            return self._findings[finding_id]
        except (KeyError, TypeError):
            raise InputError("finding_id", f"no finding with id {finding_id!r}") from None

    def _result(self, finding: Finding) -> FindingResult:
        effective = self._threshold if finding.threshold is None else finding.threshold
        result = _tally(self._latest[finding.id], effective, len(self._votes[finding.id]))
        return FindingResult(id=finding.id, claim=finding.claim, **dict(result))

    def submit_vote(self, finding_id: str, vote: Vote | Mapping[str, Any]) -> FindingResult:
        """Append ``vote`` to the finding's history and return the updated result."""
        finding = self._get(finding_id)
        if not isinstance(vote, Vote):
            vote = _validate(Vote, vote, "vote")
        history = self._votes[finding.id]
        if len(history) >= MAX_FINDING_VOTES:
            raise InputError("vote", f"finding {finding.id!r} already holds {len(history):,} votes, "
                                     f"the most a finding may hold")
        history.append(vote)
        self._latest[finding.id][vote.agent] = vote
        return self._result(finding)

    def set_finding_threshold(self, finding_id: str, threshold: float | None) -> FindingResult:
        """Override (or, with None, clear) one finding's threshold."""
        finding = self._get(finding_id)
        value = None if threshold is None else check_threshold(threshold)
        self._findings[finding.id] = finding.model_copy(update={"threshold": value})
        return self.results(finding_id)

    def finding(self, finding_id: str) -> Finding:
        """A deep copy, so callers cannot change the book's context dict behind its back."""
        finding = self._get(finding_id)
        return finding.model_copy(update={"votes": tuple(self._votes[finding.id])}, deep=True)

    def results(self, finding_id: str) -> FindingResult:
        return self._result(self._get(finding_id))

    def history(self, finding_id: str) -> tuple[Vote, ...]:
        return tuple(self._votes[self._get(finding_id).id])

    def all_results(self) -> list[FindingResult]:
        return [self._result(f) for f in self._findings.values()]

    def _with_status(self, status: FindingStatus) -> list[FindingResult]:
        return [r for r in self.all_results() if r.status is status]

    def confirmed(self) -> list[FindingResult]:
        return self._with_status(FindingStatus.CONFIRMED)

    def challenged(self) -> list[FindingResult]:
        return self._with_status(FindingStatus.CHALLENGED)

    def pending(self) -> list[FindingResult]:
        return self._with_status(FindingStatus.PENDING)


class FindingsPayload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    threshold: float = DEFAULT_THRESHOLD
    findings: tuple[Finding, ...] = Field(max_length=MAX_FINDINGS)

    @field_validator("threshold", mode="before")
    @classmethod
    def _threshold(cls, value: object) -> float:
        return _check_threshold_value(value)

    @field_validator("findings", mode="before")
    @classmethod
    def _few_enough_votes(cls, value: object) -> object:
        """Votes over all findings, counted before any is validated (a huge input is refused fast)."""
        if isinstance(value, (list, tuple)) and len(value) <= MAX_FINDINGS:
            total = sum(len(f["votes"]) for f in value
                        if isinstance(f, Mapping) and isinstance(f.get("votes"), (list, tuple)))
            if total > MAX_FINDING_VOTES:
                raise InputError("", too_many(total, MAX_FINDING_VOTES, "votes over all findings"))
        return value


def classify_payload(payload: object) -> list[dict[str, Any]]:
    """``{"threshold", "findings": [...]}`` -> one output entry per finding, in input order."""
    if not isinstance(payload, Mapping):
        found = _describe(payload)
        raise InputError("", f"expected a JSON object with a 'findings' list, not {found}")
    parsed = _validate(FindingsPayload, payload, "")
    seen: dict[str, int] = {}
    for i, finding in enumerate(parsed.findings):
        if finding.id in seen:
            first = f"findings[{seen[finding.id]}]"
            message = f"duplicate finding id {finding.id!r} (already used by {first})"
            raise InputError(f"findings[{i}].id", message)
        seen[finding.id] = i
    return [evaluate(f, parsed.threshold).to_output() for f in parsed.findings]


# Plainer wording for pydantic's generic messages; custom validators already speak plainly.
_MESSAGES = {
    "missing": "is required",
    "extra_forbidden": "unknown field",
    "string_type": "must be a string",
    "greater_than_equal": "must be 0 or more",
    **dict.fromkeys(("dict_type", "model_type"), "must be an object"),
    **dict.fromkeys(("list_type", "tuple_type"), "must be a list"),
    **dict.fromkeys(("int_type", "int_from_float", "int_parsing"), "must be an integer"),
    **dict.fromkeys(
        ("datetime_type", "datetime_parsing", "datetime_from_date_parsing"),
        "must be an ISO 8601 date-time",
    ),
}


def _validate(model: type[BaseModel], data: object, prefix: str) -> Any:
    """``model.model_validate(data)``, with the first error as an :class:`InputError` whose field
    path starts with ``prefix`` (e.g. ``findings[0].votes[1].confidence``)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [p for p in first.get("loc", ()) if p not in ("function-after", "function-before")]
        path = field_path(loc)
        if prefix:
            path = f"{prefix}{'' if not path or path.startswith('[') else '.'}{path}"
        original = (first.get("ctx") or {}).get("error")
        if isinstance(original, InputError):  # a validator that named its own problem
            message = original.message
        elif first.get("type") in ("string_too_long", "too_long", "less_than_equal"):  # a limit, in words
            message = plain_message(first)
        else:
            message = _MESSAGES.get(first.get("type", ""), first.get("msg", "invalid"))
        raise InputError(path, message.removeprefix("Value error, ")) from None
