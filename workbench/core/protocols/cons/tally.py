"""The CONS consensus protocol engine (SPEC §3; seed: consensus-protocol-cons.md). Pure, no I/O.

    tally(question) -> Tally                         leading option, A, B, actualConsensus
    decide(question, tally)                          the verdict steps in order
    evaluate(question) -> ConsOutcome                verdict, nextAction, conflicts, escalations
    open_state(question) -> ConsState                start a protocol run (round 0)
    apply_challenge_round(state, ballots) -> ConsState   next round; later ballots supersede
    run_rounds(question, rounds) -> Iterator[(ConsState, ConsOutcome)]   one step per round
    classify_payload(payload) -> dict                the ``rwb classify cons`` contract

The package (``workbench.core.protocols.cons``) is the public API, with the models, the report
and the run. Every rule choice is documented in docs/protocols.md (CONS section).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pydantic import ValidationError

from workbench.core.errors import InputError
from workbench.core.protocols.cons.conflicts import (
    Escalation,
    build_escalations,
    detect_conflicts,
    mark_escalated,
    suspicious_unanimity,
)
from workbench.core.protocols.cons.models import (
    TOL,
    Ballot,
    ConsQuestion,
    NextAction,
    Verdict,
    _Model,
    parse_ballots,
    parse_question,
    to_input_error,
)
from workbench.core.protocols.cons.outcome import ConsOutcome, Opposition, OptionTally, Tally
from workbench.core.protocols.cons.report import outcome_json


def _reached(share: float | None, threshold: float) -> bool:
    return share is not None and share >= threshold - TOL


def tally(q: ConsQuestion) -> Tally:
    """Per-option sums, the leading option, and A, B and actualConsensus (SPEC §3).

    O(n) in the ballots (plus the options): the ballots are grouped once by option and once by
    agent, in ballot order, so every sum adds the same numbers in the same order as a plain scan.
    """
    options = q.option_order()
    by_option: dict[str, list[Ballot]] = {o: [] for o in options}
    by_agent: dict[str, list[Ballot]] = {}  # first seen first
    for b in q.votes:
        by_option.setdefault(b.option, []).append(b)
        by_agent.setdefault(b.agent_id, []).append(b)
    agents = tuple(by_agent)
    voters = tuple(a for a, mine in by_agent.items() if any(b.vote != "abstain" for b in mine))
    per = []
    for o in options:
        on = by_option[o]
        acc = [b for b in on if b.vote == "accept"]
        rej = [b for b in on if b.vote == "reject"]
        per.append(OptionTally(
            option=o, accept_count=len(acc), accept_weight=sum(b.confidence for b in acc),
            reject_count=len(rej), reject_weight=sum(b.confidence for b in rej),
            abstain_count=sum(b.vote == "abstain" for b in on),
            evidenced_accepts=sum(b.has_evidence for b in acc),
            evidenced_rejects=sum(b.has_evidence for b in rej)))
    # Leading option: largest summed accept confidence; ties (within 1e-9) go to more accepting
    # agents, then to the option that comes first.
    best: OptionTally | None = None
    for t in per:
        if best is None or t.accept_weight > best.accept_weight + TOL or (
                abs(t.accept_weight - best.accept_weight) <= TOL
                and t.accept_count > best.accept_count):
            best = t
    leading = best.option if best is not None else None
    accepters = {b.agent_id for b in by_option.get(leading, ()) if b.vote == "accept"}
    a_weight = best.accept_weight if best is not None else 0.0
    opposition = []
    for agent in voters:
        if agent in accepters:
            continue
        mine = by_agent[agent]
        rej = [b for b in mine if b.option == leading and b.vote == "reject"]
        other = [b for b in mine if b.option != leading and b.vote == "accept"]
        if rej:
            opposition.append(Opposition(agent_id=agent, weight=rej[0].confidence,
                                         basis=f"reject {leading}"))
        elif other:
            top = max(other, key=lambda b: b.confidence)  # max; first on ties
            opposition.append(Opposition(agent_id=agent, weight=top.confidence,
                                         basis=f"accept {top.option}"))
        else:
            opposition.append(Opposition(agent_id=agent, weight=0.0, basis="none"))
    b_weight = sum(o.weight for o in opposition)
    total = a_weight + b_weight
    n_acc = sum(1 for a in voters if a in accepters)
    return Tally(options=options, agents=agents, voters=voters, leading_option=leading,
                 accept_count=n_acc, accept_share=n_acc / len(voters) if voters else None,
                 accept_weight=a_weight, oppose_weight=b_weight,
                 actual_consensus=a_weight / total if total > 0 else None,
                 per_option=tuple(per), opposition=tuple(opposition))


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:.1f}%"


def decide(q: ConsQuestion, t: Tally) -> tuple[Verdict | None, int, str, bool]:
    """The SPEC §3 verdict steps in order: (verdict, step, reason, critical counter-proof)."""
    n = len(t.voters)
    if n < q.min_voters:
        return ("INSUFFICIENT_EVIDENCE", 1,
                f"only {n} non-abstaining agent(s); minVoters is {q.min_voters}", False)
    lead = t.leading_option
    assert lead is not None  # n >= 1 voter means there is an option
    on = [b for b in q.votes if b.option == lead]
    acc = [b for b in on if b.vote == "accept"]
    rej = [b for b in on if b.vote == "reject"]
    accept_reached = (_reached(t.accept_share, q.count_threshold)
                      or _reached(t.actual_consensus, q.consensus_threshold))
    evidenced = any(b.has_evidence for b in acc)
    support = (f"{t.accept_count} of {n} agents accept {lead!r}, "
               f"{_pct(t.actual_consensus)} weighted agreement")
    counter = [b.agent_id for b in rej if b.has_counter_proof]
    if counter:
        would_prove = accept_reached and evidenced
        extra = " although the accepts would otherwise have proven it" if would_prove else ""
        return ("REFUTED", 2, f"counter-proof against {lead!r} cited by "
                f"{', '.join(counter)}{extra} ({support})", would_prove)
    if accept_reached:
        if evidenced:
            return "PROVEN", 3, support, False
        return ("INSUFFICIENT_EVIDENCE", 3,
                f"{support}, but no accept cites evidence (CONS-004)", False)
    if q.is_single_claim():
        total = t.accept_weight + t.oppose_weight
        ev = [b for b in rej if b.has_evidence]

        def reached(group: list[Ballot]) -> bool:
            share = len(group) / n
            weight = sum(b.confidence for b in group) / total if total > 0 else None
            return (_reached(share, q.count_threshold)
                    or _reached(weight, q.consensus_threshold))

        if reached(ev):
            return ("REFUTED", 4, f"{len(ev)} of {n} agents reject {lead!r} citing evidence "
                    f"({len(rej)} reject in all)", False)
        if reached(rej):
            return ("INSUFFICIENT_EVIDENCE", 4,
                    f"{len(rej)} of {n} agents reject {lead!r} but only {len(ev)} cite evidence; "
                    "the evidenced rejects alone do not reach the threshold (CONS-004)", False)
    if q.challenge_rounds >= q.max_challenge_rounds:
        return ("CONTESTED", 5, f"no threshold reached after {q.challenge_rounds} challenge "
                f"round(s): {support}", False)
    return (None, 5, f"no threshold reached yet ({support}); challenge round "
            f"{q.challenge_rounds + 1} of {q.max_challenge_rounds} is next", False)


def _next_action(verdict: str | None, escalations: Sequence[Escalation]) -> NextAction:
    if any(e.reason != "insufficient_evidence" for e in escalations):
        return "escalate_to_human"
    if verdict == "INSUFFICIENT_EVIDENCE":
        return "request_investigation"
    if verdict is None:
        return "challenge_round"
    return "none"


def evaluate(question: ConsQuestion | dict[str, Any]) -> ConsOutcome:
    """Judge one round: tally, verdict, conflicts, escalations and the next action."""
    q = parse_question(question)
    t = tally(q)
    verdict, step, reason, critical = decide(q, t)
    conflicts = detect_conflicts(q, critical_option=t.leading_option if critical else None)
    unanimity = suspicious_unanimity(t.voters, t.leading_option, q.votes)
    escalations = build_escalations(verdict=verdict, verdict_reason=reason, conflicts=conflicts,
                                    unanimity=unanimity)
    conflicts = mark_escalated(conflicts, escalations)
    return ConsOutcome(question=q, single_claim=q.is_single_claim(), tally=t, verdict=verdict,
                       verdict_rule=step, verdict_reason=reason,
                       next_action=_next_action(verdict, escalations),
                       conflicts=tuple(conflicts), escalations=tuple(escalations))


class ConsState(_Model):
    """A run of the protocol: the standing question plus every round's ballots as submitted."""

    question: ConsQuestion  # standing ballots; challenge_rounds = rounds done
    history: tuple[tuple[Ballot, ...], ...]  # history[0] = opening ballots, [k] = challenge round k
    options_fixed: bool  # the options were given explicitly: new ballots must use them

    def evaluate(self) -> ConsOutcome:
        return evaluate(self.question)


