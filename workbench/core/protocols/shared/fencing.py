"""Fences around quoted text: untrusted text in a prompt is data, never instructions.

Every protocol that shows one agent's (or a user's) text to another wraps it in a fence::

    <<<FENCE-3F9C...(32 hex digits)>>>
    the untrusted text
    <<<END-FENCE-3F9C...>>>

- **The name is fresh per call** (:func:`new_delimiter`, 128 bits from :mod:`secrets`), never
  derived from the run seed: the seed appears in exports, so a seed-derived name could be
  predicted, and an artifact could close its own fence (SPEC §6 "Reproducibility"). Every
  untrusted block of one call uses that call's one name.
- **It is stored with the call**: ``call.meta["delimiter"]`` (and ``meta["fence_escapes"]``),
  which the project keeps in the call's ``request_json`` next to the messages sent.
- **Escapes.** Anything in the untrusted text shaped like a fence line (``<<<...>>>``, such as a
  forged ``<<<END-...>>>``) is shown altered (``‹‹‹...›››``), and so is the call's own name;
  each alteration is counted in ``meta["fence_escapes"]``.
- **Reading a reply** (:func:`fence_spans`): what lies between a call's fence tokens is quoted
  data. Any block in this fence format counts, whatever its name, so a resumed run (whose calls
  got fresh names) reads a stored reply exactly as the first run did.
- **Comparing runs** ignores fence names: :func:`mask_fences`.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field

PREFIX = "FENCE-"
# The fence names a reply may carry: today's, and the seed-derived ones of projects written
# before fences were drawn from a CSPRNG (so a replay of an old run reads its replies the same).
NAME = r"(?:FENCE-[0-9A-F]{32}|ARTIFACT-[0-9A-F]{16})"
_NAME = re.compile(NAME)
_LINE = re.compile(r"<<<[^<>\n]{0,200}>>>")  # anything shaped like a fence line, real or forged
ESCAPED_OPEN, ESCAPED_CLOSE = "\u2039\u2039\u2039", "\u203a\u203a\u203a"  # ‹‹‹ and ›››
MASK = "FENCE-*"


def new_delimiter() -> str:
    """A fence name no one can know in advance: 128 bits from the operating system's CSPRNG."""
    return PREFIX + secrets.token_hex(16).upper()


def opening(fence: str) -> str:
    return f"<<<{fence}>>>"


def closing(fence: str) -> str:
    return f"<<<END-{fence}>>>"


# Patterns compiled once for escape() and fence_spans() with a name new_delimiter() made. One
# built around each call's fresh name was compiled anew for every call (and pushed the re module's
# cache out): about a millisecond a call, holding the GIL.
_LINE_OR_PREFIX_CI = re.compile(_LINE.pattern + "|FENCE-", re.IGNORECASE)
_PREFIX_CI = re.compile("FENCE-", re.IGNORECASE)
_TOKEN = re.compile(rf"<<<(END-)?({NAME})>>>")
_STANDARD = re.compile(r"FENCE-[0-9A-F]{32}")


def escape(text: str, fence: str) -> tuple[str, int]:
    """``text`` with every fence-shaped line (``<<<...>>>``) and every occurrence of ``fence``
    visibly altered, and how many alterations were made."""
    if fence and _STANDARD.fullmatch(fence):
        return _escape_standard(text, fence)
    return _escape_any(text, fence)


def _escape_any(text: str, fence: str) -> tuple[str, int]:
    """:func:`escape` for any name (an old project's, a test's): patterns built around it."""
    own = re.compile(re.escape(fence), re.IGNORECASE) if fence else None
    head, _, tail = (fence or "").partition("-")
    altered = f"{head}_{tail}" if tail else f"{fence}_"

    def alter(m: re.Match) -> str:
        found = m.group(0)
        if not found.startswith("<<<"):
            return altered  # the call's own name, bare
        inner = own.sub(altered, found[3:-3]) if own else found[3:-3]
        return ESCAPED_OPEN + inner + ESCAPED_CLOSE

    pattern = _LINE.pattern + (f"|{own.pattern}" if own else "")
    return re.subn(pattern, alter, text, flags=re.IGNORECASE)


