"""A protocol's steps replayed over a stored run's replies under other settings (SPEC §9 "rule-only
arms cost nothing"): every call the generator asks for is answered by the stored reply to the same
call, read again by the protocol, and the protocol concludes under the new settings. No model is
called and nothing is written.

A call is the same call when the source run made it under the same step key with the same prompt
(fence names masked: they are fresh per call). When the new settings make the protocol ask for a
call the run never made, or with another prompt (an RCP refinement round whose common ground
changed, a CONS challenge round the old verdict never opened), the replay stops and says which:
that arm's result needs calls of its own, and it runs.

Each stored reply is read with the request it answered (its stored messages and fence), so the
reading is the one the source run made.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from workbench.core.protocols.shared.fencing import mask_fences
from workbench.core.protocols.shared.steps import (
    AgentCall,
    AgentReply,
    read_reply,
)
from workbench.core.runs.drive import drive

ANSWERED = ("ok", "invalid")  # stored statuses that carry a reply; any other is a failed call, replayed as failed


@dataclass(frozen=True)
class Replayed:
    summary: dict | None  # the protocol's summary under the new settings; None when a new call is needed
    reused: int  # calls answered from the stored run
    needs_call: str | None = None  # why the replay stopped: the first call the run never made as asked


def _masked(messages: list) -> str:
    return mask_fences(json.dumps([{"role": m.get("role"), "content": m.get("content")} for m in messages],
                                  ensure_ascii=False, sort_keys=True))


def replay(cfg, prompts, stored: Mapping[str, Any], *, run_id: str) -> Replayed:
    """``cfg``'s protocol driven over ``stored`` (``core.project.studies.StoredCall`` by step key)."""
    from workbench.core import registry
    from workbench.core.runs.config import protocol_generator

    protocol = registry.get(cfg.protocol)
    reused = 0

    def answer(call: AgentCall) -> AgentReply:
        nonlocal reused
        found = stored.get(call.key)
        why = _differs(call, found)
        if why is not None:
            raise _NeedsACall(why)
        reused += 1
        return _answer(call, found)

    try:
        result = drive(protocol_generator(cfg, run_id=run_id, prompts=prompts), answer)
    except _NeedsACall as stop:
        return Replayed(None, reused, str(stop))
    finished = protocol.finish(cfg, run_id, result) if protocol.finish is not None else None
    summary: dict[str, Any] = {"protocol": cfg.protocol, **(dict(finished.summary) if finished is not None else {})}
    return Replayed(summary, reused)


class _NeedsACall(Exception):
    """The replay met a call the source run did not make as asked: the arm must run."""


def _differs(call: AgentCall, found) -> str | None:
    if found is None:
        return f"{call.key}: the run never made this call"
    sent = list(found.messages)[:len(call.messages)]
    if _masked(sent) != _masked(list(call.messages)):
        return f"{call.key}: its prompt differs from the one the run sent"
    return None


def _answer(call: AgentCall, found) -> AgentReply:
    """The stored reply, read as the source run read it: with the request it answered."""
    from workbench.core import registry

    meta = dict(call.meta)
    if found.fence:
        meta.update({"delimiter": found.fence.get("delimiter"), "fence_escapes": found.fence.get("escapes", 0)})
    as_sent = replace(call, messages=tuple(found.messages[:len(call.messages)]), meta=meta)
    answered = found.status in ANSWERED
    reply = AgentReply(call.key, found.text if answered else None, None if answered else (found.error or found.status),
                       dict(found.meta or {}))
    declared = registry.protocols().get(call.meta.get("protocol") or "")
    return read_reply(as_sent, reply, declared.read if declared is not None else None)
