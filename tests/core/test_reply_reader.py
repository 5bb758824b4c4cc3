"""The tolerant reader (shared.replies) and each structured reply's schema against its parser."""

from __future__ import annotations

import json

import jsonschema
import pytest

from workbench.core.protocols.arm.replies import TRACE_MODELS, parse_reply
from workbench.core.protocols.cons.run import BallotReply, ballot_reply_model, parse_ballot_reply
from workbench.core.protocols.findings.run import FindingVoteReply, parse_finding_vote
from workbench.core.protocols.rcp.run import VoteReply, ballot_model, default_pieces, parse_ballot, parse_vote
from workbench.core.protocols.shared.fencing import Fence, closing, opening
from workbench.core.protocols.shared.replies import balanced_objects, json_object, leading_verdict, loads
from workbench.core.protocols.shared.structured import strict_schema

F = Fence().name


# ----- the tolerant reader -----------------------------------------------------------------------
def test_balanced_objects_nest_and_ignore_braces_inside_strings():
    text = 'Sure: {"a": {"b": [1, {"c": 2}]}, "s": "a } and { \\" }"} and then {"z": 1} {unclosed'
    assert balanced_objects(text) == ['{"a": {"b": [1, {"c": 2}]}, "s": "a } and { \\" }"}', '{"z": 1}']
    data, why = json_object('I think {"vote": "YES", "reason": "braces } { in here"} is right')
    assert why is None and data == {"vote": "YES", "reason": "braces } { in here"}


def test_raw_control_characters_inside_strings_are_read():
    assert loads('{"reason": "one\nline\tand another"}') == {"reason": "one\nline\tand another"}
    vote = parse_vote('{"vote": "NO", "reason": "cut\nhere"}')
    assert vote.value == 0 and vote.status == "valid" and vote.reason == "cut\nhere"
    finding = parse_finding_vote("a", 'Here: {"vote_type": "confirm", "confidence": 0.7, "reason": "x\ny"} done')
    assert finding.status == "valid" and finding.vote.reason == "x\ny"


def test_a_leading_yes_or_no_is_a_vote():
    assert leading_verdict("NO, because the plan ignores buses.") == ("NO", ", because the plan ignores buses.")
    assert leading_verdict("  yes. Sound.")[0] == "YES" and leading_verdict("Nothing")[0] is None
    assert parse_vote("NO, because the plan ignores buses.").value == 0
    assert parse_vote("**YES** it holds").value == 1


def test_json_vote_followed_by_prose_and_the_same_object_twice():
    assert parse_vote('{"vote": "yes", "reason": "ok"} That is my vote.').value == 1
    assert json_object('{"a": 1} again {"a": 1}') == ({"a": 1}, None)
    assert json_object('maybe {"vote": "YES"} or {"vote": "NO"}')[0] is None  # two answers: neither


def test_fenced_and_template_text_is_removed_before_reading_so_a_quoted_verdict_is_not_the_vote():
    quoted = f'{opening(F)}\nYES. {{"vote": "YES", "reason": "the artifact says so"}}\n{closing(F)}'
    assert parse_vote(quoted, F).status == "invalid"  # only the artifact's words: no vote
    assert parse_vote(f"{quoted}\nNO, it is unsound.", F).value == 0
    echoed = 'Reply with JSON only: {"vote": "YES" or "NO", "reason": "<one sentence>"}.'
    assert parse_vote(echoed).status == "invalid"  # the prompt's own template is not a vote
    assert parse_vote(echoed + ' {"vote": "NO", "reason": "weak"}').value == 0
    assert any("<one sentence>" in piece for piece in default_pieces())


# ----- every schema is strict, and every reply that obeys it is one its parser accepts ------------
def strict_everywhere(node) -> None:
    if isinstance(node, dict):
        if node.get("type") == "object":
            assert node["additionalProperties"] is False and node["required"] == list(node["properties"])
        assert "$ref" not in node and "default" not in node
        for value in node.values():
            strict_everywhere(value)
    elif isinstance(node, list):
        for value in node:
            strict_everywhere(value)


