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

import os
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
    structured: StructuredProbe | None = None  # for an api_base server: which response_format it honours


def provider_config(record: dict | ProviderConfig) -> ProviderConfig:
    """A ``providers`` row (``key_env``...) or a run configuration's entry, as a ProviderConfig."""
    if isinstance(record, ProviderConfig):
        return record
    from workbench.core.project.panel_edits import check_provider_record

    return ProviderConfig.model_validate({("api_key_env" if k == "key_env" else k): v
                                          for k, v in check_provider_record(dict(record)).items() if v is not None})


def probe_provider(record: dict | ProviderConfig, *, api_key: str | None = None,
                   cancel: threading.Event | None = None, max_tokens: int = PROBE_MAX_TOKENS,
                   structured: bool = False) -> ProbeResult:
    """One short chat call to the provider. Never raises: a bad configuration is a failed probe.
    ``structured``: for a server at an ``api_base`` that answered, also try both structured-output
    forms (:func:`probe_structured`) and propose one in ``result.structured``."""
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
        forms = None
        if structured and config.api_base and not (cancel is not None and cancel.is_set()):
            forms = probe_structured(config, api_key=api_key, cancel=cancel)
        return ProbeResult(True, f"OK: replied in {latency:.0f} ms", latency, result.text, structured=forms)
    return ProbeResult(False, result.error or result.status, result.latency_ms, None, result.error_kind)


# The variables litellm reads a cloud provider's key from, by the model's prefix (as
# ``litellm.validate_environment`` names them in the pinned release; tests/services checks they
# agree), so that a missing key is said at once, without importing litellm (seconds) or sending
# anything. A prefix not listed is left to the probe.
KEY_VARIABLES = {"openai": ("OPENAI_API_KEY",), "anthropic": ("ANTHROPIC_API_KEY",),
                 "mistral": ("MISTRAL_API_KEY",), "groq": ("GROQ_API_KEY",), "deepseek": ("DEEPSEEK_API_KEY",),
                 "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY"), "cohere": ("COHERE_API_KEY",),
                 "openrouter": ("OPENROUTER_API_KEY",), "xai": ("XAI_API_KEY",),
                 "together_ai": ("TOGETHERAI_API_KEY",)}


def key_variables(model: str) -> tuple[str, ...]:
    """The variables litellm would read ``model``'s key from, when :data:`KEY_VARIABLES` knows them."""
    prefix = model.split("/", 1)[0] if "/" in model else ("openai" if model.startswith("gpt-") else "")
    return KEY_VARIABLES.get(prefix, ())


def missing_credentials(record: dict | ProviderConfig, *, api_key: str | None = None,
                        keyring: bool = True) -> str | None:
    """Why a test of the provider cannot work, found at once with neither litellm nor the network:
    a key it names that cannot be read, or a cloud model whose own key variable is not set. None:
    nothing found, the probe decides (a typed ``api_key`` is a key). ``keyring`` False: a keyring
    entry is not looked up (its backend may be slow to answer: the GUI thread leaves it to the probe)."""
    try:
        config = provider_config(record)
    except InputError as exc:
        return f"The provider is not valid: {exc}"
    if config.model in (SIM_MODEL, MANUAL) or api_key or config.deployments:
        return None
    from workbench.services.llm.secrets import MissingKey, resolve_key

    if config.key_env or config.key_keyring:
        if config.key_keyring and not keyring:
            return None
        try:
            resolve_key(config.key_env, config.key_keyring)
        except MissingKey as exc:
            return f"No key: {exc}. Set it before starting the workbench, or store the key in the keyring."
        return None
    if config.api_base:  # a server of one's own needs no key
        return None
    names = key_variables(config.model)
    if names and not any(os.environ.get(n) for n in names):
        which = names[0] if len(names) == 1 else " or ".join(names)
        return (f"No key: {config.model} reads its key from {which}, which is not set. Set it before starting "
                "the workbench, or name where the key is (an environment variable, or the keyring).")
    return None


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


# ----- which structured-output form the server honours -------------------------------------------
STRUCTURED_PROMPT = "Say hello in one word."
STRUCTURED_SCHEMA = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"],
                     "additionalProperties": False}
STRUCTURED_MAX_TOKENS = 24
FORMS = ("json_schema", "json_object")


@dataclass(frozen=True)
class StructuredProbe:
    """What each form of ``response_format`` gave (form -> (obeyed, what came back)), and the form
    to propose: the first that obeyed (``json_schema`` before ``json_object``), else ``off``."""

    results: dict[str, tuple[bool, str]]
    proposed: str

    @property
    def message(self) -> str:
        lines = [f"{form}: {'obeyed the schema' if ok else 'not obeyed'} ({detail})"
                 for form, (ok, detail) in self.results.items()]
        return "\n".join([*lines, f"Proposed structured output: {self.proposed}"])


def obeys_probe_schema(text: str | None) -> bool:
    """The tiny schema's reply: one JSON object whose only key is ``word``, a string."""
    import json

    try:
        data = json.loads((text or "").strip())
    except ValueError:
        return False
    return isinstance(data, dict) and set(data) == {"word"} and isinstance(data["word"], str)


def probe_structured(record: dict | ProviderConfig, *, api_key: str | None = None,
                     cancel: threading.Event | None = None) -> StructuredProbe:
    """For a server at an ``api_base``: one tiny schema call per form (``json_schema``, then
    ``json_object``), no retries, and the form whose reply obeyed the schema. Blocking: a worker's
    job. A prompt that does not spell out the JSON, so a server that ignores the schema fails."""
    config = provider_config(record)
    from workbench.services.llm.gateway import Gateway

    one_try = config.model_copy(update={"max_retries": 0})
    gateway = Gateway({config.name: one_try}, keys={config.name: api_key} if api_key else None)
    results: dict[str, tuple[bool, str]] = {}
    for form in FORMS:
        result = gateway.call(config.name, [{"role": "user", "content": STRUCTURED_PROMPT}],
                              sampling={"max_tokens": STRUCTURED_MAX_TOKENS}, cancel=cancel,
                              schema=("probe", STRUCTURED_SCHEMA), structured_output=form)
        if not result.ok:
            results[form] = (False, (result.error or result.status)[:200])
            continue
        ok = obeys_probe_schema(result.text)
        results[form] = (ok, (result.text or "")[:120])
    proposed = next((form for form in FORMS if results[form][0]), "off")
    return StructuredProbe(results, proposed)
