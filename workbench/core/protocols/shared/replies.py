"""Reading a model's structured reply: one place for the repairs every protocol allows.

The tolerant reader (for a server that did not honour the schema sent, or was sent none):

- :func:`balanced_objects`: the JSON objects written inside prose, found by balancing braces
  while respecting strings and their escapes (a ``}`` inside a string does not close anything);
- raw control characters (a newline, a tab) inside a string are accepted
  (``json.loads(strict=False)``): a small model often writes them;
- :func:`leading_verdict`: a reply that starts with YES or NO (the paper's plain elicitation).

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


def balanced_objects(text: str) -> list[str]:
    """The outermost ``{...}`` spans of ``text`` whose braces balance, in order. Braces inside
    JSON strings (with their backslash escapes) are not counted; an unclosed object is not one."""
    spans, depth, start, in_string, escaped = [], 0, -1, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"' and depth > 0:
            in_string = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start:i + 1])
    return spans


def loads(text: str) -> object:
    """``json.loads`` that accepts raw control characters inside strings."""
    return json.loads(text, strict=False)


def embedded_objects(text: str) -> list[dict]:
    """The JSON objects written inside prose, outermost only, in order (see :func:`balanced_objects`)."""
    found = []
    for span in balanced_objects(text):
        try:
            value = loads(span)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def leading_verdict(text: str) -> tuple[str | None, str]:
    """``("YES" | "NO", the rest)`` for a reply that starts with YES or NO, else ``(None, text)``."""
    match = re.match(r"^\W*(yes|no)\b", text, re.IGNORECASE)
    if not match:
        return None, text
    return match.group(1).upper(), text[match.end():].strip()


def json_object(text: str, fence: str | None = None, template: Iterable[str] = ()) -> tuple[dict | None, str | None]:
    """``(object, None)`` for a reply that is a JSON object, or whose own words (see
    :func:`own_reply`) hold one JSON object inside prose (the same object written twice counts
    once); else ``(None, why not)``. Two different objects are ambiguous: neither is read."""
    body = strip_fence(own_reply(text, fence, template))
    try:
        data = loads(body)
    except json.JSONDecodeError as exc:
        found: list[dict] = []
        for obj in embedded_objects(body):
            if obj not in found:
                found.append(obj)
        if len(found) == 1:
            return found[0], None
        if len(found) > 1:
            return None, f"reply holds {len(found)} JSON objects; which one is the answer is unclear"
        return None, f"reply is not valid JSON: {exc.msg}"
    if not isinstance(data, dict):
        return None, "reply is not a JSON object"
    return data, None


def validation_problem(exc: Exception) -> str:
    """A pydantic ``ValidationError`` as one line: ``field: message``."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    first = errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    msg = first["msg"].removeprefix("Value error, ")
    return f"{where}: {msg}" if where else msg
