"""Scoring an answer against a known one (SPEC §8): one function per answer type.

Each returns a :class:`Score`: ``correct``, ``incorrect`` or ``unscorable``, and the answer it
extracted from the reply (None when there is none). The rules:

- ``number``: the LAST number in the reply counts. ``1,234`` is 1234 (a comma between groups of
  three digits), ``-5`` is −5, ``3.0`` equals 3, ``42 km`` is 42, ``1/2`` is 0.5, ``1e3`` is 1000;
  compared with a relative tolerance of 1e-6. A number written in words (``forty-two``) is not
  read, so a reply with no digits is ``unscorable``.
- ``choice``: a single letter A–J standing alone (not inside a word), the LAST one in the reply:
  ``(B)``, ``B.``, ``Answer: B``, ``(b)`` all read B. A small letter counts only in brackets, and
  "A" or "I" before a lower-case word is English ("A good point", "I think"), not a choice.
- ``exact``: the reply, case- and whitespace-normalised, equals the answer, likewise normalised
  (surrounding quotes and a final full stop are ignored).
- ``regex``: the answer is a pattern (Python ``re``, searched case-insensitively); the extracted
  answer is the text it matched. A pattern that does not compile makes the item invalid (checked
  when the dataset is read), never a crash here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

ANSWER_TYPES = ("number", "choice", "exact", "regex")
VERDICTS = ("correct", "incorrect", "unscorable")
REL_TOL = 1e-6

# A number: an optional sign written against it, digits (with thousands commas only in groups of
# three), an optional fraction part or a "/denominator", an optional exponent; a unit may follow
# ("42km"). Not preceded by a letter or digit (the 2 of "H2O" or "v2" is part of a name).
_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[-+−])?"
    r"(?P<int>\d{1,3}(?:,\d{3})+|\d+)?(?P<frac>\.\d+)?(?:\s?/\s?(?P<den>\d+(?:\.\d+)?))?"
    r"(?P<exp>[eE][-+]?\d+)?(?!\d)"
)
# A choice: a capital A-J standing alone, or a small one in brackets ("(c)"). "A" and "I" before a
# lower-case word are English ("A good point", "I think"), not choices.
_CHOICE = re.compile(r"(?<![A-Za-z0-9])(?:([A-J])(?![A-Za-z0-9'’])|\(([a-j])\))")
_WORD_AFTER = re.compile(r"\s+[a-z]")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Score:
    verdict: str  # correct | incorrect | unscorable
    extracted: str | None  # what was read from the reply, as text (a number normalised: "1234", "0.5")

    @property
    def correct(self) -> bool | None:
        return None if self.verdict == "unscorable" else self.verdict == "correct"


def score(reply: str | None, answer: str, answer_type: str) -> Score:
    """``reply`` scored against ``answer`` of ``answer_type`` (one of :data:`ANSWER_TYPES`)."""
    try:
        scorer = SCORERS[answer_type]
    except KeyError:
        raise ValueError(f"unknown answer_type {answer_type!r} (one of {', '.join(ANSWER_TYPES)})") from None
    if reply is None or not reply.strip():
        return Score("unscorable", None)
    return scorer(reply, answer)


def extract(reply: str | None, answer_type: str) -> str | None:
    """The answer a reply gives, as :func:`score` reads it (for a plurality over replies)."""
    if reply is None or not reply.strip():
        return None
    if answer_type == "number":
        value = last_number(reply)
        return None if value is None else number_text(value)
    if answer_type == "choice":
        return last_choice(reply)
    if answer_type == "exact":
        return normalised(reply)
    raise ValueError(f"answers of type {answer_type!r} are not extracted without the pattern")


# ----- number ---------------------------------------------------------------------------------
def last_number(text: str) -> float | None:
    """The last number written in digits in ``text`` (see the module's rules), or None."""
    found = None
    for m in _NUMBER.finditer(text):
        if not (m.group("int") or m.group("frac")):
            continue
        found = m
    if found is None:
        return None
    return _value(found)


def _value(m: re.Match) -> float | None:
    whole = (m.group("int") or "0").replace(",", "")
    text = whole + (m.group("frac") or "")
    try:
        value = Fraction(text)
        if m.group("den") is not None:
            den = Fraction(m.group("den"))
            if den == 0:
                return None
            value /= den
        if m.group("exp"):
            value *= Fraction(10) ** int(m.group("exp")[1:])
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    sign = -1 if m.group("sign") in ("-", "−") else 1
    result = float(sign * value)
    return result if math.isfinite(result) else None


def number_text(value: float) -> str:
    """A number as the extracted answer shows it: ``1234``, ``-5``, ``0.5``."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def same_number(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=0.0) or (a == 0 and b == 0)


def score_number(reply: str, answer: str) -> Score:
    value = last_number(reply)
    if value is None:
        return Score("unscorable", None)
    expected = last_number(answer)
    if expected is None:
        raise ValueError(f"the answer {answer!r} holds no number")
    return Score("correct" if same_number(value, expected) else "incorrect", number_text(value))


# ----- choice ---------------------------------------------------------------------------------
def last_choice(text: str) -> str | None:
    found = None
    for m in _CHOICE.finditer(text):
        letter = m.group(1)
        if letter in ("A", "I") and _WORD_AFTER.match(text, m.end()):
            continue
        found = (letter or m.group(2)).upper()
    return found


def score_choice(reply: str, answer: str) -> Score:
    got = last_choice(reply)
    if got is None:
        return Score("unscorable", None)
    return Score("correct" if got == answer.strip().upper() else "incorrect", got)


# ----- exact ----------------------------------------------------------------------------------
def normalised(text: str) -> str:
    """Case- and whitespace-normalised, without surrounding quotes or a final full stop."""
    out = _SPACES.sub(" ", text).strip().casefold()
    out = out.strip("\"'“”‘’`")
    return out[:-1].rstrip() if out.endswith(".") else out


def score_exact(reply: str, answer: str) -> Score:
    got = normalised(reply)
    return Score("correct" if got == normalised(answer) else "incorrect", got)


# ----- regex ----------------------------------------------------------------------------------
def score_regex(reply: str, answer: str) -> Score:
    m = re.search(answer, reply, re.IGNORECASE)
    return Score("correct", m.group(0)) if m else Score("incorrect", None)


SCORERS = {"number": score_number, "choice": score_choice, "exact": score_exact, "regex": score_regex}
