"""CONS escalations as the conductor decides them: the question, its verdict, the conflicts
(type, severity, positions), every side's rationales (the ballots), the escalations with their
reasons, and the human's decision (accept the verdict, or override it, with a reason).

A run that waits on its conductor has not stored its outcome yet (the verdict, conflicts and
escalations are written when the run finishes), so :func:`escalation_view` then judges the
stored ballots again, round by round, exactly as the run did: the form shows what the run is
asking about. A finished run's view is read from what it stored.

:func:`record_decision` writes the decision into ``cons_escalations`` (decision, decided_by,
decision_note, status, resolved_at). The running conductor's own answer is the text of
:func:`decision_text`, which carries the same decision and reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project.changes import Changes
from workbench.core.project.store import Store, utc_now

ACCEPT, OVERRIDE = "accept", "override"


@dataclass(frozen=True)
class Position:
    agent_id: str
    position: str
    confidence: float | None


@dataclass(frozen=True)
class ConflictRow:
    id: str
    conflict_type: str
    severity: str
    positions: tuple[Position, ...]


@dataclass(frozen=True)
class EscalationRow:
    reason: str
    detail: str
    status: str  # open | resolved
    decision: str | None = None
    decided_by: str | None = None
    decision_note: str | None = None
    resolved_at: str | None = None


@dataclass(frozen=True)
class BallotLine:
    agent_id: str
    challenge_round: int
    option: str | None
    vote: str | None
    confidence: float | None
    rationale: str | None
    status: str  # valid | invalid
    invalid_reason: str | None

    @property
    def position(self) -> str:
        """The side this ballot is on: "accept X", "reject X", "abstain" or "invalid"."""
        if self.status != "valid":
            return "invalid"
        return "abstain" if self.vote == "abstain" else f"{self.vote} {self.option}"


@dataclass(frozen=True)
class EscalationView:
    run_id: str
    question_id: str  # as stored: "<id>@<run id>"
    question: str
    options: tuple[str, ...]
    verdict: str | None
    verdict_reason: str
    leading_option: str | None
    actual_consensus: float | None
    challenge_rounds: int
    conflicts: tuple[ConflictRow, ...]
    escalations: tuple[EscalationRow, ...]
    ballots: tuple[BallotLine, ...]  # the standing ballots (the last each agent cast)
    stored: bool  # read from the finished run's records (False: judged again from its ballots)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def open(self) -> bool:
        return any(e.status == "open" for e in self.escalations)

    def sides(self) -> dict[str, list[BallotLine]]:
        """The standing ballots grouped by position, the largest side first."""
        groups: dict[str, list[BallotLine]] = {}
        for b in self.ballots:
            groups.setdefault(b.position, []).append(b)
        return dict(sorted(groups.items(), key=lambda kv: (kv[0] == "invalid", -len(kv[1]), kv[0])))


# ----- reading ---------------------------------------------------------------------------------
def escalation_view(store: Store, run_id: str) -> EscalationView | None:
    """The CONS question of ``run_id`` as its conductor sees it; None for a run without one."""
    found = _sql.rows(store, "cons_questions", "run_id = ?", (run_id,), order_by="created_at, id", limit=1)
    if not found:
        return None
    q = found[0]
    all_ballots = [BallotLine(r["agent_id"], r["challenge_round"], r["option"], r["vote"], r["confidence"],
                              r["rationale"], r["status"], r["invalid_reason"])
                   for r in _sql.rows(store, "cons_ballots", "question_id = ?", (q["id"],),
                                      order_by="challenge_round, agent_id, id")]
    standing: dict[str, BallotLine] = {}
    for b in all_ballots:  # an agent's later ballot replaces its earlier ones
        if b.status == "valid" or b.agent_id not in standing:
            standing[b.agent_id] = b
    ballots = tuple(sorted(standing.values(), key=lambda b: b.agent_id))
    options = tuple(q["options_json"] or ())
    if q["verdict"] is not None or q["result_json"]:
        return _stored_view(store, run_id, q, options, ballots)
    return _judged_view(store, run_id, q, options, ballots, all_ballots)


def _stored_view(store: Store, run_id: str, q: dict, options: tuple, ballots: tuple) -> EscalationView:
    result = q["result_json"] or {}
    conflicts = tuple(
        ConflictRow(c["id"], c["conflict_type"], c["severity"], _positions(c["positions_json"] or []))
        for c in _sql.rows(store, "cons_conflicts", "question_id = ?", (q["id"],), order_by="created_at, id"))
    escalations = tuple(
        EscalationRow(e["reason"], e["detail"], e["status"], e["decision"], e["decided_by"], e["decision_note"],
                      e["resolved_at"])
        for e in _sql.rows(store, "cons_escalations", "question_id = ?", (q["id"],), order_by="id"))
    if not escalations and result.get("escalations"):  # stored before the rows existed: as the result says
        escalations = tuple(EscalationRow(e.get("reason", ""), e.get("detail", ""), "open")
                            for e in result["escalations"])
    return EscalationView(run_id, q["id"], q["question"], options, q["verdict"], result.get("verdictReason", ""),
                          q["leading_option"], q["actual_consensus"], q["challenge_rounds"], conflicts, escalations,
                          ballots, stored=True)


def _judged_view(store: Store, run_id: str, q: dict, options: tuple, ballots: tuple,
                 all_ballots: list[BallotLine]) -> EscalationView:
    """Judge the stored ballots again, round by round, as the run did (the run has not stored
    its outcome yet: it is waiting for the conductor, or was stopped before it)."""
    from workbench.core.protocols.cons.config import DEFAULT_COUNT_THRESHOLD
    from workbench.core.protocols.cons.tally import apply_challenge_round, open_state

    run = _sql.get(store, "runs", run_id) or {}
    config = run.get("config_json") or {}
    rounds: dict[int, list[dict]] = {}
    for b in all_ballots:
        if b.status == "valid":
            rounds.setdefault(b.challenge_round, []).append(
                {"agentId": b.agent_id, "option": b.option, "vote": b.vote, "confidence": b.confidence,
                 "rationale": b.rationale, "evidence": []})
    evidence = {(r["agent_id"], r["challenge_round"]): r["evidence_json"] or []
                for r in _sql.rows(store, "cons_ballots", "question_id = ? AND status = 'valid'", (q["id"],))}
    for rnd, items in rounds.items():
        for item in items:
            item["evidence"] = evidence.get((item["agentId"], rnd), [])
    verdict, reason, leading, consensus, conflicts, escalations, done = None, "", None, None, (), (), 0
    try:
        state = open_state({
            "questionId": q["id"].split("@")[0], "question": q["question"], "options": list(options),
            "consensusThreshold": q["consensus_threshold"],
            "countThreshold": config.get("count_threshold", DEFAULT_COUNT_THRESHOLD),
            "minVoters": q["min_voters"], "challengeRounds": 0, "maxChallengeRounds": q["max_challenge_rounds"],
            "votes": rounds.get(0, [])})
        for rnd in sorted({b.challenge_round for b in all_ballots if b.challenge_round > 0}):
            state = apply_challenge_round(state, rounds.get(rnd, []))
        out = state.evaluate()
        verdict, reason, done = out.verdict, out.verdict_reason, out.question.challenge_rounds
        leading, consensus = out.tally.leading_option, out.tally.actual_consensus
        conflicts = tuple(ConflictRow(c.conflict_id, c.conflict_type, c.severity,
                                      _positions([p.to_json() for p in c.positions])) for c in out.conflicts)
        escalations = tuple(EscalationRow(e.reason, e.detail, "open") for e in out.escalations)
    except (InputError, ValueError) as exc:  # ballots the engine refuses: shown, with why
        reason = f"the ballots could not be judged: {exc}"
    return EscalationView(run_id, q["id"], q["question"], options, verdict, reason, leading, consensus, done,
                          conflicts, escalations, ballots, stored=False)


def _positions(items: list) -> tuple[Position, ...]:
    out = []
    for p in items:
        if isinstance(p, dict):
            out.append(Position(str(p.get("agentId", p.get("agent_id", "?"))), str(p.get("position", "")),
                                p.get("confidence")))
    return tuple(out)


# ----- the decision ------------------------------------------------------------------------------
def decision_label(choice: str, option: str | None) -> str:
    """What ``cons_escalations.decision`` holds: "accept: <option>" or "override: <option>"."""
    if choice not in (ACCEPT, OVERRIDE):
        raise InputError("decision", f"must be {ACCEPT!r} or {OVERRIDE!r}, got {choice!r}")
    return f"{choice}: {option}" if option else choice


def decision_text(view: EscalationView, choice: str, option: str | None, reason: str) -> str:
    """The conductor's answer to a running run: the decision and its reason in one text."""
    label = decision_label(choice, option)
    verdict = view.verdict or "no verdict"
    if choice == ACCEPT:
        head = f"ACCEPT the {verdict} verdict" + (f", leading option {option!r}" if option else "")
    else:
        head = f"OVERRIDE the {verdict} verdict" + (f": adopt {option!r}" if option else ": adopt none of the options")
    reason = reason.strip()
    return f"{head}. Reason: {reason or 'none given'} [decision: {label}]"


def record_decision(store: Store, run_id: str, *, choice: str, option: str | None, reason: str,
                    decided_by: str = "conductor") -> Changes:
    """Store the human's decision on every escalation of the run's CONS question. An override
    needs a reason. The run must have stored its escalations (it has finished)."""
    label = decision_label(choice, option)
    reason = reason.strip()
    if choice == OVERRIDE and not reason:
        raise InputError("decision_note", "an override needs a reason")
    found = _sql.rows(store, "cons_questions", "run_id = ?", (run_id,), limit=1)
    if not found:
        raise InputError("run", f"run {run_id} has no CONS question")
    with _sql.write(store) as tx:
        n = tx.execute("UPDATE cons_escalations SET decision = ?, decided_by = ?, decision_note = ?, "
                       "status = 'resolved', resolved_at = ? WHERE question_id = ?",
                       (label, decided_by, reason or None, utc_now(), found[0]["id"]),
                       tables=("cons_escalations",), run=run_id)
        if n == 0:
            raise InputError("run", f"run {run_id} has no stored escalation to decide (is it still running?)")
    return tx.changes
