"""A structured reply's JSON schema, from the pydantic model that parses it.

Every call whose reply must be JSON names its reply model; the protocol's parser validates the
reply with that model, and :func:`strict_schema` turns the same model into the schema sent to
the model (SPEC §6 ``structured_output``), so the two never drift apart.

The schema is made "strict-friendly", as OpenAI's strict mode (and the grammar compilers of
llama.cpp and vLLM) want it: ``$ref`` inlined, every object with ``additionalProperties: false``
and all of its properties required, and no ``default`` or ``title`` keys. A field the parser
treats as optional is therefore required in the schema: a reply that obeys the schema is always
one the parser accepts (tests check it), not the other way round.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from pydantic import BaseModel

_DROP = ("default", "title", "examples", "description")

# A confidence, as the schema sent to a model gives it: one of 21 steps. Grammar-constrained servers
# (llama-cpp-python's json_object form) drop "minimum"/"maximum", and a small model then writes
# "confidence": 50; an enum is a constraint every grammar converter keeps. The parser still takes
# any number in [0, 1]: the steps only shape what is asked for.
CONFIDENCE_STEPS = tuple(round(i / 20, 2) for i in range(21))
CONFIDENCE_SCHEMA = {"enum": list(CONFIDENCE_STEPS)}
SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]")


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model.model_json_schema()``, inlined and made strict (see the module's docstring)."""
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})
    return _strict(_inline(raw, defs, 0))


def _inline(node: Any, defs: dict, depth: int) -> Any:
    if depth > 32:
        raise ValueError("a reply model is recursive: it cannot be sent as a strict schema")
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = copy.deepcopy(defs[ref.removeprefix("#/$defs/")])
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return _inline({**target, **rest}, defs, depth + 1)
        return {k: _inline(v, defs, depth + 1) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, defs, depth + 1) for v in node]
    return node


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strict(v) for k, v in node.items() if k not in _DROP}
    if out.get("type") == "object" or "properties" in out:
        props = out.get("properties") or {}
        out["type"] = "object"
        out["properties"] = props
        out["required"] = list(props)
        out["additionalProperties"] = False
    return out


def schema_name(name: str) -> str:
    """A name OpenAI's ``json_schema.name`` accepts (letters, digits, ``_`` and ``-``, 64 at most)."""
    return SCHEMA_NAME.sub("_", name)[:64] or "reply"
