"""sim's Resonance Echo agents: the engine's :class:`SimulatedAgent` with readable work replies.

The context model is the engine's own (:class:`~workbench.core.protocols.echo.context.AgentContext`
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

What a call asks is read from the values Echo made its prompt of
(:func:`~workbench.core.protocols.echo.steps.echo_values`: the query, the agent's role, the check
token's hex), never from the prompt's wording: an edited Echo template changes the words that
fill the agent's window (by their number, when a marker falls out of it), never what the agent
takes itself to be asked.

In a run wrapped in Echo (``workbench.core.protocols.echo.wrap``) EVERY call of the agent goes
through its window, not only Echo's own turns and checks: :meth:`EchoSimAgent.answer_in_session`
rebuilds the window from ``call.meta["echo"]["session"]`` (the agent's earlier calls and replies,
in the conductor's order), adds the call, and writes the reply with ``work`` (the protocol's own
reply writer, given the protocol's messages without Echo's additions, so Echo never changes what
an agent says, only whether it remembers). A pacemaker call whose request ends with the check
token (a ``check_hex`` among the values Echo dressed it with) gets the recital of the latest whole
marker still in the window: a ``"resonance"`` key in a JSON reply,
else a last line ``Resonance: "<marker>"``; nothing when none is left. Because the window is a
function of the session, it does not depend on the order concurrent calls are answered, and a
resumed run, whose earlier replies come from the project file, sees the same window.
"""

from __future__ import annotations

import copy
import json
import random
import threading
from collections.abc import Callable, Sequence
from typing import Any

from workbench.core.protocols.echo.context import (
    CONTEXT_LIMIT,
    AgentContext,
    ContextLimitError,
    SimulatedAgent,
    last_message,
)
from workbench.core.protocols.echo.footer import stamp_footer
from workbench.core.protocols.echo.markers import Marker, find_markers
from workbench.core.protocols.echo.steps import echo_values
from workbench.core.protocols.shared.steps import AgentCall, AgentReply
from workbench.core.sim.persona import SimPersona
from workbench.core.sim.scenarios import ScenarioBank
from workbench.core.sim.text import digest, join_sentences


class EchoSimAgent(SimulatedAgent):
    """One simulated Echo agent: a context window that overflows as the persona says."""

    def __init__(self, agent_id: str, persona: SimPersona, bank: ScenarioBank, seed: int):
        super().__init__(agent_id, AgentContext(persona.context_budget, persona.overflow),
                         persona=agent_id, footers=persona.footers)
        self.sim_persona = persona
        self.bank = bank
        self.seed = seed
        self.last_scenario: str | None = None
        self.lock = threading.Lock()
        self._folded = self._empty()  # the window after the session's calls absorbed so far
        self._folded_keys: list[str] = []
        self._work: Callable[[], tuple[str, dict]] | None = None
        self._work_detail: dict = {}
        self._seen: list[str] | None = None  # marker hexes in the window when the reply was written

    # ----- every call of an Echo-wrapped run --------------------------------------------------
    def answer_in_session(self, call: AgentCall, session: Sequence[dict[str, Any]],
                          work: Callable[[], tuple[str, dict]] | None = None) -> tuple[AgentReply, dict]:
        """Answer ``call`` from the window its ``session`` leaves; ``work`` writes an ordinary
        protocol reply (None: an Echo turn or check, answered as usual). Returns the reply and
        the ground truth for the reply's ``meta["sim"]``: which marker hexes were in the window
        when the agent wrote its reply, the window's size and what it has dropped so far."""
        with self.lock:
            self.context = self._window(session)
            self._work, self._work_detail, self._seen = work, {}, None
            try:
                reply = self.answer(call)
            finally:
                self._work = None
            seen = self._seen if self._seen is not None else list(dict.fromkeys(self.hexes_in_window()))
            detail = {**self._work_detail, "echo": {
                "turn": (call.meta.get("echo") or {}).get("turn"), "window_hexes": seen,
                "window_tokens": self.context.used, "dropped": self.context.dropped}}
            return reply, detail

    def _empty(self) -> AgentContext:
        return AgentContext(self.context.budget, self.context.behaviour)

    def _window(self, session: Sequence[dict[str, Any]]) -> AgentContext:
        keys = [entry["key"] for entry in session]
        if self._folded_keys != keys[:len(self._folded_keys)]:
            self._folded, self._folded_keys = self._empty(), []
        for entry in session[len(self._folded_keys):]:
            _absorb(self._folded, entry)
            self._folded_keys.append(entry["key"])
        window = copy.copy(self._folded)
        window.entries = list(self._folded.entries)
        return window

    def _compose(self, call: AgentCall, events: list[str]) -> str:
        self._seen = list(dict.fromkeys(self.hexes_in_window()))
        if self._work is not None:
            return self._protocol_reply(call, events)
        values = echo_values(call)
        role = str(values.get("role") or "").strip()  # who the session says the agent is
        if role and "[" not in role and "]" not in role and "\n" not in role:  # a footer's Role must parse
            self.persona = role
        if call.purpose == "verify":
            return super()._compose(call, events)  # the engine's recital, with its footer
        query = str(values.get("message", last_message(call))).strip()
        text = self.work_reply(call, query)
        markers = find_markers(self.context.window_text())
        if values.get("check_hex"):
            text += "\n" + (f'Resonance: "{markers[-1]}"' if markers
                            else "I cannot find a resonance marker in my context.")
        if self.footers and markers:
            text += "\n" + stamp_footer(markers[-1].hex, self.persona,
                                        "Recovering" if "compaction" in events else "Stable")
        return text

    def _protocol_reply(self, call: AgentCall, events: list[str]) -> str:
        text, self._work_detail = self._work()  # type: ignore[misc]
        markers = find_markers(self.context.window_text())
        if echo_values(call).get("check_hex") and markers:
            text = with_recital(text, markers[-1])
        if self.footers and markers and not _json_object(text):
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


def _json_object(text: str) -> dict | None:
    body = text.strip()
    if not body.startswith("{"):
        return None
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def with_recital(text: str, marker: Marker) -> str:
    """A reply carrying the recital the pacemaker's check token asks for, without breaking its
    format: a ``"resonance"`` key in a JSON object, else a last line."""
    data = _json_object(text)
    if data is not None:
        return json.dumps({**data, "resonance": str(marker)}, ensure_ascii=False)
    return f'{text}\nResonance: "{marker}"'


def _absorb(window: AgentContext, entry: dict[str, Any]) -> None:
    """One earlier call of the session into the window, as it went when it was answered."""
    if entry.get("new_session"):
        window.reset()
    try:
        for message in entry.get("messages", ()):
            window.add(message.get("role", "user"), message.get("content", ""))
        if entry.get("reply") is not None:
            window.add("assistant", entry["reply"])
        elif entry.get("error_kind") == CONTEXT_LIMIT and window.behaviour == "hard_rejection":
            window.exhausted = True  # the reply itself hit the wall
    except ContextLimitError:
        pass
