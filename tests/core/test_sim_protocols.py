"""Every protocol driven end to end with sim answering every call, for every scenario in the bank."""

from __future__ import annotations

import json

import pytest

from tests.core.test_sim_driver import (
    HUMAN_DECISION,
    run_arm_with,
    run_cons_with,
    run_echo_with,
    run_findings_with,
    run_rcp_with,
)
from workbench.core.protocols.arm import invariant_violations, metrics_report, run_to_upstream
from workbench.core.protocols.arm.metrics import verdict_of
from workbench.core.protocols.cons.run import parse_ballot_reply
from workbench.core.protocols.findings.run import parse_finding_vote
from workbench.core.protocols.rcp.run import parse_ballot, parse_vote
from workbench.core.sim import default_bank

BANK = default_bank()
SEED = 7


def ids(protocol):
    return [s.id for s in BANK.for_protocol(protocol)]


def test_the_bank_has_at_least_three_scenarios_per_protocol():
    for protocol in ("rcp", "arm", "cons", "findings", "echo"):
        assert len(BANK.for_protocol(protocol)) >= 3, protocol


# ----- RCP ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("ballot", [False, True], ids=["votes", "ballots"])
def test_rcp_every_vote_parses_and_the_bank_spans_several_tiers(ballot):
    tiers = set()
    for scenario in BANK.for_protocol("rcp"):
        out = run_rcp_with(scenario.question, SEED, ballot=ballot, rounds=1)
        rounds = out.result
        assert len(rounds) == 2 and all(len(r.artifacts) == 6 for r in rounds)
        statuses = [v.status for r in rounds for per in r.votes.values() for v in per.values()]
        assert statuses and set(statuses) == {"valid"}, scenario.id
        for call in out.calls:  # the protocol's own parser reads every reply
            text = out.replies[call.key].text
            if call.purpose == "vote":
                assert parse_vote(text).status == "valid"
            elif call.purpose == "ballot":
                assert {p.status for p in parse_ballot(text, list(call.meta["labels"])).values()} == {"valid"}
            else:
                assert len(text.split()) >= 20  # a readable paragraph
            assert out.replies[call.key].meta["simulated"] is True
        tiers |= {s["tier"] for r in rounds for s in r.states}
    assert len(tiers) >= 2, tiers


def test_rcp_artifacts_are_made_of_the_scenario_and_a_generic_question_still_reads_well():
    scenario = BANK.get("downtown-cars")
    out = run_rcp_with(scenario.question, SEED)
    texts = [a["text"] for a in out.result[0].artifacts.values()]
    assert all(any(s.text in t for s in scenario.statements) for t in texts)
    question = "Should the museum open late on Thursdays?"
    generic = run_rcp_with(question, SEED)
    texts = [a["text"] for a in generic.result[0].artifacts.values()]
    assert sum(question in t for t in texts) >= 3  # the position sentence quotes the question
    assert {v.status for per in generic.result[0].votes.values() for v in per.values()} == {"valid"}


# ----- findings -----------------------------------------------------------------------------------
def test_findings_every_vote_parses_and_the_truth_usually_wins():
    confirmed_true = challenged_false = wrong = 0
    for scenario in BANK.for_protocol("findings"):
        out = run_findings_with(scenario, SEED).result
        for f in scenario.findings:
            votes = out.votes[f.id]
            assert {v.status for v in votes.values()} == {"valid"}, (scenario.id, f.id)
            status = out.results[f.id].status
            confirmed_true += f.truth and status == "confirmed"
            challenged_false += (not f.truth) and status == "challenged"
            wrong += (status == "confirmed") != f.truth
    assert confirmed_true >= 1 and challenged_false >= 1
    assert wrong <= 2


def test_findings_replies_parse_with_the_protocols_parser():
    scenario = BANK.get("findings-auth-service")
    out = run_findings_with(scenario, SEED)
    for call in out.calls:
        parsed = parse_finding_vote(call.agent, out.replies[call.key].text)
        assert parsed.status == "valid" and parsed.vote.reason


# ----- CONS ---------------------------------------------------------------------------------------
def test_cons_every_ballot_parses_and_verdicts_follow_the_evidence():
    verdicts = {}
    for scenario in BANK.for_protocol("cons"):
        out = run_cons_with(scenario, SEED)
        result = out.result
        for round_ in result.rounds:
            assert {p.status for p in round_.values()} == {"valid"}, scenario.id
        for call in out.calls:
            if call.purpose == "ballot":
                assert parse_ballot_reply(call.agent, out.replies[call.key].text).status == "valid"
        verdicts[scenario.id] = result.outcome.verdict
        if result.outcome.escalations:  # the human's decision came from the driver, never from sim
            assert result.human_decision == HUMAN_DECISION
    assert verdicts["cons-codebase-map"] == "PROVEN"
    assert verdicts["cons-retry-threads"] == "REFUTED"


