"""Consensus Server findings engine (SPEC §2): exact numbers, decisions and validation."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.core.errors import InputError
from workbench.core.protocols.findings.book import (
    DEFAULT_THRESHOLD,
    STATUSES,
    TOLERANCE,
    Finding,
    FindingsBook,
    FindingStatus,
    Vote,
    VoteType,
    classify_payload,
    consensus,
    evaluate,
    replay,
    status_for,
)


def v(agent: str, vote_type: str, confidence: float, reason: str = "") -> Vote:
    return Vote(agent=agent, vote_type=vote_type, confidence=confidence, reason=reason)


SEED_VOTES = [
    v("scout", "confirm", 0.85, "Found commit e8f2a91 in git log with OAuth2 message"),
    v("auditor", "challenge", 0.65, "GitHub commit list was 3 days stale; local git disagreed"),
    v("dev", "confirm", 0.95, "Executed git log locally; commit exists and touches auth files"),
]


# ---------------------------------------------------------------------------------------------
# Vocabulary
# ---------------------------------------------------------------------------------------------


def test_vote_type_directions():
    assert [(t.value, t.direction) for t in VoteType] == [
        ("confirm", 1),
        ("challenge", -1),
        ("uncertain", 0),
    ]


def test_status_vocabulary():
    assert STATUSES == ("confirmed", "challenged", "pending")
    assert {s.value for s in FindingStatus} == set(STATUSES)
    assert DEFAULT_THRESHOLD == 0.6
    assert TOLERANCE == 1e-9


def test_vote_type_is_case_and_space_insensitive():
    assert v("a", " Confirm ", 0.5).vote_type is VoteType.CONFIRM
    assert v("a", "CHALLENGE", 0.5).direction == -1


def test_vote_weight_is_signed_confidence():
    assert v("a", "confirm", 0.7).weight == 0.7
    assert v("a", "challenge", 0.7).weight == -0.7
    assert v("a", "uncertain", 0.7).weight == 0


# ---------------------------------------------------------------------------------------------
# The seed's worked example
# ---------------------------------------------------------------------------------------------


def test_seed_worked_example_is_challenged():
    result = consensus(SEED_VOTES)
    assert result.consensus_score == 1.15 / 3
    assert abs(result.consensus_score - 0.3833) < 5e-5
    assert result.consensus_score == pytest.approx(0.3833, abs=1e-4)
    assert result.status is FindingStatus.CHALLENGED
    assert result.k == 3
    assert result.voting_agents == ("scout", "auditor", "dev")
    assert result.weighted_sum == 1.15
    assert result.votes_total == 3


def test_seed_example_through_classify_payload():
    keys = {"agent", "vote_type", "confidence", "reason"}
    votes = [vote.model_dump(mode="json", include=keys) for vote in SEED_VOTES]
    payload = {
        "threshold": 0.6,
        "findings": [{"id": "f1", "claim": "commit e8f2a91 adds OAuth2", "votes": votes}],
    }
    [entry] = classify_payload(payload)
    assert entry["id"] == "f1"
    assert abs(entry["consensus_score"] - 0.3833) < 5e-5
    assert entry["status"] == "challenged"
    assert entry["voting_agents"] == ["scout", "auditor", "dev"]
    assert entry["k"] == 3 and entry["votes_total"] == 3 and entry["uncertain_agents"] == []


def test_score_is_not_rounded():
    score = consensus(SEED_VOTES).consensus_score
    assert score != round(score, 4)


# ---------------------------------------------------------------------------------------------
# k, uncertain, pending
# ---------------------------------------------------------------------------------------------


def test_uncertain_is_excluded_from_k():
    result = consensus([v("a", "confirm", 0.9), v("b", "uncertain", 1.0), v("c", "confirm", 0.5)])
    assert result.k == 2
    assert result.consensus_score == pytest.approx(0.7, abs=1e-12)
    assert result.status is FindingStatus.CONFIRMED
    assert result.voting_agents == ("a", "c")
    assert result.uncertain_agents == ("b",)
    # Counting the uncertain agent in k would give 1.4 / 3 = 0.467, challenged.


def test_all_uncertain_is_pending_with_null_score():
    result = consensus([v("a", "uncertain", 0.9), v("b", "uncertain", 0.1)])
    assert result.consensus_score is None
    assert result.status is FindingStatus.PENDING
    assert result.k == 0 and result.voting_agents == ()
    assert result.uncertain_agents == ("a", "b")


def test_no_votes_is_pending():
    result = consensus([])
    assert (result.consensus_score, result.status, result.k, result.votes_total) == (
        None, FindingStatus.PENDING, 0, 0)


def test_zero_confidence_confirm_still_counts_in_k():
    result = consensus([v("a", "confirm", 0.9), v("b", "confirm", 0.0)])
    assert result.k == 2
    assert result.consensus_score == pytest.approx(0.45, abs=1e-12)
    assert result.status is FindingStatus.CHALLENGED


def test_lone_zero_confidence_challenge_gives_plain_zero():
    score = consensus([v("a", "challenge", 0.0)]).consensus_score
    assert score == 0.0 and math.copysign(1.0, score) == 1.0  # not -0.0


def test_unanimous_challenge_is_minus_one():
    result = consensus([v("a", "challenge", 1.0), v("b", "challenge", 1.0)])
    assert result.consensus_score == -1.0
    assert result.status is FindingStatus.CHALLENGED


# ---------------------------------------------------------------------------------------------
# Repeat votes
# ---------------------------------------------------------------------------------------------


def test_repeat_vote_replaces_the_earlier_one():
    result = consensus([v("a", "challenge", 0.9), v("b", "confirm", 0.8), v("a", "confirm", 0.6)])
    assert result.k == 2
    assert result.consensus_score == pytest.approx(0.7, abs=1e-12)
    assert result.status is FindingStatus.CONFIRMED
    assert result.votes_total == 3
    # first-vote order: a voted before b, even though a's latest vote came last
    assert result.voting_agents == ("a", "b")
    assert [x.confidence for x in result.latest_votes] == [0.6, 0.8]


def test_repeat_vote_changing_to_uncertain_removes_agent_from_k():
    result = consensus([v("a", "challenge", 0.9), v("b", "confirm", 0.8), v("a", "uncertain", 0.5)])
    assert result.k == 1
    assert result.consensus_score == 0.8
    assert result.voting_agents == ("b",)
    assert result.uncertain_agents == ("a",)
    assert result.status is FindingStatus.CONFIRMED


def test_uncertain_then_firm_vote_brings_agent_back_in_first_vote_order():
    result = consensus([v("a", "uncertain", 0.5), v("b", "confirm", 0.8), v("a", "confirm", 0.4)])
    assert result.voting_agents == ("a", "b")
    assert result.uncertain_agents == ()
    assert result.consensus_score == pytest.approx(0.6, abs=1e-12)


def test_agent_names_are_stripped_so_repeat_votes_match():
    result = consensus([v("scout", "challenge", 0.9), v(" scout ", "confirm", 0.7)])
    assert result.k == 1 and result.voting_agents == ("scout",)
    assert result.consensus_score == 0.7


def test_replay_yields_the_state_after_each_vote():
    steps = list(replay(SEED_VOTES))
    assert [s.consensus_score for s in steps] == pytest.approx([0.85, 0.1, 1.15 / 3], abs=1e-12)
    assert [s.status.value for s in steps] == ["confirmed", "challenged", "challenged"]
    assert [s.votes_total for s in steps] == [1, 2, 3]
    assert steps[-1] == consensus(SEED_VOTES)


# ---------------------------------------------------------------------------------------------
# Threshold and floating-point tolerance
# ---------------------------------------------------------------------------------------------


def test_exactly_at_threshold_is_confirmed():
    result = consensus([v("a", "confirm", 0.7), v("b", "confirm", 0.5)])
    assert result.consensus_score == pytest.approx(0.6, abs=1e-12)
    assert result.status is FindingStatus.CONFIRMED


def test_exact_sum_keeps_a_decimal_boundary_on_the_boundary():
    # Left-to-right float addition gives 0.5999999999999999 here; fsum gives exactly 0.6.
    confidences = [0.1, 0.6, 0.6, 0.8, 0.9]
    assert sum(confidences) / 5 < 0.6
    result = consensus([v(f"a{i}", "confirm", c) for i, c in enumerate(confidences)])
    assert result.consensus_score == 0.6
    assert result.status is FindingStatus.CONFIRMED


def test_float_shortfall_below_threshold_is_tolerated():
    # 0.7 * 3 / 3 is 0.6999999999999998 in floating point: it should reach a 0.7 threshold.
    result = consensus([v(a, "confirm", 0.7) for a in "abc"], threshold=0.7)
    assert result.consensus_score < 0.7
    assert 0.7 - result.consensus_score < TOLERANCE
    assert result.status is FindingStatus.CONFIRMED
    # Same story at 0.8: (0.6 + 0.9 + 0.9) / 3 = 0.7999999999999999.
    result = consensus([v("a", "confirm", 0.6), v("b", "confirm", 0.9), v("c", "confirm", 0.9)],
                       threshold=0.8)
    assert result.consensus_score < 0.8
    assert result.status is FindingStatus.CONFIRMED


def test_status_for_boundary_tolerance():
    assert status_for(0.6) is FindingStatus.CONFIRMED
    assert status_for(0.6 - 1e-12) is FindingStatus.CONFIRMED
    assert status_for(0.6 - 0.9e-9) is FindingStatus.CONFIRMED
    assert status_for(0.6 - 1e-8) is FindingStatus.CHALLENGED
    assert status_for(0.5999) is FindingStatus.CHALLENGED
    assert status_for(None) is FindingStatus.PENDING
    assert status_for(-1.0, threshold=-1.0) is FindingStatus.CONFIRMED


def test_configurable_threshold_per_call():
    assert consensus(SEED_VOTES, threshold=0.38).status is FindingStatus.CONFIRMED
    assert consensus(SEED_VOTES, threshold=0.39).status is FindingStatus.CHALLENGED
    assert consensus(SEED_VOTES, threshold=0.38).threshold == 0.38


def test_per_finding_threshold_wins_over_the_default():
    finding = Finding(id="f", votes=SEED_VOTES, threshold=0.3)
    assert evaluate(finding, threshold=0.6).status is FindingStatus.CONFIRMED
    assert evaluate(finding, threshold=0.6).threshold == 0.3
    assert evaluate(Finding(id="g", votes=SEED_VOTES), 0.3).status is FindingStatus.CONFIRMED
    assert evaluate(Finding(id="g", votes=SEED_VOTES)).status is FindingStatus.CHALLENGED


@pytest.mark.parametrize("bad", [1.01, -1.5, float("nan"), float("inf"), True, "0.6", None])
def test_bad_threshold_is_rejected(bad):
    with pytest.raises(InputError) as info:
        consensus(SEED_VOTES, threshold=bad)
    assert info.value.field == "threshold"


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------

_votes = st.lists(
    st.builds(
        Vote,
        agent=st.sampled_from(["a", "b", "c", "d"]),
        vote_type=st.sampled_from(list(VoteType)),
        confidence=st.floats(0, 1),
    ),
    max_size=12,
)


@given(_votes)
def test_score_matches_exact_rational_arithmetic(votes):
    latest = {}
    for vote in votes:
        latest[vote.agent] = vote
    firm = [x for x in latest.values() if x.vote_type is not VoteType.UNCERTAIN]
    result = consensus(votes)
    assert result.k == len(firm) == len(result.voting_agents)
    if not firm:
        assert result.consensus_score is None and result.status is FindingStatus.PENDING
        return
    exact = sum(Fraction(x.direction) * Fraction(x.confidence) for x in firm) / len(firm)
    assert -1.0 <= result.consensus_score <= 1.0
    assert abs(Fraction(result.consensus_score) - exact) <= Fraction(1, 10**15)
    expected = "confirmed" if result.consensus_score >= 0.6 - 1e-9 else "challenged"
    assert result.status.value == expected


@given(_votes)
def test_score_does_not_depend_on_the_order_of_different_agents(votes):
    latest = {}
    for vote in votes:
        latest[vote.agent] = vote
    forward = consensus(list(latest.values()))
    backward = consensus(list(reversed(latest.values())))
    assert forward.consensus_score == backward.consensus_score
    assert forward.status == backward.status


# ---------------------------------------------------------------------------------------------
# Vote validation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("confidence", "fragment"),
    [
        (1.5, "must be between 0 and 1"),
        (-0.01, "must be between 0 and 1"),
        (float("nan"), "must be a finite number"),
        (float("inf"), "must be a finite number"),
        (True, "must be a number"),
        (False, "must be a number"),
        ("0.5", "must be a number"),
        (None, "must be a number"),
    ],
)
def test_bad_confidence_is_rejected_with_field(confidence, fragment):
    votes = [{"agent": "a", "vote_type": "confirm", "confidence": 0.5},
             {"agent": "b", "vote_type": "confirm", "confidence": confidence}]
    with pytest.raises(InputError) as info:
        consensus(votes)
    assert info.value.field == "votes[1].confidence"
    assert fragment in str(info.value)


@pytest.mark.parametrize("confidence", [0, 1, 0.0, 1.0])
def test_confidence_bounds_are_inclusive_and_ints_accepted(confidence):
    assert v("a", "confirm", confidence).confidence == float(confidence)


def test_vote_validation_errors_name_their_field():
    cases = [
        ({"vote_type": "confirm", "confidence": 0.5}, "agent", "is required"),
        ({"agent": "  ", "vote_type": "confirm", "confidence": 0.5}, "agent", "must not be empty"),
        ({"agent": 7, "vote_type": "confirm", "confidence": 0.5}, "agent", "must be a string"),
        ({"agent": "a", "vote_type": "approve", "confidence": 0.5}, "vote_type",
         "unknown vote_type 'approve'; expected one of confirm, challenge, uncertain"),
        ({"agent": "a", "confidence": 0.5}, "vote_type", "is required"),
        ({"agent": "a", "vote_type": "confirm"}, "confidence", "is required"),
        ({"agent": "a", "vote_type": "confirm", "confidence": 0.5, "weight": 1}, "weight",
         "unknown field"),
        ({"agent": "a", "vote_type": "confirm", "confidence": 0.5, "sequence": -1}, "sequence",
         "must be 0 or more"),
        ({"agent": "a", "vote_type": "confirm", "confidence": 0.5, "timestamp": "soon"},
         "timestamp", "ISO 8601"),
    ]
    for data, field, fragment in cases:
        with pytest.raises(InputError) as info:
            consensus([data])
        assert info.value.field == f"votes[0].{field}", data
        assert fragment in str(info.value), data


def test_optional_vote_metadata_is_kept_and_does_not_reorder():
    late = Vote(agent="a", vote_type="challenge", confidence=0.9, sequence=1,
                timestamp="2025-01-02T00:00:00Z", client="mcp", source="git log")
    early = Vote(agent="a", vote_type="confirm", confidence=0.7, sequence=0,
                 timestamp="2025-01-01T00:00:00Z")
    # List order is chronological: the vote listed last is the latest, whatever its metadata.
    result = consensus([late, early])
    assert result.consensus_score == 0.7
    assert late.client == "mcp" and late.source == "git log" and late.timestamp.year == 2025


def test_null_reason_becomes_empty():
    assert Vote(agent="a", vote_type="confirm", confidence=0.5, reason=None).reason == ""


# ---------------------------------------------------------------------------------------------
# FindingsBook
# ---------------------------------------------------------------------------------------------


def _seed_book() -> FindingsBook:
    book = FindingsBook()
    book.create_finding("f1", "commit e8f2a91 implements OAuth2 login", {"repo": "auth-service"})
    for vote in SEED_VOTES:
        book.submit_vote("f1", vote)
    return book


def test_book_submit_vote_returns_updated_result():
    book = FindingsBook()
    book.create_finding("f1", "claim")
    assert book.results("f1").status is FindingStatus.PENDING
    first = book.submit_vote("f1", SEED_VOTES[0])
    assert (first.id, first.consensus_score, first.status) == ("f1", 0.85, FindingStatus.CONFIRMED)
    book.submit_vote("f1", SEED_VOTES[1])
    last = book.submit_vote("f1", {"agent": "dev", "vote_type": "confirm", "confidence": 0.95})
    assert last.consensus_score == 1.15 / 3
    assert last.status is FindingStatus.CHALLENGED
    assert book.results("f1") == last
    assert last.to_output()["voting_agents"] == ["scout", "auditor", "dev"]


def test_book_history_keeps_every_vote_in_order():
    book = _seed_book()
    book.submit_vote("f1", v("auditor", "confirm", 0.9, "re-checked"))
    history = book.history("f1")
    assert [(x.agent, x.vote_type.value) for x in history] == [
        ("scout", "confirm"), ("auditor", "challenge"), ("dev", "confirm"), ("auditor", "confirm")]
    result = book.results("f1")
    assert result.votes_total == 4 and result.k == 3
    assert result.consensus_score == pytest.approx((0.85 + 0.9 + 0.95) / 3, abs=1e-12)
    assert result.status is FindingStatus.CONFIRMED
    assert book.finding("f1").context == {"repo": "auth-service"}


def test_book_queues_are_in_creation_order():
    book = FindingsBook()
    for fid in ["z", "m", "a", "q", "b"]:
        book.create_finding(fid, f"claim {fid}")
    book.submit_vote("q", v("x", "challenge", 0.5))   # challenged
    book.submit_vote("z", v("x", "confirm", 0.9))     # confirmed
    book.submit_vote("a", v("x", "challenge", 0.9))   # challenged
    book.submit_vote("b", v("x", "uncertain", 0.9))   # pending (k = 0)
    book.submit_vote("m", v("x", "confirm", 0.1))     # challenged
    assert [r.id for r in book.challenged()] == ["m", "a", "q"]
    assert [r.id for r in book.confirmed()] == ["z"]
    assert [r.id for r in book.pending()] == ["b"]
    assert [r.id for r in book.all_results()] == ["z", "m", "a", "q", "b"]
    assert len(book) == 5 and "q" in book and "nope" not in book


def test_book_threshold_is_configurable_and_reclassifies():
    book = _seed_book()
    assert [r.id for r in book.challenged()] == ["f1"]
    book.threshold = 0.35
    assert [r.id for r in book.confirmed()] == ["f1"]
    assert FindingsBook(threshold=0.3).threshold == 0.3
    with pytest.raises(InputError, match="threshold: must be between -1 and 1"):
        book.threshold = 1.2


def test_book_per_finding_threshold():
    book = _seed_book()
    book.create_finding("f2", "easy", threshold=0.1)
    book.submit_vote("f2", v("a", "confirm", 0.2))
    assert book.results("f2").status is FindingStatus.CONFIRMED
    assert book.set_finding_threshold("f1", 0.38).status is FindingStatus.CONFIRMED
    assert book.set_finding_threshold("f1", None).status is FindingStatus.CHALLENGED


def test_book_errors():
    book = _seed_book()
    with pytest.raises(InputError) as info:
        book.create_finding("f1", "again")
    assert info.value.field == "id" and "duplicate finding id 'f1'" in str(info.value)
    with pytest.raises(InputError) as info:
        book.submit_vote("nope", SEED_VOTES[0])
    assert info.value.field == "finding_id"
    with pytest.raises(InputError) as info:
        book.results("nope")
    assert info.value.field == "finding_id"
    with pytest.raises(InputError) as info:
        book.submit_vote("f1", {"agent": "a", "vote_type": "confirm", "confidence": 2})
    assert info.value.field == "vote.confidence"
    assert len(book.history("f1")) == 3  # a rejected vote leaves no trace


def test_book_rebuilds_from_stored_findings():
    stored = Finding(id="f1", claim="c", votes=SEED_VOTES)
    book = FindingsBook(findings=[stored])
    assert book.results("f1").consensus_score == 1.15 / 3


# ---------------------------------------------------------------------------------------------
# classify_payload
# ---------------------------------------------------------------------------------------------


def test_classify_payload_order_threshold_and_extras():
    payload = {
        "threshold": 0.5,
        "findings": [
            {"id": "b", "claim": "x",
             "votes": [{"agent": "s", "vote_type": "confirm", "confidence": 0.5}]},
            {"id": "a", "claim": "y"},
            {"id": "c", "claim": "z", "threshold": 0.9, "context": {"k": 1},
             "votes": [{"agent": "s", "vote_type": "confirm", "confidence": 0.8},
                       {"agent": "t", "vote_type": "uncertain", "confidence": 0.9}]},
        ],
    }
    out = classify_payload(payload)
    assert [e["id"] for e in out] == ["b", "a", "c"]
    assert list(out[0])[:4] == ["id", "consensus_score", "status", "voting_agents"]
    assert out[0] == {
        "id": "b", "consensus_score": 0.5, "status": "confirmed", "voting_agents": ["s"],
        "k": 1, "uncertain_agents": [], "votes_total": 1, "threshold": 0.5,
    }
    assert out[1]["status"] == "pending" and out[1]["consensus_score"] is None
    assert out[2]["status"] == "challenged" and out[2]["threshold"] == 0.9
    assert out[2]["uncertain_agents"] == ["t"] and out[2]["votes_total"] == 2


def test_classify_payload_default_threshold_and_empty_findings():
    assert classify_payload({"findings": []}) == []
    [entry] = classify_payload({"findings": [{"id": "f", "votes": [
        {"agent": "a", "vote_type": "confirm", "confidence": 0.6}]}]})
    assert entry["threshold"] == 0.6 and entry["status"] == "confirmed"


@pytest.mark.parametrize(
    ("payload", "field", "fragment"),
    [
        ([], "", "expected a JSON object"),
        ({}, "findings", "is required"),
        ({"findings": {}}, "findings", "must be a list"),
        ({"findings": [3]}, "findings[0]", "must be an object"),
        ({"threshold": 1.5, "findings": []}, "threshold", "must be between -1 and 1"),
        ({"threshold": -1.01, "findings": []}, "threshold", "must be between -1 and 1"),
        ({"threshold": "0.6", "findings": []}, "threshold", "must be a number"),
        ({"threshold": True, "findings": []}, "threshold", "must be a number"),
        ({"threshold": None, "findings": []}, "threshold", "must be a number"),
        ({"threshhold": 0.6, "findings": []}, "threshhold", "unknown field"),
        ({"findings": [{"claim": "x"}]}, "findings[0].id", "is required"),
        ({"findings": [{"id": 5}]}, "findings[0].id", "must be a string"),
        ({"findings": [{"id": "f", "context": []}]}, "findings[0].context", "must be an object"),
        ({"findings": [{"id": "f", "threshold": 2}]}, "findings[0].threshold", "between -1 and 1"),
        ({"findings": [{"id": "f", "votes": {}}]}, "findings[0].votes", "must be a list"),
        ({"findings": [{"id": "f"}, {"id": "g"}, {"id": "f"}]}, "findings[2].id",
         "duplicate finding id 'f' (already used by findings[0])"),
        ({"findings": [{"id": "f", "votes": [
            {"agent": "a", "vote_type": "confirm", "confidence": 0.5},
            {"agent": "b", "vote_type": "confirm", "confidence": 1.2}]}]},
         "findings[0].votes[1].confidence", "must be between 0 and 1"),
        ({"findings": [{"id": "f"}, {"id": "g", "votes": [
            {"agent": "a", "vote_type": "agree", "confidence": 0.5}]}]},
         "findings[1].votes[0].vote_type", "unknown vote_type 'agree'"),
        ({"findings": [{"id": "f", "votes": [{"vote_type": "confirm", "confidence": 0.5}]}]},
         "findings[0].votes[0].agent", "is required"),
    ],
)
def test_classify_payload_errors_name_their_field(payload, field, fragment):
    with pytest.raises(InputError) as info:
        classify_payload(payload)
    assert info.value.field == field
    assert fragment in str(info.value)
    if field:
        assert str(info.value).startswith(f"{field}: ")
