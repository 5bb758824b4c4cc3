"""Consensus Server findings kept in the project file: the store-backed side of SPEC §2.

The maths is the engine's (:func:`workbench.core.protocols.findings.book.consensus`); this module only
reads and writes the ``findings`` and ``finding_votes`` tables, so the MCP server, the GUI and the
CLI all see one truth. Rules it keeps:

- Every write is its own short ``BEGIN IMMEDIATE`` transaction (see :mod:`workbench.core.project.store`):
  one vote is one INSERT, committed once, so concurrent writers (other threads, the MCP server,
  the GUI process) never lose or duplicate a vote. :meth:`FindingsStore.submit_votes` stores
  the votes that arrived together in one transaction (a group commit: one fsync for many votes),
  each still validated and answered on its own. When the file stays locked past the store's
  busy timeout the whole transaction is rolled back and retried (``LOCK_RETRIES`` times) before
  the caller sees an error; :attr:`FindingsStore.retries` counts those retries.
- A vote sent through a call (an MCP tool, the GUI) is validated first. An invalid one is
  refused with a field-named :class:`InputError` and *not* stored: the caller gets the error at
  once and can send a corrected vote. (Model replies from a run are different: the runner keeps
  an unreadable reply as an ``invalid`` vote, because the paid reply is the only record.)
- Every vote records the client that sent it (``client``) and the agent it speaks for.
- The history keeps every vote; an agent's latest *valid* vote is the one that counts. Results
  are computed from each agent's latest valid vote only (one SQL query), so a finding with
  thousands of votes costs no more than one with a handful.
- A finding is its id *and* its claim. The same id with the same claim is the same finding (a
  retried ``create_finding``, or a second run over the same findings, adds votes to it); the same
  id with a different claim is refused, so votes cast on one claim can never be counted for, or
  replace the votes of, another (:func:`claim_findings`, :func:`check_findings`).

Reads run outside any transaction. Each thread uses its own connection; the caller closes it
(``store.close_connection()``) when the thread is done with the store.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from workbench.core.errors import InputError, from_pydantic
from workbench.core.limits import MAX_CLAIM_CHARS, MAX_NAME_CHARS
from workbench.core.project import _sql
from workbench.core.project.files import ProjectError
from workbench.core.project.finding_scores import refresh_scores, vote_time
from workbench.core.project.store import Store, utc_now
from workbench.core.protocols.findings.book import (
    DEFAULT_THRESHOLD,
    STATUSES,
    FindingStatus,
    Vote,
    VoteType,
    check_threshold,
    consensus,
)

T = TypeVar("T")

#: How often a transaction that met a lock held past the busy timeout is retried.
LOCK_RETRIES = 2
#: Limits on what a client may store (characters), so one call cannot bloat the file.
MAX_TEXT = MAX_CLAIM_CHARS  # a claim or a vote's reason (reasons have the same limit: MAX_RATIONALE_CHARS)
MAX_NAME = MAX_NAME_CHARS
MAX_CONTEXT_BYTES = 100_000
#: ``history`` returns at most this many votes unless asked for more.
DEFAULT_HISTORY_LIMIT = 200
MAX_HISTORY_LIMIT = 100_000


@dataclass(frozen=True)
class VoteRequest:
    """A vote as a caller sent it, not yet validated; ``client`` is who sent it."""

    finding_id: object
    agent: object
    vote_type: object
    confidence: object
    reason: object = ""
    client: str | None = None
    raw: str | None = None


class VoteRecord(BaseModel):
    """One stored vote. ``counted`` is true for the agent's latest valid vote (the one in the score)."""

    model_config = ConfigDict(frozen=True)

    id: int
    finding_id: str
    agent: str
    vote_type: VoteType | None
    confidence: float | None
    reason: str
    status: Literal["valid", "invalid"]
    invalid_reason: str | None = None
    client: str | None = None
    run_id: str | None = None
    simulated: bool = False
    created_at: str
    counted: bool = False


class FindingSummary(BaseModel):
    """A finding and its consensus now. ``votes_total`` counts valid votes in the history
    (repeat votes included); ``invalid_votes`` counts votes kept as invalid."""

    model_config = ConfigDict(frozen=True)

    id: str
    claim: str
    context: dict[str, Any]
    threshold: float
    consensus_score: float | None
    status: FindingStatus
    k: int
    voting_agents: list[str]
    uncertain_agents: list[str]
    votes_total: int
    invalid_votes: int
    created_by: str | None = None
    run_id: str | None = None
    created_at: str
    last_vote_at: str | None = None


