"""An in-memory keyring backend for tests: ``with installed_keyring() as kr: ...`` (or the fixtures
that use it) makes ``keyring`` store passwords in ``kr.passwords`` and puts the previous backend
back afterwards. ``fail_keyring()`` installs keyring's own fail backend, as on a headless machine."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import keyring
from keyring.backend import KeyringBackend
from keyring.backends import fail


class MemoryKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.passwords.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.passwords[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.passwords.pop((service, username), None)


@contextlib.contextmanager
def installed(backend: KeyringBackend) -> Iterator[KeyringBackend]:
    previous = keyring.get_keyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


def memory_keyring():
    return installed(MemoryKeyring())


def fail_keyring():
    return installed(fail.Keyring())
