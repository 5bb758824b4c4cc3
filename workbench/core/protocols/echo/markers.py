"""Resonance markers (SPEC §5): ``"<poetic fragment> — <6 lowercase hex>"``.

A marker pairs a poetic fragment (semantically distinctive, easy for an agent to hold) with six
random hex digits (the part verification matches exactly). Generation draws a fragment from the
template bank (``resources/echo_templates.txt``) and 24 random bits from an injectable RNG:
``secrets`` by default, or a seeded ``random.Random`` for reproducible simulated runs. The caller
passes the hex suffixes already issued in the project; a collision draws again, so a marker is
never reused. Pure: no I/O except reading the template bank once.
"""

from __future__ import annotations

import random
import re
import secrets
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from workbench.core.errors import InputError
from workbench.core.limits import check_seed
from workbench.core.resources import resource_path

SEPARATOR = " — "  # an em dash (U+2014) with one space on each side
HEX_DIGITS = 6
HEX_SPACE = 16 ** HEX_DIGITS
TEMPLATES_FILE = "echo_templates.txt"
MAX_DRAWS = 100_000  # collisions allowed before giving up (only reachable near exhaustion)

_HEX = re.compile(r"[0-9a-f]{6}")
_ANY_CASE_HEX = re.compile(r"[0-9A-Fa-f]{6}")
_FORBIDDEN_IN_FRAGMENT = set('[]"“”\n\r')
# A full marker inside running text: the fragment runs back to a quote, colon, bracket or line start.
_MARKER_IN_TEXT = re.compile(r'([^\n"“”:\[\]]+?) — ([0-9a-f]{6})(?![0-9A-Za-z_])')


@dataclass(frozen=True)
class Marker:
    fragment: str
    hex: str

    def __str__(self) -> str:
        return f"{self.fragment}{SEPARATOR}{self.hex}"

    @property
    def text(self) -> str:
        return str(self)


def is_hex(value: str) -> bool:
    return isinstance(value, str) and _HEX.fullmatch(value) is not None


def check_fragment(fragment: str) -> str:
    """A usable poetic fragment, stripped; raises ValueError saying what is wrong."""
    text = fragment.strip() if isinstance(fragment, str) else ""
    if not text:
        raise ValueError("the poetic fragment is empty")
    if "—" in text:
        raise ValueError("the poetic fragment must not contain an em dash (it separates the hex)")
    bad = sorted(_FORBIDDEN_IN_FRAGMENT & set(text))
    if bad:
        raise ValueError(f"the poetic fragment must not contain {' '.join(map(repr, bad))}")
    return text


def parse_marker(text: str, field: str = "marker") -> Marker:
    """Parse ``"<fragment> — <hex>"`` (surrounding quotes allowed); a bad one is an InputError."""
    if not isinstance(text, str):
        raise InputError(field, "must be text")
    s = text.strip()
    if len(s) >= 2 and s[0] in "\"“" and s[-1] in "\"”":
        s = s[1:-1].strip()
    if not s:
        raise InputError(field, "is empty")
    if s.startswith("—"):
        raise InputError(field, f"the poetic fragment before the em dash is empty: {text!r}")
    head, sep, tail = s.rpartition(SEPARATOR)
    if not sep:
        if "—" in s:
            raise InputError(field, f"the em dash must have one space on each side: "
                                    f"'<fragment> — <6 hex>', got {text!r}")
        if re.search(r"\s[-–]{1,2}\s[0-9A-Fa-f]{6}$", s):
            raise InputError(field, f"the separator must be an em dash (—), not a hyphen or en dash: {text!r}")
        raise InputError(field, f"not a resonance marker: expected '<poetic fragment> — <6 hex digits>', "
                                f"got {text!r}")
    if _ANY_CASE_HEX.fullmatch(tail) and not _HEX.fullmatch(tail):
        raise InputError(field, f"the hex suffix must be lowercase: {tail!r}")
    if not _HEX.fullmatch(tail):
        raise InputError(field, f"the suffix must be exactly 6 lowercase hex digits, got {tail!r}")
    try:
        fragment = check_fragment(head)
    except ValueError as exc:
        raise InputError(field, str(exc)) from None
    if head != fragment:
        raise InputError(field, "the em dash must have exactly one space on each side")
    return Marker(fragment, tail)


