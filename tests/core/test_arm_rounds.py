"""The ARM run as a step generator, driven by a scripted fake driver (no provider involved)."""

from __future__ import annotations

import json

import pytest

from workbench.core.errors import InputError
from workbench.core.protocols.arm import (
    ArmRunConfig,
    invariant_violations,
    metrics_report,
    parse_run,
    run_arm,
    run_to_upstream,
)
from workbench.core.protocols.arm.stored import NOTE_EMBEDDING
from workbench.core.protocols.shared.fencing import mask_fences
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Batch, Note

PROVIDERS = {"alpha": "p-alpha", "beta": "p-beta", "gamma": "p-gamma"}


def reply(claim: str, verdict: str, confidence: float, **extra) -> str:
    body = {"claim": claim, "verdict": verdict, "confidence": confidence, "decision_basis": "hybrid",
            "assumptions": ["a1", "a2", "a3", "a4", "a5"], "critical_path": ["s1", "s2", "s3", "s4", "s5", "s6"],
            "challenge_surface": ["c1", "c2", "c3", "c4"], "flags": [],
            "self_check": {"status": "clean", "notes": "ok"}}
    body.update(extra)
    return json.dumps(body)


def script(**overrides: str | None) -> dict[str, str | None]:
    base = {
        "r1/alpha": reply("No: agents should never deploy", "no", 0.7, decision_basis="deontological"),
        "r1/beta": reply("Yes: agents should deploy", "yes", 0.6, decision_basis="utilitarian"),
        "r1/gamma": reply("Yes: agents should deploy", "yes", 0.8),
        "r1/silent": reply("Yes, deploy.", "yes", 0.75),
        "r2/alpha": reply("No: agents should never deploy", "no", 0.72, decision_basis="deontological",
                          drift_score={"confidence_delta": 0.02}),
        "r2/beta": reply("Yes: agents should deploy", "yes", 0.62, decision_basis="utilitarian",
                         drift_score={"confidence_delta": 0.02}),
        "r2/gamma": reply("Yes: agents should deploy with review", "yes", 0.77, disagreement_classification="values",
                          values_in_conflict=["duty", "welfare"], self_delta_vs_baseline=0.02,
                          reconciliation_status="success"),
    }
    base.update(overrides)
    return base


class FakeDriver:
    """Answers each call from a script (a missing key is a failed call) and records every step."""

    def __init__(self, answers: dict[str, str | None]):
        self.answers = answers
        self.batches: list[tuple[str, ...]] = []
        self.notes: list[Note] = []
        self.steps: list[str] = []
        self.calls: dict[str, AgentCall] = {}

    def run(self, gen):
        step = next(gen)
        try:
            while True:
                if isinstance(step, Batch):
                    keys = tuple(c.key for c in step.calls)
                    self.batches.append(keys)
                    self.steps.append("batch:" + ",".join(keys))
                    out = {}
                    for c in step.calls:
                        self.calls[c.key] = c
                        text = self.answers.get(c.key)
                        out[c.key] = (AgentReply(c.key, text, meta={"provider": c.meta["provider"], "model": "m1",
                                                                     "latency_ms": 5})
                                      if text is not None else AgentReply(c.key, None, error="HTTP 503"))
                    step = gen.send(out)
                else:
                    self.notes.append(step)
                    self.steps.append("note:" + step.kind)
                    step = gen.send(None)
        except StopIteration as stop:
            return stop.value


def go(answers=None, **cfg):
    driver = FakeDriver(answers if answers is not None else script())
    run = driver.run(run_arm(ArmRunConfig(question="Should the agents deploy?", providers=PROVIDERS, **cfg)))
    return run, driver


def all_traces(run) -> dict:
    return {f"r{n}.{role}": t for n, block in ((1, run.r1), (2, run.r2)) for role, t in block.items()}


def test_sequential_dispatch_is_one_call_per_batch_in_arm_order():
    run, d = go()
    assert d.batches == [("r1/alpha",), ("r1/beta",), ("r1/gamma",), ("r1/silent",),
                         ("r2/alpha",), ("r2/beta",), ("r2/gamma",)]
    assert run.meta.dispatch == "sequential"
    # the convergence analysis comes between the rounds
    assert d.steps.index("note:metrics") == 5 and d.steps[6] == "batch:r2/alpha"