def open_state(question: ConsQuestion | dict[str, Any]) -> ConsState:
    q = parse_question(question)
    return ConsState(question=q, history=(q.votes,), options_fixed=q.options is not None)


def apply_challenge_round(state: ConsState, new_ballots: Sequence[Ballot | dict[str, Any]]) -> ConsState:
    """The state after one challenge round (pure).

    An agent that submits any ballot in the round replaces *all* its earlier ballots; agents that
    submit nothing keep theirs. ``challengeRounds`` goes up by one and the round is kept in history.
    """
    new = parse_ballots(new_ballots, "ballots")
    q = state.question
    order = list(q.option_order())
    first: dict[tuple[str, str], int] = {}
    for j, b in enumerate(new):
        if state.options_fixed and b.option not in order:
            raise InputError(f"ballots[{j}].option", f"unknown option {b.option!r}; options are {order}")
        if (b.agent_id, b.option) in first:
            raise InputError(f"ballots[{j}]", f"duplicate ballot: agent {b.agent_id!r} already voted "
                             f"on option {b.option!r} at ballots[{first[b.agent_id, b.option]}]")
        first[b.agent_id, b.option] = j
        if b.option not in order:
            order.append(b.option)
    movers = {b.agent_id for b in new}
    standing = tuple(b for b in q.votes if b.agent_id not in movers) + new
    # Options stay in first-seen order over the whole history, even if their ballots were superseded.
    nq = q.model_copy(update={"votes": standing, "options": tuple(order),
                              "challenge_rounds": q.challenge_rounds + 1})
    try:  # re-run the cross-field checks (e.g. a single-claim question gaining an option)
        nq = ConsQuestion.model_validate(nq.model_dump())
    except ValidationError as exc:
        raise to_input_error(exc) from None
    return ConsState(question=nq, history=(*state.history, new), options_fixed=state.options_fixed)


def run_rounds(question: ConsQuestion | dict[str, Any],
               rounds: Iterable[Sequence[Ballot | dict[str, Any]]],
               ) -> Iterator[tuple[ConsState, ConsOutcome]]:
    """Yield the opening judgement, then one per challenge round while ``nextAction`` is
    "challenge_round". ``rounds`` is consumed lazily, so a caller can produce each round's
    ballots (e.g. by asking the agents) after seeing the previous step."""
    state = open_state(question)
    out = state.evaluate()
    yield state, out
    for ballots in rounds:
        if out.next_action != "challenge_round":
            return
        state = apply_challenge_round(state, ballots)
        out = state.evaluate()
        yield state, out


def classify_payload(payload: object) -> dict[str, Any]:
    """``rwb classify cons``: the seed's voting structure plus leadingOption, nextAction,
    conflicts and escalations (and the tally behind them)."""
    return outcome_json(evaluate(parse_question(payload)))