def test_cons_a_split_panel_stays_contested_and_a_human_decides():
    split = {f"ag{i}": {"stance": s, "sycophancy": 0.1} for i, s in enumerate((0.1, 0.2, 0.5, 0.8, 0.9))}
    runs = [run_cons_with(BANK.get("cons-cache"), seed, split) for seed in range(6)]
    contested = [r for r in runs if r.result.outcome.verdict == "CONTESTED"]
    assert contested
    for run in contested:
        assert len(run.result.rounds) == 3  # the opening ballots and both challenge rounds
        assert "Challenge round" in run.calls[-2].messages[-1]["content"]  # peers were shown
        assert run.calls[-1].purpose == "hitl_decision" and run.result.human_decision == HUMAN_DECISION


def test_cons_challenge_rounds_show_the_peers_and_ballots_use_only_the_options_given():
    scenario = BANK.get("cons-cache")
    out = run_cons_with(scenario, SEED)
    names = {o.name for o in scenario.options}
    ballots = [json.loads(out.replies[c.key].text) for c in out.calls if c.purpose == "ballot"]
    assert {b["option"] for b in ballots} <= names
    assert all(b["rationale"].strip() and b["evidence"] for b in ballots if b["vote"] == "accept")


# ----- ARM ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dispatch", ["sequential", "concurrent"])
def test_arm_every_trace_parses_and_the_metrics_are_numbers(dispatch):
    for scenario in BANK.for_protocol("arm"):
        out = run_arm_with(scenario.question, SEED, dispatch=dispatch)
        run = out.result
        assert all(t.ok for t in run.r1.values()), scenario.id
        assert all(t.ok for t in run.r2.values()), scenario.id
        assert all(verdict_of(t) in ("yes", "no", "conditional") for t in [*run.r1.values(), *run.r2.values()])
        assert all(json.loads(out.replies[c.key].text.strip("`json\n"))["verdict"] for c in out.calls)
        meta = run.run_meta
        assert meta.dispatch == dispatch
        assert isinstance(meta.convergence, float) and isinstance(meta.tfidf_convergence, float)
        assert meta.disagreement in ("none", "information", "reasoning", "values")
        report = metrics_report(run_to_upstream(run))
        for role in ("alpha", "beta", "gamma"):
            assert isinstance(report["agents"][role]["delta"], float)
        assert invariant_violations({**run.r1, **run.r2}) == []


def test_arm_sequential_and_concurrent_dispatch_get_the_same_traces():
    question = BANK.get("arm-rural-icu").question
    a = run_arm_with(question, SEED, dispatch="sequential").texts()
    b = run_arm_with(question, SEED, dispatch="concurrent").texts()
    assert a == b


def test_arm_flip_rate_one_fires_the_polarity_gate():
    personas = {"gamma": {"stance": 0.8, "flip_rate": 1.0}}
    fired = []
    for scenario in BANK.for_protocol("arm"):
        run = run_arm_with(scenario.question, SEED, personas).result
        if run.run_meta.polarity_gate_fired:
            fired.append(scenario.id)
            assert run.r2["gamma"].reconciliation_status == "gamma_flip_detected"
    assert fired
    quiet = [run_arm_with(s.question, SEED, {"gamma": {"stance": 0.8, "flip_rate": 0.0}}).result
             for s in BANK.for_protocol("arm")]
    assert not any(r.run_meta.polarity_gate_fired for r in quiet)


def test_arm_contaminated_runs_drift_up_and_the_fap_requeue_calls_it_memetic():
    question = BANK.get("arm-exfiltration").question
    personas = {r: {"contaminated": True, "misreport_rate": 0.0} for r in ("alpha", "beta")}
    run = run_arm_with(question, SEED, personas).result
    assert run.run_meta.fap_drift_triggered
    assert {r["classification"] for r in run.run_meta.fap_requeue} == {"memetic"}
    clean = {r: {"drift": 0.6, "stance": 0.9, "misreport_rate": 0.0} for r in ("alpha", "beta")}
    runs = [run_arm_with(question, seed, clean).result for seed in range(12)]
    records = [rec for run in runs for rec in (run.run_meta.fap_requeue or [])]
    assert records and {r["classification"] for r in records} == {"epistemic"}


def test_arm_misreports_show_as_delta_mismatch():
    question = BANK.get("school-phones").question
    honest = run_arm_with(question, SEED, {r: {"misreport_rate": 0.0} for r in ("alpha", "beta", "gamma")}).result
    liar = run_arm_with(question, SEED, {r: {"misreport_rate": 1.0} for r in ("alpha", "beta", "gamma")}).result
    report = [metrics_report(run_to_upstream(r))["agents"] for r in (honest, liar)]
    assert not any(report[0][r]["delta_mismatch"] for r in ("alpha", "beta", "gamma"))
    assert all(report[1][r]["delta_mismatch"] for r in ("alpha", "beta", "gamma"))