def test_concurrent_dispatch_is_one_batch_per_phase():
    run, d = go(dispatch="concurrent")
    assert d.batches == [("r1/alpha", "r1/beta", "r1/gamma", "r1/silent"), ("r2/alpha", "r2/beta"), ("r2/gamma",)]
    assert run.meta.dispatch == "concurrent" and run_to_upstream(run)["runMeta"]["dispatch"] == "concurrent"
    seq, _ = go()
    assert run_to_upstream(seq)["r2"] == run_to_upstream(run)["r2"]  # same answers, same run


def test_metrics_note_and_stored_convergence_are_exact():
    run, d = go()
    note = next(n for n in d.notes if n.kind == "metrics")
    # alpha {agents, should, never, deploy}, beta = gamma = {agents, should, deploy}
    # J(a,b) = J(a,g) = 3/4, J(b,g) = 1: mean = 2.5 / 3
    assert note.data["jaccard_convergence"] == pytest.approx(2.5 / 3, abs=1e-15)
    assert note.data["shared_prior_warning"] is True and note.data["directional_unanimity"] is False
    assert run.convergence == note.data["jaccard_convergence"]
    assert run.schema_version == "arm-trace-v1.3" and run.tfidf_convergence == note.data["tfidf_convergence"]


def test_a_malformed_reply_becomes_a_failed_trace_never_coerced():
    run, d = go(script(**{"r1/beta": "Sure! Here is my answer: {claim: yes}"}))
    beta = run.trace(1, "beta")
    assert beta.ok is False and beta.ok_flag is False and beta.claim == "[PARSE FAILED]"
    assert beta.confidence is None and beta.raw_reasoning_attempt == "Sure! Here is my answer: {claim: yes}"
    assert beta.flags == ["serialization_failure"] and beta.self_check["status"] == "failed"
    assert beta.failure_reason.startswith("Expecting value")
    # excluded from convergence: alpha vs gamma only, 3/4
    assert run.convergence == 0.75
    # R2 peers see it as null, never as a made-up trace
    assert "BETA R1 (compressed):\nnull" in d.calls["r2/alpha"].messages[1]["content"]


def test_schema_reject_repairs_and_call_failures():
    answers = script(**{
        "r1/alpha": "```json\n" + reply("No: agents should never deploy", "no", 0.7) + "\n```",
        "r1/beta": '{""claim": "Yes: agents should deploy", ""verdict": "yes", ""confidence": 1.5}',
        "r1/gamma": json.dumps({"claim": "Yes", "confidence": "high"}),
        "r2/alpha": None,
    })
    run, _ = go(answers)
    assert run.trace(1, "alpha").ok and run.trace(1, "alpha").confidence == 0.7  # fence stripped
    beta = run.trace(1, "beta")  # Gemini ""key": artefact repaired, 1.5 clamped with a warning
    assert beta.ok and beta.confidence == 1 and beta.schema_warnings == ["confidence_out_of_range:1.5"]
    gamma = run.trace(1, "gamma")
    assert not gamma.ok and gamma.flags == ["schema_validation_failure"]
    assert gamma.failure_reason == 'confidence missing or non-numeric (got "high")'
    failed_call = run.trace(2, "alpha")
    assert not failed_call.ok and failed_call.claim == "[CALL FAILED]" and failed_call.failure_reason == "HTTP 503"
    assert failed_call.harness_confidence_delta is None  # no harness delta on a failed R2


