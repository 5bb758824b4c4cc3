"""JavaScript-exact helpers for reproducing ARM's stored numbers (ARM is a browser app).

Everything ARM stores was computed by V8. To reproduce it to the last bit this module mirrors the
few JS behaviours that differ from Python's defaults:

- ``toLowerCase`` followed by a split on the JS regex ``\\W+`` (ASCII-only word characters);
- ``Math.log``, which in V8 is the fdlibm algorithm (ln 3 comes out one ulp below the correctly
  rounded value that Python's ``math.log`` returns);
- ``JSON.stringify(value, null, 2)`` (number formatting, string escaping, key order), needed to
  verify ``export_integrity_hash``;
- ``Number.prototype.toFixed`` (rounds exact ties away from zero; Python's ``round`` does not).

Pure functions, standard library only.
"""

from __future__ import annotations

import hashlib
import math
import re
import struct
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

__all__ = [
    "token_fold", "js_words", "fdlibm_log", "js_number", "js_stringify", "js_to_fixed",
    "export_integrity_hash", "is_js_number",
]

# ── Lower-casing and word splitting ──────────────────────────────────────────────────────────
# After JS toLowerCase, ARM splits on /\W+/ (no "u" flag: \w is [A-Za-z0-9_]). So only the ASCII
# word characters of the lower-cased text survive, and every other character is a separator.
# Exactly two non-ASCII code points lower-case (in JS and in Python) to something containing an
# ASCII word character: U+0130 (capital I with dot) -> "i" + U+0307, and U+212A (Kelvin sign)
# -> "k". Folding them explicitly makes the tokens independent of Python's Unicode database.
_SPECIAL_LOWER = {"\u0130": "i ", "\u212a": "k"}
_NON_WORD = re.compile(r"[^A-Za-z0-9_]+")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def _fold_run(match: re.Match) -> str:
    return "".join(_SPECIAL_LOWER.get(ch, " ") for ch in match.group())


def token_fold(text: str) -> str:
    """``text.toLowerCase()`` as far as ASCII-word tokenisation can tell (non-ASCII -> space).

    Linear and mostly in C: runs of non-ASCII characters are mapped first, then the (now ASCII)
    text is lower-cased, which for ASCII is exactly JS's ``toLowerCase``.
    """
    if not text.isascii():
        text = _NON_ASCII.sub(_fold_run, text)
    return text.lower()


def js_words(text: str) -> list[str]:
    """``text.toLowerCase().split(/\\W+/)`` without the empty strings the split can produce."""
    return [w for w in _NON_WORD.split(token_fold(text)) if w]


