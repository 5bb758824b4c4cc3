"""The ARM trace model: every corpus file round-trips exactly, names follow the traces table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from workbench.core.errors import InputError
from workbench.core.project import schema
from workbench.core.protocols.arm import (
    LEGACY,
    PARSE_FAILED,
    SCHEMA_V12,
    SCHEMA_V13,
    TRACE_FIELD_MAP,
    ArmRun,
    Trace,
    field_names,
    js_stringify,
    parse_run,
    parse_trace,
    run_to_upstream,
    trace_to_upstream,
)

pytestmark = pytest.mark.corpus


def corpus_files(corpus_dir: Path) -> list[Path]:
    files = sorted((corpus_dir / "traces").glob("*.json"))
    assert len(files) == 15, "the ARM corpus holds 15 traces"
    return files


def load(path: Path) -> tuple[str, dict]:
    text = path.read_text(encoding="utf-8")
    return text, json.loads(text)


def test_every_corpus_file_round_trips_exactly(corpus_dir):
    for path in corpus_files(corpus_dir):
        text, data = load(path)
        out = run_to_upstream(parse_run(data))
        assert out == data, path.name
        # key order too: serialised the way ARM (JSON.stringify(x, null, 2)) did, byte for byte
        assert json.dumps(out) == json.dumps(data), path.name
        assert js_stringify(out) == text, path.name


def test_every_corpus_trace_round_trips_on_its_own(corpus_dir):
    count = 0
    for path in corpus_files(corpus_dir):
        _, data = load(path)
        for block in ("r1", "r2"):
            for role, raw in data[block].items():
                trace = parse_trace(raw)
                assert json.dumps(trace_to_upstream(trace)) == json.dumps(raw), f"{path.name} {block}.{role}"
                count += 1
    assert count == 15 * 7


def test_schema_generations_are_detected(corpus_dir):
    seen = {}
    for path in corpus_files(corpus_dir):
        seen[path.name] = parse_run(load(path)[1]).generation
    assert sum(g == LEGACY for g in seen.values()) == 6  # 3 x v0.6, 3 x v0.7.1
    assert sum(g == SCHEMA_V12 for g in seen.values()) == 9  # 4 x v0.8 q200, 5 x v0.9
    assert all(seen[n] == LEGACY for n in seen if n.startswith(("arm-v06", "arm-v071", "arm-v0.7.1")))


def test_legacy_parse_failure_sentinel_is_failed_without_ok(corpus_dir):
    run = parse_run(load(corpus_dir / "traces" / "arm-v06-run-1778083372998.json")[1])
    beta, gamma = run.trace(1, "beta"), run.trace(1, "gamma")
    for t in (beta, gamma):
        assert t.claim == PARSE_FAILED and t.ok_flag is None and t.ok is False
        assert not t.present("_ok")
    assert run.trace(1, "alpha").ok is True
    assert gamma.truncated is True and gamma.stop_reason == "max_tokens"
    assert beta.raw_reasoning_attempt.startswith('{\n  "claim": "The ARM protocol has significant')


def test_field_names_follow_the_traces_table():
    columns = set(re.findall(r"^\s+(\w+) ", schema._V2.split("CREATE TABLE traces")[1].split(");")[0], re.M))
    columns = {c.removesuffix("_json") for c in columns}
    fields = set(field_names(Trace))
    properties = {n for n in dir(Trace) if isinstance(getattr(Trace, n), property)}
    # every trace column that describes trace content has a field or a read-only property
    content = columns - {"id", "run_id", "round_id", "round_no", "role", "agent_id", "attempt", "is_current",
                         "source", "call_id", "simulated", "created_at", "key_order"}
    missing = {c for c in content if c not in fields and c not in properties and not hasattr(Trace(), c)}
    assert missing == set()
    assert Trace().extra == {}  # extra_json: unknown upstream keys, verbatim
    upstream = dict(TRACE_FIELD_MAP)
    assert upstream["assumptions"] == "explicit_assumptions"
    assert upstream["rlhf_audit_notes"] == "rlhf_audit"
    assert upstream["_meta"] == "meta" and upstream["_ok"] == "ok_flag"


def test_mapped_fields_nested_views_and_extra():
    raw = {"claim": "No.", "confidence": 0.5, "assumptions": ["a"], "rlhf_audit_notes": "audit",
           "drift_score": {"confidence_delta": 0.01, "harness_confidence_delta": 0.009999, "delta_mismatch": False},
           "self_check": {"status": "auto_warn", "override_reason": "values_tension_flag"},
           "_meta": {"provider": "gpt", "model": "m", "stopReason": "stop", "latencyMs": 12,
                     "usage": {"prompt_tokens": 10, "completion_tokens": 20}},
           "brand_new_field": {"kept": [1, 2]}, "_ok": True}
    t = parse_trace(raw)
    assert t.explicit_assumptions == ["a"] and t.rlhf_audit == "audit"
    assert (t.provider, t.model, t.stop_reason, t.latency_ms) == ("gpt", "m", "stop", 12)
    assert (t.prompt_tokens, t.completion_tokens) == (10, 20)
    assert (t.confidence_delta, t.harness_confidence_delta, t.delta_mismatch) == (0.01, 0.009999, False)
    assert t.override_reason == "values_tension_flag" and t.ok is True
    assert t.extra == {"brand_new_field": {"kept": [1, 2]}}
    assert list(trace_to_upstream(t)) == list(raw)
    # Gemini's raw usage shape
    g = parse_trace({"_meta": {"usage": {"promptTokenCount": 3, "candidatesTokenCount": 4}}})
    assert (g.prompt_tokens, g.completion_tokens) == (3, 4)


def test_parsing_copies_so_the_source_never_changes():
    raw = {"claim": "x", "flags": ["a"], "self_check": {"status": "clean"}}
    t = parse_trace(raw)
    t.flags.append("b")
    t.self_check["status"] = "auto_warn"
    assert raw == {"claim": "x", "flags": ["a"], "self_check": {"status": "clean"}}


def test_new_fields_are_appended_and_null_values_that_were_present_stay():
    t = parse_trace({"claim": "x", "confidence": None})
    t.polarity_gate_fired = True
    assert trace_to_upstream(t) == {"claim": "x", "confidence": None, "polarity_gate_fired": True}
    fresh = Trace(claim="y", confidence=0.4, ok_flag=True)
    assert trace_to_upstream(fresh) == {"claim": "y", "confidence": 0.4, "_ok": True}


def test_v13_and_newer_schemas_are_accepted_and_others_refused():
    run = parse_run({"schema_version": SCHEMA_V13, "r1": {}, "r2": {}})
    assert run.generation == SCHEMA_V13 and run.smoothed_idf
    newer = parse_run({"schema_version": "arm-trace-v2.0", "r1": {}})  # read with today's rules (SPEC §11)
    assert newer.generation == "arm-trace-v2.0" and newer.smoothed_idf
    for bad in ("arm-trace-v1.0", "v0.7.1", "arm-trace-v1.x", 1.3):
        with pytest.raises(InputError, match="unsupported ARM schema"):
            parse_run({"schema_version": bad, "r1": {}})


@pytest.mark.parametrize("bad, field", [
    ([1, 2], ""),
    ({"r2": {}}, "r1"),
    ({"r1": []}, "r1"),
    ({"r1": {"alpha": {}}, "runMeta": "x"}, "runMeta"),
    ({"r1": {}, "r2": "nope"}, "r2"),
])
def test_bad_runs_are_input_errors(bad, field):
    with pytest.raises(InputError) as info:
        parse_run(bad)
    assert info.value.field == field


def test_non_object_trace_is_an_input_error():
    with pytest.raises(InputError, match="must be a JSON object"):
        parse_trace(["claim"])  # type: ignore[arg-type]


def test_a_null_role_inside_a_round_is_kept_and_a_non_object_refused():
    data = {"r1": {"alpha": None, "gamma": {"claim": "c"}}, "r2": {}}
    run = parse_run(data)
    assert isinstance(run, ArmRun) and run.trace(1, "alpha") is None
    assert run_to_upstream(run) == data
    with pytest.raises(InputError, match="must be an object") as info:  # every field is type-checked
        parse_run({"r1": {"alpha": None, "beta": "oops"}, "r2": {}})
    assert info.value.field == "r1.beta"
