"""CONS conflicts (CONS-005), conflict ids, severity, HITL escalations (CONS-006), unanimity."""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

import pytest

from workbench.core.protocols.cons import conflict_id, evaluate
from workbench.core.protocols.cons.conflicts import (
    HITL_ACTIONS,
    jaccard,
    near_duplicates,
    severity_rule,
    tokens,
)

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
ID_RE = re.compile(r"^conflict_[0-9a-f]{8}$")


def ballot(agent: str, option: str = "X", vote: str = "accept", confidence: float = 0.9,
           evidence: list[dict[str, Any]] | None = None, rationale: str | None = None) -> dict[str, Any]:
    n = int(agent.lstrip("abcdefghijklmnopqrstuvwxyz-") or 0)
    return {"agentId": agent, "option": option, "vote": vote, "confidence": confidence,
            "rationale": rationale or f"{RATIONALES[n % len(RATIONALES)]} ({agent})",
            "evidence": evidence if evidence is not None else []}


def question(votes: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return {"questionId": "CONS-042", "question": "Is the single-file map right?", "votes": votes, **kw}


MIXED = [ballot("a1", "X", confidence=0.9, evidence=[CODE]), ballot("a2", "X", confidence=0.8),
         ballot("a3", "X", "reject", 0.7), ballot("a4", "Y", confidence=0.6),
         ballot("a4", "X", "reject", 0.5), ballot("a5", "X", confidence=0.4),
         ballot("a5", "Y", confidence=0.3), ballot("a6", "Y", vote="abstain", confidence=0.2)]


def _summary(votes: list[dict[str, Any]], qid: str = "CONS-042") -> set[tuple[str, str, str]]:
    out = evaluate(question(votes, questionId=qid))
    return {(c.conflict_id, c.conflict_type, c.severity) for c in out.conflicts}


# --- conflict id ------------------------------------------------------------------------------------

def test_conflict_id_format_and_derivation() -> None:
    cid = conflict_id("Q1", "contradiction", [("b", "reject X"), ("a", "accept X")])
    canon = '{"conflictType":"contradiction","positions":[["a","accept X"],["b","reject X"]],"questionId":"Q1"}'
    assert cid == "conflict_" + hashlib.sha256(canon.encode()).hexdigest()[:8]
    assert ID_RE.match(cid)
    assert cid == conflict_id("Q1", "contradiction", [("a", "accept X"), ("b", "reject X")])
    assert cid != conflict_id("Q2", "contradiction", [("a", "accept X"), ("b", "reject X")])
    assert cid != conflict_id("Q1", "partial-overlap", [("a", "accept X"), ("b", "reject X")])


def test_conflict_ids_are_stable_under_ballot_reordering() -> None:
    base = _summary(MIXED)
    assert len(base) == 4  # contradiction on X, priority-difference, 2 partial-overlaps
    assert all(ID_RE.match(cid) for cid, _, _ in base)
    for seed in range(12):
        votes = list(MIXED)
        random.Random(seed).shuffle(votes)
        assert _summary(votes) == base


def test_conflict_ids_depend_on_question_not_confidence() -> None:
    ids = {c for c, _, _ in _summary(MIXED)}
    assert ids.isdisjoint({c for c, _, _ in _summary(MIXED, qid="CONS-043")})
    shifted = [dict(b, confidence=round(b["confidence"] / 2, 3)) for b in MIXED]
    assert {c for c, _, _ in _summary(shifted)} == ids


# --- detection and types ----------------------------------------------------------------------------

def test_conflict_types_from_ballots() -> None:
    out = evaluate(question(MIXED))
    by_type = {c.conflict_type: c for c in out.conflicts}
    contra = by_type["contradiction"]
    assert contra.options == ("X",)
    assert [(p.agent_id, p.position) for p in contra.positions] == [
        ("a1", "accept X"), ("a2", "accept X"), ("a5", "accept X"), ("a3", "reject X"), ("a4", "reject X")]
    prio = by_type["priority-difference"]
    assert {p.position for p in prio.positions} == {"accept X", "accept Y"}
    overlaps = [c for c in out.conflicts if c.conflict_type == "partial-overlap"]
    assert {p.position for c in overlaps for p in c.positions} == {"accept X", "accept Y", "accept X + Y"}


def test_unanimous_ballots_raise_no_conflict() -> None:
    votes = [ballot(f"a{i}", confidence=0.8, evidence=[CODE]) for i in range(1, 4)]
    assert evaluate(question(votes)).conflicts == ()


def test_cons_005_every_conflict_has_a_severity_and_the_seed_shape() -> None:
    out = evaluate(question(MIXED))
    for c in out.conflicts:
        d = c.to_json()
        assert d["severity"] in ("critical", "high", "medium", "low")
        assert {"conflictId", "severity", "conflictType", "positions", "resolution"} <= set(d)
        assert d["resolution"] == {"status": "pending", "resolutionType": None}
        assert all(set(p) == {"agentId", "position", "confidence"} for p in d["positions"])


# --- severity ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("share", "conf", "sev"), [
    (0.4, 0.8, "high"), (1 / 3, 0.7, "high"), (0.4, 0.5, "medium"), (0.2, 0.8, "medium"),
    (0.2, 0.5, "low"), (0.33, 0.69, "low"),
])
def test_severity_rule(share: float, conf: float, sev: str) -> None:
    assert severity_rule(share, conf) == sev


