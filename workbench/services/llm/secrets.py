"""API keys for the gateway: where they are looked up, and how they are kept out of every text.

A provider names where its key lives, never the key (see ``ProviderConfig``):

- ``key_env``: the name of an environment variable, read at call time;
- ``key_keyring``: an OS keyring entry, read at call time with ``keyring.get_password``.
  ``"NAME"`` means service :data:`KEYRING_SERVICE` (``resonance-workbench``) and user ``NAME``,
  so ``keyring set resonance-workbench openai`` stores the key for ``key_keyring: "openai"``.
  ``"SERVICE/USER"`` names both (split at the last ``/``).

When both are named the environment variable wins if it is set. Keys never leave this module
except as the ``api_key`` argument of the request itself: :func:`scrub` removes them, in every
spelling a server may echo them in (SPEC §11), from every text the gateway returns, and
:class:`SecretFilter` from every log record of the gateway's and litellm's loggers.
"""

from __future__ import annotations

import base64
import bisect
import functools
import itertools
import logging
import os
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

KEYRING_SERVICE = "resonance-workbench"
REDACTED = "[REDACTED]"
# Ambient variables that look like credentials are scrubbed too, in case a provider library
# picks one up on its own (it never should: see Gateway._key_for).
_SECRET_NAME = re.compile(r"(^|_)(API_KEY|KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
_AMBIENT_MIN_LEN = 8


class MissingKey(Exception):
    """The provider names a key that cannot be found. The message names the place, never a key."""


@dataclass(frozen=True)
class ResolvedKey:
    value: str | None  # None: the provider names no key
    source: str  # "env:NAME", "keyring:SERVICE/USER" or "none"


def keyring_entry(name: str) -> tuple[str, str]:
    """``"openai"`` -> (KEYRING_SERVICE, "openai"); ``"svc/user"`` -> ("svc", "user")."""
    if "/" in name:
        service, _, user = name.rpartition("/")
        if service and user:
            return service, user
    return KEYRING_SERVICE, name


def resolve_key(key_env: str | None, key_keyring: str | None) -> ResolvedKey:
    """Look the key up now. Raises :class:`MissingKey` when a named place holds nothing."""
    if key_env:
        value = os.environ.get(key_env)
        if value:
            return ResolvedKey(value, f"env:{key_env}")
        if not key_keyring:
            raise MissingKey(f"the environment variable {key_env} is not set")
    if key_keyring:
        service, user = keyring_entry(key_keyring)
        try:
            import keyring  # lazily: its backends are slow to load

            value = keyring.get_password(service, user)
        except Exception as exc:  # no backend, locked keychain, ...
            raise MissingKey(f"the keyring entry {service}/{user} could not be read "
                             f"({type(exc).__name__})") from None
        if value:
            return ResolvedKey(value, f"keyring:{service}/{user}")
        where = f"the keyring entry {service}/{user}"
        if key_env:
            where = f"the environment variable {key_env} and {where}"
        raise MissingKey(f"{where} hold no key")
    return ResolvedKey(None, "none")


def ambient_secrets() -> set[str]:
    """Values of environment variables whose names look like credentials."""
    return {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= _AMBIENT_MIN_LEN}


# Shorter "secrets" are not scrubbed: real keys are long, and replacing every "k" or "no-key" in a
# reply (or in the word "ok") would wreck the record without protecting anything.
MIN_SECRET_LENGTH = 8

# A server may echo a key in another spelling (SPEC §11), and a reader who decodes the stored text
# gets the key back: so each text is searched in a decoded, lower-cased view, and what is found is
# replaced in the text itself. The view undoes, wherever they occur, JSON's \u0041 and \/ escapes
# (a backslash escaped again, \\u002d, too), \x41, URL escapes (%2D, and %252D escaped twice) and
# HTML numeric entities (&#45; &#x2d;); lower-casing both sides covers case changes. Only escapes
# of printable ASCII are undone: keys are ASCII, and a reply in Chinese, JSON-escaped character by
# character, then costs nothing. In that view the workbench looks for the key and for its base64
# forms (below), one str.find per form: a few ms for a 100 KB reply and three keys (measured in
# docs/providers.md), where one regular expression with every form of every character took 60 ms.
# How every escape undone begins: str.find scans for these far faster than a regular expression
# scans for the escapes, and most replies hold none of them (a JSON body's \" and \n are not).
_ESCAPE_STARTS = ("\\u00", "\\x", "\\/", "%", "&#")
_ESCAPE = re.compile(r"\\+(?:u00([2-7][0-9a-fA-F])|x([2-7][0-9a-fA-F])|(/))|%(?:25)*([2-7][0-9a-fA-F])"
                     r"|&#(?:0*(3[2-9]|[4-9][0-9]|1[01][0-9]|12[0-6])|[xX]0*([2-7][0-9a-fA-F]));?")


def _unescaped(match: re.Match) -> str:
    """The character an escape stands for."""
    uni, byte, slash, percent, dec, hexa = match.groups()
    if slash:
        return "/"
    return chr(int(dec) if dec else int(uni or byte or percent or hexa, 16))


class _View:
    """``text`` with its escapes undone and lower-cased, and the way back from the view to the text.

    Each escape becomes one character of the view and plain text keeps its length, so a span found
    in the view maps back to the exact characters of the text it came from. The map is built only
    when something was found."""

    def __init__(self, text: str):
        self.source = text
        self.text = _lower(_ESCAPE.sub(_unescaped, text))
        self._escapes: list[tuple[int, int]] | None = None  # each escape's span in the text
        self._view_at: list[int] = []  # each escape's index in the view
        self._lost: list[int] = []  # characters the escapes before each one saved (one more at the end)

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The span of the text that the view's characters ``start:end`` came from."""
        if self._escapes is None:
            self._escapes = [m.span() for m in _ESCAPE.finditer(self.source)]
            self._lost = list(itertools.accumulate((e - s - 1 for s, e in self._escapes), initial=0))
            self._view_at = [s - lost for (s, _), lost in zip(self._escapes, self._lost)]
        return self._at(start)[0], self._at(end - 1)[1]

    def _at(self, index: int) -> tuple[int, int]:
        i = bisect.bisect_right(self._view_at, index) - 1
        if i >= 0 and self._view_at[i] == index:  # an escape: all of it
            return self._escapes[i]  # type: ignore[index]
        at = index + self._lost[i + 1]
        return at, at + 1


def _lower(text: str) -> str:
    """Lower case, one character for one (``str.lower`` turns a few characters into two)."""
    low = text.lower()
    return low if len(low) == len(text) else "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _base64_cores(data: bytes) -> set[str]:
    """What base64 of any text holding ``data`` must contain, whatever comes before or after it.

    At each of the three byte alignments, the base64 characters whose six bits all come from
    ``data``: base64(b"\\0" * offset + data) without the first characters, which carry bits of
    what precedes it, and the last, which carry bits of what follows (as Sigma's ``base64offset``
    and GitHub's runner mask secrets). Given in the standard and the URL-safe alphabets."""
    cores = set()
    for offset in range(3):
        padded = b"\0" * offset + data
        core = base64.b64encode(padded).decode()[(8 * offset + 5) // 6:(8 * len(padded)) // 6]
        cores |= {core, core.replace("+", "-").replace("/", "_")}
    return cores


@functools.lru_cache(maxsize=256)
def _forms(secret: str) -> tuple[frozenset[str], frozenset[str]]:
    """The lower-cased spellings of ``secret`` looked for: as text, and its base64 cores. base64 is
    taken of the key as it is, upper-cased and lower-cased (a server may change a header's case
    before it encodes it)."""
    plain = {secret, secret.replace(" ", "+")}
    cores: set[str] = set()
    for variant in {secret, secret.upper(), secret.lower()}:
        cores |= _base64_cores(variant.encode())
    return frozenset(_lower(p) for p in plain), frozenset(_lower(c) for c in cores if len(c) >= MIN_SECRET_LENGTH)


def _found(haystack: str, needle: str) -> Iterator[tuple[int, int]]:
    at = haystack.find(needle)
    while at >= 0:
        yield at, at + len(needle)
        at = haystack.find(needle, at + 1)


def _spans(text: str, secrets: Iterable[str]) -> list[tuple[int, int]]:
    """The spans of ``text`` that spell one of ``secrets`` in any form, merged where they overlap."""
    view = _View(text) if any(m in text for m in _ESCAPE_STARTS) else None
    low = _lower(text)
    spans: list[tuple[int, int]] = []
    for secret in secrets:
        # In the text as it is too: a key may hold what looks like an escape ("%2F" in a key).
        for needle in itertools.chain(*_forms(secret)):
            spans += _found(low, needle)
            if view is not None:
                spans += (view.original(*s) for s in _found(view.text, needle))
    merged: list[tuple[int, int]] = []
    for start, end in sorted((_before_backslashes(text, start), end) for start, end in spans):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _before_backslashes(text: str, start: int) -> int:
    """``start``, moved back over the backslashes before it: a key found at the "n" of "\\nKEY"
    takes its backslash along, or "\\[REDACTED]" would not be JSON any more."""
    while start and text[start - 1] == "\\":
        start -= 1
    return start


def scrub(text: str | None, secrets: Iterable[str | None]) -> str | None:
    """``text`` with every secret (8+ characters) replaced by ``[REDACTED]``, in every spelling a
    server may echo it in: as is or in another case, JSON-, slash-, URL- or HTML-escaped (any of
    its characters), and base64 of the key or of any text holding it (``Bearer KEY``,
    ``user:KEY``), in either alphabet, padded or not. A key that contains another is removed whole.
    """
    if not text:
        return text
    wanted = {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}
    spans = _spans(text, wanted) if wanted else []
    if not spans:
        return text
    # One pass suffices: the brackets of "[REDACTED]" end any base64 run and any escape, so what is
    # left on either side of it cannot join up into a secret that was not there before.
    pieces, pos = [], 0
    for start, end in spans:
        pieces += [text[pos:start], REDACTED]
        pos = end
    return "".join([*pieces, text[pos:]])


def scrub_value(value: object, secrets: Iterable[str | None]) -> object:
    """:func:`scrub` applied to every string inside dicts, lists and tuples."""
    secrets = [s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH]
    if not secrets:
        return value
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {scrub_value(k, secrets): scrub_value(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(scrub_value(v, secrets) for v in value)
    return value


class SecretFilter(logging.Filter):
    """Scrubs the secrets it knows of from log records before any handler sees them.

    Install it on the loggers that could mention a key (the gateway's and litellm's); the
    gateway registers each key it resolves. litellm already masks keys in its own debug logs;
    this is the second lock on the door.
    """

    def __init__(self) -> None:
        super().__init__()
        self._secrets: set[str] = set()
        self._lock = threading.Lock()

    def remember(self, secret: str | None) -> None:
        if secret:
            with self._lock:
                self._secrets.add(secret)

    def filter(self, record: logging.LogRecord) -> bool:
        with self._lock:
            secrets = list(self._secrets)
        if not secrets:
            return True
        try:
            message = record.getMessage()
        except Exception:
            return True
        clean = scrub(message, secrets)
        if clean != message or record.args:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text, secrets)
        return True


SECRET_FILTER = SecretFilter()
_installed: set[str] = set()


def install_filter(*logger_names: str) -> None:
    """Attach the process-wide :data:`SECRET_FILTER` to these loggers (idempotent)."""
    for name in logger_names:
        if name not in _installed:
            logging.getLogger(name).addFilter(SECRET_FILTER)
            _installed.add(name)
