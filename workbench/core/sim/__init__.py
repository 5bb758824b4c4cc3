"""sim, the built-in simulated panel: every protocol runnable offline, with no key and no server.

Given the exact request a protocol generator makes (an :class:`~workbench.core.protocols.shared.steps.AgentCall`),
sim returns the reply TEXT a model would return, so the reply goes through the same parsing,
validation and recording path as a real model's. It is deterministic from the run seed, and
everything it makes is labelled simulated (``SimReply.meta["simulated"] is True``; the runner
records ``simulated=1``). It is a teaching and testing stand-in, not a model of any real LLM:
see docs/simulated-panel.md.

Public API::

    SimPanel(seed, personas=None, scenarios=None, *, default=None, latency_ms=0)
        .reply(call) -> SimReply            raises SimError for a human's decision or an unknown purpose
        .answer(call) -> AgentReply         the same, for drivers; a refusal becomes a failed reply
        .persona_for(call) -> SimPersona
        .echo_agent(agent) -> EchoSimAgent  the agent's Echo context and its ground-truth history
    SimPersona(stance, strictness, sycophancy, confidence, drift, verbosity, context_budget,
               overflow, flip_rate, contaminated, malformed_rate, misreport_rate, footers,
               skill, conformity)
        .from_params(params, where="") -> SimPersona   InputError naming the field
    SimReply(text, meta, error=None).to_agent_reply(key) -> AgentReply
    ScenarioBank.load(path=None) / default_bank() / .find(text, protocol) / .fill_generic(question)
    approval_probability(artifact_stance, voter_stance, persona) -> float   (RCP votes)
    confirm_probability(truth, role, persona) -> float                      (findings votes)
    infer_stance(text, scenario) -> (stance, recognised sentences)
"""

from __future__ import annotations

from workbench.core.sim.echo import EchoSimAgent
from workbench.core.sim.findings import confirm_probability
from workbench.core.sim.panel import SimPanel
from workbench.core.sim.persona import SIM_MODEL, SimError, SimPersona, SimReply
from workbench.core.sim.rcp import approval_probability
from workbench.core.sim.scenarios import PROTOCOLS, Scenario, ScenarioBank, default_bank
from workbench.core.sim.text import infer_stance

__all__ = [
    "SIM_MODEL", "PROTOCOLS", "EchoSimAgent", "Scenario", "ScenarioBank", "SimError", "SimPanel",
    "SimPersona", "SimReply", "approval_probability", "confirm_probability", "default_bank", "infer_stance",
]