def is_js_number(value: object) -> bool:
    """``typeof v === "number" && Number.isFinite(v)`` for a JSON value (booleans are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond the double range: JS would read it as Infinity
        return False


# ── fdlibm log (V8's Math.log) ───────────────────────────────────────────────────────────────
# A Python port of __ieee754_log from fdlibm 5.3 (e_log.c), which V8 uses for Math.log:
#   Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
#   Developed at SunSoft, a Sun Microsystems, Inc. business.
#   Permission to use, copy, modify, and distribute this software is freely granted,
#   provided that this notice is preserved.
def _f(hex_bits: str) -> float:
    return struct.unpack(">d", bytes.fromhex(hex_bits))[0]


_LN2_HI = _f("3fe62e42fee00000")
_LN2_LO = _f("3dea39ef35793c76")
_TWO54 = _f("4350000000000000")
_LG = (_f("3fe5555555555593"), _f("3fd999999997fa04"), _f("3fd2492494229359"),
       _f("3fcc71c51d8e78af"), _f("3fc7466496cb03de"), _f("3fc39a09d078c69f"),
       _f("3fc2f112df3e5244"))


def _words(x: float) -> tuple[int, int]:
    bits = struct.unpack(">q", struct.pack(">d", x))[0]
    return (bits >> 32), bits & 0xFFFFFFFF  # signed high word, unsigned low word


def _with_high(x: float, high: int) -> float:
    low = struct.unpack(">Q", struct.pack(">d", x))[0] & 0xFFFFFFFF
    return struct.unpack(">d", struct.pack(">Q", ((high & 0xFFFFFFFF) << 32) | low))[0]


def fdlibm_log(x: float) -> float:
    """Natural logarithm, bit-for-bit as fdlibm (and so V8's ``Math.log``) computes it."""
    x = float(x)
    lg1, lg2, lg3, lg4, lg5, lg6, lg7 = _LG
    hx, lx = _words(x)
    k = 0
    if hx < 0x00100000:  # x < 2**-1022
        if ((hx & 0x7FFFFFFF) | lx) == 0:
            return -math.inf
        if hx < 0:
            return math.nan
        k -= 54
        x *= _TWO54
        hx = _words(x)[0]
    if hx >= 0x7FF00000:
        return x + x
    k += (hx >> 20) - 1023
    hx &= 0x000FFFFF
    i = (hx + 0x95F64) & 0x100000
    x = _with_high(x, hx | (i ^ 0x3FF00000))  # normalise x or x/2
    k += i >> 20
    f = x - 1.0
    if (0x000FFFFF & (2 + hx)) < 3:  # |f| < 2**-20
        if f == 0.0:
            if k == 0:
                return 0.0
            dk = float(k)
            return dk * _LN2_HI + dk * _LN2_LO
        r = f * f * (0.5 - 0.33333333333333333 * f)
        if k == 0:
            return f - r
        dk = float(k)
        return dk * _LN2_HI - ((r - dk * _LN2_LO) - f)
    s = f / (2.0 + f)
    dk = float(k)
    z = s * s
    i = hx - 0x6147A
    w = z * z
    j = 0x6B851 - hx
    t1 = w * (lg2 + w * (lg4 + w * lg6))
    t2 = z * (lg1 + w * (lg3 + w * (lg5 + w * lg7)))
    i |= j
    r = t2 + t1
    if i > 0:
        hfsq = 0.5 * f * f
        if k == 0:
            return f - (hfsq - s * (hfsq + r))
        return dk * _LN2_HI - ((hfsq - (s * (hfsq + r) + dk * _LN2_LO)) - f)
    if k == 0:
        return f - s * (f - r)
    return dk * _LN2_HI - ((s * (f - r) - dk * _LN2_LO) - f)


# ── JSON.stringify ───────────────────────────────────────────────────────────────────────────
def js_number(x: float | int) -> str:
    """``String(x)`` for a finite number (ECMAScript Number::toString, radix 10)."""
    if isinstance(x, int):
        x = float(x) if abs(x) >= 2**53 else x
        if isinstance(x, int):
            return str(x)
    if not math.isfinite(x):
        return "NaN" if x != x else ("Infinity" if x > 0 else "-Infinity")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    mantissa, _, exp = repr(abs(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    e10 = (int(exp) if exp else 0) - len(frac)
    stripped = digits.rstrip("0")
    e10 += len(digits) - len(stripped)
    digits = stripped
    k = len(digits)
    n = e10 + k  # value = 0.d1d2...dk x 10**n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        tail = f"e{'+' if e >= 0 else '-'}{abs(e)}"
        body = (digits + tail) if k == 1 else (digits[0] + "." + digits[1:] + tail)
    return sign + body


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')


def _escape(match: re.Match) -> str:
    ch = match.group()
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04x}"  # control characters and lone surrogates


def _js_string(s: str) -> str:
    """JSON.stringify of a string: quotes, backslash and the short escapes; \\uXXXX for other control
    characters and for lone surrogates (well-formed JSON.stringify). Linear, in C but for escapes."""
    return '"' + _NEEDS_ESCAPE.sub(_escape, s) + '"'


_INDEX_KEY = re.compile(r"^(0|[1-9][0-9]*)$")


def _js_key_order(keys: list[str]) -> list[str]:
    """JS enumerates array-index keys first, ascending, then the others in insertion order."""
    index = sorted((k for k in keys if _INDEX_KEY.match(k) and int(k) < 2**32 - 1), key=int)
    return index + [k for k in keys if not (_INDEX_KEY.match(k) and int(k) < 2**32 - 1)]


def js_stringify(value: Any, indent: int = 2, _level: int = 0) -> str:
    """``JSON.stringify(value, null, indent)`` for JSON-like Python values."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return js_number(value) if is_js_number(value) else "null"
    if isinstance(value, str):
        return _js_string(value)
    pad = " " * (indent * (_level + 1))
    close = " " * (indent * _level)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{pad}{_js_string(str(k))}: {js_stringify(value[k], indent, _level + 1)}"
                 for k in _js_key_order(list(value))]
        return "{\n" + ",\n".join(items) + "\n" + close + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        items = [pad + js_stringify(v, indent, _level + 1) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + close + "]"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def export_integrity_hash(export: dict) -> str:
    """ARM's seal: SHA-256 of ``JSON.stringify(payload, null, 2)`` without the hash key."""
    payload = {k: v for k, v in export.items() if k != "export_integrity_hash"}
    return hashlib.sha256(js_stringify(payload).encode("utf-8")).hexdigest()


def js_to_fixed(x: float, digits: int) -> float:
    """``+x.toFixed(digits)``: exact decimal value of x, ties rounded away from zero."""
    if not math.isfinite(x) or abs(x) >= 1e21:
        return x
    q = Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return float(q)
