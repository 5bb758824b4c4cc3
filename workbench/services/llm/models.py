"""What litellm knows about a model string, asked without calling it.

The gateway module is the only one that imports litellm; these functions borrow its loader
(``gateway._load``: the import, with its debug output off and the bundled price map), so they
pay the import (seconds) only when a real provider is checked, never for the simulated panel.
"""

from __future__ import annotations

_KEY_SUFFIX = "_API_KEY"


def _litellm():
    from workbench.services.llm.gateway import _load

    return _load()


def litellm_provider(model: str, api_base: str | None = None) -> str:
    """The provider litellm sends ``model`` to (``openai`` for ``openai/any-model``).

    Raises :class:`ValueError`, in words, when litellm cannot tell: the call would fail the same way.
    """
    litellm = _litellm()
    try:
        _model, provider, _key, _base = litellm.get_llm_provider(model=model, api_base=api_base)
    except Exception:  # litellm raises its BadRequestError, naming its provider list
        raise ValueError(f"litellm does not know which provider serves {model!r}: prefix the model with "
                         "its provider, e.g. openai/<model> (also for an OpenAI-compatible local server), "
                         "anthropic/<model> or ollama/<model>") from None
    return provider


def missing_key_variables(model: str) -> list[str]:
    """The environment variables litellm would read ``model``'s API key from, when none of them is set.

    Empty when one is set, and also when the provider's credentials are not a plain API key
    (cloud profiles, a local server's address, ...): those are left to the provider to judge.
    """
    litellm = _litellm()
    try:
        found = litellm.validate_environment(model=model)
    except Exception:
        return []
    missing = [name for name in found.get("missing_keys") or [] if isinstance(name, str)]
    if found.get("keys_in_environment") or not missing or not all(n.endswith(_KEY_SUFFIX) for n in missing):
        return []
    return missing
