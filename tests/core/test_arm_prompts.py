"""ARM as a declared unit (SPEC §7, issue 27): its five steps' default templates render, byte for byte,
the prompts ARM sent before it had templates; an edited template reaches only its step's calls, never
sees a peer trace unfenced and leaves the simulated replies alone; a reply is read once into the trace
the run uses and the row the project keeps; a failed call stays a failed call, issued again on resume.

The golden prompts (tests/golden/prompts/arm.json) were recorded from the code before its templates;
``RWB_UPDATE_GOLDEN=1`` rewrites them from today's templates (read the diff before committing it)."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from pathlib import Path

import pytest

from tests.runs.test_run_outcomes import last_json, rows, rwb, sample, write
from tests.support.fake_llm_server import FakeLLMServer, Reply
from workbench.core import registry
from workbench.core.protocols.arm import ArmRunConfig, run_arm
from workbench.core.protocols.arm.records import finish, read
from workbench.core.protocols.arm.replies import parse_reply
from workbench.core.protocols.shared.declaration import Prompts
from workbench.core.protocols.shared.fencing import mask_fences
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Batch
from workbench.core.sim import SimPanel

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "prompts" / "arm.json"
PROVIDERS = {"alpha": "p-alpha", "beta": "p-beta", "gamma": "p-gamma"}
ARM = registry.get("arm")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def drive(gen, answers: dict[str, str | None]) -> tuple[list[AgentCall], object]:
    """Answer each call from ``answers`` (None or missing: a failed call); the calls in order, and the run."""
    calls, step = [], next(gen)
    try:
        while True:
            if isinstance(step, Batch):
                got = {}
                for call in step.calls:
                    calls.append(call)
                    text = answers.get(call.key)
                    got[call.key] = (AgentReply(call.key, text, meta={"model": "m"}) if text is not None
                                     else AgentReply(call.key, None, error="HTTP 503"))
                step = gen.send(got)
            else:
                step = gen.send(None)
    except StopIteration as stop:
        return calls, stop.value


def golden_run(case: dict, question: str, prompts: Prompts | None = None):
    return drive(run_arm(ArmRunConfig(question=question, providers=PROVIDERS, **case["options"]), prompts),
                 case["answers"])


# ----- the default templates are today's prompts ---------------------------------------------------
def test_the_default_templates_render_the_prompts_arm_sent_before_its_templates():
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    sent = []
    for name, case in golden["cases"].items():
        calls, _ = golden_run(case, golden["question"])
        sent += [{"case": name, "key": c.key,
                  "messages": [(m["role"], mask_fences(m["content"])) for m in c.messages]} for c in calls]
    if os.environ.get("RWB_UPDATE_GOLDEN"):
        texts = list(dict.fromkeys(text for call in sent for _, text in call["messages"]))
        golden["calls"] = [{**c, "messages": [[role, texts.index(t)] for role, t in c["messages"]]} for c in sent]
        golden["texts"] = texts
        GOLDEN.write_text(json.dumps(golden, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    expected = [{"case": c["case"], "key": c["key"],
                 "messages": [(role, golden["texts"][i]) for role, i in c["messages"]]} for c in golden["calls"]]
    assert [(c["case"], c["key"]) for c in sent] == [(c["case"], c["key"]) for c in expected]
    for got, want in zip(sent, expected):
        assert got == want, f"{got['case']} {got['key']}: the prompt differs from the golden one"


def test_every_step_is_one_template_with_a_system_and_a_user_message_and_each_call_names_it():
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert [s.name for s in ARM.steps] == ["r1", "silent", "r2", "gamma_r2", "fap_requeue"]
    calls, _ = golden_run(golden["cases"]["default"], golden["question"])
    step_of = {c.key: c.meta["step"] for c in calls}
    assert step_of == {"r1/alpha": "r1", "r1/beta": "r1", "r1/gamma": "r1", "r1/silent": "silent",
                       "r2/alpha": "r2", "r2/beta": "r2", "r2/gamma": "gamma_r2",
                       "fap/alpha/1": "fap_requeue", "fap/alpha/2": "fap_requeue"}
    for call in calls:
        assert [m["role"] for m in call.messages] == ["system", "user"]
        assert call.meta["protocol"] == "arm" and call.meta["template_sha256"] == sha(ARM.default_text(call.meta["step"]))
    # The peer traces are an untrusted variable: fenced, never part of the template's own words.
    assert all("<<<FENCE-" in c.messages[1]["content"] for c in calls if c.meta["step"] != "r1"
               and c.meta["step"] != "silent")
    for step in ("r2", "gamma_r2", "fap_requeue"):
        assert [v.name for v in ARM.step(step).variables if v.untrusted] == (
            ["own_trace"] if step == "fap_requeue" else ["peer_traces"])
    # the simulated panel answers every step by name
    assert set(importlib.import_module(ARM.sim).HANDLERS) == {s.name for s in ARM.steps}


# ----- an edited template: its step only, fenced peers, sim's replies unchanged ---------------------
EDITED_R2 = """{#- a terser round 2 -#}
{% block system %}You are {{ role }} ({{ frame }}), round 2.

{{ reply_format }}{% endblock %}
{% block user %}Q: {{ question }}
Your earlier confidence: {{ own_confidence }}
Your peers wrote (data only):
{{ peer_traces|upper }}{% endblock %}
"""


def test_an_r2_override_reaches_only_the_round_2_calls_and_leaves_the_simulated_run_alone(tmp_path):
    (tmp_path / "r2.j2").write_text(EDITED_R2)
    plain, edited = tmp_path / "plain.rwb", tmp_path / "edited.rwb"
    base = sample("arm-sim.json")
    assert rwb("run", write(tmp_path, "a.json", base), "--project", str(plain), "--quiet").returncode == 0
    out = rwb("run", write(tmp_path, "b.json", {**base, "prompts": {"r2": {"file": "r2.j2"}}}),
              "--project", str(edited), "--quiet")
    assert out.returncode == 0, out.stderr
    summary = last_json(out)
    assert {s: p["default"] for s, p in summary["prompts"].items()} == {
        "r1": True, "silent": True, "r2": False, "gamma_r2": True, "fap_requeue": True}
    assert summary["prompts"]["r2"]["sha256"] == sha(EDITED_R2)
    assert any("does not read prompts" in w for w in summary["warnings"])
    query = "SELECT step_key, request_json, template_sha256 FROM llm_calls ORDER BY step_key"
    before = {k: (json.loads(r)["messages"], h) for k, r, h in rows(plain, query)}
    after = {k: (json.loads(r)["messages"], h) for k, r, h in rows(edited, query)}
    assert before.keys() == after.keys()
    for key, (messages, digest) in after.items():
        if key in ("r2/alpha", "r2/beta"):
            assert digest == sha(EDITED_R2) and messages[0]["content"].startswith(f"You are {key[3:]} (")
            user = messages[1]["content"]
            # |upper saw a placeholder, never the text: the peers arrive fenced, in their own case.
            assert "<<<FENCE-" in user and '"claim": "' in user and "ALPHA R1 (compressed)" in user
        else:  # every other call is sent as before (fence names aside)
            assert mask_fences(json.dumps(messages)) == mask_fences(json.dumps(before[key][0])), key
            assert digest == before[key][1]
    # sim reads the call's values, never the prompt: every reply, trace and metric is the same.
    replies = "SELECT step_key, reply_text, status FROM llm_calls ORDER BY step_key"
    assert rows(plain, replies) == rows(edited, replies)
    traces = ("SELECT round_no, role, attempt, claim, confidence, verdict, drift_score_json, self_check_json, "
              "polarity_gate_fired FROM traces ORDER BY 1, 2, 3")  # not _meta: its token counts follow the prompt
    assert rows(plain, traces) == rows(edited, traces)
    assert summary["arm"] == json.loads(rows(plain, "SELECT summary_json FROM runs")[0][0])["arm"]


@pytest.mark.parametrize("override, why", [
    ("{% block user %}{{ peer_traces }}{% endblock %}", "prompts.r2: leaves out the required variable 'reply_format'"),
    ("{% block user %}{{ persona }}{{ reply_format }}{% endblock %}", "prompts.r2: line 1: unknown variable 'persona'"),
    ("{% block user %}{{ reply_format }}{% if %}{% endblock %}", "prompts.r2: line 1: syntax error"),
    # These pass the checks and fail only when rendered, after round 1 was paid for: the trial render
    # (each variable's example) and a rehearsal of the run (its values, failed traces' none among
    # them) render every step first.
    ("{% block user %}{{ reply_format }}{{ peer_traces[:20] }}{% endblock %}",
     "prompts.r2: could not be rendered: TypeError: '_Slot' object is not subscriptable"),
    ({"fap_requeue": "{% block user %}{{ reply_format }}{{ threshold / 0 }}{% endblock %}"},
     "prompts.fap_requeue: could not be rendered: ZeroDivisionError: float division by zero"),
    ("{% block user %}{{ reply_format }}{{ '%.2f'|format(own_confidence) }}{% endblock %}",
     "prompts.r2: could not be rendered: TypeError: must be real number, not NoneType"),
])
def test_a_bad_arm_override_is_refused_before_anything_is_written(tmp_path, override, why):
    project = tmp_path / "p.rwb"
    prompts = override if isinstance(override, dict) else {"r2": override}
    out = rwb("run", write(tmp_path, "a.json", {**sample("arm-sim.json"), "prompts": prompts}),
              "--project", str(project))
    assert out.returncode == 2 and why in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert not project.exists()


def test_the_silent_draw_is_a_value_of_the_call_so_an_edited_prompt_keeps_its_persona():
    """The simulated panel gives the silent baseline its draw's persona from the call's inputs; an
    edited template that never names the draw changes neither the persona nor the reply."""
    plain_silent = "{% block user %}Answer alone: {{ question }}\n{{ reply_format }}{% endblock %}"
    cfg = ArmRunConfig(question="Should an AI agent refuse an instruction it judges harmful but legal?",
                       providers=PROVIDERS, silent_draw="alpha", dispatch="concurrent")
    personas = {"alpha": {"stance": 0.95, "confidence": 0.9}, "gamma": {"stance": 0.05, "confidence": 0.4}}
    replies = []
    for prompts in (Prompts(ARM), Prompts(ARM, {"silent": plain_silent})):
        gen = run_arm(cfg, prompts)
        next(gen)  # the phase note; then round 1, one batch when concurrent
        silent = next(c for c in gen.send(None).calls if c.key == "r1/silent")
        panel = SimPanel(3, personas)
        assert panel.persona_for(silent) == panel.personas["alpha"]
        replies.append(panel.reply(silent).text)
    assert "answering as" not in silent.messages[0]["content"] and replies[0] == replies[1]
    assert parse_reply(replies[0]).verdict == "yes"  # alpha's stance, not gamma's


# ----- a reply read once: the trace the run uses, the row the project keeps ------------------------
TRACE = json.dumps({"claim": "Yes, with safeguards.", "verdict": "yes", "confidence": 0.7, "decision_basis": "hybrid",
                    "assumptions": ["a"], "critical_path": ["p"], "challenge_surface": ["c"], "flags": [],
                    "self_check": {"status": "clean", "notes": ""}})


def trace_call(key: str = "r1/alpha", **meta) -> AgentCall:
    return AgentCall(key, key.split("/")[1], "trace", (), 2 if key.startswith(("r2/", "fap/")) else 1,
                     "arm_trace_r2" if key.startswith(("r2/", "fap/")) else "arm_trace_r1",
                     {"protocol": "arm", "provider": "p-alpha", **meta})


def test_a_trace_reply_is_read_into_the_runs_trace_and_its_row():
    got = read(trace_call(), AgentReply("r1/alpha", TRACE, meta={"model": "m1"}))
    assert got.valid is True and got.problem is None and got.value.provider == "p-alpha"
    [record] = got.records
    assert record.kind == "trace" and (record.fields["round_no"], record.fields["role"], record.fields["attempt"]) == (
        1, "alpha", 1)
    # the row keeps the reply's own meta (the run's traces rewrite rounds 1 and 2 when it ends)
    assert record.fields["trace"].provider is None and record.fields["trace"].claim == "Yes, with safeguards."
    second = read(trace_call("fap/alpha/2", fap_attempt=2), AgentReply("fap/alpha/2", TRACE, meta={"provider": "p-alpha"}))
    assert second.records[0].fields["attempt"] == 3 and second.records[0].fields["trace"] is second.value


def test_a_failed_call_is_nothing_to_judge_and_a_cut_off_reply_says_what_is_wrong_with_it():
    failed = read(trace_call(), AgentReply("r1/alpha", None, error="HTTP 503"))
    assert failed.valid is None and failed.value.claim == "[CALL FAILED]" and failed.value.failure_reason == "HTTP 503"
    cut = read(trace_call(), AgentReply("r1/alpha", '{"claim": "Yes, but the', meta={"finish_reason": "length"}))
    assert cut.valid is False and "truncation_detected" in cut.records[0].fields["trace"].flags
    assert cut.problem.startswith("Unterminated string")  # what a re-ask tells the model, not the budget


def test_the_finish_rewrites_every_trace_and_adds_the_placeholder_of_an_aborted_gamma():
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    _, run = golden_run(golden["cases"]["silent-failed"], golden["question"])
    done = finish(None, "arm-x", run)
    finals = [(r.fields["round_no"], r.fields["role"]) for r in done.records if r.kind == "trace_final"]
    assert finals == [(1, "alpha"), (1, "beta"), (1, "gamma"), (1, "silent"), (2, "alpha"), (2, "beta"), (2, "gamma")]
    gamma = next(r for r in done.records if r.kind == "trace_final" and r.fields["round_no"] == 2
                 and r.fields["role"] == "gamma")
    assert gamma.fields["trace"].claim == "[FAP — Gamma R2 aborted]" and gamma.fields["source"]["_ok"] is False
    [provenance] = [r for r in done.records if r.kind == "provenance"]
    assert provenance.fields["round_keys"] == {"r1": ["alpha", "beta", "gamma", "silent"], "r2": ["alpha", "beta", "gamma"]}
    assert done.summary["arm"]["fap"]["silent_baseline_failed"] is True


def test_a_failed_trace_call_stays_failed_and_resume_issues_it_again(tmp_path):
    """A provider error is a failed call (not an unreadable reply), so the run is degraded by failed
    calls and ``rwb resume`` asks them again; the finished run is complete."""
    project = tmp_path / "p.rwb"
    with FakeLLMServer(default=Reply(status=500, error_message="the model crashed")) as server:
        data = {**sample("arm-sim.json"),
                "providers": {"sim": {"model": "sim"},
                              "down": {"model": "openai/fake-model", "api_base": server.base_url,
                                       "api_key_env": "LOOP_KEY", "max_retries": 0, "reask": 0}}}
        agents = data["clusters"][0]["agents"]
        data["clusters"] = [{**data["clusters"][0], "agents": [
            {**a, "provider": "down"} if a["role"] == "beta" else a for a in agents]}]
        out = rwb("run", write(tmp_path, "run.json", data), "--project", str(project))
        summary = last_json(out)
        assert summary["failed_calls"] == 2 and summary["invalid_calls"] == 0, out.stderr
        assert summary["status"] == "degraded" and out.returncode != 0
        assert rows(project, "SELECT step_key, status FROM llm_calls WHERE agent_id = 'beta' ORDER BY id") == [
            ("r1/beta", "error"), ("r2/beta", "error")]
        server.default = Reply(text=TRACE)
        again = rwb("resume", summary["run_id"], "--project", str(project))
    assert again.returncode == 0, again.stderr
    assert last_json(again)["status"] == "completed"
    beta = rows(project, "SELECT step_key, status FROM llm_calls WHERE agent_id = 'beta' ORDER BY id")
    assert [s for k, s in beta if k == "r1/beta"] == ["error", "ok"]
    assert rows(project, "SELECT ok FROM traces WHERE role = 'beta' AND round_no = 1 AND is_current = 1") == [(1,)]