class ConsensusResults(FindingSummary):
    """A finding's consensus with the vote each agent has standing (uncertain ones included)."""

    latest_votes: list[VoteRecord]


class VoteReceipt(BaseModel):
    """What storing a vote returns: the stored vote and the finding's consensus right after it."""

    model_config = ConfigDict(frozen=True)

    vote: VoteRecord
    result: FindingSummary


class FindingHistory(BaseModel):
    """A finding's votes in the order they arrived (the most recent ``limit`` of them)."""

    model_config = ConfigDict(frozen=True)

    finding: FindingSummary
    votes: list[VoteRecord]
    votes_in_history: int
    truncated: bool


_LATEST_SQL = """
SELECT v.id, v.finding_id, v.agent, v.vote_type, v.confidence, v.reason, v.status, v.invalid_reason,
       v.client, v.run_id, v.simulated, v.created_at
FROM finding_votes v
JOIN (SELECT max(id) AS last_id, min(id) AS first_id FROM finding_votes
      WHERE status = 'valid' {where} GROUP BY finding_id, agent) g ON v.id = g.last_id
ORDER BY v.finding_id, g.first_id
"""
_COUNTS_SQL = """
SELECT finding_id, sum(status = 'valid') AS valid, sum(status = 'invalid') AS invalid,
       max(created_at) AS last_vote_at
FROM finding_votes {where} GROUP BY finding_id
"""


