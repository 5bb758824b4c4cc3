"""API keys in the OS keyring: whether there is one, and storing a key the user typed.

A provider names its key's keyring entry in ``key_keyring`` (see :mod:`.secrets`): the entry
``NAME`` is service :data:`~.secrets.KEYRING_SERVICE` (``resonance-workbench``), user ``NAME``.
The provider dialog stores a typed key here with :func:`store_key` and records only the entry's
name in the project; the key is never read back for display.

On a machine with no keyring service (a headless server, a container), ``keyring`` falls back
on its ``fail`` (or ``null``) backend: :func:`keyring_status` says so, and the dialog offers an
environment variable instead. ``keyring`` is imported lazily: finding its backends takes ~0.1 s.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.services.llm.secrets import KEYRING_SERVICE, keyring_entry


@dataclass(frozen=True)
class KeyringStatus:
    available: bool
    backend: str  # the backend's name, as keyring gives it
    reason: str  # why there is none, in words (empty when there is one)


def keyring_status() -> KeyringStatus:
    """Whether a usable keyring backend exists (not keyring's fail or null backend)."""
    try:
        import keyring
        from keyring.backends import fail, null

        backend = keyring.get_keyring()
    except Exception as exc:  # keyring missing or broken
        return KeyringStatus(False, "none", f"the keyring library cannot be used here ({type(exc).__name__})")
    name = f"{type(backend).__module__.removeprefix('keyring.backends.')}.{type(backend).__name__}"
    unusable = isinstance(backend, (fail.Keyring, null.Keyring))
    chained = getattr(backend, "backends", None)
    if chained is not None and not chained:
        unusable = True
    if unusable:
        return KeyringStatus(False, name, f"no OS keyring is available on this system (keyring backend: {name})")
    return KeyringStatus(True, name, "")


def store_key(entry: str, value: str) -> str:
    """Store ``value`` under the keyring entry ``entry`` (a provider's name); returns the entry, for
    the provider's ``key_keyring``. Raises RuntimeError, in words, when the keyring refuses it."""
    if not value:
        raise ValueError("no key to store")
    service, user = keyring_entry(entry)
    try:
        import keyring

        keyring.set_password(service, user, value)
    except Exception as exc:
        raise RuntimeError(f"the keyring refused the key for {service}/{user} ({type(exc).__name__})") from None
    return entry


def has_key(entry: str) -> bool:
    """Whether the keyring holds a key under ``entry`` (the key itself is not returned)."""
    service, user = keyring_entry(entry)
    try:
        import keyring

        return bool(keyring.get_password(service, user))
    except Exception:
        return False


__all__ = ["KEYRING_SERVICE", "KeyringStatus", "keyring_status", "store_key", "has_key"]
