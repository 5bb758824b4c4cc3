"""Scoring an answer against a known one (SPEC §8): one function per answer type.

Each returns a :class:`Score`: ``correct``, ``incorrect`` or ``unscorable``, and the answer it
extracted from the reply (None when there is none). The rules:

- ``number``: the LAST number in the reply counts. ``1,234`` is 1234 (a comma between groups of
  three digits), ``-5`` is −5, ``3.0`` equals 3, ``42 km`` is 42, ``1/2`` is 0.5, ``1e3`` is 1000;
  compared with a relative tolerance of 1e-6. A number written in words (``forty-two``) is not
  read, so a reply with no digits is ``unscorable``; so is one whose last number is past a float's
  range (``1e400``, 400 digits, an exponent beyond ±:data:`MAX_EXPONENT`): it cannot be compared,
  and ``10 ** 99999999999`` would never finish.
- ``choice``: a single letter A–J standing alone (not inside a word), the LAST one in the reply:
  ``(B)``, ``B.``, ``Answer: B``, ``(b)`` all read B. A small letter counts only in brackets, and
  "A" or "I" before a lower-case word is English ("A good point", "I think"), not a choice.
- ``exact``: the reply, case- and whitespace-normalised, equals the answer, likewise normalised
  (surrounding quotes and a final full stop are ignored).
- ``regex``: the answer is a pattern (Python ``re``'s syntax, searched case-insensitively); the
  extracted answer is the text it matched. A pattern that does not compile makes the item invalid
  (checked when the dataset is read), never a crash here. The search is bounded in time
  (:data:`REGEX_TIMEOUT_S`, with the ``regex`` library, whose syntax is ``re``'s): a pattern that
  backtracks catastrophically (``(a+)+$``) on a model's reply would otherwise hang the run
  (26 characters took 8 s, 30 take minutes); a reply it cannot settle in time is ``unscorable``.
  Compiling is bounded too, before it starts: a pattern whose repeat counts would unroll it past
  :data:`MAX_REGEX_SIZE` atoms (the library unrolls ``{m,n}``, and nested counts multiply:
  ``a{1000000000}`` or ``((a{1000}){1000}){1000}`` compile for minutes) or whose groups nest
  deeper than :data:`MAX_REGEX_DEPTH` (a thousand nested ``(`` exhaust Python's recursion) is
  invalid, named like any other pattern error.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

ANSWER_TYPES = ("number", "choice", "exact", "regex")
VERDICTS = ("correct", "incorrect", "unscorable")
REL_TOL = 1e-6
MAX_EXPONENT = 400  # a reply's "1e400" or "1e-400" is past a float's range: not a number to compare
REGEX_TIMEOUT_S = 1.0  # one reply's search against a dataset's pattern
MAX_REGEX_SIZE = 100_000  # atoms a pattern may unroll to (compiling is linear in it: 0.06 s at the bound)
MAX_REGEX_DEPTH = 100  # the deepest nesting of groups
_REPEAT = re.compile(r"\{\s*(\d*)\s*(?:,\s*(\d*)\s*)?\}")  # matched where an unescaped "{" stands
_BRACED_ESCAPES = "pPNxgu"  # \p{L}, \N{name}, \x{41}...: their braces are the escape's, not a count

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
            exponent = int(m.group("exp")[1:])
            if abs(exponent) > MAX_EXPONENT:  # past a float's range (and 10**(10**11) never ends)
                return None
            value *= Fraction(10) ** exponent
        sign = -1 if m.group("sign") in ("-", "−") else 1
        result = float(sign * value)  # OverflowError past a float's range (400 digits)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
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
def compile_pattern(answer: str):
    """A ``regex`` answer compiled (``regex.error`` when it is not a pattern, or one past the
    bounds that keep compiling quick: :data:`MAX_REGEX_REPEAT`, :data:`MAX_REGEX_DEPTH`)."""
    import regex

    size, deepest = unrolled_size(answer)
    if deepest > MAX_REGEX_DEPTH:
        raise regex.error(f"groups nested {deepest} deep (at most {MAX_REGEX_DEPTH})")
    if size > MAX_REGEX_SIZE:
        raise regex.error(f"its repeat counts unroll it to more than {MAX_REGEX_SIZE:,} atoms (nested counts multiply)")
    try:
        return regex.compile(answer, regex.IGNORECASE)
    except RecursionError:  # a bound on depth above may still be too deep on a small stack
        raise regex.error("groups nested too deeply") from None


def unrolled_size(pattern: str) -> tuple[int, int]:
    """``(atoms, deepest group nesting)`` of a pattern with its ``{m,n}`` counts unrolled, as the
    library compiles it: an upper bound read without compiling (a class or an escape is one atom;
    the larger number of a count multiplies the atom or group before it)."""
    stack = [[0, 0]]  # per open group: [its atoms so far, the atoms of its last piece]
    deepest, at, end = 0, 0, len(pattern)
    while at < end:
        ch, atom = pattern[at], 1
        if ch == "\\":
            at += 2
            if pattern[at - 1:at] in tuple(_BRACED_ESCAPES) and pattern[at:at + 1] == "{":
                close = pattern.find("}", at)
                at = end if close < 0 else close + 1
        elif ch == "[":  # a class, to its closing bracket ("[]]" and "[^]]" hold a literal "]")
            at += 1 + (pattern[at + 1:at + 2] == "^")
            at += pattern[at:at + 1] == "]"
            while at < end and pattern[at] != "]":
                at += 2 if pattern[at] == "\\" else 1
            at += 1
        elif ch == "(":
            stack.append([0, 0])
            deepest = max(deepest, len(stack) - 1)
            at += 1
            continue
        elif ch == ")" and len(stack) > 1:
            atom = max(stack.pop()[0], 1)
            at += 1
        elif ch == "{" and (m := _REPEAT.match(pattern, at)):
            count = max((int(n) for n in m.groups() if n), default=1)
            top = stack[-1]
            top[0] += top[1] * (count - 1)
            top[1] *= count
            at = m.end()
            continue
        else:
            at += 1
        stack[-1][0] += atom
        stack[-1][1] = atom
    while len(stack) > 1:  # unclosed groups (the compiler refuses them anyway)
        inner = stack.pop()[0]
        stack[-1][0] += inner
    return stack[0][0], deepest


def score_regex(reply: str, answer: str) -> Score:
    try:
        m = compile_pattern(answer).search(reply, timeout=REGEX_TIMEOUT_S)
    except TimeoutError:
        return Score("unscorable", None)
    return Score("correct", m.group(0)) if m else Score("incorrect", None)


SCORERS = {"number": score_number, "choice": score_choice, "exact": score_exact, "regex": score_regex}