class FindingsStore:
    """Findings and their votes in one project file. Cheap to create; holds no connection itself."""

    def __init__(self, store: Store, *, threshold: float = DEFAULT_THRESHOLD):
        self.store = store
        self.default_threshold = check_threshold(threshold)
        self.retries = 0  # transactions retried after the busy timeout (the load test reads it)
        self._retries_lock = threading.Lock()

    # ----- writing -------------------------------------------------------------------------
    def create_finding(self, claim: object, context: object = None, *, finding_id: object = None,
                       threshold: object = None, created_by: str | None = None) -> FindingSummary:
        """Add a finding under review. Without ``finding_id`` a fresh id (``f-`` + 10 hex) is made."""
        claim = _text(claim, "claim", required=True)
        context = _context(context)
        if finding_id is None:
            finding_id = f"f-{uuid.uuid4().hex[:10]}"
        finding_id = _name(finding_id, "finding_id")
        limit = None if threshold is None else check_threshold(threshold)
        row = {"id": finding_id, "claim": claim, "context_json": context, "threshold": limit,
               "created_by": created_by, "created_at": utc_now()}

        def write() -> None:
            with _sql.write(self.store) as tx:  # checked inside the transaction: no other writer in between
                existing = _sql.get(self.store, "findings", finding_id)
                if existing is None:
                    tx.insert("findings", row)
                elif not same_claim(existing["claim"], claim):
                    raise InputError("finding_id", f"a finding with id {finding_id!r} already exists with "
                                                   "another claim; choose another id")
                # else: the same id and the same claim is the same finding (a retried call)

        self._retrying(write)
        return self.summary(finding_id)

    def submit_vote(self, finding_id: object, agent: object, vote_type: object, confidence: object,
                    reason: object = "", *, client: str | None = None, raw: str | None = None) -> VoteReceipt:
        """Validate and store one vote; return it with the finding's consensus once it is stored.

        An invalid vote raises :class:`InputError` (naming the field) and nothing is stored.
        """
        request = VoteRequest(finding_id, agent, vote_type, confidence, reason, client, raw)
        outcome = self.submit_votes([request])[0]
        if isinstance(outcome, InputError):
            raise outcome
        return outcome

    def submit_votes(self, requests: Sequence[VoteRequest]) -> list[VoteReceipt | InputError]:
        """Store many votes in one transaction (a group commit); one outcome per request, in order.

        Each vote is validated on its own: an invalid one (or one for a finding that does not
        exist) gets its :class:`InputError` and is not stored, and the others are. Every stored
        vote is one INSERT in the single transaction, so all of them commit, or none does and the
        whole transaction is retried. Results are read right after the commit, once per finding.
        """
        outcomes: list[VoteReceipt | InputError | dict] = []
        for request in requests:
            try:
                outcomes.append(_vote_row(request))
            except InputError as exc:
                outcomes.append(exc)

        def write() -> list[int | InputError | None]:
            ids: list[int | InputError | None] = []
            known: dict[str, bool] = {}
            with _sql.write(self.store) as tx:
                for row in outcomes:
                    if not isinstance(row, dict):
                        ids.append(None)
                        continue
                    fid = row["finding_id"]
                    if fid not in known:  # read inside the transaction: it cannot vanish
                        known[fid] = bool(_sql.count(self.store, "findings", "id = ?", (fid,)))
                    if not known[fid]:
                        ids.append(InputError("finding_id", f"no finding with id {fid!r}"))
                        continue
                    row = {**row, "created_at": vote_time(self.store._connection(), fid, row["created_at"])}
                    ids.append(tx.insert("finding_votes", row))
                refresh_scores(tx, [fid for fid, ok in known.items() if ok])
            return ids

        if not any(isinstance(o, dict) for o in outcomes):
            return outcomes  # type: ignore[return-value]
        ids = self._retrying(write)
        stored = {o["finding_id"] for o, i in zip(outcomes, ids) if isinstance(i, int)}
        summaries = {s.id: s for s in self._retrying(lambda: self._summaries(self._finding_rows(stored)))}
        result: list[VoteReceipt | InputError] = []
        for outcome, vote_id in zip(outcomes, ids):
            if isinstance(outcome, InputError) or isinstance(vote_id, InputError):
                result.append(outcome if isinstance(outcome, InputError) else vote_id)  # type: ignore[arg-type]
                continue
            record = VoteRecord(id=vote_id, counted=True, **{k: v for k, v in outcome.items() if k != "raw"})
            result.append(VoteReceipt(vote=record, result=summaries[outcome["finding_id"]]))
        return result

    def _retrying(self, work: Callable[[], T]) -> T:
        """Run ``work``; when the file stayed locked past the busy timeout (the transaction was
        rolled back), run it again, up to ``LOCK_RETRIES`` times."""
        for attempt in range(LOCK_RETRIES + 1):
            try:
                return work()
            except (ProjectError, sqlite3.OperationalError) as exc:
                locked = (exc.kind == "locked" if isinstance(exc, ProjectError)
                          else "locked" in str(exc) or "busy" in str(exc))
                if not locked or attempt == LOCK_RETRIES:
                    if isinstance(exc, sqlite3.OperationalError):
                        raise ProjectError("locked" if locked else "io", self.store.path, str(exc)) from None
                    raise
                with self._retries_lock:
                    self.retries += 1
        raise AssertionError("unreachable")

    # ----- reading -------------------------------------------------------------------------
    def summary(self, finding_id: object) -> FindingSummary:
        finding_id = _name(finding_id, "finding_id")
        return self._retrying(lambda: self._summaries([self._finding_row(finding_id)])[0])

    def results(self, finding_id: object) -> ConsensusResults:
        """The consensus with each agent's standing vote."""
        finding_id = _name(finding_id, "finding_id")
        return self._retrying(lambda: self._results(finding_id))

    def _results(self, finding_id: str) -> ConsensusResults:
        finding = self._finding_row(finding_id)
        latest = self._latest([finding["id"]])
        summary = self._summaries([finding], latest)[0]
        votes = [_record(r, counted=True) for r in latest.get(finding["id"], [])]
        return ConsensusResults(**summary.model_dump(), latest_votes=votes)

    def list_findings(self, status: object = None) -> list[FindingSummary]:
        """Every finding in creation order, or only those with ``status`` (confirmed, challenged,
        pending; None or "all" for every finding)."""
        wanted = _status(status)
        summaries = self._retrying(
            lambda: self._summaries(_sql.query(self.store, "SELECT * FROM findings ORDER BY rowid"), every=True))
        return [s for s in summaries if wanted is None or s.status is wanted]

    def challenged(self) -> list[FindingSummary]:
        return self.list_findings(FindingStatus.CHALLENGED)

    def pending(self) -> list[FindingSummary]:
        return self.list_findings(FindingStatus.PENDING)

    def history(self, finding_id: object, limit: object = DEFAULT_HISTORY_LIMIT) -> FindingHistory:
        """The finding's votes, oldest first: the most recent ``limit`` (None for all)."""
        finding_id = _name(finding_id, "finding_id")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or not 1 <= limit <= MAX_HISTORY_LIMIT):
            raise InputError("limit", f"must be a whole number from 1 to {MAX_HISTORY_LIMIT:,}")
        return self._retrying(lambda: self._history(finding_id, limit))

    def _history(self, finding_id: str, limit: int | None) -> FindingHistory:
        finding = self._finding_row(finding_id)
        latest = self._latest([finding["id"]])
        counted = {r["id"] for r in latest.get(finding["id"], [])}
        total = _sql.count(self.store, "finding_votes", "finding_id = ?", (finding["id"],))
        sql = "SELECT * FROM finding_votes WHERE finding_id = ? ORDER BY id DESC"
        params: tuple = (finding["id"],)
        if limit is not None:
            sql += " LIMIT ?"
            params += (limit,)
        rows = list(reversed(_sql.query(self.store, sql, params)))
        return FindingHistory(
            finding=self._summaries([finding], latest)[0],
            votes=[_record(r, counted=r["id"] in counted) for r in rows],
            votes_in_history=total, truncated=len(rows) < total)

    # ----- internals -----------------------------------------------------------------------
    def _finding_row(self, finding_id: str) -> dict:
        row = _sql.get(self.store, "findings", finding_id)
        if row is None:
            raise InputError("finding_id", f"no finding with id {finding_id!r}")
        return row

    def _finding_rows(self, ids: Iterable[str]) -> list[dict]:
        where, params = _in_clause(ids)
        return _sql.query(self.store, f"SELECT * FROM findings WHERE {where.replace('finding_id', 'id')} "
                                "ORDER BY rowid", params) if params else []

    def _latest(self, ids: Iterable[str] | None) -> dict[str, list[dict]]:
        """Each agent's latest valid vote per finding, in first-vote order."""
        where, params = _in_clause(ids)
        out: dict[str, list[dict]] = {}
        for row in _sql.query(self.store, _LATEST_SQL.format(where=f"AND {where}" if where else ""), params):
            out.setdefault(row["finding_id"], []).append(row)
        return out

    def _summaries(self, findings: list[dict], latest: Mapping[str, list[dict]] | None = None,
                   *, every: bool = False) -> list[FindingSummary]:
        """Summaries of ``findings`` (``every``: they are all the findings, so read all votes)."""
        if not findings:
            return []
        ids = None if every else [f["id"] for f in findings]
        if latest is None:
            latest = self._latest(ids)
        where, params = _in_clause(ids)
        counts = {r["finding_id"]: r for r in
                  _sql.query(self.store, _COUNTS_SQL.format(where=f"WHERE {where}" if where else ""), params)}
        out = []
        for f in findings:
            threshold = f["threshold"] if f["threshold"] is not None else self.default_threshold
            votes = [Vote(agent=r["agent"], vote_type=r["vote_type"], confidence=r["confidence"],
                          reason=r["reason"]) for r in latest.get(f["id"], [])]
            result = consensus(votes, threshold)  # the engine's maths, over the standing votes
            c = counts.get(f["id"], {})
            context = f["context_json"]
            out.append(FindingSummary(
                id=f["id"], claim=f["claim"], context=context if isinstance(context, dict) else {},
                threshold=threshold, consensus_score=result.consensus_score, status=result.status,
                k=result.k, voting_agents=list(result.voting_agents),
                uncertain_agents=list(result.uncertain_agents),
                votes_total=c.get("valid") or 0, invalid_votes=c.get("invalid") or 0,
                created_by=f["created_by"], run_id=f["run_id"], created_at=f["created_at"],
                last_vote_at=c.get("last_vote_at")))
        return out


