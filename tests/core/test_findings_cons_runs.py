"""The findings and CONS run generators, driven by scripted replies."""

from __future__ import annotations

import json

from workbench.core.protocols.cons.run import CONDUCTOR, ConsAgent, ConsRunConfig, parse_ballot_reply, run_cons
from workbench.core.protocols.findings.run import FindingsAgent, FindingsRunConfig, parse_finding_vote, run_findings
from workbench.core.protocols.shared.steps import AgentReply, Batch


def drive(gen, answer):
    calls, reply = [], None
    try:
        while True:
            step = gen.send(reply)
            if isinstance(step, Batch):
                calls.extend(step.calls)
                reply = {c.key: AgentReply(c.key, answer(c)) for c in step.calls}
            else:
                reply = None
    except StopIteration as stop:
        return stop.value, calls


# ----- findings --------------------------------------------------------------------------------
SEED_VOTES = {"scout": ("confirm", 0.85), "auditor": ("challenge", 0.65), "dev": ("confirm", 0.95)}


def test_findings_run_reproduces_the_seed_example():
    cfg = FindingsRunConfig(seed=1, agents=tuple(FindingsAgent(a, a) for a in SEED_VOTES),
                            findings=({"id": "f1", "claim": "commit e8f2a91 implements OAuth2 login"},))

    def answer(call):
        vote_type, confidence = SEED_VOTES[call.agent]
        return json.dumps({"vote_type": vote_type, "confidence": confidence, "reason": "checked"})

    outcome, calls = drive(run_findings(cfg), answer)
    assert len(calls) == 3 and {c.purpose for c in calls} == {"finding_vote"}
    assert "the Auditor, the skeptic" in next(c for c in calls if c.agent == "auditor").messages[0]["content"]
    result = outcome.results["f1"]
    assert abs(result.consensus_score - 1.15 / 3) < 1e-12 and result.status == "challenged"


def test_an_unreadable_finding_vote_is_kept_as_invalid_not_coerced():
    assert parse_finding_vote("x", '{"vote_type": "confirm", "confidence": 1.4}').status == "invalid"
    assert "confidence" in parse_finding_vote("x", '{"vote_type": "confirm", "confidence": 1.4}').reason
    assert parse_finding_vote("x", "I agree").status == "invalid"
    assert parse_finding_vote("x", None).status == "failed"
    ok = parse_finding_vote("x", '```json\n{"vote_type": "uncertain", "confidence": 0.5}\n```')
    assert ok.status == "valid" and ok.vote.vote_type == "uncertain"


# ----- CONS --------------------------------------------------------------------------------------
def cons_config(**kw):
    return ConsRunConfig(seed=1, question_id="CONS-7", question="Single file or split?", options=("single", "split"),
                         agents=tuple(ConsAgent(a) for a in ("a", "b", "c", "d", "e")), **kw)


RATIONALES = {"a": "atomic writes stay simple", "b": "one file is easier to review", "c": "fewer merge conflicts",
              "d": "splitting scales with the team", "e": "load only what is needed"}


def ballot(option, confidence=0.8, vote="accept", evidence=True, agent="a"):
    return json.dumps({"option": option, "vote": vote, "confidence": confidence, "rationale": RATIONALES[agent],
                       "evidence": [{"type": "code", "file": "map.py"}] if evidence else []})


def test_cons_run_reaches_proven_in_the_opening_round():
    result, calls = drive(run_cons(cons_config()), lambda c: ballot("single", agent=c.agent))
    assert result.outcome.verdict == "PROVEN"
    assert [c.purpose for c in calls] == ["ballot"] * 5  # no challenge round, no human


def test_cons_run_challenges_then_contests_then_waits_for_the_conductor():
    split = {"a": "single", "b": "single", "c": "single", "d": "split", "e": "split"}

    def answer(call):
        if call.agent == CONDUCTOR:
            return "Keep a single file for now."
        return ballot(split[call.agent], agent=call.agent)

    result, calls = drive(run_cons(cons_config()), answer)
    rounds = sorted({c.round_no for c in calls if c.purpose == "ballot"})
    assert rounds == [0, 1, 2]  # the opening ballots, then two challenge rounds
    challenge = next(c for c in calls if c.round_no == 1)
    assert "Challenge round" in challenge.messages[-1]["content"]
    assert result.outcome.verdict == "CONTESTED"
    assert calls[-1].agent == CONDUCTOR and calls[-1].purpose == "hitl_decision"
    assert result.human_decision == "Keep a single file for now."


def test_suspicious_unanimity_waits_for_the_conductor():
    def answer(call):
        return "Confirmed." if call.agent == CONDUCTOR else ballot("single", confidence=0.97, agent=call.agent)

    result, calls = drive(run_cons(cons_config()), answer)
    assert result.outcome.verdict == "PROVEN"
    assert [e.reason for e in result.outcome.escalations] == ["suspicious_unanimity"]
    assert calls[-1].purpose == "hitl_decision" and result.human_decision == "Confirmed."


def test_a_ballot_without_rationale_is_invalid_and_left_out():
    parsed = parse_ballot_reply("a", json.dumps({"option": "x", "vote": "accept", "confidence": 0.9, "rationale": ""}))
    assert parsed.status == "invalid" and "rationale" in parsed.reason
    assert parse_ballot_reply("a", "accept x").status == "invalid"
    assert parse_ballot_reply("a", None).status == "failed"