def test_round_isolation_and_what_each_agent_sees():
    run, d = go()
    for key in ("r1/alpha", "r1/beta", "r1/gamma", "r1/silent"):
        user = d.calls[key].messages[1]["content"]
        assert user == "<arm:question>\nShould the agents deploy?\n</arm:question>"  # nothing else
        assert '"verdict": "yes | no | conditional' in d.calls[key].messages[0]["content"]
    r2a = d.calls["r2/alpha"].messages[1]["content"]
    assert "ALPHA R1 (compressed)" in r2a and "BETA R1 (compressed)" in r2a and "GAMMA R1 (compressed)" in r2a
    assert "Yes, deploy." not in r2a  # the silent baseline is never shown to alpha or beta
    assert "Your round-1 confidence was: 0.7" in r2a
    # compressed form: 4 assumptions, 5 steps, 3 challenges, no discarded paths
    view = json.loads(r2a.split("ALPHA R1 (compressed):\n")[1].split("\n\nBETA")[0])
    assert view["key_assumptions"] == ["a1", "a2", "a3", "a4"] and len(view["main_path"]) == 5
    assert view["top_challenges"] == ["c1", "c2", "c3"] and view["self_check_status"] == "clean"
    g = d.calls["r2/gamma"].messages[1]["content"]
    assert "ALPHA R2 (compressed)" in g and "BETA R2 (compressed)" in g and "Yes, deploy." in g
    assert "your own isolated prior" in g and "ALPHA R1 (compressed)" in g  # the seed: all R1 traces
    assert "self_delta_vs_baseline = your confidence MINUS 0.75" in g
    _, arm_only = go(gamma_context="arm")  # ARM's own code: no round-1 traces for gamma
    assert "ALPHA R1" not in arm_only.calls["r2/gamma"].messages[1]["content"]
    assert "silent" not in {c.agent for k, c in d.calls.items() if c.round_no == 2}  # silent is not re-run


def test_gamma_context_arm_plus_r1_and_a_rotated_baseline_label():
    _, d = go(gamma_context="arm+r1", silent_provider="p-alpha")
    g = d.calls["r2/gamma"].messages[1]["content"]
    assert "ALPHA R1 (compressed)" in g and "GAMMA R1, your own visible round-1 answer" in g
    assert "not your own prior" in g and d.calls["r1/silent"].meta["provider"] == "p-alpha"


def test_gamma_flip_fires_the_gate_and_override_reason_is_always_stamped():
    answers = script(**{"r2/gamma": reply("No: agents should never deploy", "no", 0.77,
                                          disagreement_classification="reasoning", self_delta_vs_baseline=0.02,
                                          reconciliation_status="success")})
    run, d = go(answers)
    g = run.trace(2, "gamma")
    assert g.reconciliation_status == "gamma_flip_detected" and g.polarity_gate_fired is True
    assert g.status == "warning" and g.override_reason == "polarity_gate_flip"
    assert g.polarity_audit["baseline_mode"] == "visible_r1" and g.polarity_audit["silent_agent"] == "gamma"
    assert g.polarity_audit["confidence_delta_blindspot"] is True  # harness delta 0.77 - 0.75 = 0.02
    assert run.meta.polarity_gate_fired is True
    assert any(n.kind == "gate" and "Polarity gate" in n.message for n in d.notes)
    assert invariant_violations(all_traces(run)) == []


def test_auto_warn_overrides_in_a_run_carry_their_reason():
    answers = script(**{"r1/alpha": reply("No: agents should never deploy", "no", 0.7, flags=["values_conflict"])})
    run, _ = go(answers)
    assert run.trace(1, "alpha").override_reason == "values_tension_flag"
    assert run.trace(2, "gamma").override_reason == "reconciler_values_disagreement"
    assert invariant_violations(all_traces(run)) == []


def test_conditional_hedge_is_advisory_only():
    answers = script(**{"r2/gamma": reply("Deploy only if reviewed", "conditional", 0.7,
                                          disagreement_classification="reasoning", reconciliation_status="success")})
    run, _ = go(answers)
    g = run.trace(2, "gamma")
    assert g.reconciliation_status == "success" and g.verdict_shift["direction"] == "hedged_to_conditional"
    assert run.meta.verdict_shift_flagged is True and run.meta.polarity_gate_fired is False


def test_silent_baseline_failure_aborts_gamma_r2():
    run, d = go(script(**{"r1/silent": "not json"}))
    assert "r2/gamma" not in d.calls
    g = run.trace(2, "gamma")
    assert g.claim == "[FAP — Gamma R2 aborted]" and g.ok is False and g.reconciliation_status == "failed"
    up = run_to_upstream(run)["runMeta"]
    assert up["silentBaselineFailed"] is True and up["silentConfidence"] is None
    assert up["polarity_gate_fired"] is False