def same_claim(stored: object, claim: object) -> bool:
    """Whether two claims are the same claim (ignoring leading and trailing whitespace)."""
    return isinstance(stored, str) and isinstance(claim, str) and stored.strip() == claim.strip()


def _conflicts(store: Store, findings: Sequence[Mapping[str, Any]]) -> InputError | None:
    """The first finding whose id is taken by a finding with another claim (here or earlier in the list)."""
    seen: dict[str, str] = {}
    for index, spec in enumerate(findings):
        fid, claim = spec.get("id"), spec.get("claim")
        if not isinstance(fid, str) or not isinstance(claim, str):
            continue  # the config model names those errors
        if fid in seen and not same_claim(seen[fid], claim):
            return InputError(f"findings[{index}].id", f"{fid!r} is given twice with different claims")
        seen.setdefault(fid, claim)
        row = _sql.get(store, "findings", fid)
        if row is not None and not same_claim(row["claim"], claim):
            shown = row["claim"] if len(row["claim"]) <= 60 else row["claim"][:57] + "..."
            return InputError(f"findings[{index}].id",
                              f"finding {fid!r} already exists in this project with another claim ({shown!r}); "
                              "give this finding another id")
    return None


def check_findings(store: Store, findings: Sequence[Mapping[str, Any]]) -> None:
    """Refuse, before anything is written or spent, findings whose ids collide with another claim."""
    if (error := _conflicts(store, findings)) is not None:
        raise error


