"""Structured replies: which JSON schema a call's reply must obey, and the ``response_format``
each kind of server accepts (SPEC §6 ``structured_output``).

- :func:`reply_schema`: ``(name, schema)`` for a call whose reply must be JSON, from the pydantic
  model that the protocol's parser validates the reply with (one registry: :data:`REPLY_MODELS`
  and the per-call models of RCP ballots and CONS ballots, whose labels and options vary).
- :func:`response_format`: the request's ``response_format`` for a mode:
  ``json_schema`` → ``{"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}``
  (OpenAI, vLLM, llama.cpp's ``llama-server``, Ollama, the clouds through litellm);
  ``json_object`` → ``{"type": "json_object", "schema": ...}`` (JSON mode, with the schema where
  llama-cpp-python's server reads it; it refuses the ``json_schema`` form with a 422);
  ``off`` → nothing. ``auto`` is resolved by the gateway with :func:`supports_schema`.
- :func:`reply_problem`: why a reply cannot be read, by the protocol's own parser (None: it
  can); what a re-ask sends back to the model (:func:`reask_messages`).

No litellm import here (the gateway passes its module in); the protocol modules are imported
when first needed.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from workbench.core.protocols.shared.steps import AgentCall
from workbench.core.protocols.shared.structured import schema_name, strict_schema

MODES = ("auto", "json_schema", "json_object", "off")


def _rcp_vote():
    from workbench.core.protocols.rcp.run import VoteReply
    return VoteReply


def _finding_vote():
    from workbench.core.protocols.findings.run import FindingVoteReply
    return FindingVoteReply


def _cons_ballot():
    from workbench.core.protocols.cons.run import BallotReply
    return BallotReply


def _arm(name: str):
    def model():
        from workbench.core.protocols.arm.replies import TRACE_MODELS
        return TRACE_MODELS[name]
    return model


# reply_schema name -> the model its parser validates with (per-call variants below).
REPLY_MODELS = {"rcp_vote": _rcp_vote, "finding_vote": _finding_vote, "cons_ballot": _cons_ballot,
                "arm_trace_r1": _arm("arm_trace_r1"), "arm_trace_r2": _arm("arm_trace_r2"),
                "arm_trace_gamma_r2": _arm("arm_trace_gamma_r2")}


def reply_model(call: AgentCall):
    """The pydantic model of the call's reply, or None when the reply is free text."""
    name = call.reply_schema
    if name == "rcp_ballot" and call.meta.get("labels"):
        from workbench.core.protocols.rcp.run import ballot_model
        return ballot_model(tuple(call.meta["labels"]))
    if name == "cons_ballot" and call.meta.get("options"):
        from workbench.core.protocols.cons.run import ballot_reply_model
        return ballot_reply_model(tuple(call.meta["options"]))
    factory = REPLY_MODELS.get(name or "")
    return factory() if factory is not None else None


@lru_cache(maxsize=256)
def _schema_of(model) -> str:
    return json.dumps(strict_schema(model), sort_keys=True)


def reply_schema(call: AgentCall) -> tuple[str, dict] | None:
    """``(name, strict JSON schema)`` for a call whose reply must be JSON, else None."""
    model = reply_model(call)
    if model is None:
        return None
    return schema_name(call.reply_schema or "reply"), json.loads(_schema_of(model))


def response_format(mode: str, name: str, schema: dict) -> dict | None:
    """The ``response_format`` a request carries for ``mode`` (``auto`` must be resolved first)."""
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
    if mode == "json_object":
        return {"type": "json_object", "schema": schema}
    if mode in ("off", "auto"):
        return None
    raise ValueError(f"unknown structured_output mode {mode!r} (one of {', '.join(MODES)})")


def supports_schema(litellm: Any, model: str) -> bool:
    """litellm's word on whether ``model`` takes a JSON schema; an unknown model does not."""
    try:
        return bool(litellm.supports_response_schema(model=model))
    except Exception:
        return False


def reply_problem(call: AgentCall, text: str | None) -> str | None:
    """Why the protocol's parser cannot read ``text`` as this call's reply; None when it can (or
    when the reply is free text)."""
    if text is None:
        return "no reply"
    fence, name = call.meta.get("delimiter"), call.reply_schema
    if name == "rcp_vote":
        from workbench.core.protocols.rcp.run import parse_vote
        vote = parse_vote(text, fence)
        return None if vote.status == "valid" else vote.reason or "unreadable vote"
    if name == "rcp_ballot":
        from workbench.core.protocols.rcp.run import parse_ballot
        labels = list(call.meta.get("labels") or {})
        bad = [(label, v.reason) for label, v in parse_ballot(text, labels, fence).items() if v.status != "valid"]
        return None if not bad else "; ".join(f"{label}: {why}" for label, why in bad[:3])
    if name == "finding_vote":
        from workbench.core.protocols.findings.run import parse_finding_vote
        parsed = parse_finding_vote(call.agent, text, fence)
        return None if parsed.vote is not None else parsed.reason or "unreadable vote"
    if name == "cons_ballot":
        from workbench.core.protocols.cons.run import parse_ballot_reply
        parsed = parse_ballot_reply(call.agent, text, fence)
        return None if parsed.ballot is not None else parsed.reason or "unreadable ballot"
    if name in REPLY_MODELS:  # an ARM trace
        from workbench.core.protocols.arm.replies import parse_reply
        trace = parse_reply(text, {}, fence=fence, schema=name)
        return None if trace.ok else str(trace.failure_reason or "unreadable trace")
    return None


def reask_messages(call: AgentCall, bad_reply: str, problem: str) -> list[dict]:
    """A re-ask: the call's messages, the unreadable reply as the assistant's, and a user message
    naming the problem and restating the JSON expected."""
    schema = reply_schema(call)
    expected = (f" It must match this JSON schema: {json.dumps(schema[1], separators=(',', ':'))}"
                if schema else "")
    return [*(dict(m) for m in call.messages), {"role": "assistant", "content": bad_reply},
            {"role": "user", "content": f"Your reply could not be read: {problem}. Reply again with only the "
                                        f"JSON object asked for, and nothing else.{expected}"}]
