"""Does a text give a key back to a reader who decodes it? The attacker's side of SPEC §11.

``leaks(text, key)`` decodes ``text`` every way a reader might, and again what that gives (to a
depth of three): every JSON string literal in it, JSON escapes wherever they are (``\\u002d``,
``\\/``), URL decoding (``%XX``, ``+``), HTML entities, and base64 of every run of base64
characters, from each of its first four characters (so every alignment of a key inside a longer
encoded text is tried), in the standard and the URL-safe alphabets. Every result is lower-cased
and searched for the lower-cased key.

It shares no code with the scrub it checks (``workbench.services.llm.secrets``): it decodes, where
the scrub searches the encoded forms.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import re
from collections.abc import Iterator
from urllib.parse import unquote, unquote_plus

_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_\-]{8,}")
_JSON_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_SIMPLE = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _json_unescaped(match: re.Match) -> str:
    code, simple = match.groups()
    return chr(int(code, 16)) if code else _SIMPLE.get(simple, simple)


MAX_DEPTH = 3
MAX_TEXTS = 4000  # a guard against a combinatorial blow-up; a leak is found long before it


def decodings(text: str) -> Iterator[str]:
    """One layer of decoding of ``text``, every way (the text itself not included)."""
    for literal in _JSON_STRING.findall(text):
        try:
            value = json.loads(literal)
        except ValueError:
            continue
        if isinstance(value, str) and value != literal:
            yield value
    unescaped = _JSON_ESCAPE.sub(_json_unescaped, text)  # a JSON string's escapes, wherever they are
    for decoded in (unquote(text), unquote_plus(text), html.unescape(text), unescaped):
        if decoded != text:
            yield decoded
    for run in _BASE64_RUN.findall(text):
        for alphabet in (run, run.replace("-", "+").replace("_", "/")):
            for start in range(4):
                chunk = alphabet[start:]
                chunk = chunk[:-1] if len(chunk) % 4 == 1 else chunk + "=" * (-len(chunk) % 4)
                try:
                    raw = base64.b64decode(chunk, validate=True)
                except (binascii.Error, ValueError):
                    continue
                yield raw.decode("latin-1")


def leaks(text: str, key: str) -> bool:
    """True when ``key`` (in any case) is in ``text`` or in anything decoded from it."""
    wanted = key.lower()
    seen = {text}
    layer = [text]
    for _ in range(MAX_DEPTH + 1):
        if any(wanted in t.lower() for t in layer):
            return True
        following = []
        for t in layer:
            for decoded in decodings(t):
                if decoded not in seen and len(seen) < MAX_TEXTS:
                    seen.add(decoded)
                    following.append(decoded)
        layer = following
    return False
