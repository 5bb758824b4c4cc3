"""CONS questions as the Findings & Reports panel shows them: the list, one question's every
ballot (agents × options, each round), its verdict, conflicts and escalations with the human's
decision, and the threshold what-if.

The what-if judges the *stored* ballots again with the CONS engine, round by round as the run
did, under other thresholds: no model is called. A run stops asking for challenge rounds once a
verdict is reached, so under looser thresholds a verdict may come at an earlier round; under
stricter ones the stored rounds may run out before any verdict: the what-if then says which
challenge round would be needed (its ballots were never cast, so it cannot say more).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project.escalations import ConflictRow, EscalationRow, _positions
from workbench.core.project.store import Store

UNDECIDED = "undecided"  # the stored rounds ran out before a verdict (more rounds would be asked)


@dataclass(frozen=True)
class QuestionRow:
    id: str  # as stored: "<question id>@<run id>"
    run_id: str | None
    question: str
    verdict: str | None
    leading_option: str | None
    actual_consensus: float | None
    ballots: int
    conflicts: int
    escalations: int
    open_escalations: int
    created_at: str

    @property
    def label(self) -> str:
        return self.id.split("@")[0]


@dataclass(frozen=True)
class Thresholds:
    """The verdict thresholds of a question (SPEC §3)."""

    consensus: float  # actualConsensus a verdict needs
    count: float  # share of accepting voters that also suffices
    min_voters: int
    max_rounds: int


@dataclass(frozen=True)
class BallotCell:
    id: int
    agent_id: str
    round: int
    option: str | None
    vote: str | None
    confidence: float | None
    rationale: str | None
    evidence: tuple[dict, ...]
    status: str  # valid | invalid
    invalid_reason: str | None
    standing: bool  # the agent's ballots in its latest round are the ones that count


@dataclass(frozen=True)
class QuestionDetail:
    id: str
    run_id: str | None
    question: str
    options: tuple[str, ...]
    thresholds: Thresholds
    verdict: str | None
    verdict_reason: str
    leading_option: str | None
    actual_consensus: float | None
    challenge_rounds: int
    next_action: str | None
    ballots: tuple[BallotCell, ...]  # every ballot, by agent then round
    conflicts: tuple[ConflictRow, ...]
    escalations: tuple[EscalationRow, ...]
    human_decision: str | None  # what the conductor answered during the run, when stored

    @property
    def label(self) -> str:
        return self.id.split("@")[0]

    def agents(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(b.agent_id for b in self.ballots))

    def columns(self) -> tuple[str, ...]:
        """The options, then any option only a ballot named."""
        seen = dict.fromkeys(self.options)
        for b in self.ballots:
            if b.option is not None:
                seen.setdefault(b.option)
        return tuple(seen)


@dataclass(frozen=True)
class WhatIf:
    verdict: str | None  # a verdict, or UNDECIDED
    reason: str
    leading_option: str | None
    actual_consensus: float | None
    rounds_used: int  # the challenge rounds the judgement took


# ----- reading ---------------------------------------------------------------------------------
_LIST = """
SELECT q.id, q.run_id, q.question, q.verdict, q.leading_option, q.actual_consensus,
       (SELECT count(*) FROM cons_ballots b WHERE b.question_id = q.id),
       (SELECT count(*) FROM cons_conflicts c WHERE c.question_id = q.id),
       (SELECT count(*) FROM cons_escalations e WHERE e.question_id = q.id),
       (SELECT count(*) FROM cons_escalations e WHERE e.question_id = q.id AND e.status = 'open'),
       q.created_at
