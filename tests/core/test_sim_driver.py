"""A tiny step-protocol driver in which sim answers every call, plus the run helpers the other
test_sim* files share (one per protocol). The driver checks itself below."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from workbench.core.protocols import echo
from workbench.core.protocols.arm import ArmRunConfig, run_arm
from workbench.core.protocols.cons.run import CONDUCTOR, ConsAgent, ConsRunConfig, run_cons
from workbench.core.protocols.findings.run import FindingsAgent, FindingsRunConfig, run_findings
from workbench.core.protocols.rcp.run import RcpAgent, RcpRunConfig, run_rcp
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Batch, Note
from workbench.core.sim import Scenario, SimError, SimPanel

HUMAN_DECISION = "Adopt the leading option, and revisit it after one release."


@dataclass
class Driven:
    result: object
    calls: list[AgentCall] = field(default_factory=list)
    replies: dict[str, AgentReply] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)

    def texts(self) -> dict[str, str | None]:
        return {k: r.text for k, r in self.replies.items()}


def drive(gen, panel: SimPanel) -> Driven:
    """Send sim's replies for each Batch and None for each Note; the conductor's decision is
    canned (sim refuses it, as it must)."""
    out = Driven(None)
    step = next(gen)
    try:
        while True:
            if isinstance(step, Batch):
                answers = {}
                for call in step.calls:
                    out.calls.append(call)
                    if call.agent == CONDUCTOR:
                        with pytest.raises(SimError, match="human"):
                            panel.reply(call)
                        answers[call.key] = AgentReply(call.key, HUMAN_DECISION)
                    else:
                        answers[call.key] = panel.reply(call).to_agent_reply(call.key)
                out.replies.update(answers)
                step = gen.send(answers)
            else:
                out.notes.append(step)
                step = gen.send(None)
    except StopIteration as stop:
        out.result = stop.value
    return out


# ----- one run per protocol ------------------------------------------------------------------------
RCP_PERSONAS = {"a1": {"stance": 0.85}, "a2": {"stance": 0.75}, "a3": {"stance": 0.6},
                "c1": {"stance": 0.2}, "c2": {"stance": 0.3}, "c3": {"stance": 0.45}}
RCP_CLUSTERS = ({"name": "advocate", "agents": ["a1", "a2", "a3"]}, {"name": "critic", "agents": ["c1", "c2", "c3"]})
CONS_PERSONAS = {f"ag{i}": {"stance": s, "sycophancy": 0.3} for i, s in enumerate((0.3, 0.45, 0.5, 0.6, 0.75))}
FINDINGS_ROLES = ("scout", "auditor", "dev")
ARM_PROVIDERS = {"alpha": "sim", "beta": "sim", "gamma": "sim"}


def run_rcp_with(question: str, seed: int, personas=None, *, ballot: bool = False, rounds: int = 0) -> Driven:
    personas = personas or RCP_PERSONAS
    agents = tuple(RcpAgent(a, "advocate" if a.startswith("a") else "critic") for a in personas)
    cfg = RcpRunConfig(query=question, seed=seed, agents=agents, clusters=RCP_CLUSTERS, reference="advocate",
                       ballot_mode=ballot, refinement_rounds=rounds)
    return drive(run_rcp(cfg), SimPanel(seed, personas))


def run_findings_with(scenario: Scenario, seed: int, personas=None) -> Driven:
    cfg = FindingsRunConfig(seed=seed, agents=tuple(FindingsAgent(r, r) for r in FINDINGS_ROLES),
                            findings=tuple({"id": f.id, "claim": f.claim, "context": f.context}
                                           for f in scenario.findings))
    return drive(run_findings(cfg), SimPanel(seed, personas or {}))


def run_cons_with(scenario: Scenario, seed: int, personas=None) -> Driven:
    personas = personas or CONS_PERSONAS
    cfg = ConsRunConfig(seed=seed, question_id=scenario.id, question=scenario.question,
                        options=tuple(o.name for o in scenario.options), agents=tuple(ConsAgent(a) for a in personas))
    return drive(run_cons(cfg), SimPanel(seed, personas))


def run_arm_with(question: str, seed: int, personas=None, *, dispatch: str = "sequential") -> Driven:
    cfg = ArmRunConfig(question=question, providers=ARM_PROVIDERS, dispatch=dispatch)
    return drive(run_arm(cfg), SimPanel(seed, personas or {}))


def run_echo_with(scenario: Scenario, seed: int, persona: dict, *, pattern: str = "stateful",
                  interval: int = 5, turns: int = 12):
    material = scenario.echo
    queries = [material.turns[i % len(material.turns)].query for i in range(turns)]
    plan = echo.EchoPlan(agent="e1", persona=material.persona, pattern=pattern, interval=interval,
                         queries=queries, active_tasks=material.active_tasks,
                         settled_decisions=material.settled_decisions)
    panel = SimPanel(seed, {"e1": persona})
    issuer = echo.MarkerIssuer(random.Random(seed))
    notes: list[Note] = []
    replies: list[AgentReply] = []

    def answer(call: AgentCall) -> AgentReply:
        replies.append(panel.answer(call))
        return replies[-1]

    summary = echo.drive(echo.echo_session(plan, issuer(), new_marker=issuer), answer, notes.append)
    return summary, notes, replies, panel


# ----- the driver itself ---------------------------------------------------------------------------
def test_the_driver_answers_batches_and_passes_notes():
    def gen():
        got = yield Batch((AgentCall("k1", "a1", "vote", ({"role": "user", "content": "Question: Q?\n\n"
                                                            "<<<ARTIFACT-AB>>>\nYes.\n<<<END-ARTIFACT-AB>>>"},)),))
        assert (yield Note("progress", "half way")) is None
        return got

    out = drive(gen(), SimPanel(1))
    assert list(out.result) == ["k1"] and out.result["k1"].ok and [n.message for n in out.notes] == ["half way"]
