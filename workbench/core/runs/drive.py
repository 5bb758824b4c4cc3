"""A protocol's step generator driven to its end outside the runner: no project, no threads.

The estimate, a study's dry run and its rule-only replay all ask the same thing of a generator:
answer each call of each batch (here, from the simulated panel or from stored replies) and hand
back what the protocol concluded. The runner does not use this: it dispatches calls
concurrently, records them and resumes.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Batch


def drive(gen: Generator, answer: Callable[[AgentCall], AgentReply]) -> Any:
    """Run ``gen`` to its end, answering every call of every :class:`Batch` with ``answer`` (in
    the batch's order; a note gets None back), and return the generator's result. An exception
    raised by ``answer`` stops the drive (the generator is closed) and propagates."""
    reply: dict[str, AgentReply] | None = None
    try:
        while True:
            step = gen.send(reply)
            reply = {call.key: answer(call) for call in step.calls} if isinstance(step, Batch) else None
    except StopIteration as stop:
        return stop.value
    finally:
        gen.close()
