"""The step protocol between a protocol generator and whatever drives it.

A protocol run is a generator. Each time it needs agents to speak, it yields a :class:`Batch` of
:class:`AgentCall` requests; the driver (the background runner, the CLI, a test, a teacher
typing replies) performs them in any order, sequentially or concurrently, and sends back a
``dict`` mapping each call's ``key`` to an :class:`AgentReply`. The generator may also yield
:class:`Note` values (progress, warnings, gate events) that need no answer (the driver sends
``None``). When the run is over the generator returns its result (``StopIteration.value``).

Keys are stable: the same configuration and seed produce the same keys in the same order, so
a resumed run can answer already-completed calls from the project file and issue only the
missing ones.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class AgentCall:
    key: str  # unique and stable within the run, e.g. "r1/alpha" or "vote/w3/c2"
    agent: str  # the agent id that must answer
    purpose: str  # e.g. "generate", "vote", "trace", "ballot", "verify"
    messages: tuple[dict[str, str], ...]  # chat messages: {"role": ..., "content": ...}
    round_no: int = 1
    reply_schema: str | None = None  # name of the structured reply expected, if any
    meta: dict[str, Any] = field(default_factory=dict)  # protocol-specific details for the record


@dataclass(frozen=True)
class Reading:
    """A reply as its protocol read it, once (SPEC §7): the value the generator uses (a vote, a
    ballot, a trace...), whether the reply was valid (None: nothing to judge, such as a failed
    call), and the records the project layer stores for it (:class:`~.declaration.Record`)."""

    value: Any = None
    valid: bool | None = None
    records: tuple[Any, ...] = ()
    problem: str | None = None  # why the reply could not be read (what a re-ask tells the model)


@dataclass(frozen=True)
class AgentReply:
    key: str
    text: str | None  # the raw reply text; None when the call failed
    error: str | None = None  # why the call failed (provider error, timeout, cancelled)
    meta: dict[str, Any] = field(default_factory=dict)  # provider, model, tokens, latency...
    # How the protocol read the reply: set once by whoever drives the generator (read_reply).
    reading: Reading | None = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.text is not None and self.error is None


@dataclass(frozen=True)
class Batch:
    """Calls that may run in any order or at once; the generator waits for all of them."""

    calls: tuple[AgentCall, ...]
    label: str = ""  # shown as the current phase, e.g. "Round 1: isolation"


@dataclass(frozen=True)
class Note:
    kind: str  # "progress", "warning", "gate", "phase", ...
    message: str
    data: dict[str, Any] = field(default_factory=dict)


Reader = Callable[[AgentCall, AgentReply], Reading]


def read_reply(call: AgentCall, reply: AgentReply, read: Reader | None) -> AgentReply:
    """``reply`` with its :class:`Reading` (by the call's protocol's ``read``), made once: a reply
    already read is returned as it is."""
    if reply.reading is not None or read is None:
        return reply
    try:
        reading = read(call, reply)
    except Exception as exc:  # noqa: BLE001 - a protocol's reader (a plugin's) must never lose a paid reply
        why = f"the protocol could not read the reply ({type(exc).__name__}: {exc})"
        reading = Reading(None, False if reply.ok else None, (), why)
    return replace(reply, reading=reading)


def drive(gen: Generator[Batch | Note, Any, Any], answer: Callable[[AgentCall], AgentReply],
          on_note: Callable[[Note], None] | None = None, read: Reader | None = None) -> Any:
    """Run a step-protocol generator sequentially: ``answer`` each call (read with ``read``, see
    :func:`read_reply`), pass each Note to ``on_note``; returns the generator's result. (The
    background runner does the same, concurrently.)"""
    try:
        item = next(gen)
        while True:
            if isinstance(item, Batch):
                item = gen.send({call.key: read_reply(call, answer(call), read) for call in item.calls})
            else:
                if on_note is not None:
                    on_note(item)
                item = gen.send(None)
    except StopIteration as stop:
        return stop.value