# ----- Echo ---------------------------------------------------------------------------------------
def test_echo_silent_truncation_is_detected_and_restored():
    scenario = BANK.get("echo-architect")
    summary, notes, replies, panel = run_echo_with(scenario, SEED, {"context_budget": 220,
                                                                   "overflow": "silent_truncation"})
    agent = panel.echo_agent("e1")
    assert summary.status == "completed" and summary.turns == 12
    assert summary.failures >= 1 and len(summary.restorations) == summary.failures
    lost = next(h for h in agent.history if h["purpose"] == "turn" and not h["hexes"])  # ground truth: it forgot
    verifications = [n for n in notes if n.kind == "echo.verification"]
    assert any(not n.data["entry"]["success"] and n.data["entry"]["turn"] > lost["turn"] for n in verifications)
    assert summary.marker and summary.marker[-6:] in agent.history[-1]["hexes"]  # the restored marker is held
    assert all(r.meta["simulated"] and r.meta["model"] == "sim" for r in replies)
    turns = [r for r in replies if r.ok and "Resonance:" not in r.text]
    assert turns and all(len(r.text.split()) >= 8 for r in turns)


def test_echo_compaction_and_hard_rejection_are_reported_as_echo_session_expects():
    scenario = BANK.get("echo-reviewer")
    _, _, replies, _ = run_echo_with(scenario, SEED, {"context_budget": 200, "overflow": "compaction"})
    assert any("compaction" in r.meta.get("events", []) for r in replies)
    summary, _, replies, _ = run_echo_with(BANK.get("echo-researcher"), SEED,
                                           {"context_budget": 120, "overflow": "hard_rejection"})
    refused = [r for r in replies if not r.ok]
    assert refused and all(r.error.startswith("context_limit") and "context_limit" in r.meta["events"]
                           for r in refused)


def test_echo_stateless_turns_carry_the_recital():
    scenario = BANK.get("echo-researcher")
    summary, _, replies, _ = run_echo_with(scenario, SEED, {"context_budget": 8000}, pattern="stateless", turns=4)
    assert summary.status == "completed" and summary.failures == 0 and summary.checks == 4
    assert all("Resonance:" in r.text and len(r.text.split()) > 10 for r in replies)


# ----- questions the bank does not know -----------------------------------------------------------
def test_every_question_and_alias_finds_its_scenario_and_a_reworded_one_still_matches():
    for scenario in BANK.scenarios:
        for q in [scenario.question, *scenario.aliases]:
            assert BANK.find(q, scenario.protocols[0], question=q).id == scenario.id
    reworded = "Should our city close the downtown to private cars?"
    assert BANK.find(reworded, "rcp", question=reworded).id == "downtown-cars"
    assert BANK.find("Should the museum open late on Thursdays?", "rcp") is None


def test_an_unknown_question_runs_cleanly_in_every_protocol():
    from workbench.core.sim.scenarios import EchoMaterial, EchoTurn, Scenario

    question = "Should the library lend out power tools?"
    arm = run_arm_with(question, SEED).result
    assert all(t.ok for t in [*arm.r1.values(), *arm.r2.values()])
    cons_q = Scenario.model_validate({
        "id": "unknown", "protocols": ["cons"], "question": question,
        "options": [{"name": n, "support": 0.5, "reasons": ["r1", "r2"], "evidence": [{"type": "doc", "file": "f"}]}
                    for n in ("Lend them", "Do not lend them", "Lend them to members only")]})
    cons = run_cons_with(cons_q, SEED)
    assert all(p.status == "valid" for r in cons.result.rounds for p in r.values())
    ballots = [json.loads(cons.replies[c.key].text) for c in cons.calls if c.purpose == "ballot"]
    assert all("r1" not in b["rationale"] for b in ballots)  # the bank knows nothing: generic reasons
    finding = Scenario.model_validate({
        "id": "unknown-f", "protocols": ["findings"], "question": question,
        "findings": [{"id": "f1", "claim": "The library's insurance covers tool injuries.", "truth": None,
                      "for_reasons": ["x"], "against_reasons": ["y"]}]})
    votes = run_findings_with(finding, SEED).result.votes["f1"]
    assert {v.status for v in votes.values()} == {"valid"}
    echo_q = Scenario(id="unknown-e", protocols=["echo"], question=question, echo=EchoMaterial(
        persona="The Librarian", turns=[EchoTurn(query="Draft the lending rules for the tool shelf.", points=["p"])]))
    summary, _, replies, _ = run_echo_with(echo_q, SEED, {}, turns=3)
    assert summary.status == "completed" and all(r.ok for r in replies)
    work = [r.text for r in replies if "Resonance:" not in r.text]
    assert work and all("Draft the lending rules for the tool shelf." in t for t in work)
