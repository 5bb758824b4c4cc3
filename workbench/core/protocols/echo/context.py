"""Context overflow, simulated (SPEC §5 "Context overflow"), so a run can lose context on purpose.

An :class:`AgentContext` holds an agent's window as a list of messages with a token budget.
Tokens are counted simply and deterministically: one token per whitespace-separated word
(:func:`count_tokens`). Real tokenizers give about 1.3 tokens per English word; only the relative
sizes matter here. When a message does not fit, the agent's overflow behaviour decides:

- ``compaction`` (aware; Claude): the older messages are replaced by one summary message, the
  newest ``keep_recent`` kept, and a ``compaction`` event is reported. The default summary keeps
  no detail (the worst case: the marker goes); :func:`summary_keeping_markers` keeps marker lines.
- ``hard_rejection`` (aware at failure; Gemini): the message is refused with a
  :class:`ContextLimitError` and the session stays at the wall: every later request is refused
  too, until a new session starts.
- ``silent_truncation`` (unaware; DeepSeek): the oldest messages are dropped, and a message
  longer than the whole budget keeps only its last words. Nothing is reported; only the
  observer-side ``dropped`` counter knows.

:class:`SimulatedAgent` answers :class:`AgentCall` s from such a context with no provider. It
recites a marker only if a full marker is still inside its window, so detection and restoration
can be shown and tested deterministically. What it is asked it reads from the call's values
(:func:`~.steps.echo_values`), never from the prompt's wording, so an edited template changes
what fills its window but not what it takes itself to be asked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from workbench.core.errors import InputError, WorkbenchError
from workbench.core.protocols.echo.footer import stamp_footer
from workbench.core.protocols.echo.markers import find_markers
from workbench.core.protocols.echo.steps import asks_recital, echo_values
from workbench.core.protocols.shared.steps import AgentCall, AgentReply

BEHAVIOURS: tuple[str, ...] = ("compaction", "hard_rejection", "silent_truncation")
CONTEXT_LIMIT = "context_limit"


def count_tokens(text: str) -> int:
    """One token per whitespace-separated word."""
    return len(text.split())


class ContextLimitError(WorkbenchError):
    """The agent refused a request at its context wall (hard rejection)."""


@dataclass(frozen=True)
class ContextEntry:
    role: str
    text: str

    @property
    def tokens(self) -> int:
        return count_tokens(self.text)


def summary_dropping_everything(entries: Sequence[ContextEntry]) -> str:
    return f"[Summary: {len(entries)} earlier messages.]"


def summary_keeping_markers(entries: Sequence[ContextEntry]) -> str:
    """A faithful summary: it keeps every line that carries a resonance marker."""
    kept = [line for e in entries for line in e.text.splitlines() if find_markers(line)]
    return "\n".join([f"[Summary: {len(entries)} earlier messages.]", *kept[-1:]])


class AgentContext:
    """An agent's context window with a token budget and an overflow behaviour."""

    def __init__(self, budget: int, behaviour: str = "silent_truncation", *,
                 summariser: Callable[[Sequence[ContextEntry]], str] = summary_dropping_everything,
                 keep_recent: int = 2):
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise InputError("budget", f"must be a whole number of tokens >= 1, got {budget!r}")
        if behaviour not in BEHAVIOURS:
            raise InputError("overflow", f"must be one of {', '.join(BEHAVIOURS)}, got {behaviour!r}")
        self.budget = budget
        self.behaviour = behaviour
        self.summariser = summariser
        self.keep_recent = max(1, keep_recent)
        self.entries: list[ContextEntry] = []
        self.exhausted = False  # hard rejection: at the wall until a new session
        self.dropped = 0  # observer-only: messages lost to truncation or compaction
        self.compactions = 0

    @property
    def used(self) -> int:
        return sum(e.tokens for e in self.entries)

    def window_text(self) -> str:
        return "\n".join(e.text for e in self.entries)

    def reset(self) -> None:
        """A new session: an empty window."""
        self.entries = []
        self.exhausted = False

    def add(self, role: str, text: str) -> list[str]:
        """Add one message; returns the events the agent is aware of (``["compaction"]`` or none)."""
        entry = ContextEntry(role, text)
        if self.exhausted:
            raise ContextLimitError(f"the session is at its context limit ({self.used}/{self.budget} tokens)")
        if self.used + entry.tokens <= self.budget:
            self.entries.append(entry)
            return []
        if self.behaviour == "hard_rejection":
            self.exhausted = True
            raise ContextLimitError(f"context limit reached: {self.used} + {entry.tokens} tokens "
                                    f"> {self.budget}")
        if self.behaviour == "silent_truncation":
            self.entries.append(entry)
            while self.used > self.budget and len(self.entries) > 1:
                self.entries.pop(0)
                self.dropped += 1
            if self.used > self.budget:  # one message longer than the whole window: keep its tail
                words = self.entries[0].text.split()
                self.entries[0] = ContextEntry(role, " ".join(words[-self.budget:]))
            return []
        return self._compact(entry)

    def _compact(self, entry: ContextEntry) -> list[str]:
        entries = self.entries + [entry]
        tries = [(keep, True) for keep in range(min(self.keep_recent, len(entries)), 0, -1)] + [(1, False)]
        for keep, summarise in tries:  # the last resort keeps only the newest message, no summary
            old, recent = entries[:-keep], entries[-keep:]
            summary = ContextEntry("system", self.summariser(old)) if old and summarise else None
            candidate = ([summary] if summary else []) + recent
            if sum(e.tokens for e in candidate) <= self.budget:
                self.entries = candidate
                self.dropped += len(old)
                self.compactions += 1
                return ["compaction"]
        raise ContextLimitError(f"a single message of {entry.tokens} tokens exceeds the budget of "
                                f"{self.budget} even after compaction")