def claim_findings(tx: _sql.Transaction, run_id: str, findings: Sequence[Mapping[str, Any]]) -> None:
    """Inside a run's write transaction: add the run's findings that are new, keep those already
    here with the same claim, and refuse (InputError, nothing written) an id held by another claim."""
    check_findings(tx.store, findings)
    now = utc_now()
    for spec in findings:
        if _sql.get(tx.store, "findings", spec["id"]) is None:
            tx.insert("findings", {"id": spec["id"], "claim": spec["claim"], "context_json": spec.get("context") or {},
                                   "threshold": spec.get("threshold"), "run_id": run_id, "created_by": "run",
                                   "created_at": now})


def _vote_row(request: VoteRequest) -> dict:
    """The finding_votes row for a valid vote, or :class:`InputError` naming the bad field."""
    finding_id = _name(request.finding_id, "finding_id")
    try:
        vote = Vote.model_validate({"agent": request.agent, "vote_type": request.vote_type,
                                    "confidence": request.confidence, "reason": request.reason})
    except ValidationError as exc:
        raise from_pydantic(exc) from None
    _check_length(vote.agent, "agent", MAX_NAME)
    _check_length(vote.reason, "reason", MAX_TEXT)
    return {"finding_id": finding_id, "agent": vote.agent, "vote_type": vote.vote_type.value,
            "confidence": vote.confidence, "reason": vote.reason, "status": "valid",
            "client": request.client, "raw": request.raw, "simulated": 0, "created_at": utc_now()}


def _in_clause(ids: Iterable[str] | None) -> tuple[str, tuple]:
    if ids is None:
        return "", ()
    ids = tuple(ids)
    return f"finding_id IN ({', '.join('?' * len(ids))})", ids


def _record(row: dict, *, counted: bool) -> VoteRecord:
    return VoteRecord(
        id=row["id"], finding_id=row["finding_id"], agent=row["agent"], vote_type=row["vote_type"],
        confidence=row["confidence"], reason=row["reason"] or "", status=row["status"],
        invalid_reason=row["invalid_reason"], client=row["client"], run_id=row["run_id"],
        simulated=bool(row["simulated"]), created_at=row["created_at"], counted=counted)


def _status(value: object) -> FindingStatus | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "all")):
        return None
    if isinstance(value, str) and value.strip().lower() in STATUSES:
        return FindingStatus(value.strip().lower())
    shown = repr(value) if isinstance(value, str) else type(value).__name__
    raise InputError("status", f"unknown status {shown}; expected one of {', '.join(STATUSES)} or all")


def _name(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise InputError(field, "must be a string")
    name = value.strip()
    if not name:
        raise InputError(field, "must not be empty")
    _check_length(name, field, MAX_NAME)
    return name


def _text(value: object, field: str, *, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise InputError(field, "must be a string")
    text = value.strip()
    if required and not text:
        raise InputError(field, "must not be empty")
    _check_length(text, field, MAX_TEXT)
    return text


def _check_length(text: str, field: str, limit: int) -> None:
    if len(text) > limit:
        raise InputError(field, f"is too long ({len(text):,} characters; at most {limit:,})")


def _context(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError("context", "must be an object (a JSON dictionary)")
    try:
        encoded = json.dumps(dict(value), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InputError("context", f"must be JSON: {exc}") from None
    if len(encoded.encode()) > MAX_CONTEXT_BYTES:
        raise InputError("context", f"is too large (at most {MAX_CONTEXT_BYTES:,} bytes as JSON)")
    return json.loads(encoded)
