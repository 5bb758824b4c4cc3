"""Marker verification (SPEC §5): the 6-hex suffix, exactly, in the agent's own reply.

Rules:
- the expected hex must appear in the reply as a word of its own (no letter, digit or ``_``
  directly before or after it), in lowercase. The poetic fragment may be paraphrased or left
  out; a wrong hex fails even when the poetic text is exact;
- only the agent's own text counts (see :mod:`echo_quoting`): the hex inside a blockquote, a
  delimited artifact block, a workbench fence or a verbatim copy of an artifact the caller names
  is quoted data;
- the footer line does not count either (SPEC §5 "Verification"): a footer is easy to copy, and
  a reply whose only content is a footer line (copied from a peer's reply or an artifact) has
  not recited the marker. The recital must stand outside every footer line;
- uppercase does not count by default (the seed asks for an exact match, and an agent that
  changes the case has transformed the marker rather than recited it). The result says so in its
  reason; ``accept_uppercase=True`` relaxes this for a study that wants it.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from workbench.core.errors import InputError
from workbench.core.protocols.echo.footer import is_footer_line
from workbench.core.protocols.echo.markers import Marker, is_hex, parse_hex_or_marker
from workbench.core.protocols.echo.quoting import DEFAULT_QUOTING, Quoting, own_text, position

_B = r"(?<![0-9A-Za-z_])"
_E = r"(?![0-9A-Za-z_])"
_HEX_TOKEN = re.compile(_B + r"[0-9A-Fa-f]{6}" + _E)
# Where a reply plainly cites a marker hex: after an em dash, or a "Resonance:" label.
_CITED = re.compile(r"(?:—\s*|Resonance(?: check)?:\s*)(" + r"[0-9A-Fa-f]{6}" + r")" + _E, re.IGNORECASE)


class VerificationResult(BaseModel):
    """The outcome of one marker check, as the CLI prints it and the records keep it."""

    model_config = ConfigDict(frozen=True)

    verified: bool
    expected_hex: str
    found_hex: str | None = None  # the expected hex when verified, else the hex the reply cites
    where: dict[str, int] | None = None  # line, column, offset of found_hex in the reply
    reason: str
    in_quoted: bool = False  # the expected hex appeared inside quoted data (which does not count)

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump()


def expected_hex_of(marker: Marker | str) -> str:
    if isinstance(marker, Marker):
        return marker.hex
    return parse_hex_or_marker(marker)


def verify_reply(reply: str | None, marker: Marker | str, *, quoting: Quoting = DEFAULT_QUOTING,
                 accept_uppercase: bool = False, error: str | None = None) -> VerificationResult:
    """Check that ``reply`` (the agent's own reply text) recites ``marker``'s hex.

    ``marker`` is a :class:`Marker`, a marker string or a bare 6-hex string. Quoted data is
    described by ``quoting``; pass the texts shown to the agent as ``Quoting.of(artifacts=...)``.
    ``error`` explains a failed call (``reply`` is then ``None``).
    """
    expected = expected_hex_of(marker)
    if not is_hex(expected):  # pragma: no cover - parse_hex_or_marker guarantees it
        raise InputError("marker", f"not a 6-hex suffix: {expected!r}")
    if reply is None or not reply.strip():
        why = f"no reply: the call failed ({error})" if error else "the reply is empty"
        return VerificationResult(verified=False, expected_hex=expected, reason=why)

    own = recital_text(reply, quoting)
    exact = re.compile(_B + expected + _E)
    hit = exact.search(own)
    if hit:
        return VerificationResult(
            verified=True, expected_hex=expected, found_hex=expected, where=position(reply, hit.start()),
            reason=f"the agent's own reply contains the marker hex {expected}")

    in_footer = exact.search(own_text(reply, quoting)) is not None
    in_quoted = exact.search(reply) is not None and not in_footer
    folded = re.compile(_B + expected + _E, re.IGNORECASE).search(own)
    if folded:
        found = folded.group(0)
        where = position(reply, folded.start())
        if accept_uppercase:
            return VerificationResult(
                verified=True, expected_hex=expected, found_hex=found, where=where, in_quoted=in_quoted,
                reason=f"the reply contains {found}, {expected} in another case (accepted by the setting)")
        return VerificationResult(
            verified=False, expected_hex=expected, found_hex=found, where=where, in_quoted=in_quoted,
            reason=f"the reply contains {found}, which differs from {expected} in case; the hex must be "
                   "recited exactly, in lowercase")

    cited = _candidate(own)
    if in_footer:
        reason = (f"{expected} appears only in a footer line; a footer can be copied, so the marker must be "
                  "recited outside it" + (f"; the agent's own text cites {cited[0]}" if cited else ""))
    elif in_quoted:
        reason = (f"{expected} appears only inside quoted artifact text, which is data and does not count"
                  + (f"; the agent's own text cites {cited[0]}" if cited else ""))
    elif cited:
        reason = f"the reply cites the hex {cited[0]}, not {expected}"
    else:
        reason = f"the reply does not contain the marker hex {expected}"
    return VerificationResult(
        verified=False, expected_hex=expected, found_hex=cited[0] if cited else None,
        where=position(reply, cited[1]) if cited else None, reason=reason, in_quoted=in_quoted)


def recital_text(reply: str, quoting: Quoting = DEFAULT_QUOTING) -> str:
    """Where a recital counts: the agent's own text (:func:`own_text`) with its footer lines
    blanked too (line breaks kept, so positions still match the reply)."""
    lines = own_text(reply, quoting).split("\n")
    return "\n".join(" " * len(line) if is_footer_line(line) else line for line in lines)


def _candidate(own: str) -> tuple[str, int] | None:
    """The hex the reply seems to offer as its marker: one cited after an em dash or a
    ``Resonance:`` label, else a free-standing 6-hex token with at least one digit (so that
    English words such as "facade" are not taken for one)."""
    m = _CITED.search(own)
    if m:
        return m.group(1), m.start(1)
    for t in _HEX_TOKEN.finditer(own):
        if any(ch.isdigit() for ch in t.group(0)):
            return t.group(0), t.start()
    return None