def _escape_standard(text: str, fence: str) -> tuple[str, int]:
    """:func:`escape` for a name in today's format, with patterns compiled once."""
    head, _, tail = fence.partition("-")
    return _alter(text, _LINE_OR_PREFIX_CI, fence.upper(), f"{head}_{tail}")


def _alter(text: str, pattern: re.Pattern, wanted: str, altered: str) -> tuple[str, int]:
    """Each fence line ``pattern`` finds shown altered (the name inside it too), and each
    "FENCE-" (any case) that starts ``wanted`` replaced by ``altered``; and how many of both."""
    parts: list[str] = []
    count = pos = 0
    while (m := pattern.search(text, pos)) is not None:
        if m.group(0).startswith("<<<"):
            inner, _ = _alter(m.group(0)[3:-3], _PREFIX_CI, wanted, altered)
            parts += [text[pos:m.start()], ESCAPED_OPEN, inner, ESCAPED_CLOSE]
            count, pos = count + 1, m.end()
        elif _is(text, m.start(), wanted):
            parts += [text[pos:m.start()], altered]
            count, pos = count + 1, m.start() + len(wanted)
        else:  # another name, or not a name: go on from the next character, as a regex scan does
            parts.append(text[pos:m.start() + 1])
            pos = m.start() + 1
    parts.append(text[pos:])
    return "".join(parts), count


def _is(text: str, at: int, wanted: str) -> bool:
    """Whether ``wanted`` (ASCII, upper case) starts at ``at`` in ``text``, in any case."""
    found = text[at:at + len(wanted)]
    return found.isascii() and found.upper() == wanted


def fenced(text: str, fence: str) -> str:
    """``text`` (escaped) between the opening and closing lines of ``fence``."""
    return f"{opening(fence)}\n{escape(text, fence)[0]}\n{closing(fence)}"


@dataclass
class Fence:
    """One call's fence: a fresh name, and the escapes made in the texts it wrapped."""

    name: str = field(default_factory=new_delimiter)
    escapes: int = 0

    def wrap(self, text: str) -> str:
        safe, n = escape(text, self.name)
        self.escapes += n
        return f"{opening(self.name)}\n{safe}\n{closing(self.name)}"

    def meta(self) -> dict:
        """What the call stores: ``{"delimiter": name, "fence_escapes": count}``."""
        return {"delimiter": self.name, "fence_escapes": self.escapes}


def fence_spans(text: str, fences: Iterable[str] = ()) -> list[tuple[int, int]]:
    """The ``[start, end)`` spans of ``text`` that lie between fence tokens, tokens included:
    for the names in ``fences`` and for any name in the fence format. An opening token without
    its closing runs to the end of the text; a closing token without its opening covers
    everything since the previous span (the quote began before the reply's first token)."""
    names = [re.escape(f) for f in fences if f and not _STANDARD.fullmatch(f)]  # NAME has the others
    token = re.compile(rf"<<<(END-)?({'|'.join([*names, NAME])})>>>") if names else _TOKEN
    spans: list[tuple[int, int]] = []
    open_at: tuple[int, str] | None = None
    last_end = 0
    for m in token.finditer(text):
        is_close, name = m.group(1) is not None, m.group(2)
        if open_at is None:
            if is_close:
                spans.append((last_end, m.end()))
                last_end = m.end()
            else:
                open_at = (m.start(), name)
        elif is_close and name == open_at[1]:
            spans.append((open_at[0], m.end()))
            last_end, open_at = m.end(), None
    if open_at is not None:
        spans.append((open_at[0], len(text)))
    return spans


def without_fenced(text: str, fences: Iterable[str] = ()) -> str:
    """``text`` with every fenced span (see :func:`fence_spans`) replaced by a space."""
    spans = fence_spans(text, fences)
    if not spans:
        return text
    parts, pos = [], 0
    for start, end in spans:
        parts.append(text[pos:start])
        parts.append(" ")
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def drop_fence_tokens(text: str) -> str:
    """``text`` without its fence lines (any name in the fence format): for an excerpt that is
    quoted again later, inside a new fence."""
    return re.sub(rf"<<<(?:END-)?{NAME}>>>\n?", "", text)


def mask_fences(text: str) -> str:
    """``text`` with every fence name replaced by ``FENCE-*``: what comparisons between runs see
    (the names are fresh per call, so they never match)."""
    return _NAME.sub(MASK, text)
