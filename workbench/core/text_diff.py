"""Word-level differences between two texts (a claim in round 1 and in round 2, say). Pure.

A text is split into words, runs of white space and single punctuation marks, so the pieces of
a diff put back together give each text exactly:

    >>> [(op, t) for op, t in word_diff("The AI should act.", "The AI should not act.")]
    [('equal', 'The AI should '), ('insert', 'not '), ('equal', 'act.')]

``"".join(t for op, t in d if op != "insert")`` is the old text and
``"".join(t for op, t in d if op != "delete")`` the new one.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

EQUAL, DELETE, INSERT = "equal", "delete", "insert"
_TOKENS = re.compile(r"\w+|\s+|[^\w\s]")

__all__ = ["EQUAL", "DELETE", "INSERT", "tokens", "word_diff", "changed_words", "list_diff", "ListDiff",
           "similarity"]


def tokens(text: str) -> list[str]:
    """Words, runs of white space and single punctuation marks; ``"".join(tokens(t)) == t``."""
    return _TOKENS.findall(text)


def word_diff(old: str | None, new: str | None) -> list[tuple[str, str]]:
    """``[(op, text), ...]`` with op ``equal``, ``delete`` (only in old) or ``insert`` (only in new).

    A replaced word shows as its deletion then its insertion. White space between two changed
    words goes with the change, so "a b c" → "a x y c" reads as one deletion and one insertion.
    """
    a, b = tokens(old or ""), tokens(new or "")
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in _merge_space(matcher.get_opcodes(), a):
        if op == "equal":
            _add(out, EQUAL, "".join(a[i1:i2]))
        else:
            _add(out, DELETE, "".join(a[i1:i2]))
            _add(out, INSERT, "".join(b[j1:j2]))
    return out


def _merge_space(opcodes: list[tuple], a: Sequence[str]) -> list[tuple]:
    """Fold an "equal" run of white space alone between two changes into the changes."""
    out: list[list] = []
    for i, code in enumerate(opcodes):
        op, i1, i2, j1, j2 = code
        between = 0 < i < len(opcodes) - 1 and op == "equal" and all(t.isspace() for t in a[i1:i2])
        if (op != "equal" or between) and out and out[-1][0] == "replace":
            out[-1][2], out[-1][4] = i2, j2
        elif op != "equal":
            out.append(["replace", i1, i2, j1, j2])
        else:
            out.append([op, i1, i2, j1, j2])
    return [tuple(c) for c in out]


def _add(out: list[tuple[str, str]], op: str, text: str) -> None:
    if not text:
        return
    if out and out[-1][0] == op:
        out[-1] = (op, out[-1][1] + text)
    else:
        out.append((op, text))


def changed_words(old: str | None, new: str | None) -> tuple[list[str], list[str]]:
    """The words only in ``old`` and only in ``new`` (in order; punctuation and space left out)."""
    removed: list[str] = []
    added: list[str] = []
    for op, text in word_diff(old, new):
        words = re.findall(r"\w+", text)
        if op == DELETE:
            removed += words
        elif op == INSERT:
            added += words
    return removed, added


def similarity(old: str | None, new: str | None) -> float:
    """How much of the two texts' words they share, from 0 (nothing) to 1 (the same words)."""
    a, b = re.findall(r"\w+", (old or "").lower()), re.findall(r"\w+", (new or "").lower())
    if not a and not b:
        return 1.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


@dataclass(frozen=True)
class ListDiff:
    """Two lists of items (assumptions, steps, flags) compared item by item, order kept."""

    kept: tuple[str, ...]
    removed: tuple[str, ...]
    added: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.added)


def list_diff(old: Sequence[object] | None, new: Sequence[object] | None) -> ListDiff:
    """Items of ``old`` kept in ``new``, dropped from it, and new in it (compared as text,
    ignoring case and surrounding space)."""
    a = [_item(x) for x in old or ()]
    b = [_item(x) for x in new or ()]
    norm_a = {x.strip().casefold() for x in a}
    norm_b = {x.strip().casefold() for x in b}
    return ListDiff(tuple(x for x in a if x.strip().casefold() in norm_b),
                    tuple(x for x in a if x.strip().casefold() not in norm_b),
                    tuple(x for x in b if x.strip().casefold() not in norm_a))


def _item(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):  # e.g. a discarded path {path, reason}, or a step a model gave as an object
        return "; ".join(f"{k}: {v}" for k, v in value.items())
    return str(value)
