"""The footer protocol (SPEC §5): ``:: SYSTEM :: [Resonance: 7f3a9c] [Role: Architect] [State: Stable]``.

Grammar (one line; spaces between the parts are free, the canonical form has one):

    footer   = ":: SYSTEM ::" "[Resonance: " HEX6 "]" "[Role: " ROLE "]" "[State: " STATE "]"
    HEX6     = six lowercase hex digits
    ROLE     = any text without "[", "]" or a line break, trimmed, not empty
    STATE    = "Stable" | "Degraded" | "Recovering"   (exactly so capitalised)

A footer line is a line whose text, after leading blanks, starts with ``:: SYSTEM ::``. Trust: a
footer counts only in the agent's own reply. The footer of a reply is its LAST footer line outside
quoted data (blockquotes, delimited artifact blocks, verbatim artifact copies; see
:mod:`echo_quoting`). If that last line is malformed, the reply's footer is malformed: an earlier
well-formed line is not used instead, because the latest claim is the one that matters.

A footer is a claim, not a proof: it never verifies the marker (the recital must stand outside
every footer line, see :mod:`.verify`), and a reply whose only content is a footer line is not
trusted at all (``session.watch_footer`` records nothing and asks for a check), since a footer
is the easiest thing to copy from a peer's reply or an artifact.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from workbench.core.errors import InputError, WorkbenchError
from workbench.core.protocols.echo.quoting import DEFAULT_QUOTING, Quoting, own_text, quoted_spans

FooterState = Literal["Stable", "Degraded", "Recovering"]
STATES: tuple[str, ...] = ("Stable", "Degraded", "Recovering")
PREFIX = ":: SYSTEM ::"
# Characters str.splitlines() breaks on: a role may contain none of them.
LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")

_START = re.compile(r"^\s*::\s*SYSTEM\s*::")
_ANYWHERE = re.compile(r"::\s*SYSTEM\s*::")
_FIELDS = re.compile(
    r"^\s*::\s*SYSTEM\s*::\s*"
    r"\[\s*Resonance\s*:\s*(?P<hex>[^\[\]]*?)\s*\]\s*"
    r"\[\s*Role\s*:\s*(?P<role>[^\[\]]*?)\s*\]\s*"
    r"\[\s*State\s*:\s*(?P<state>[^\[\]]*?)\s*\]\s*$")


class FooterError(WorkbenchError):
    """No trustworthy footer: none, only a quoted one, or a malformed one (CLI exit 1)."""


class Footer(BaseModel):
    model_config = ConfigDict(frozen=True)

    resonance: str  # the marker's hex suffix
    role: str
    state: FooterState

    def __str__(self) -> str:
        return stamp_footer(self.resonance, self.role, self.state)


def stamp_footer(resonance: str, role: str, state: str = "Stable") -> str:
    """The canonical footer line. ``resonance`` is a 6-hex suffix (or a whole marker)."""
    from workbench.core.protocols.echo.markers import parse_hex_or_marker

    hex_ = parse_hex_or_marker(resonance, "resonance")
    name = role.strip() if isinstance(role, str) else ""
    if not name:
        raise InputError("role", "is empty")
    if "[" in name or "]" in name:
        raise InputError("role", f"must not contain square brackets, got {role!r}")
    if LINE_BREAKS & set(name):
        raise InputError("role", "must be on one line")
    if state not in STATES:
        raise InputError("state", f"must be one of {', '.join(STATES)}, got {state!r}")
    return f"{PREFIX} [Resonance: {hex_}] [Role: {name}] [State: {state}]"


def is_footer_line(line: str) -> bool:
    return _START.match(line) is not None


def parse_footer_line(line: str) -> Footer:
    """Parse one footer line strictly; a malformed one raises :class:`FooterError` saying why."""
    if not is_footer_line(line):
        raise FooterError(f"not a footer line (it must start with '{PREFIX}'): {line.strip()[:80]!r}")
    m = _FIELDS.match(line)
    if m is None:
        raise FooterError("malformed footer: expected ':: SYSTEM :: [Resonance: <6 hex>] [Role: <role>] "
                          f"[State: Stable|Degraded|Recovering]', got {line.strip()[:120]!r}")
    hex_, role, state = m.group("hex"), m.group("role"), m.group("state")
    if re.fullmatch(r"[0-9A-Fa-f]{6}", hex_) and hex_ != hex_.lower():
        raise FooterError(f"malformed footer: the Resonance hex must be lowercase, got {hex_!r}")
    if not re.fullmatch(r"[0-9a-f]{6}", hex_):
        raise FooterError(f"malformed footer: Resonance must be 6 lowercase hex digits, got {hex_!r}")
    if not role:
        raise FooterError("malformed footer: the Role is empty")
    if state not in STATES:
        raise FooterError(f"malformed footer: State must be one of {', '.join(STATES)}, got {state!r}")
    return Footer(resonance=hex_, role=role, state=state)


def footer_lines(text: str, quoting: Quoting = DEFAULT_QUOTING) -> list[tuple[int, str]]:
    """The footer lines of the agent's own text, as (1-based line number, line)."""
    own = own_text(text or "", quoting)
    original = (text or "").split("\n")
    return [(i, original[i - 1]) for i, line in enumerate(own.split("\n"), 1) if is_footer_line(line)]


def parse_footer(text: str, quoting: Quoting = DEFAULT_QUOTING) -> Footer:
    """The footer of a reply: its last footer line outside quoted data, parsed strictly."""
    return locate_footer(text, quoting)[0]


def locate_footer(text: str, quoting: Quoting = DEFAULT_QUOTING) -> tuple[Footer, int]:
    """Like :func:`parse_footer`, also returning the footer's 1-based line number."""
    own = footer_lines(text, quoting)
    if not own:
        spans = quoted_spans(text or "", quoting)
        starts = [m.start() for m in _ANYWHERE.finditer(text or "")]
        if any(a <= pos < b for pos in starts for a, b in spans):
            raise FooterError("the only footer is inside quoted artifact text; a quoted footer is data "
                              "and proves nothing")
        if starts:
            raise FooterError("no footer: ':: SYSTEM ::' appears only inside a line; a footer must be a line "
                              "of its own")
        raise FooterError("no footer: the reply has no line starting with ':: SYSTEM ::'")
    number, line = own[-1]
    try:
        return parse_footer_line(line), number
    except FooterError as exc:
        raise FooterError(f"line {number}: {exc}") from None


def find_footer(text: str | None, quoting: Quoting = DEFAULT_QUOTING) -> Footer | None:
    """The reply's trusted footer, or ``None`` when there is none or it is malformed."""
    try:
        return parse_footer(text or "", quoting)
    except FooterError:
        return None
