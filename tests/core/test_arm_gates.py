"""Gates: self_check override, polarity gate / verdict shift, FAP, rotating silent baseline."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from workbench.core.errors import InputError
from workbench.core.protocols.arm import (
    FAP_ABORT_CLAIM,
    OVERRIDE_FLAGS,
    OVERRIDE_POLARITY,
    OVERRIDE_RECONCILER,
    SilentBaseline,
    Trace,
    apply_self_check_override,
    claim_direction,
    fap_abort_placeholder,
    fap_drift_agents,
    fap_drift_triggered,
    invariant_violations,
    parse_run,
    parse_trace,
    polarity_gate,
    requeue_record,
    rotate_silent_baseline,
    silent_baseline_failed,
    trace_to_upstream,
)

FLIP_FILE = ("arm-v071FAP-test-010Gamma_Flip_Detected__Drift_Catchable__Polarity_Gate_Override__"
             "Values_Disagreement.json")


def corpus_json(corpus_dir: Path, name: str) -> dict:
    return json.loads((corpus_dir / "traces" / name).read_text(encoding="utf-8"))


# ── self_check override ──────────────────────────────────────────────────────────────────────
def test_override_flags_path_wins_and_reason_is_always_stamped():
    t = Trace(claim="c", confidence=0.5, flags=["contested_domain"], disagreement_classification="values",
              self_check={"status": "clean", "notes": "fine", "extra_key": 1})
    out = apply_self_check_override(t)
    assert out.self_check == {"status": "auto_warn", "notes": "fine", "self_check_overridden": True,
                              "self_check_original_status": "clean", "override_reason": OVERRIDE_FLAGS}
    assert t.self_check["status"] == "clean"  # pure: the input is untouched


def test_override_reconciler_path():
    for kw in ({"disagreement_classification": "values"}, {"values_in_conflict": ["autonomy", "life"]}):
        out = apply_self_check_override(Trace(claim="c", self_check={"status": "clean"}, **kw))
        assert out.status == "auto_warn" and out.override_reason == OVERRIDE_RECONCILER
        assert out.self_check["notes"] == ""


def test_override_leaves_warning_failed_and_tensionless_traces_alone():
    warn = Trace(claim="c", flags=["values_conflict"], self_check={"status": "warning", "notes": "n"})
    assert apply_self_check_override(warn) is warn
    failed = Trace(claim="[PARSE FAILED]", flags=["values_conflict"], self_check={"status": "clean"})
    assert apply_self_check_override(failed) is failed
    calm = Trace(claim="c", flags=["incomplete_data"], values_in_conflict=[], self_check={"status": "clean"})
    assert apply_self_check_override(calm) is calm


def test_invariant_violations_catch_an_unstamped_override():
    bad = Trace(claim="c", self_check={"status": "auto_warn", "self_check_overridden": True})
    clean_with_tension = Trace(claim="c", flags=["values_conflict"], self_check={"status": "clean"})
    assert invariant_violations({"a": bad, "b": clean_with_tension}) == [
        "a: self_check overridden without override_reason", "b: clean self_check despite values tension"]


# ── polarity gate ────────────────────────────────────────────────────────────────────────────
def test_gate_reproduces_the_corpus_gamma_flip(corpus_dir):
    data = corpus_json(corpus_dir, FLIP_FILE)
    run = parse_run(data)
    stored = data["r2"]["gamma"]
    # gamma R2 as the model returned it: the gate's note quotes the original status and notes
    before = copy.deepcopy(stored)
    del before["polarity_gate_fired"], before["polarity_audit"]
    before["reconciliation_status"] = "success"
    before["self_check"] = {"status": "clean", "notes": "No manipulation attempts detected."}
    result = polarity_gate(run.trace(1, "gamma"), parse_trace(before), run.trace(1, "silent"),
                           stamp_override=False)
    assert result.fired and result.transition == "flip" and (result.r1_verdict, result.r2_verdict) == ("yes", "no")
    assert json.dumps(trace_to_upstream(result.gamma_r2)) == json.dumps(stored)  # exact, key order included


def test_gate_reproduces_the_corpus_verdict_shift(corpus_dir):
    data = corpus_json(corpus_dir, "arm-v0.9-q201-CGG-noroles-1783475435505-rerunAfterBuild.json")
    run = parse_run(data)
    before = copy.deepcopy(data["r2"]["gamma"])
    del before["verdict_shift"]
    result = polarity_gate(run.trace(1, "gamma"), parse_trace(before), run.trace(1, "silent"))
    assert not result.fired and result.verdict_shift and result.transition == "shift"
    assert trace_to_upstream(result.gamma_r2) == data["r2"]["gamma"]
    assert result.gamma_r2.reconciliation_status == "success"  # advisory only: no status change


def test_gate_hand_made_flip_stamps_the_override():
    r1 = Trace(claim="It depends", verdict="no", confidence=0.6, ok_flag=True)
    silent = Trace(claim="No.", confidence=0.7, ok_flag=True)
    r2 = Trace(claim="We should act", verdict="yes", confidence=0.73, self_delta_vs_baseline=0.03,
               harness_self_delta_vs_baseline=0.030000000000000027, reconciliation_status="success",
               self_check={"status": "clean", "notes": "all good"}, ok_flag=True)
    res = polarity_gate(r1, r2, silent)
    g = res.gamma_r2
    assert res.fired and g.reconciliation_status == "gamma_flip_detected" and g.polarity_gate_fired is True
    assert g.polarity_audit == {
        "gamma_r1_polarity": "no", "gamma_silent_polarity": "no", "gamma_r2_polarity": "yes",
        "polarity_changed": True, "confidence_delta_blindspot": True,  # |0.03| <= 0.04
        "gate_action": "block_clean_success", "requires_manual_review": True}
    assert g.self_check["status"] == "warning" and g.override_reason == OVERRIDE_POLARITY
    assert g.self_check["notes"] == ('[POLARITY GATE OVERRIDE] Claim direction flipped NO→YES between R1 and R2. '
                                     'Gamma self-reported status "clean" — overridden by gate. Original notes: all good')
    assert r2.reconciliation_status == "success"  # the input is untouched
    assert invariant_violations({"r2.gamma": g}) == []
    # blind spot on the harness delta instead of the self-report
    assert polarity_gate(r1, r2, silent, blindspot_source="harness").gamma_r2.polarity_audit[
        "confidence_delta_blindspot"] is True
    big = Trace(**{**r2.__dict__, "self_delta_vs_baseline": 0.2})
    assert polarity_gate(r1, big, silent).gamma_r2.polarity_audit["confidence_delta_blindspot"] is False


def test_gate_does_not_fire_on_conditional_unknown_or_failed_r2():
    r1 = Trace(claim="x", verdict="yes", ok_flag=True)
    hedge = polarity_gate(r1, Trace(claim="x", verdict="conditional", ok_flag=True), None)
    assert not hedge.fired and hedge.verdict_shift
    assert hedge.gamma_r2.verdict_shift["direction"] == "hedged_to_conditional"
    firm = polarity_gate(Trace(claim="x", verdict="conditional"), Trace(claim="x", verdict="no"), None)
    assert firm.gamma_r2.verdict_shift["direction"] == "firmed_from_conditional"
    unreadable = polarity_gate(r1, Trace(claim="The war was not just", ok_flag=True), None)
    assert unreadable.transition == "unknown" and not unreadable.fired and not unreadable.verdict_shift
    failed = Trace(claim="[PARSE FAILED]", ok_flag=False)
    res = polarity_gate(r1, failed, None)
    assert res.gamma_r2 is failed and not res.fired


# ── FAP ──────────────────────────────────────────────────────────────────────────────────────
def test_fap_drift_trigger_from_the_corpus(corpus_dir):
    run = parse_run(corpus_json(corpus_dir, "arm-v071-run-FAP-test-007.json"))
    assert run.trace(2, "beta").confidence_delta == 0.1
    assert fap_drift_agents(run.r2) == ["beta"]
    assert fap_drift_triggered(run.trace(2, "alpha"), run.trace(2, "beta")) is True
    assert run.meta.fap_drift_triggered is True


def test_silent_baseline_abort():
    assert silent_baseline_failed(None) and silent_baseline_failed(Trace(claim="[PARSE FAILED]"))
    assert silent_baseline_failed(Trace(claim="fine", confidence=None))
    assert not silent_baseline_failed(Trace(claim="fine", confidence=0.8))
    p = fap_abort_placeholder("gpt", "gpt-4o-mini")
    up = trace_to_upstream(p)
    assert up["claim"] == FAP_ABORT_CLAIM and up["confidence"] is None and up["_ok"] is False
    assert up["flags"] == ["silent_baseline_failed", "fap_triggered", "self_delta_unavailable"]
    assert up["reconciliation_status"] == "failed" and up["self_check"]["status"] == "failed"
    assert up["_meta"] == {"stopReason": "aborted", "provider": "gpt", "model": "gpt-4o-mini"}
    assert up["disagreement_classification"] is None and up["self_delta_mismatch"] is False
    assert claim_direction(p.claim) == "unknown" and not p.ok


def test_requeue_record_classification_and_every_attempt_kept():
    r2 = Trace(claim="c", confidence=0.7)
    bad = Trace(claim="[PARSE FAILED]", ok_flag=False, raw_reasoning_attempt="garbage")
    good = Trace(claim="c", confidence=0.6, ok_flag=True)
    rec = requeue_record("beta", r2, [bad, good])
    assert (rec["pre_requeue_confidence"], rec["post_requeue_confidence"]) == (0.7, 0.6)
    assert rec["requeue_confidence_delta"] == -0.1 and rec["delta_resolved"] is True
    assert rec["classification"] == "memetic"
    assert [a["claim"] for a in rec["attempts"]] == ["[PARSE FAILED]", "c"] and rec["trace"]["confidence"] == 0.6
    held = requeue_record("alpha", r2, [Trace(claim="c", confidence=0.69)])
    assert held["requeue_confidence_delta"] == -0.01 and held["classification"] == "epistemic"
    # exactly -0.02 is not "resolved" (strictly below -0.02)
    edge = requeue_record("alpha", Trace(claim="c", confidence=0.5), [Trace(claim="c", confidence=0.48)])
    assert edge["requeue_confidence_delta"] == -0.02 and edge["classification"] == "epistemic"
    none = requeue_record("alpha", r2, [bad])
    assert none["post_requeue_confidence"] is None and none["classification"] == "undetermined"
    assert requeue_record("alpha", r2, [bad], arm_rules=True)["classification"] == "epistemic"


def test_requeue_delta_rounds_like_js_to_fixed():
    # 0.5625 - 0.5 = 0.0625 exactly: JS (0.0625).toFixed(3) is "0.063"; Python round() gives 0.062
    rec = requeue_record("alpha", Trace(claim="c", confidence=0.5), [Trace(claim="c", confidence=0.5625)])
    assert rec["requeue_confidence_delta"] == 0.063


# ── rotating silent baseline ─────────────────────────────────────────────────────────────────
def test_rotation_takes_turns_over_the_configured_providers():
    providers = ["claude", "gpt", "gemini"]
    assert [rotate_silent_baseline(i, providers).provider for i in range(7)] == [
        "claude", "gpt", "gemini", "claude", "gpt", "gemini", "claude"]
    assert rotate_silent_baseline(4, providers) == SilentBaseline(provider="gpt", draw="gamma")
    assert rotate_silent_baseline(1, ["gpt", "gpt", "claude"], draw="alpha") == SilentBaseline("claude", "alpha")


@pytest.mark.parametrize("index, providers, draw, field", [
    (-1, ["a"], "gamma", "run_index"), (True, ["a"], "gamma", "run_index"), (0, [], "gamma", "providers"),
    (0, ["a"], "silent", "silent_draw"),
])
def test_rotation_refuses_bad_input(index, providers, draw, field):
    with pytest.raises(InputError) as info:
        rotate_silent_baseline(index, providers, draw)
    assert info.value.field == field
