"""Reading a model's structured reply: one place for the repairs every protocol allows."""

from __future__ import annotations

import json
import re

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def strip_fence(text: str) -> str:
    """The reply without a surrounding ```/```json code fence (models often add one)."""
    return _FENCE.sub("", text.strip())


def json_object(text: str) -> tuple[dict | None, str | None]:
    """``(object, None)`` for a reply that is a JSON object, else ``(None, why not)``."""
    try:
        data = json.loads(strip_fence(text))
    except json.JSONDecodeError as exc:
        return None, f"reply is not valid JSON: {exc.msg}"
    if not isinstance(data, dict):
        return None, "reply is not a JSON object"
    return data, None
