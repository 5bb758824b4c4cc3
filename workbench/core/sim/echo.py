"""sim's Resonance Echo agents: the engine's :class:`SimulatedAgent` with readable work replies.

The context model is the engine's own (:class:`~workbench.core.protocols.echo_context.AgentContext`
with the persona's ``context_budget`` and ``overflow``): every message of every call goes into
the agent's window, and what falls out is gone. The agent recites a marker only while a whole
marker is still inside that window; overflow events it is aware of (``compaction``,
``context_limit``) go into the reply's ``meta["events"]`` as :mod:`.echo_session` expects, and a
hard rejection is a failed reply whose error starts with ``context_limit``.

Work turns (purpose ``turn``) are answered from the bank's Echo sessions: the points written for
the query, as many as the persona's verbosity asks for. Stateless (pacemaker) turns end with the
recital the ``[Resonance check: ...]`` token asks for. Explicit checks (purpose ``verify``) are
answered by the engine's agent: ``Resonance: "<marker>"`` or "I cannot find a resonance marker".
The malformed knob does not apply: a lost marker is Echo's own kind of invalid reply.
"""

from __future__ import annotations

import random
import re

from workbench.core.protocols.echo_context import AgentContext, SimulatedAgent
from workbench.core.protocols.echo_footer import stamp_footer
from workbench.core.protocols.echo_markers import find_markers
from workbench.core.protocols.steps import AgentCall
from workbench.core.sim.persona import SimPersona
from workbench.core.sim.scenarios import ScenarioBank
from workbench.core.sim.text import digest, join_sentences

RECITE = "recite the resonance marker"
CHECK_TOKEN = re.compile(r"\s*\[Resonance check: [^\]]*\]\s*$", re.I)
_ROLE = re.compile(r"^(?:You are (.+?) in the |Role: (.+)$)", re.M)


class EchoSimAgent(SimulatedAgent):
    """One simulated Echo agent: a context window that overflows as the persona says."""

    def __init__(self, agent_id: str, persona: SimPersona, bank: ScenarioBank, seed: int):
        super().__init__(agent_id, AgentContext(persona.context_budget, persona.overflow),
                         persona=agent_id, footers=persona.footers)
        self.sim_persona = persona
        self.bank = bank
        self.seed = seed
        self.last_scenario: str | None = None

    def _compose(self, call: AgentCall, events: list[str]) -> str:
        last = call.messages[-1].get("content", "") if call.messages else ""
        for m in _ROLE.finditer("\n".join(msg.get("content", "") for msg in call.messages)):
            role = (m.group(1) or m.group(2) or "").strip()
            if role and "[" not in role and "]" not in role:
                self.persona = role
        if RECITE in last.lower():
            return super()._compose(call, events)  # the engine's recital, with its footer
        query = CHECK_TOKEN.sub("", last.split("[USER MESSAGE]")[-1]).strip()
        text = self.work_reply(call, query)
        markers = find_markers(self.context.window_text())
        if "[resonance check:" in last.lower():
            text += "\n" + (f'Resonance: "{markers[-1]}"' if markers
                            else "I cannot find a resonance marker in my context.")
        if self.footers and markers:
            text += "\n" + stamp_footer(markers[-1].hex, self.persona,
                                        "Recovering" if "compaction" in events else "Stable")
        return text

    def work_reply(self, call: AgentCall, query: str) -> str:
        rng = random.Random(f"{self.seed}/{call.key}/{call.agent}/echo/{digest(query)}")
        hit = self.bank.find_echo_turn(query)
        if hit:
            scenario, turn = hit
        else:
            scenario = self.bank.fill_generic(query)
            turn = scenario.echo.turns[0]  # type: ignore[union-attr]
        self.last_scenario = scenario.id
        n = min(len(turn.points), 1 + round(self.sim_persona.verbosity * 3))
        keep = [0, *sorted(rng.sample(range(1, len(turn.points)), n - 1))]  # the first point leads
        return join_sentences([turn.points[i] for i in keep], rng)
