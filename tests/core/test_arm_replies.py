"""Reply parsing: ARM's repairs, validation warnings, and failures that keep the raw text."""

from __future__ import annotations

import json

from workbench.core.protocols.arm import parse_reply, repair_reply


def test_repairs_strip_only_the_outer_fences_and_gemini_quotes():
    assert repair_reply('  ```json\n{"a": "x ``` y"}\n```  ') == '{"a": "x ``` y"}'
    assert repair_reply('```\n{""claim": "c"}```') == '{"claim": "c"}'


def test_validation_warnings_do_not_reject():
    t = parse_reply(json.dumps({
        "claim": "c", "confidence": -0.5, "drift_score": {"confidence_delta": 3},
        "disagreement_classification": "Values", "reconciliation_status": "done"}))
    assert t.ok and t.confidence == 0
    assert t.schema_warnings == ["confidence_out_of_range:-0.5", "drift_delta_invalid:3",
                                 'disagreement_classification_invalid:"Values"',
                                 'reconciliation_status_invalid:"done"']


def test_meta_is_recorded_in_arms_shape():
    t = parse_reply(json.dumps({"claim": "c", "confidence": 0.5}),
                    {"provider": "local", "model": "m", "finish_reason": "stop", "latency_ms": 42.0,
                     "prompt_tokens": 10, "completion_tokens": 5})
    assert t.meta == {"stopReason": "stop", "usage": {"prompt_tokens": 10, "completion_tokens": 5},
                      "provider": "local", "model": "m", "latencyMs": 42.0}
    assert t.ok_flag is True and (t.prompt_tokens, t.completion_tokens) == (10, 5)


def test_truncated_reply_is_a_failed_trace_with_the_raw_text():
    raw = '{"claim": "The answer is'
    t = parse_reply(raw, {"stop_reason": "max_tokens", "usage": {"output_tokens": 5000}})
    assert not t.ok and t.raw_reasoning_attempt == raw and t.confidence is None
    assert t.flags == ["serialization_failure", "truncation_detected"]
    assert t.failure_reason == "Truncated at max_tokens (5000). Raise token budget."
    assert t.meta["truncated"] is True and t.self_check == {"status": "failed", "notes": "Token budget exceeded."}


def test_non_object_and_boolean_confidence_are_schema_failures():
    assert parse_reply("[1, 2]").flags == ["schema_validation_failure"]
    t = parse_reply(json.dumps({"claim": "c", "confidence": True}))
    assert not t.ok and t.failure_reason == "confidence missing or non-numeric (got true)"


def test_override_runs_on_parsed_replies():
    t = parse_reply(json.dumps({"claim": "c", "confidence": 0.5, "flags": ["contested_domain"],
                                "self_check": {"status": "clean", "notes": "n"}}))
    assert t.status == "auto_warn" and t.override_reason == "values_tension_flag"