def _contradiction(votes: list[dict[str, Any]]) -> Any:
    (c,) = [c for c in evaluate(question(votes)).conflicts if c.conflict_type == "contradiction"]
    return c


def test_severity_high_for_firm_near_even_split() -> None:
    votes = [ballot(f"a{i}", confidence=0.8) for i in range(1, 4)]
    votes += [ballot(f"a{i}", "X", "reject", 0.8) for i in (4, 5)]
    c = _contradiction(votes)
    assert c.minority_share == pytest.approx(0.4) and c.min_side_confidence == pytest.approx(0.8)
    assert c.severity == "high"


def test_severity_medium_for_firm_lone_dissent() -> None:
    votes = [ballot(f"a{i}", confidence=0.9) for i in range(1, 5)] + [ballot("a5", "X", "reject", 0.8)]
    c = _contradiction(votes)
    assert c.minority_share == pytest.approx(0.8 / 4.4)
    assert c.severity == "medium"


def test_severity_low_for_weak_lone_dissent() -> None:
    votes = [ballot(f"a{i}", confidence=0.9) for i in range(1, 5)] + [ballot("a5", "X", "reject", 0.4)]
    assert _contradiction(votes).severity == "low"


def test_partial_overlap_is_one_level_lower() -> None:
    votes = [ballot("a1", "X", confidence=0.9), ballot("a1", "Y", confidence=0.8),
             ballot("a2", "X", confidence=0.9), ballot("a3", "Z", confidence=0.1)]
    out = evaluate(question(votes))
    (ov,) = [c for c in out.conflicts if c.conflict_type == "partial-overlap"]
    assert ov.minority_share == pytest.approx(0.5) and ov.min_side_confidence == pytest.approx(0.9)
    assert ov.severity == "medium"  # the rule says high


def test_critical_only_for_counter_proof_against_a_would_be_proof() -> None:
    votes = [ballot(f"a{i}", confidence=0.9, evidence=[CODE]) for i in range(1, 5)]
    plain = evaluate(question(votes + [ballot("a5", "X", "reject", 0.9, evidence=[CODE])]))
    assert all(c.severity != "critical" for c in plain.conflicts)
    refuted = evaluate(question(votes + [ballot("a5", "X", "reject", 0.9, evidence=[COUNTER])]))
    assert [c.severity for c in refuted.conflicts] == ["critical"]


# --- supplied conflicts -----------------------------------------------------------------------------

SCOPE = {"conflictType": "scope-difference",
         "positions": [{"agentId": "a1", "position": "covers reads only", "confidence": 0.9},
                       {"agentId": "a2", "position": "covers reads and writes", "confidence": 0.8}]}


def test_supplied_conflict_gets_id_and_computed_severity() -> None:
    votes = [ballot(f"a{i}", confidence=0.8, evidence=[CODE]) for i in range(1, 4)]
    out = evaluate(question(votes, conflicts=[SCOPE]))
    (c,) = out.conflicts
    assert c.source == "supplied" and c.conflict_type == "scope-difference"
    assert ID_RE.match(c.conflict_id)
    assert c.minority_share == pytest.approx(0.8 / 1.7) and c.severity == "high"
    assert out.verdict == "PROVEN" and out.escalations == ()


def test_supplied_critical_conflict_escalates() -> None:
    votes = [ballot(f"a{i}", confidence=0.8, evidence=[CODE]) for i in range(1, 4)]
    out = evaluate(question(votes, conflicts=[{**SCOPE, "severity": "critical"}]))
    assert [e.reason for e in out.escalations] == ["critical_conflict"]
    assert out.conflicts[0].resolution.resolution_type == "escalate"
    assert out.next_action == "escalate_to_human"


def test_supplied_duplicate_of_a_ballot_conflict_is_dropped() -> None:
    votes = [ballot("a1", confidence=0.9), ballot("a2", "X", "reject", 0.6), ballot("a3")]
    dup = {"conflictType": "contradiction",
           "positions": [{"agentId": "a2", "position": "reject X", "confidence": 0.6},
                         {"agentId": "a1", "position": "accept X", "confidence": 0.9},
                         {"agentId": "a3", "position": "accept X", "confidence": 0.9}]}
    assert len(evaluate(question(votes, conflicts=[dup])).conflicts) == 1


# --- escalations ------------------------------------------------------------------------------------

