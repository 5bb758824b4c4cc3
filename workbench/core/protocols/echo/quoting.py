"""What in a reply is the agent's own text, and what is quoted data.

A marker or footer counts only in the agent's own words. Quoted data proves nothing: an agent
that pastes another agent's artifact (which may carry that agent's marker or footer) has not
recited anything. Before matching, these spans of the reply are masked:

1. markdown blockquotes: every line whose first non-blank character (after at most three
   spaces) is ``>``;
2. delimited artifact blocks: from an opening delimiter through its closing delimiter, for each
   ``(open, close)`` pair the caller passes (the run's artifact fences); an opening delimiter
   without its closing one masks to the end of the reply;
3. verbatim copies of artifact texts the caller passes (the texts shown to the agent as data);
4. optionally, fenced code blocks (```` ``` ```` or ``~~~``). Off by default, because agents
   often format a recital as code;
5. the workbench's own fences (``<<<FENCE-…>>>`` … ``<<<END-FENCE-…>>>``, whatever the name, see
   :mod:`..shared.fencing`): on by default, so a reply that copies a fenced block (an artifact, a
   peer's text, the recent exchange Echo quotes back) has recited nothing.

Masking replaces every masked character except line breaks with a space, so offsets, line and
column numbers in the masked text are those of the original reply.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.core.protocols.shared.fencing import fence_spans

_BLOCKQUOTE = re.compile(r"(?m)^[ \t]{0,3}>.*$")
_FENCE_OPEN = re.compile(r"(?m)^[ \t]{0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Quoting:
    """Which spans of a reply are quoted data rather than the agent's own text."""

    delimiters: tuple[tuple[str, str], ...] = ()  # the run's (open, close) artifact fences
    artifacts: tuple[str, ...] = ()  # texts shown to the agent as data, masked where copied verbatim
    blockquotes: bool = True
    code_fences: bool = False
    workbench_fences: bool = True

    @classmethod
    def of(cls, delimiters: Sequence[Sequence[str]] = (), artifacts: Sequence[str] = (), *,
           blockquotes: bool = True, code_fences: bool = False, workbench_fences: bool = True) -> Quoting:
        pairs = []
        for pair in delimiters:
            if len(pair) != 2 or not all(isinstance(p, str) and p for p in pair):
                raise ValueError(f"a delimiter pair needs a non-empty opening and closing string, got {pair!r}")
            pairs.append((pair[0], pair[1]))
        return cls(tuple(pairs), tuple(a for a in artifacts if a and a.strip()), blockquotes, code_fences,
                   workbench_fences)


DEFAULT_QUOTING = Quoting()


def quoted_spans(text: str, quoting: Quoting = DEFAULT_QUOTING) -> list[tuple[int, int]]:
    """The ``[start, end)`` spans of ``text`` that are quoted data, merged and sorted."""
    spans: list[tuple[int, int]] = []
    if quoting.blockquotes:
        spans += [(m.start(), m.end()) for m in _BLOCKQUOTE.finditer(text)]
    for open_, close in quoting.delimiters:
        pos = 0
        while (start := text.find(open_, pos)) != -1:
            end = text.find(close, start + len(open_))
            end = len(text) if end == -1 else end + len(close)
            spans.append((start, end))
            pos = end
    for artifact in quoting.artifacts:
        needle = artifact.strip()
        pos = 0
        while (start := text.find(needle, pos)) != -1:
            spans.append((start, start + len(needle)))
            pos = start + len(needle)
    if quoting.code_fences:
        spans += _fenced_blocks(text)
    if quoting.workbench_fences:
        spans += fence_spans(text)
    return _merge(spans)


def _fenced_blocks(text: str) -> list[tuple[int, int]]:
    out = []
    pos = 0
    while (m := _FENCE_OPEN.search(text, pos)) is not None:
        fence = m.group(1)
        closing = re.compile(rf"(?m)^[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        line_end = text.find("\n", m.end())
        if line_end == -1:
            out.append((m.start(), len(text)))
            break
        c = closing.search(text, line_end + 1)
        end = len(text) if c is None else c.end()
        out.append((m.start(), end))
        pos = end
    return out


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def own_text(text: str, quoting: Quoting = DEFAULT_QUOTING) -> str:
    """``text`` with its quoted spans blanked out (line breaks kept, so positions still match)."""
    spans = quoted_spans(text, quoting)
    if not spans:
        return text
    parts, pos = [], 0
    for start, end in spans:
        parts.append(text[pos:start])
        parts.append(re.sub(r"[^\n]", " ", text[start:end]))
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def position(text: str, offset: int) -> dict[str, int]:
    """1-based line and column of ``offset`` in ``text``, with the offset itself."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return {"line": line, "column": column, "offset": offset}
