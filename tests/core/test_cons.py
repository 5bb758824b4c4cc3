"""CONS engine: SPEC §3 numbers, the seed's verdict table, CONS-001..004 validation, rounds."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from workbench.core.errors import InputError
from workbench.core.protocols.cons import (
    ConsQuestion,
    apply_challenge_round,
    classify_payload,
    evaluate,
    open_state,
    parse_question,
    run_rounds,
)
from workbench.core.protocols.cons.tally import tally

RATIONALES = [
    "Atomic writes keep the map consistent after a crash",
    "Profiling shows the lookup cost dominates every other factor",
    "The migration path is short and reversible within one release",
    "Reviewers found three regressions in the alternative design",
    "Memory stays flat under the benchmark corpus of ten thousand files",
    "Operators asked for one artefact to back up and restore",
    "Tests cover the merge logic with property based checks",
]
CODE = {"file": "src/map.py", "section": "save", "type": "code"}
COUNTER = {"file": "tests/test_map.py", "section": "crash", "type": "counter-proof"}


def ballot(agent: str, option: str = "X", vote: str = "accept", confidence: float = 0.9,
           evidence: list[dict[str, Any]] | None = None, rationale: str | None = None) -> dict[str, Any]:
    n = int(agent.lstrip("abcdefghijklmnopqrstuvwxyz-") or 0)
    return {"agentId": agent, "option": option, "vote": vote, "confidence": confidence,
            "rationale": rationale or f"{RATIONALES[n % len(RATIONALES)]} ({agent})",
            "evidence": evidence if evidence is not None else []}


def question(votes: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return {"questionId": "CONS-042", "question": "Is the single-file map right?", "votes": votes, **kw}


# --- SPEC §3 check: actualConsensus ---------------------------------------------------------------

@pytest.mark.parametrize("third", [ballot("a3", "Y", "accept", 0.5), ballot("a3", "X", "reject", 0.5)])
def test_spec_check_actual_consensus(third: dict[str, Any]) -> None:
    q = question([ballot("a1", "X", confidence=0.90, evidence=[CODE]),
                  ballot("a2", "X", confidence=0.85), third])
    t = tally(parse_question(q))
    assert t.leading_option == "X"
    assert t.accept_weight == pytest.approx(1.75, abs=1e-12)
    assert t.oppose_weight == pytest.approx(0.50, abs=1e-12)
    assert t.actual_consensus == 1.75 / 2.25
    assert abs(t.actual_consensus - 0.778) < 5e-4
    out = classify_payload(q)
    assert out["actualConsensus"] == 1.75 / 2.25  # exact float, not rounded
    assert out["leadingOption"] == "X"


def test_b_weight_reject_first_then_max_accept_on_other_options() -> None:
    q = question([ballot("a1", "X", confidence=0.9), ballot("a2", "X", confidence=0.9),
                  ballot("a3", "Y", confidence=0.3), ballot("a3", "Z", confidence=0.6),
                  ballot("a4", "X", "reject", 0.4), ballot("a4", "Y", confidence=0.95),
                  ballot("a5", "Y", "reject", 0.8)])
    t = tally(parse_question(q))
    weights = {o.agent_id: (o.weight, o.basis) for o in t.opposition}
    assert weights == {"a3": (0.6, "accept Z"), "a4": (0.4, "reject X"), "a5": (0.0, "none")}
    assert t.oppose_weight == pytest.approx(1.0)
    assert t.actual_consensus == pytest.approx(1.8 / 2.8)
    assert t.accept_count == 2 and len(t.voters) == 5  # a5 voted, so it counts in the share
    assert t.accept_share == pytest.approx(0.4)


def test_actual_consensus_null_when_no_weight() -> None:
    t = tally(parse_question(question([ballot("a1", confidence=0.0), ballot("a2", "X", "reject", 0.0)])))
    assert t.actual_consensus is None


def test_abstainers_are_not_voters() -> None:
    q = question([ballot("a1"), ballot("a2", vote="abstain", confidence=0.5),
                  ballot("a3", "X", "reject", 0.5)])
    t = tally(parse_question(q))
    assert t.voters == ("a1", "a3") and t.agents == ("a1", "a2", "a3")
    assert t.actual_consensus == pytest.approx(0.9 / 1.4)


# --- leading option tie-break -----------------------------------------------------------------------

def test_leading_option_largest_sum() -> None:
    q = question([ballot("a1", "X", confidence=0.6), ballot("a2", "Y", confidence=0.5),
                  ballot("a3", "Y", confidence=0.5)])
    assert tally(parse_question(q)).leading_option == "Y"


def test_leading_tie_goes_to_more_accepting_agents() -> None:
    q = question([ballot("a1", "X", confidence=0.9), ballot("a2", "Y", confidence=0.45),
                  ballot("a3", "Y", confidence=0.45)])
    assert tally(parse_question(q)).leading_option == "Y"


def test_leading_full_tie_goes_to_first_option_within_tolerance() -> None:
    votes = [ballot("a1", "X", confidence=0.3), ballot("a2", "Y", confidence=0.1),
             ballot("a2", "Z", confidence=0.3)]
    votes[1]["confidence"] = 0.1
    assert tally(parse_question(question(votes))).leading_option == "X"
    assert tally(parse_question(question(votes, options=["Z", "Y", "X"]))).leading_option == "Z"
    # 0.1 + 0.2 != 0.3 in floats, but it is a tie within 1e-9.
    tie = [ballot("a1", "X", confidence=0.3), ballot("a2", "Y", confidence=0.1),
           ballot("a3", "Y", confidence=0.2), ballot("a4", "X", confidence=0.0)]
    assert tally(parse_question(question(tie))).leading_option == "X"


# --- the seed's verdict table -----------------------------------------------------------------------

def test_proven_by_four_of_five_agents_with_evidence() -> None:
    votes = [ballot(f"a{i}", confidence=0.6, evidence=[CODE] if i == 1 else []) for i in range(1, 5)]
    votes.append(ballot("a5", "X", "reject", 0.9))
    out = evaluate(question(votes))
    assert out.tally.actual_consensus == pytest.approx(2.4 / 3.3)  # below 0.8: the count decides
    assert out.verdict == "PROVEN" and out.verdict_rule == 3
    assert out.next_action == "none" and out.escalations == ()
    three = evaluate(question(votes[:3] + [ballot("a4", "X", "reject", 0.6), votes[4]]))
    assert three.verdict is None


def test_proven_by_weighted_confidence() -> None:
    votes = [ballot(f"a{i}", confidence=0.9, evidence=[CODE]) for i in range(1, 4)]
    votes += [ballot("a4", "X", "reject", 0.3), ballot("a5", "X", "reject", 0.3)]
    out = evaluate(question(votes))
    assert out.tally.accept_share == pytest.approx(0.6)
    assert out.tally.actual_consensus == pytest.approx(2.7 / 3.3)
    assert out.verdict == "PROVEN"


def test_proven_exactly_at_threshold_and_custom_threshold() -> None:
    votes = [ballot("a1", confidence=0.8, evidence=[CODE]), ballot("a2", confidence=0.8),
             ballot("a3", "X", "reject", 0.2), ballot("a4", "X", "reject", 0.2)]
    assert evaluate(question(votes)).tally.actual_consensus == pytest.approx(0.8)
    assert evaluate(question(votes)).verdict == "PROVEN"
    assert evaluate(question(votes, consensusThreshold=0.81)).verdict is None


def test_refuted_by_counter_proof_with_critical_conflict() -> None:
    votes = [ballot(f"a{i}", confidence=0.9, evidence=[CODE]) for i in range(1, 5)]
    votes.append(ballot("a5", "X", "reject", 0.7, evidence=[COUNTER]))
    out = evaluate(question(votes))
    assert out.verdict == "REFUTED" and out.verdict_rule == 2
    crit = [c for c in out.conflicts if c.severity == "critical"]
    assert len(crit) == 1 and crit[0].conflict_type == "contradiction" and crit[0].options == ("X",)
    assert crit[0].resolution.resolution_type == "escalate"
    assert [e.reason for e in out.escalations] == ["critical_conflict"]
    assert out.escalations[0].conflict_ids == (crit[0].conflict_id,)
    assert out.next_action == "escalate_to_human"


def test_refuted_by_counter_proof_without_would_be_proof_is_not_critical() -> None:
    votes = [ballot("a1", confidence=0.5, evidence=[CODE]), ballot("a2", confidence=0.5),
             ballot("a3", "X", "reject", 0.9, evidence=[{"file": "t.py", "type": "Counter_Proof"}])]
    out = evaluate(question(votes))
    assert out.verdict == "REFUTED" and out.verdict_rule == 2
    assert all(c.severity != "critical" for c in out.conflicts)
    assert out.escalations == () and out.next_action == "none"


def test_counter_proof_must_target_the_leading_option() -> None:
    votes = [ballot(f"a{i}", "X", confidence=0.9, evidence=[CODE]) for i in range(1, 5)]
    votes.append(ballot("a5", "Y", "reject", 0.9, evidence=[COUNTER]))
    assert evaluate(question(votes)).verdict == "PROVEN"


@pytest.fixture
def split_3_2() -> list[dict[str, Any]]:
    return ([ballot(f"a{i}", confidence=0.7, evidence=[CODE]) for i in range(1, 4)]
            + [ballot(f"a{i}", "X", "reject", 0.7, evidence=[CODE]) for i in range(4, 6)])


@pytest.mark.parametrize("rounds", [0, 1])
def test_split_before_max_rounds_is_pending(split_3_2: list[dict[str, Any]], rounds: int) -> None:
    out = evaluate(question(split_3_2, challengeRounds=rounds))
    assert out.verdict is None and out.verdict_rule == 5
    assert out.next_action == "challenge_round" and out.escalations == ()
    assert classify_payload(question(split_3_2, challengeRounds=rounds))["verdict"] is None


@pytest.mark.parametrize("rounds", [2, 3])
def test_contested_after_two_challenge_rounds(split_3_2: list[dict[str, Any]], rounds: int) -> None:
    out = evaluate(question(split_3_2, challengeRounds=rounds))
    assert out.verdict == "CONTESTED"
    assert out.tally.actual_consensus == pytest.approx(0.6)
    assert out.next_action == "escalate_to_human"
    (esc,) = out.escalations
    assert esc.reason == "contested_verdict" and esc.requires_human
    assert esc.conflict_ids == tuple(c.conflict_id for c in out.conflicts) and esc.conflict_ids
    assert all(c.resolution.resolution_type == "escalate" for c in out.conflicts)


def test_max_challenge_rounds_is_configurable(split_3_2: list[dict[str, Any]]) -> None:
    assert evaluate(question(split_3_2, maxChallengeRounds=0)).verdict == "CONTESTED"
    assert evaluate(question(split_3_2, challengeRounds=2, maxChallengeRounds=3)).verdict is None


def test_insufficient_below_min_voters() -> None:
    votes = [ballot("a1", evidence=[CODE]), ballot("a2", evidence=[CODE]),
             ballot("a3", vote="abstain", confidence=0.5)]
    out = evaluate(question(votes))
    assert out.verdict == "INSUFFICIENT_EVIDENCE" and out.verdict_rule == 1
    assert out.next_action == "request_investigation"
    assert [e.reason for e in out.escalations] == ["insufficient_evidence"]
    assert evaluate(question(votes, minVoters=2)).verdict == "PROVEN"


def test_insufficient_without_evidence() -> None:
    votes = [ballot(f"a{i}", confidence=0.8) for i in range(1, 6)]
    out = evaluate(question(votes))
    assert out.verdict == "INSUFFICIENT_EVIDENCE" and out.verdict_rule == 3
    assert "CONS-004" in out.verdict_reason
    assert [e.reason for e in out.escalations] == ["insufficient_evidence"]


def test_empty_votes_are_insufficient() -> None:
    out = evaluate(question([]))
    assert out.verdict == "INSUFFICIENT_EVIDENCE" and out.tally.leading_option is None
    assert out.tally.actual_consensus is None


def test_single_claim_refuted_by_evidenced_rejects() -> None:
    votes = [ballot("a1", confidence=0.6, evidence=[CODE])]
    votes += [ballot(f"a{i}", "X", "reject", 0.8, evidence=[CODE]) for i in range(2, 6)]
    out = evaluate(question(votes))
    assert out.single_claim is True
    assert out.verdict == "REFUTED" and out.verdict_rule == 4
    assert out.next_action == "none"


def test_single_claim_rejects_without_enough_evidence_are_insufficient() -> None:
    votes = [ballot("a1", confidence=0.6, evidence=[CODE])]
    votes += [ballot(f"a{i}", "X", "reject", 0.8, evidence=[CODE] if i == 2 else [])
              for i in range(2, 6)]
    out = evaluate(question(votes))
    assert out.verdict == "INSUFFICIENT_EVIDENCE" and out.verdict_rule == 4


def test_single_claim_refuted_by_weighted_evidenced_rejects() -> None:
    votes = [ballot("a1", confidence=0.1), ballot("a2", confidence=0.1),
             ballot("a3", "X", "reject", 0.9, evidence=[CODE]),
             ballot("a4", "X", "reject", 0.9, evidence=[CODE])]
    out = evaluate(question(votes))  # 2 of 4 by count, 1.8 / 2.0 = 0.9 by weight
    assert out.verdict == "REFUTED" and out.verdict_rule == 4


def test_rejects_do_not_refute_a_multi_option_question() -> None:
    votes = [ballot("a1", confidence=0.6, evidence=[CODE])]
    votes += [ballot(f"a{i}", "X", "reject", 0.8, evidence=[CODE]) for i in range(2, 6)]
    out = evaluate(question(votes, options=["X", "Y"]))
    assert out.single_claim is False and out.verdict is None
    assert evaluate(question(votes, singleClaim=False)).verdict is None


# --- CONS-001..003: validation ----------------------------------------------------------------------

def _err(payload: object) -> InputError:
    with pytest.raises(InputError) as info:
        parse_question(payload)
    return info.value


def _with(i: int, **kw: Any) -> dict[str, Any]:
    votes = [ballot("a1"), ballot("a2"), ballot("a3")]
    votes[i].update(kw)
    return question(votes)


@pytest.mark.parametrize(("change", "field", "needle"), [
    ({"vote": "yes"}, "votes[1].vote", "CONS-001"),
    ({"vote": None}, "votes[1].vote", "CONS-001"),
    ({"rationale": ""}, "votes[1].rationale", "required (CONS-002)"),
    ({"rationale": "   "}, "votes[1].rationale", "required (CONS-002)"),
    ({"rationale": 7}, "votes[1].rationale", "CONS-002"),
    ({"confidence": 1.5}, "votes[1].confidence", "CONS-003"),
    ({"confidence": -0.1}, "votes[1].confidence", "CONS-003"),
    ({"confidence": math.nan}, "votes[1].confidence", "CONS-003"),
    ({"confidence": True}, "votes[1].confidence", "CONS-003"),
    ({"confidence": "0.8"}, "votes[1].confidence", "CONS-003"),
    ({"agentId": ""}, "votes[1].agentId", "CONS-001"),
    ({"evidence": "src/map.py"}, "votes[1].evidence", "list"),
    ({"evidence": [{"file": "x.py"}]}, "votes[1].evidence[0].type", "required"),
    ({"evidance": []}, "votes[1].evidance", "unknown key"),
])
def test_ballot_validation_names_the_field(change: dict[str, Any], field: str, needle: str) -> None:
    err = _err(_with(1, **change))
    assert err.field == field
    assert needle in str(err) and str(err).startswith(field + ": ")


@pytest.mark.parametrize(("key", "rule"), [("rationale", "CONS-002"), ("confidence", "CONS-003"),
                                           ("vote", "CONS-001"), ("option", "CONS-001")])
def test_missing_ballot_keys(key: str, rule: str) -> None:
    payload = _with(1)
    del payload["votes"][1][key]
    err = _err(payload)
    assert str(err) == f"votes[1].{key}: required ({rule})"


def test_exact_rationale_message() -> None:
    payload = _with(1)
    del payload["votes"][1]["rationale"]
    assert str(_err(payload)) == "votes[1].rationale: required (CONS-002)"


def test_missing_evidence_is_not_an_error() -> None:
    payload = _with(0)
    for v in payload["votes"]:
        del v["evidence"]
    assert evaluate(payload).verdict == "INSUFFICIENT_EVIDENCE"
    assert evaluate(_with(0, evidence=None)).verdict == "INSUFFICIENT_EVIDENCE"


def test_confidence_bounds_and_integers_are_accepted() -> None:
    q = parse_question(question([ballot("a1", confidence=0), ballot("a2", confidence=1)]))
    assert [b.confidence for b in q.votes] == [0.0, 1.0]


def test_vote_value_is_case_insensitive() -> None:
    assert parse_question(_with(0, vote=" Accept ")).votes[0].vote == "accept"


@pytest.mark.parametrize(("payload", "field"), [
    (question([ballot("a1"), ballot("a1")]), "votes[1]"),
    (question([ballot("a1", "X"), ballot("a2", "Z")], options=["X", "Y"]), "votes[1].option"),
    (question([ballot("a1")], options=["X", "X"]), "options[1]"),
    (question([ballot("a1")], minVoters=0), "minVoters"),
    (question([ballot("a1")], minVoters=2.5), "minVoters"),
    (question([ballot("a1")], minVoters=True), "minVoters"),
    (question([ballot("a1")], consensusThreshold=0), "consensusThreshold"),
    (question([ballot("a1")], consensusThreshold=1.2), "consensusThreshold"),
    (question([ballot("a1")], countThreshold=0), "countThreshold"),
    (question([ballot("a1")], challengeRounds=-1), "challengeRounds"),
    (question([ballot("a1")], maxChallengeRounds="2"), "maxChallengeRounds"),
    (question([ballot("a1", "X"), ballot("a2", "Y")], singleClaim=True), "singleClaim"),
    (question("nope"), "votes"),
    ({"question": "q?", "votes": []}, "questionId"),
    ({"questionId": "q", "votes": []}, "question"),
    ({"questionId": "q", "question": "q?"}, "votes"),
])
def test_question_validation_names_the_field(payload: dict[str, Any], field: str) -> None:
    assert _err(payload).field == field


def test_duplicate_message_points_at_first_ballot() -> None:
    err = _err(question([ballot("a1"), ballot("a2"), ballot("a1", vote="reject")]))
    assert "votes[0]" in err.message and err.field == "votes[2]"


def test_not_an_object() -> None:
    assert "JSON object" in str(_err([1, 2]))
    assert _err(question([ballot("a1"), 5])).field == "votes[1]"


def test_thresholds_accept_one() -> None:
    q = parse_question(question([ballot("a1")], consensusThreshold=1, countThreshold=1.0))
    assert q.consensus_threshold == 1.0 and q.count_threshold == 1.0


def test_defaults() -> None:
    q = parse_question(question([ballot("a1")]))
    assert (q.consensus_threshold, q.count_threshold, q.min_voters, q.challenge_rounds,
            q.max_challenge_rounds) == (0.8, 0.8, 3, 0, 2)
    assert isinstance(q, ConsQuestion) and q.is_single_claim()


# --- challenge rounds -------------------------------------------------------------------------------

def test_challenge_rounds_supersede_and_keep_history(split_3_2: list[dict[str, Any]]) -> None:
    s0 = open_state(question(split_3_2))
    assert s0.evaluate().next_action == "challenge_round"
    s1 = apply_challenge_round(s0, [ballot("a4", "X", "accept", 0.8, evidence=[CODE])])
    assert s1.question.challenge_rounds == 1 and len(s1.history) == 2
    assert s1.history[0] == s0.question.votes
    assert [b.vote for b in s1.question.votes if b.agent_id == "a4"] == ["accept"]
    out = s1.evaluate()
    assert out.verdict == "PROVEN" and out.tally.accept_count == 4
    assert s0.question.challenge_rounds == 0  # pure: the old state is unchanged


def test_unchanged_split_becomes_contested_after_two_rounds(split_3_2: list[dict[str, Any]]) -> None:
    s = open_state(question(split_3_2))
    s = apply_challenge_round(s, [ballot("a5", "X", "reject", 0.75, evidence=[CODE])])
    assert s.evaluate().verdict is None
    s = apply_challenge_round(s, [])
    assert s.question.challenge_rounds == 2 and len(s.history) == 3
    assert s.evaluate().verdict == "CONTESTED"


def test_a_new_ballot_replaces_all_of_an_agents_ballots() -> None:
    s = open_state(question([ballot("a1", "X"), ballot("a1", "Y", confidence=0.4), ballot("a2", "Y")]))
    s = apply_challenge_round(s, [ballot("a1", "Y", confidence=0.7)])
    assert [(b.agent_id, b.option) for b in s.question.votes] == [("a2", "Y"), ("a1", "Y")]
    assert s.question.option_order() == ("X", "Y")  # X stays, in first-seen order


def test_challenge_round_validation() -> None:
    s = open_state(question([ballot("a1", "X")], options=["X", "Y"]))
    with pytest.raises(InputError) as info:
        apply_challenge_round(s, [ballot("a1", "Z")])
    assert info.value.field == "ballots[0].option"
    with pytest.raises(InputError) as info:
        apply_challenge_round(s, [ballot("a1", "X"), ballot("a1", "X", "reject")])
    assert info.value.field == "ballots[1]"
    with pytest.raises(InputError) as info:
        apply_challenge_round(s, [{**ballot("a1", "X"), "rationale": ""}])
    assert str(info.value) == "ballots[0].rationale: required (CONS-002)"
    free = open_state(question([ballot("a1", "X")]))
    assert apply_challenge_round(free, [ballot("a2", "Z")]).question.option_order() == ("X", "Z")
    single = open_state(question([ballot("a1", "X")], singleClaim=True))
    with pytest.raises(InputError) as info:
        apply_challenge_round(single, [ballot("a2", "Z")])
    assert info.value.field == "singleClaim"


def test_run_rounds_steps_until_a_verdict(split_3_2: list[dict[str, Any]]) -> None:
    rounds = [[], [ballot("a5", "X", "reject", 0.6, evidence=[CODE])], [ballot("a1", "X")]]
    steps = list(run_rounds(question(split_3_2), iter(rounds)))
    assert [s.question.challenge_rounds for s, _ in steps] == [0, 1, 2]
    assert [o.verdict for _, o in steps] == [None, None, "CONTESTED"]
    assert [o.next_action for _, o in steps] == ["challenge_round", "challenge_round",
                                                 "escalate_to_human"]
    early = list(run_rounds(question(split_3_2), [[ballot("a4", "X", confidence=0.9)], [], []]))
    assert [o.verdict for _, o in early] == [None, "PROVEN"]


def test_core_engine_imports_no_qt_or_litellm() -> None:
    root = Path(__file__).resolve().parents[2]
    code = ("import sys, workbench.core.protocols.cons.tally; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'PyQt6', 'pyqtgraph', 'litellm')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
