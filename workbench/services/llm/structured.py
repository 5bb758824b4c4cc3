"""Structured replies: which JSON schema a call's reply must obey, and the ``response_format``
each kind of server accepts (SPEC §6 ``structured_output``).

- :func:`reply_schema`: ``(name, schema)`` for a call whose reply must be JSON, from the pydantic
  model that the protocol's parser validates the reply with (its declaration's ``reply_model``,
  per call: an RCP ballot's labels and a CONS ballot's options vary).
- :func:`response_format`: the request's ``response_format`` for a mode:
  ``json_schema`` → ``{"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}``
  (OpenAI, vLLM, llama.cpp's ``llama-server``, Ollama, the clouds through litellm);
  ``json_object`` → ``{"type": "json_object", "schema": ...}`` (JSON mode, with the schema where
  llama-cpp-python's server reads it; it refuses the ``json_schema`` form with a 422);
  ``off`` → nothing. ``auto`` is resolved by the gateway with :func:`supports_schema`.
- :func:`reply_problem`: why a reply cannot be read, by the protocol's own parser (None: it
  can); what a re-ask sends back to the model (:func:`reask_messages`).

No litellm import here (the gateway passes its module in); no protocol is named here: each is
reached through the registry.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from workbench.core.protocols.shared.steps import AgentCall, AgentReply
from workbench.core.protocols.shared.structured import schema_name, strict_schema

MODES = ("auto", "json_schema", "json_object", "off")


def reply_model(call: AgentCall):
    """The pydantic model of the call's reply (its protocol's declaration says which), or None when
    the reply is free text."""
    declared = _declared(call, "reply_model")
    return declared(call) if declared is not None else None


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


def read_reply(call: AgentCall, reply):
    """``reply`` read by its call's protocol (its declaration's ``read``), once: the reading goes
    with the reply, so the runner stores and the generator uses the reading the re-ask judged."""
    from workbench.core.protocols.shared.steps import read_reply as with_reading

    return with_reading(call, reply, _declared(call, "read"))


def _declared(call: AgentCall, what: str):
    """What the call's protocol declares (``reply_model``, ``read``): the protocol its meta names,
    else the one whose declared step made it (``registry.step_of``: a call built by hand)."""
    from workbench.core import registry

    protocol = call.meta.get("protocol") if isinstance(call.meta, dict) else None
    declared = registry.protocols().get(protocol) if protocol else None
    if declared is None:
        found = registry.step_of(call)
        declared = found[0] if found is not None else None
    return getattr(declared, what, None) if declared is not None else None


def reply_problem(call: AgentCall, text: str | None, reading=None) -> str | None:
    """Why the protocol's parser cannot read ``text`` as this call's reply; None when it can (or
    when the reply is free text). ``reading``: the reply as its protocol read it, when it has one;
    else the protocol's declared ``read`` reads it now."""
    if text is None:
        return "no reply"
    if reading is None:
        read = _declared(call, "read")
        if read is None:
            return None
        reading = read_reply(call, AgentReply(call.key, text)).reading
    return reading.problem or "unreadable reply" if reading.valid is False else None


def reask_messages(call: AgentCall, bad_reply: str, problem: str) -> list[dict]:
    """A re-ask: the call's messages, the unreadable reply as the assistant's, and a user message
    naming the problem and restating the JSON expected."""
    schema = reply_schema(call)
    expected = (f" It must match this JSON schema: {json.dumps(schema[1], separators=(',', ':'))}"
                if schema else "")
    return [*(dict(m) for m in call.messages), {"role": "assistant", "content": bad_reply},
            {"role": "user", "content": f"Your reply could not be read: {problem}. Reply again with only the "
                                        f"JSON object asked for, and nothing else.{expected}"}]