FROM cons_questions q ORDER BY q.created_at DESC, q.id LIMIT ?
"""


def questions(store: Store, limit: int = 500) -> list[QuestionRow]:
    """The CONS questions, newest first."""
    return [QuestionRow(*row) for row in _sql.tuples(store, _LIST, (limit,))]


def question_detail(store: Store, question_id: str) -> QuestionDetail | None:
    q = _sql.get(store, "cons_questions", question_id)
    if q is None:
        return None
    run = _sql.get(store, "runs", q["run_id"]) if q["run_id"] else None
    config = (run or {}).get("config_json") or {}
    from workbench.core.protocols.cons.config import DEFAULT_COUNT_THRESHOLD

    thresholds = Thresholds(consensus=q["consensus_threshold"],
                            count=float(config.get("count_threshold", DEFAULT_COUNT_THRESHOLD)),
                            min_voters=q["min_voters"], max_rounds=q["max_challenge_rounds"])
    rows = _sql.rows(store, "cons_ballots", "question_id = ?", (question_id,),
                     order_by="agent_id, challenge_round, id")
    last_round: dict[str, int] = {}
    for r in rows:
        if r["status"] == "valid":
            last_round[r["agent_id"]] = max(last_round.get(r["agent_id"], -1), r["challenge_round"])
    ballots = tuple(BallotCell(
        r["id"], r["agent_id"], r["challenge_round"], r["option"], r["vote"], r["confidence"], r["rationale"],
        tuple(e for e in (r["evidence_json"] or []) if isinstance(e, dict)), r["status"], r["invalid_reason"],
        standing=r["status"] == "valid" and r["challenge_round"] == last_round.get(r["agent_id"]))
        for r in rows)
    result = q["result_json"] or {}
    conflicts = tuple(
        ConflictRow(c["id"], c["conflict_type"], c["severity"], _positions(c["positions_json"] or []))
        for c in _sql.rows(store, "cons_conflicts", "question_id = ?", (question_id,), order_by="created_at, id"))
    escalations = tuple(
        EscalationRow(e["reason"], e["detail"], e["status"], e["decision"], e["decided_by"], e["decision_note"],
                      e["resolved_at"])
        for e in _sql.rows(store, "cons_escalations", "question_id = ?", (question_id,), order_by="id"))
    human = result.get("humanDecision") if isinstance(result, dict) else None
    return QuestionDetail(question_id, q["run_id"], q["question"], tuple(q["options_json"] or ()), thresholds,
                          q["verdict"], str(result.get("verdictReason", "")) if isinstance(result, dict) else "",
                          q["leading_option"], q["actual_consensus"], q["challenge_rounds"], q["next_action"],
                          ballots, conflicts, escalations, human if isinstance(human, str) else None)


# ----- the what-if (pure: the engine over the stored ballots) ---------------------------------------
def what_if(detail: QuestionDetail, thresholds: Thresholds | None = None) -> WhatIf:
    """The verdict the stored ballots give under ``thresholds`` (the question's own when None),
    judged round by round as a run would: stop at the first round with a verdict."""
    from workbench.core.protocols.cons.tally import apply_challenge_round, open_state

    t = thresholds or detail.thresholds
    rounds: dict[int, list[dict[str, Any]]] = {}
    for b in detail.ballots:
        if b.status == "valid":
            rounds.setdefault(b.round, []).append(
                {"agentId": b.agent_id, "option": b.option, "vote": b.vote, "confidence": b.confidence,
                 "rationale": b.rationale, "evidence": [dict(e) for e in b.evidence]})
    later = sorted(r for r in rounds if r > 0)
    try:
        state = open_state({
            "questionId": detail.label, "question": detail.question, "options": list(detail.options),
            "consensusThreshold": t.consensus, "countThreshold": t.count, "minVoters": t.min_voters,
            "challengeRounds": 0, "maxChallengeRounds": t.max_rounds, "votes": rounds.get(0, [])})
        out = state.evaluate()
        for rnd in later:
            if out.verdict is not None:
                break
            state = apply_challenge_round(state, rounds[rnd])
            out = state.evaluate()
    except (InputError, ValueError) as exc:
        return WhatIf(None, f"the ballots could not be judged: {exc}", None, None, 0)
    verdict = out.verdict if out.verdict is not None else UNDECIDED
    reason = out.verdict_reason
    if out.verdict is None:
        reason = (f"{reason}; the run stored no ballots for that round, so the verdict would wait on it")
    return WhatIf(verdict, reason, out.tally.leading_option, out.tally.actual_consensus,
                  out.question.challenge_rounds)


@dataclass(frozen=True)
class Change:
    question: QuestionRow
    before: WhatIf  # at the question's own thresholds
    after: WhatIf  # at the what-if's

    @property
    def changed(self) -> bool:
        return self.before.verdict != self.after.verdict


def what_if_all(store: Store, *, consensus: float | None = None, count: float | None = None,
                min_voters: int | None = None, limit: int = 500) -> list[Change]:
    """Every question judged at its own thresholds and at the given ones (None: its own)."""
    out = []
    for row in questions(store, limit):
        detail = question_detail(store, row.id)
        if detail is None:
            continue
        out.append(what_if_detail(detail, row, consensus=consensus, count=count, min_voters=min_voters))
    return out


def what_if_detail(detail: QuestionDetail, row: QuestionRow, *, consensus: float | None = None,
                   count: float | None = None, min_voters: int | None = None) -> Change:
    own = detail.thresholds
    moved = replace(own, consensus=own.consensus if consensus is None else consensus,
                    count=own.count if count is None else count,
                    min_voters=own.min_voters if min_voters is None else min_voters)
    return Change(row, what_if(detail), what_if(detail, moved))
