"""API keys for the gateway: where they are looked up, and how they are kept out of every text.

A provider names where its key lives, never the key (see ``ProviderConfig``):

- ``key_env``: the name of an environment variable, read at call time;
- ``key_keyring``: an OS keyring entry, read at call time with ``keyring.get_password``.
  ``"NAME"`` means service :data:`KEYRING_SERVICE` (``resonance-workbench``) and user ``NAME``,
  so ``keyring set resonance-workbench openai`` stores the key for ``key_keyring: "openai"``.
  ``"SERVICE/USER"`` names both (split at the last ``/``).

When both are named the environment variable wins if it is set. Keys never leave this module
except as the ``api_key`` argument of the request itself: :func:`scrub` removes them from every
text the gateway returns, and :class:`SecretFilter` from every log record of the gateway's and
litellm's loggers.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable
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


def scrub(text: str | None, secrets: Iterable[str | None]) -> str | None:
    """``text`` with every occurrence of every secret (8+ characters) replaced by ``[REDACTED]``.

    Longer secrets are replaced first, so a key that contains another is removed whole.
    """
    if not text:
        return text
    for secret in sorted({s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


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