def parse_hex_or_marker(text: str, field: str = "marker") -> str:
    """The 6-hex suffix of a marker, or a bare 6-hex string; anything else is an InputError."""
    s = text.strip() if isinstance(text, str) else text
    if isinstance(s, str) and _ANY_CASE_HEX.fullmatch(s):
        if not _HEX.fullmatch(s):
            raise InputError(field, f"the hex must be lowercase: {s!r}")
        return s
    return parse_marker(text, field).hex


def find_markers(text: str) -> list[Marker]:
    """Every full marker written in ``text``, in order (used by the simulated agent's recital)."""
    found = []
    for m in _MARKER_IN_TEXT.finditer(text or ""):
        fragment = m.group(1).strip().strip("'*_`").strip()
        if fragment:
            found.append(Marker(fragment, m.group(2)))
    return found


# ----- the template bank ------------------------------------------------------------------------
def parse_templates(lines: Sequence[str], source: str = TEMPLATES_FILE) -> tuple[str, ...]:
    """Fragments from template lines: blanks and ``#`` comments skipped, a ``— {hex}`` tail allowed."""
    out: list[str] = []
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = re.sub(r"\s*—\s*\{hex\}$", "", line)
        try:
            fragment = check_fragment(line)
        except ValueError as exc:
            raise InputError(f"{source}:{number}", str(exc)) from None
        if fragment not in out:
            out.append(fragment)
    if not out:
        raise InputError(source, "the template bank has no fragments")
    return tuple(out)


@lru_cache(maxsize=4)
def load_templates(path: str | None = None) -> tuple[str, ...]:
    """The template bank (the repository's ``resources/echo_templates.txt`` unless ``path``)."""
    file = Path(path) if path else resource_path(TEMPLATES_FILE)
    return parse_templates(file.read_text(encoding="utf-8").splitlines(), file.name)


# ----- generation -------------------------------------------------------------------------------
def make_rng(seed: int | None = None, field: str = "--seed") -> random.Random:
    """``secrets``-backed randomness by default; a seeded, reproducible one for simulated runs.

    A seed is a whole number from 0 to 2**63 - 1, as everywhere in the workbench (docs/limits.md).
    """
    return secrets.SystemRandom() if seed is None else random.Random(check_seed(seed, field))


class MarkerSpaceExhausted(ValueError):
    """No unused hex suffix could be drawn (only possible when nearly all 16^6 are issued)."""


def generate_marker(issued: Collection[str] = (), *, rng: random.Random | None = None,
                    templates: Sequence[str] | None = None) -> Marker:
    """A new marker whose hex is not in ``issued``; a collision draws the hex again."""
    rng = rng or make_rng()
    bank = tuple(templates) if templates is not None else load_templates()
    if not bank:
        raise InputError("templates", "the template bank is empty")
    fragment = check_fragment(rng.choice(bank))
    if len(issued) >= HEX_SPACE:
        raise MarkerSpaceExhausted("every 6-hex suffix has been issued in this project")
    for _ in range(MAX_DRAWS):
        hex_ = f"{rng.getrandbits(24):06x}"
        if hex_ not in issued:
            return Marker(fragment, hex_)
    raise MarkerSpaceExhausted(f"no unused hex suffix after {MAX_DRAWS} draws")


def generate_markers(count: int, issued: Collection[str] = (), *, rng: random.Random | None = None,
                     templates: Sequence[str] | None = None) -> list[Marker]:
    """``count`` new markers, unique among themselves and against ``issued``."""
    taken = set(issued)
    out = []
    for _ in range(count):
        marker = generate_marker(taken, rng=rng, templates=templates)
        taken.add(marker.hex)
        out.append(marker)
    return out


class MarkerIssuer:
    """Issues markers never issued before by this issuer (an in-memory stand-in for a project;
    ``echo_records.issue_marker`` is the project-file version)."""

    def __init__(self, rng: random.Random | None = None, issued: set[str] | None = None):
        self.rng = rng or make_rng()
        self.issued: set[str] = set(issued or ())
        self.markers: list[Marker] = []

    def __call__(self) -> Marker:
        marker = generate_marker(self.issued, rng=self.rng)
        self.issued.add(marker.hex)
        self.markers.append(marker)
        return marker