class SimulatedAgent:
    """A tiny deterministic agent: it recites a marker only while a full one is in its window.

    ``answer(call)`` follows the step protocol: it recites when the call asks for a recital (an
    explicit check, or a request ending with the check token: :func:`~.steps.asks_recital`), and
    otherwise notes the call's message; ``call.meta["new_session"]`` starts a new session
    (an empty window); the reply's ``meta["events"]`` lists the overflow events the agent is
    aware of (``compaction``, ``context_limit``); a refused request is a failed reply whose error
    starts with ``context_limit``. ``footers`` stamps a footer on every reply that has a marker.
    ``history`` records, per call, which marker hexes were in the window afterwards (the
    observer's ground truth, not something the protocol can see).
    """

    def __init__(self, agent_id: str, context: AgentContext, *, persona: str = "",
                 footers: bool = False):
        self.agent_id = agent_id
        self.context = context
        self.persona = persona or agent_id
        self.footers = footers
        self.history: list[dict] = []

    def hexes_in_window(self) -> list[str]:
        return [m.hex for m in find_markers(self.context.window_text())]

    def answer(self, call: AgentCall) -> AgentReply:
        if call.meta.get("new_session"):
            self.context.reset()
        events: list[str] = []
        try:
            for message in call.messages:
                events += self.context.add(message.get("role", "user"), message.get("content", ""))
            text = self._compose(call, events)
            events += self.context.add("assistant", text)
        except ContextLimitError as exc:
            self._record(call, ok=False)
            return AgentReply(call.key, None, error=f"{CONTEXT_LIMIT}: {exc}",
                              meta={"events": list(dict.fromkeys(events + [CONTEXT_LIMIT])),
                                    "error_kind": CONTEXT_LIMIT,
                                    "simulated": True})
        self._record(call, ok=True)
        return AgentReply(call.key, text, meta={"events": list(dict.fromkeys(events)), "simulated": True,
                                                "context_tokens": self.context.used})

    def _record(self, call: AgentCall, *, ok: bool) -> None:
        self.history.append({"key": call.key, "turn": call.meta.get("turn"), "purpose": call.purpose, "ok": ok,
                             "hexes": self.hexes_in_window(), "used": self.context.used})

    def _compose(self, call: AgentCall, events: list[str]) -> str:
        markers = find_markers(self.context.window_text())
        if asks_recital(call):
            text = (f'Resonance: "{markers[-1]}"' if markers
                    else "I cannot find a resonance marker in my context.")
        else:
            words = str(echo_values(call).get("message", last_message(call))).split()
            text = "Noted: " + " ".join(words[:4])
        if self.footers and markers:
            state = "Recovering" if "compaction" in events else "Stable"
            text += "\n" + stamp_footer(markers[-1].hex, self.persona, state)
        return text


def last_message(call: AgentCall) -> str:
    """The call's last message: a session turn Echo added no text to is its query alone."""
    return call.messages[-1].get("content", "") if call.messages else ""
