"""Determinism, the effect of each persona parameter, the malformed knob, persona validation,
and what sim refuses to answer."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.core.test_sim_driver import (
    CONS_PERSONAS,
    RCP_PERSONAS,
    run_arm_with,
    run_cons_with,
    run_findings_with,
    run_rcp_with,
)
from workbench.core.errors import InputError
from workbench.core.protocols.arm import metrics_report, parse_reply, run_to_upstream
from workbench.core.protocols.cons.run import parse_ballot_reply
from workbench.core.protocols.findings.run import parse_finding_vote
from workbench.core.protocols.rcp.run import parse_vote
from workbench.core.protocols.rcp.steps import IDENTITY as RCP
from workbench.core.protocols.shared.declaration import Prompts
from workbench.core.protocols.shared.steps import AgentCall
from workbench.core.sim import SimError, SimPanel, SimPersona, approval_probability, default_bank, infer_stance

BANK = default_bank()
QUESTION = BANK.get("downtown-cars").question


RCP_PROMPTS = Prompts(RCP)


def vote_call(artifact: str, voter: str = "v", key: str = "r1/vote/x") -> AgentCall:
    """An RCP vote call as the protocol makes it (sim reads the step's values, not the prompt)."""
    return RCP_PROMPTS.call("vote", key=key, agent=voter, values={
        "query": QUESTION, "persona": "", "artifact": artifact, "reply_format": "Reply with JSON only."},
        meta={"artifact": "x", "author": "someone-else"})


def artifacts(stance: float, n: int = 40) -> list[str]:
    """Artifacts written by sim authors of the given stance, each from a different seed."""
    panel = {"w": {"stance": stance}}
    out = []
    for seed in range(n):
        call = RCP_PROMPTS.call("generate", key="r1/generate/w", agent="w",
                                values={"query": QUESTION, "persona": "", "common_ground": []})
        out.append(SimPanel(seed, panel).reply(call).text)
    return out


def approvals(artifact_texts: list[str], persona: dict) -> int:
    panel = SimPanel(3, {"v": persona})
    return sum(parse_vote(panel.reply(vote_call(t, key=f"r1/vote/{i}")).text).value == 1
               for i, t in enumerate(artifact_texts))


# ----- determinism --------------------------------------------------------------------------------
def test_the_same_seed_gives_identical_replies_and_another_seed_changes_something():
    for run in (lambda s: run_rcp_with(QUESTION, s, ballot=True, rounds=1),
                lambda s: run_cons_with(BANK.get("cons-cache"), s),
                lambda s: run_findings_with(BANK.get("findings-billing"), s),
                lambda s: run_arm_with(BANK.get("arm-disclosure").question, s)):
        a, b, c = run(11).texts(), run(11).texts(), run(12).texts()
        assert a == b
        assert a != c


def test_replies_are_the_same_in_every_process_whatever_the_hash_seed():
    code = ("import hashlib, json\n"
            "from tests.core.test_sim_driver import run_arm_with, run_rcp_with\n"
            f"texts = [run_rcp_with({QUESTION!r}, 7, ballot=True).texts(), run_arm_with({QUESTION!r}, 7).texts()]\n"
            "print(hashlib.sha256(json.dumps(texts, sort_keys=True).encode()).hexdigest())\n")
    repo = Path(__file__).resolve().parents[2]
    digests = {subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": h, "PYTHONPATH": str(repo)}).stdout.strip()
               for h in ("1", "4242")}
    assert len(digests) == 1 and len(next(iter(digests))) == 64


def test_a_reply_depends_on_seed_key_agent_and_prompt_only():
    call = vote_call("Yes, the city should close it.")
    one, two = SimPanel(5, {"v": {}}), SimPanel(5, {"v": {}})
    two.reply(vote_call("Something else entirely.", key="other"))  # earlier calls do not matter
    assert one.reply(call) == two.reply(call)
    assert one.reply(call).meta["simulated"] is True and one.reply(call).meta["model"] == "sim"


# ----- parameters ---------------------------------------------------------------------------------
def test_a_pro_voter_approves_pro_artifacts_more_than_a_con_voter():
    pro_texts, con_texts = artifacts(0.9), artifacts(0.1)
    assert statistics.mean(infer_stance(t, BANK.get("downtown-cars"))[0] for t in pro_texts) > 0.7
    for_pro, against_pro = approvals(pro_texts, {"stance": 1.0}), approvals(pro_texts, {"stance": 0.0})
    assert for_pro > against_pro + 15
    assert approvals(con_texts, {"stance": 0.0}) > approvals(con_texts, {"stance": 1.0}) + 15


def test_the_vote_reads_the_text_never_the_author():
    text = artifacts(0.9, 1)[0]
    panel = SimPanel(3, {"v": {"stance": 0.9}})
    base = vote_call(text)
    other = AgentCall(**{**base.__dict__, "meta": {**base.meta, "author": "v"}})
    assert panel.reply(base).text == panel.reply(other).text


def test_strictness_lowers_approvals_and_sycophancy_raises_them():
    texts = artifacts(0.6) + artifacts(0.4)
    lax, strict = approvals(texts, {"strictness": 0.0}), approvals(texts, {"strictness": 1.0})
    assert lax > strict + 10
    assert approvals(texts, {"strictness": 1.0, "sycophancy": 1.0}) > strict
    p = SimPersona()
    assert approval_probability(0.9, 0.9, p) > approval_probability(0.1, 0.9, p)


def test_drift_raises_the_size_of_the_confidence_delta():
    def deltas(drift: float) -> list[float]:
        personas = {r: {"drift": drift, "misreport_rate": 0.0} for r in ("alpha", "beta", "gamma")}
        out = []
        for scenario in BANK.for_protocol("arm"):
            report = metrics_report(run_to_upstream(run_arm_with(scenario.question, 5, personas).result))
            out += [abs(report["agents"][r]["delta"]) for r in ("alpha", "beta")]
        return out

    still, low, high = deltas(0.0), deltas(0.1), deltas(0.8)
    assert max(still) < 1e-9
    assert statistics.mean(high) > statistics.mean(low) + 0.05
    assert all(h >= lo - 0.011 for h, lo in zip(high, low))  # same draws, larger scale (2-decimal rounding)


def test_confidence_sets_the_self_reported_confidence():
    def mean_conf(c: float) -> float:
        personas = {r: {"confidence": c} for r in ("scout", "auditor", "dev")}
        out = run_findings_with(BANK.get("findings-auth-service"), 5, personas)
        return statistics.mean(v.vote.confidence for per in out.result.votes.values() for v in per.values())

    assert mean_conf(0.9) > mean_conf(0.5) + 0.3


def test_stance_moves_cons_ballots_between_options():
    scenario = BANK.get("cons-cache")  # write-through sits at stance 0.7, cache-aside at 0.3
    pro = {a: {"stance": 1.0, "sycophancy": 0.0} for a in CONS_PERSONAS}
    con = {a: {"stance": 0.0, "sycophancy": 0.0} for a in CONS_PERSONAS}
    first = [json.loads(t)["option"] for run in (run_cons_with(scenario, 3, pro), run_cons_with(scenario, 3, con))
             for t in [run.replies[f"cons/0/{a}"].text for a in CONS_PERSONAS]]
    assert first[:5].count("Write-through") > first[5:].count("Write-through")


# ----- the malformed knob -------------------------------------------------------------------------
def test_malformed_replies_are_rejected_by_each_protocols_own_parser():
    bad = {"malformed_rate": 1.0}
    rcp = run_rcp_with(QUESTION, 3, {**RCP_PERSONAS, "c1": {"stance": 0.2, **bad}})
    votes = rcp.result[0].votes
    c1 = [per["c1"] for per in votes.values() if "c1" in per]
    assert c1 and {v.status for v in c1} == {"invalid"} and all(v.value is None for v in c1)
    others = [v for per in votes.values() for a, v in per.items() if a != "c1"]
    assert {v.status for v in others} == {"valid"}
    ballots = run_rcp_with(QUESTION, 3, {**RCP_PERSONAS, "c1": {"stance": 0.2, **bad}}, ballot=True)
    assert {per["c1"].status for per in ballots.result[0].votes.values() if "c1" in per} == {"invalid"}

    f = run_findings_with(BANK.get("findings-billing"), 3, {"auditor": bad})
    assert all(parse_finding_vote("auditor", f.replies[c.key].text).status == "invalid"
               for c in f.calls if c.agent == "auditor")
    assert {per["auditor"].status for per in f.result.votes.values()} == {"invalid"}

    cons = run_cons_with(BANK.get("cons-codebase-map"), 3, {**CONS_PERSONAS, "ag0": bad})
    assert all(parse_ballot_reply("ag0", cons.replies[c.key].text).status == "invalid"
               for c in cons.calls if c.agent == "ag0")

    arm = run_arm_with(BANK.get("arm-exfiltration").question, 3, {"beta": bad})
    assert not arm.result.r1["beta"].ok and not arm.result.r2["beta"].ok
    assert not parse_reply(arm.replies["r1/beta"].text).ok and arm.result.r1["alpha"].ok


def test_an_occasional_malformed_reply_at_a_low_rate():
    texts = run_rcp_with(QUESTION, 3, {a: {**p, "malformed_rate": 0.2} for a, p in RCP_PERSONAS.items()}).result[0]
    statuses = [v.status for per in texts.votes.values() for v in per.values()]
    assert 0 < statuses.count("invalid") < len(statuses) / 2


# ----- validation and refusals --------------------------------------------------------------------
@pytest.mark.parametrize("field,value", [("stance", 1.5), ("strictness", -0.1), ("sycophancy", "high"),
                                         ("drift", True), ("flip_rate", 2), ("malformed_rate", float("nan")),
                                         ("context_budget", 0), ("overflow", "forget"), ("contaminated", "yes")])
def test_persona_validation_names_the_field(field, value):
    with pytest.raises(ValidationError, match=field):
        SimPersona(**{field: value})
    with pytest.raises(InputError) as err:
        SimPersona.from_params({field: value}, "personas.a1")
    assert err.value.field == f"personas.a1.{field}"


def test_unknown_persona_parameters_are_refused_and_the_panel_names_the_agent():
    with pytest.raises(InputError, match="unknown persona parameter") as err:
        SimPersona.from_params({"stnace": 0.4})
    assert err.value.field == "stnace"
    with pytest.raises(InputError) as err:
        SimPanel(1, {"c2": {"stance": 7}})
    assert err.value.field == "personas.c2.stance"
    assert SimPersona.from_params({"stance": 1, "context_budget": 4000}).stance == 1.0


def test_sim_refuses_the_humans_decision_and_unknown_purposes():
    panel = SimPanel(1)
    hitl = AgentCall(key="cons/hitl", agent="conductor", purpose="hitl_decision",
                     messages=({"role": "user", "content": "Your decision:"},))
    with pytest.raises(SimError, match="human"):
        panel.reply(hitl)
    refused = panel.answer(hitl)
    assert not refused.ok and "human" in refused.error and refused.meta["simulated"] is True
    with pytest.raises(SimError, match="cannot answer purpose 'summarise'"):
        panel.reply(AgentCall(key="k", agent="a", purpose="summarise", messages=()))
    with pytest.raises(SimError, match="reply schema 'mystery'"):
        panel.reply(AgentCall(key="k", agent="a", purpose="ballot", messages=(), reply_schema="mystery"))