def test_escalations_carry_reason_action_and_require_a_human() -> None:
    cases = {
        "contested_verdict": question([ballot(f"a{i}", confidence=0.7, evidence=[CODE]) for i in (1, 2, 3)]
                                      + [ballot(f"a{i}", "X", "reject", 0.7) for i in (4, 5)],
                                      challengeRounds=2),
        "critical_conflict": question([ballot(f"a{i}", evidence=[CODE]) for i in (1, 2, 3, 4)]
                                      + [ballot("a5", "X", "reject", 0.5, evidence=[COUNTER])]),
        "insufficient_evidence": question([ballot("a1", evidence=[CODE])]),
        "suspicious_unanimity": question([ballot(f"a{i}", confidence=0.97, evidence=[CODE])
                                          for i in (1, 2, 3)]),
    }
    for reason, payload in cases.items():
        out = evaluate(payload)
        assert [e.reason for e in out.escalations] == [reason], reason
        (e,) = out.escalations
        assert e.requires_human is True and e.action == HITL_ACTIONS[reason] and e.detail
        assert out.next_action == ("request_investigation" if reason == "insufficient_evidence"
                                   else "escalate_to_human")
    assert HITL_ACTIONS == {"contested_verdict": "Present conflict to user",
                            "critical_conflict": "Immediate escalation",
                            "insufficient_evidence": "Request user guidance",
                            "suspicious_unanimity": "Verify with user"}


def test_cons_006_escalates_whenever_the_threshold_is_not_reached() -> None:
    not_reached = [
        question([ballot("a1", evidence=[CODE]), ballot("a2", "X", "reject", 0.9)]),  # too few
        question([ballot(f"a{i}", confidence=0.8) for i in (1, 2, 3)]),  # no evidence
        question([ballot(f"a{i}", confidence=0.6, evidence=[CODE]) for i in (1, 2, 3)]
                 + [ballot(f"a{i}", "X", "reject", 0.6) for i in (4, 5)], challengeRounds=2),
    ]
    for payload in not_reached:
        out = evaluate(payload)
        assert out.verdict in ("INSUFFICIENT_EVIDENCE", "CONTESTED")
        assert out.escalations and all(e.requires_human for e in out.escalations)


# --- suspicious unanimity ---------------------------------------------------------------------------

def _reasons(votes: list[dict[str, Any]]) -> list[str]:
    return [e.reason for e in evaluate(question(votes)).escalations]


def test_unanimity_with_all_high_confidence_is_suspicious() -> None:
    votes = [ballot(f"a{i}", confidence=c, evidence=[CODE]) for i, c in ((1, 0.95), (2, 0.99), (3, 1.0))]
    out = evaluate(question(votes))
    assert out.verdict == "PROVEN" and [e.reason for e in out.escalations] == ["suspicious_unanimity"]
    assert "0.95" in out.escalations[0].detail


def test_unanimity_with_near_duplicate_rationales_is_suspicious() -> None:
    texts = ["The single file is safer, atomic writes!", "the single file is safer; atomic writes",
             "The SINGLE file is safer (atomic writes)."]
    votes = [ballot(f"a{i}", confidence=0.7, evidence=[CODE], rationale=t) for i, t in enumerate(texts, 1)]
    out = evaluate(question(votes))
    assert [e.reason for e in out.escalations] == ["suspicious_unanimity"]
    assert "near-duplicates" in out.escalations[0].detail


def test_ordinary_unanimity_is_not_suspicious() -> None:
    votes = [ballot(f"a{i}", confidence=c, evidence=[CODE]) for i, c in ((1, 0.95), (2, 0.94), (3, 0.99))]
    assert _reasons(votes) == []


def test_a_dissent_breaks_unanimity_but_an_abstention_does_not() -> None:
    high = [ballot(f"a{i}", confidence=0.99, evidence=[CODE]) for i in (1, 2, 3, 4)]
    assert "suspicious_unanimity" not in _reasons(high + [ballot("a5", "X", "reject", 0.2)])
    assert "suspicious_unanimity" not in _reasons(high + [ballot("a5", "Y", confidence=0.2)])
    assert _reasons(high + [ballot("a5", vote="abstain", confidence=0.2)]) == ["suspicious_unanimity"]


def test_a_single_voter_is_not_a_unanimity() -> None:
    assert "suspicious_unanimity" not in _reasons([ballot("a1", confidence=1.0, evidence=[CODE])])


def test_near_duplicate_rule() -> None:
    ten = " ".join(f"w{i}" for i in range(10))
    nine = " ".join(f"w{i}" for i in range(9))
    eight = " ".join(f"w{i}" for i in range(8))
    assert jaccard(tokens(ten), tokens(nine)) == pytest.approx(0.9)
    assert near_duplicates([ten, nine.upper() + "!!"])
    assert not near_duplicates([ten, eight])
    assert not near_duplicates([ten, ten, eight])  # every pair must be close
    assert not near_duplicates([ten])
    assert tokens("Don't, stop!") == frozenset({"don", "t", "stop"})


def test_classify_json_lists_conflicts_and_escalations() -> None:
    from workbench.core.protocols.cons import classify_payload

    out = classify_payload(question(MIXED))
    json.dumps(out, allow_nan=False)
    assert len(out["conflicts"]) == 4 and out["escalations"] == []
    assert all(ID_RE.match(c["conflictId"]) for c in out["conflicts"])
