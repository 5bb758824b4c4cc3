"""Reading a model's structured reply: one place for the repairs every protocol allows.

SPEC §1 "Reading a reply": before any lenient parsing (a JSON object inside prose, a leading
YES or NO), :func:`own_reply` removes from the reply everything between fence tokens (the
call's own, and any block in the workbench's fence format, see :mod:`.fencing`) and every piece
of the prompt's own template echoed back (instruction lines, ``<one sentence>`` placeholders,
``"YES" or "NO"``). A verdict quoted from an artifact is therefore never read as the voter's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from workbench.core.protocols.shared.fencing import without_fenced

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"<[^<>\n]{1,80}>")


def strip_fence(text: str) -> str:
    """The reply without a surrounding ```/```json code fence (models often add one)."""
    return _FENCE.sub("", text.strip())


def template_pieces(*template: str) -> tuple[str, ...]:
    """What of a prompt template a reply may echo: each string, each of its lines and sentences,
    and each ``<placeholder>`` in it; longest first, so a whole line goes before its parts."""
    pieces: set[str] = set()
    for text in template:
        for line in text.splitlines():
            line = line.strip()
            if line:
                pieces.add(line)
                pieces.update(s.strip() for s in re.split(r"(?<=[.?!])\s+", line) if len(s.strip()) > 3)
        pieces.update(_PLACEHOLDER.findall(text))
    return tuple(sorted(pieces, key=lambda p: (-len(p), p)))


def own_reply(text: str, fence: str | None = None, template: Iterable[str] = ()) -> str:
    """The model's own words: ``text`` without its fenced spans (``fence`` and any name in the
    fence format) and without the template ``pieces`` it echoes (see :func:`template_pieces`)."""
    out = without_fenced(text, [fence] if fence else [])
    for piece in template:
        if piece:
            out = re.sub(re.escape(piece), " ", out, flags=re.IGNORECASE)
    return out


def embedded_objects(text: str) -> list[dict]:
    """The JSON objects written inside prose, outermost only, in order."""
    decoder, found, pos = json.JSONDecoder(), [], 0
    while (start := text.find("{", pos)) != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        if isinstance(value, dict):
            found.append(value)
        pos = end
    return found


def json_object(text: str, fence: str | None = None, template: Iterable[str] = ()) -> tuple[dict | None, str | None]:
    """``(object, None)`` for a reply that is a JSON object, or whose own words (see
    :func:`own_reply`) hold exactly one JSON object inside prose; else ``(None, why not)``."""
    body = strip_fence(own_reply(text, fence, template))
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        found = embedded_objects(body)
        if len(found) == 1:
            return found[0], None
        if len(found) > 1:
            return None, f"reply holds {len(found)} JSON objects; which one is the answer is unclear"
        return None, f"reply is not valid JSON: {exc.msg}"
    if not isinstance(data, dict):
        return None, "reply is not a JSON object"
    return data, None
