"""Test a provider's connection: one short call through the gateway, and its outcome in words.

    result = probe_provider({"name": "local", "model": "ollama/llama3.1",
                             "api_base": "http://127.0.0.1:11434"}, cancel=event)
    result.message  # "OK: replied in 412 ms", or the provider's own error text

Blocking (seconds): run it on a worker, never on the GUI thread. One attempt (no retries), a
few output tokens. A key typed but not yet stored can be passed as ``api_key``; otherwise the
provider's key is looked up where it names it, as for any call. :func:`key_problem` is the
preflight's key check without the network, for checking a provider as the user types.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from workbench.core.errors import InputError
from workbench.core.runs.providers import SIM_MODEL, ProviderConfig

PROBE_PROMPT = "Reply with the single word OK."
PROBE_MAX_TOKENS = 5
MANUAL = "manual"


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    message: str  # "OK: replied in N ms", or the provider's error text
    latency_ms: float | None = None
    reply: str | None = None
    error_kind: str | None = None


def provider_config(record: dict | ProviderConfig) -> ProviderConfig:
    """A ``providers`` row (``key_env``...) or a run configuration's entry, as a ProviderConfig."""
    if isinstance(record, ProviderConfig):
        return record
    from workbench.core.project.panel_edits import check_provider_record

    return ProviderConfig.model_validate({("api_key_env" if k == "key_env" else k): v
                                          for k, v in check_provider_record(dict(record)).items() if v is not None})


def probe_provider(record: dict | ProviderConfig, *, api_key: str | None = None,
                   cancel: threading.Event | None = None, max_tokens: int = PROBE_MAX_TOKENS) -> ProbeResult:
    """One short chat call to the provider. Never raises: a bad configuration is a failed probe."""
    try:
        config = provider_config(record)
    except InputError as exc:
        return ProbeResult(False, f"The provider is not valid: {exc}", error_kind="bad_request")
    if config.model == SIM_MODEL:
        return ProbeResult(True, "OK: the simulated panel answers offline; there is nothing to connect to.")
    if config.model == MANUAL:
        return ProbeResult(True, "OK: a person answers for this provider; there is nothing to connect to.")
    from workbench.services.llm.gateway import Gateway

    one_try = config.model_copy(update={"max_retries": 0})
    gateway = Gateway({config.name: one_try}, keys={config.name: api_key} if api_key else None)
    result = gateway.call(config.name, [{"role": "user", "content": PROBE_PROMPT}], max_tokens=max_tokens,
                          cancel=cancel)
    if result.ok:
        latency = result.latency_ms or 0.0
        return ProbeResult(True, f"OK: replied in {latency:.0f} ms", latency, result.text)
    return ProbeResult(False, result.error or result.status, result.latency_ms, None, result.error_kind)


def key_problem(record: dict | ProviderConfig) -> str | None:
    """What the preflight would say about the provider's model and key, sending nothing over the
    network (no probe of ``api_base``); None when it would pass. The simulated panel and a
    person (``manual``) need nothing."""
    try:
        config = provider_config(record)
    except InputError as exc:
        return str(exc)
    if config.model in (SIM_MODEL, MANUAL):
        return None
    from workbench.services.runs.preflight import check_provider

    try:
        check_provider(config, probe_server=False)
    except InputError as exc:
        return exc.message
    return None