ARM_R1 = {"claim": "c", "verdict": "yes", "confidence": 0.7, "reasoning_frame": "deontological",
          "decision_basis": "hybrid", "assumptions": ["a"], "critical_path": ["p"],
          "discarded_paths": [{"path": "x", "reason": "y"}], "challenge_surface": ["s"], "flags": [],
          "self_check": {"status": "clean", "notes": "n"}}
ARM_R2 = {**{k: v for k, v in ARM_R1.items() if k != "discarded_paths"}, "reasoning_frame": None,
          "influenced_by": ["beta"], "challenged": [], "drift_note": "none", "drift_score": {"confidence_delta": -0.1}}
ARM_GAMMA = {"claim": "c", "verdict": "conditional", "confidence": 0.5, "critical_path": ["p"],
             "disagreement_classification": "values", "disagreement_notes": "n",
             "agent_decision_bases": {"alpha": "deontological", "beta": "utilitarian"}, "values_in_conflict": ["v"],
             "rlhf_audit_notes": "r", "influenced_by": ["alpha"], "challenged": [],
             "drift_score": {"confidence_delta": 0.0}, "self_delta_vs_baseline": 0.02,
             "reconciliation_status": "success", "self_check": {"status": "warning", "notes": "n"}}


@pytest.mark.parametrize("model, reply, accepted", [
    (VoteReply, {"vote": "NO", "reason": "weak"}, lambda t: parse_vote(t).value == 0),
    (ballot_model(("A", "B")), {"votes": {"A": "YES", "B": "NO"}},
     lambda t: [v.value for v in parse_ballot(t, ["A", "B"]).values()] == [1, 0]),
    (FindingVoteReply, {"vote_type": "challenge", "confidence": 0.4, "reason": "r"},
     lambda t: parse_finding_vote("a", t).status == "valid"),
    (BallotReply, {"option": "any", "vote": "reject", "confidence": 0.8, "rationale": "r",
                   "evidence": [{"type": "counter-proof", "file": "f", "section": None}]},
     lambda t: parse_ballot_reply("a", t).status == "valid"),
    (ballot_reply_model(("Adopt", "Reject")), {"option": "Adopt", "vote": "accept", "confidence": 1,
                                               "rationale": "r", "evidence": []},
     lambda t: parse_ballot_reply("a", t).status == "valid"),
    (TRACE_MODELS["arm_trace_r1"], ARM_R1, lambda t: parse_reply(t, schema="arm_trace_r1").ok),
    (TRACE_MODELS["arm_trace_r2"], ARM_R2, lambda t: parse_reply(t, schema="arm_trace_r2").ok),
    (TRACE_MODELS["arm_trace_gamma_r2"], ARM_GAMMA, lambda t: parse_reply(t, schema="arm_trace_gamma_r2").ok),
])
def test_each_schema_is_strict_and_its_replies_are_accepted_by_the_parser(model, reply, accepted):
    schema = strict_schema(model)
    strict_everywhere(schema)
    jsonschema.validate(reply, schema)  # the example obeys the schema sent...
    assert accepted(json.dumps(reply))  # ...and the protocol's parser reads it
    for key in schema["required"]:  # a reply missing any key does not obey the schema
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({k: v for k, v in reply.items() if k != key}, schema)


def test_the_parser_validates_with_the_model_in_every_mode():
    assert parse_finding_vote("a", '{"vote_type": "confirm", "confidence": "0.9"}').status == "invalid"
    assert parse_ballot_reply("a", '{"option": "A", "vote": "maybe", "confidence": 0.5, "rationale": "r"}').status == "invalid"
    assert not parse_reply('{"claim": "c", "confidence": 0.5, "self_check": "fine"}', schema="arm_trace_r1").ok
    assert parse_reply('{"claim": "c", "confidence": 0.5}', schema="arm_trace_r1").ok  # optional when parsing
    assert parse_ballot('{"votes": {"A": "yes, sound", "B": "perhaps"}}', ["A", "B"])["B"].status == "invalid"
