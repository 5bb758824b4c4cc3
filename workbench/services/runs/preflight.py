"""Preflight: the providers a run calls can be called, checked before the run exists.

``preflight(cfg)`` raises an :class:`InputError` naming the field to fix
(``providers.openai.api_key_env: the environment variable OPENAI_KEY is not set``) and returns
nothing otherwise. It calls no model. For each provider the run calls, other than the simulated
panel and a person (``manual``):

- the model names a provider litellm knows (``openai/...``, ``anthropic/...``, ``ollama/...``);
- a key named by ``api_key_env`` or ``key_keyring`` can be read now, whatever the server;
- with no key named and no ``api_base``, litellm reads the key itself: the variable it would read
  (``OPENAI_API_KEY`` for ``openai/...``) must be set. Providers whose credentials are not a plain
  key (cloud profiles and the like) are left to the provider;
- with no key named and an ``api_base`` (a server of one's own, usually on loopback), no key is
  needed: the gateway sends a placeholder, never an ambient cloud key;
- with an ``api_base``, something must answer there: a TCP connection within 2 s (nothing is
  sent), so an Ollama or llama.cpp server that is not running is found before the run starts.

``rwb run`` (every run of a batch), ``rwb resume``, the GUI's start and :meth:`Runner.execute` call
it, so a configuration that cannot work is refused before anything is spent. litellm is imported
only when a provider needs the model check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.core.errors import InputError
from workbench.services.llm.secrets import MissingKey, resolve_key

if TYPE_CHECKING:
    from workbench.core.runs.config import RunConfig
    from workbench.core.runs.providers import ProviderConfig

MANUAL = "manual"  # a person answers: no provider to check


def preflight(*configs: RunConfig) -> None:
    """Refuse the run (an :class:`InputError`) when a provider it calls cannot be called. Given
    the runs of a batch, each distinct provider is checked once."""
    checked: set[str] = set()
    for cfg in configs:
        for name in cfg.providers_used():
            provider = cfg.providers[name]
            if provider.simulated or provider.model == MANUAL or provider.model_dump_json() in checked:
                continue
            check_provider(provider)
            checked.add(provider.model_dump_json())


def check_provider(provider: ProviderConfig, *, probe_server: bool = True) -> None:
    """One provider's model and key, as :func:`preflight` checks them. ``probe_server=False``
    leaves out the connection to ``api_base`` (the panel checks keys as the user types, and
    sends nothing over the network for it)."""
    from workbench.services.llm.models import litellm_provider, missing_key_variables

    where = f"providers.{provider.name}"
    try:
        litellm_provider(provider.model, provider.api_base)
    except ValueError as exc:
        raise InputError(f"{where}.model", str(exc)) from None
    if provider.deployments:  # each server's model and key; one that is down is the Router's to route around
        for i, dep in enumerate(provider.deployments):
            at = f"{where}.deployments[{i}]"
            try:
                litellm_provider(dep.model or provider.model, dep.api_base)
            except ValueError as exc:
                raise InputError(f"{at}.model", str(exc)) from None
            env, ring, key_at = ((dep.key_env, dep.key_keyring, at) if dep.key_env or dep.key_keyring
                                 else (provider.key_env, provider.key_keyring, where))
            if env or ring:
                try:
                    resolve_key(env, ring)
                except MissingKey as exc:
                    raise InputError(f"{key_at}.{'api_key_env' if env else 'key_keyring'}", str(exc)) from None
        return
    if provider.api_base and probe_server:
        probe(provider.api_base, f"{where}.api_base")
    if provider.key_env or provider.key_keyring:
        try:
            resolve_key(provider.key_env, provider.key_keyring)
        except MissingKey as exc:
            raise InputError(f"{where}.{'api_key_env' if provider.key_env else 'key_keyring'}", str(exc)) from None
        return
    if provider.api_base:
        return
    missing = missing_key_variables(provider.model)
    if missing:
        names = missing[0] if len(missing) == 1 else "any of " + ", ".join(missing)
        raise InputError(f"{where}.api_key_env",
                         f"no key is named for {provider.model!r} and {names}, which litellm would read, "
                         "is not set: set it, or name the key with api_key_env or key_keyring")


PROBE_TIMEOUT_S = 2.0


def probe(api_base: str, field: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Something answers at ``api_base`` (a TCP connection, nothing sent), or InputError: a local
    server that is not running is found here, not by every call of the run failing."""
    import socket
    from urllib.parse import urlsplit

    url = urlsplit(api_base)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise InputError(field, f"{api_base!r} is not an http(s) URL")
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=timeout_s):
            pass
    except OSError as exc:
        reason = "connection refused" if isinstance(exc, ConnectionRefusedError) else \
            "no answer within %g s" % timeout_s if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise InputError(field, f"nothing answers at {api_base} ({reason}); start the server, or fix the "
                                "address") from None