def test_fap_requeue_retries_until_one_parses_and_keeps_every_attempt():
    answers = script(**{
        "r2/beta": reply("Yes: agents should deploy", "yes", 0.7, drift_score={"confidence_delta": 0.1}),
        "fap/beta/1": "garbled",
        "fap/beta/2": reply("Yes: agents should deploy", "yes", 0.6),
    })
    run, d = go(answers)
    assert ("fap/beta/1",) in d.batches and ("fap/beta/2",) in d.batches
    assert d.batches.index(("fap/beta/2",)) < d.batches.index(("r2/gamma",))  # ARM order: re-queue first
    req = d.calls["fap/beta/1"].messages[1]["content"]
    assert "FAP RE-QUEUE" in req and "ALPHA R1" not in req and "GAMMA" not in req
    assert '"claim": "Yes: agents should deploy"' in req  # its own compressed R1
    rec = run.meta.fap_requeue[0]
    assert rec["agent"] == "beta" and len(rec["attempts"]) == 2 and rec["attempts"][0]["_ok"] is False
    assert rec["requeue_confidence_delta"] == -0.1 and rec["classification"] == "memetic"
    assert run.meta.fap_drift_triggered is True
    assert run.trace(2, "beta").confidence == 0.7  # R2 itself is kept as it was

    one, d1 = go(answers, fap_max_attempts=1)
    assert "fap/beta/2" not in d1.calls and one.meta.fap_requeue[0]["classification"] == "undetermined"
    off, d2 = go(answers, fap_requeue=False)
    assert not any(k.startswith("fap/") for k in d2.calls) and off.meta.fap_drift_triggered is True


def test_concurrent_requeue_batches_every_drifted_agent():
    answers = script(**{
        "r2/alpha": reply("No", "no", 0.8, drift_score={"confidence_delta": 0.1}),
        "r2/beta": reply("Yes", "yes", 0.7, drift_score={"confidence_delta": 0.1}),
        "fap/alpha/1": reply("No", "no", 0.7), "fap/beta/1": reply("Yes", "yes", 0.7),
    })
    _, d = go(answers, dispatch="concurrent")
    assert ("fap/alpha/1", "fap/beta/1") in d.batches


def test_a_workbench_export_checks_clean_under_rwb_arm_metrics():
    run, _ = go(script(**{"r2/gamma": reply("No: never", "no", 0.6, self_delta_vs_baseline=-0.15,
                                            disagreement_classification="values", values_in_conflict=["x"],
                                            reconciliation_status="success")}))
    exported = json.loads(json.dumps(run_to_upstream(run)))
    assert run_to_upstream(parse_run(exported)) == exported
    report = metrics_report(exported)
    bad = [s for s in report["stored"] if s["match"] is False]
    assert bad == []
    assert {s["note"] for s in report["stored"] if s["note"]} == {NOTE_EMBEDDING}
    assert report["schema_version"] == "arm-trace-v1.3" and report["tfidf_idf"] == "smoothed"
    assert report["polarity_gate"]["fired"] is True


def test_same_configuration_sends_the_same_calls():
    _, a = go()
    _, b = go()
    # The same calls up to the fence names, which are fresh per call (SPEC §6 "Reproducibility").
    same = lambda d: [(c.key, [mask_fences(m["content"]) for m in c.messages],
                       {k: v for k, v in c.meta.items() if k != "delimiter"}) for c in d.calls.values()]
    assert same(a) == same(b)


@pytest.mark.parametrize("kw, field", [
    ({"dispatch": "parallel"}, "dispatch"), ({"silent_draw": "delta"}, "silent_draw"),
    ({"gamma_context": "all"}, "gamma_context"), ({"fap_max_attempts": 0}, "fap_max_attempts"),
    ({"schema_version": "arm-trace-v1.1"}, "schema_version"), ({"question": " "}, "question"),
    ({"providers": {"alpha": "a", "beta": "b"}}, "providers.gamma"),
    ({"frames": {"alpha": "virtue", "beta": "consequentialist"}}, "frames.alpha"),
])
def test_bad_configuration_is_an_input_error(kw, field):
    args = {"question": "Q?", "providers": PROVIDERS, **kw}
    with pytest.raises(InputError) as info:
        ArmRunConfig(**args)
    assert info.value.field == field


def test_role_injection_off_makes_both_frames_independent():
    run, d = go(role_injection=False)
    assert run.meta.frames == {"alpha": "independent", "beta": "independent"}
    assert "Reason independently" in d.calls["r1/alpha"].messages[0]["content"]
