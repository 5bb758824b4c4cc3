"""Prices from litellm's price map (bundled with the pinned litellm; never fetched at run time),
for estimates and budgets. litellm is imported on first use, through the gateway's loader.

A model litellm has no price for gives None: unknown, never $0 (the simulated panel is $0)."""

from __future__ import annotations

import functools

from workbench.core.runs.providers import SIM_MODEL

MANUAL_MODEL = "manual"


def free(model: str) -> bool:
    """The simulated panel and a person cost nothing, and need no price map."""
    return model in (SIM_MODEL, MANUAL_MODEL)


@functools.lru_cache(maxsize=256)
def known(model: str) -> bool:
    """litellm has a price for ``model`` (or it costs nothing)."""
    return free(model) or cost(model, 1000, 1000) is not None


def cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """The price of ``prompt_tokens`` in and ``completion_tokens`` out, or None when unknown."""
    if free(model):
        return 0.0
    from workbench.services.llm.gateway import _load

    litellm = _load()
    try:
        prompt, completion = litellm.cost_per_token(model=model, prompt_tokens=int(prompt_tokens),
                                                    completion_tokens=int(completion_tokens))
    except Exception:  # litellm raises for a model it does not map
        return None
    if prompt is None or completion is None:
        return None
    return float(prompt) + float(completion)


BATCH_DISCOUNT = 0.5  # where litellm's map has no batch price: half the price, as its own batch_cost_calculator


def batch_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """The price of a call sent through the provider's batch API (SPEC §10): litellm's batch prices
    (``input_cost_per_token_batches``, ``output_cost_per_token_batches``) where its map has them
    (OpenAI's models and some others: 473 of 4,241 entries in the pinned litellm), else half the
    regular price (OpenAI's and Anthropic's batch discount, and litellm's own rule); None when the
    model has no price at all (unknown, never $0)."""
    if free(model):
        return 0.0
    from workbench.services.llm.gateway import _load

    litellm = _load()
    try:
        info = litellm.get_model_info(model=model)
    except Exception:  # litellm raises for a model it does not map
        return None
    batch_in, batch_out = info.get("input_cost_per_token_batches"), info.get("output_cost_per_token_batches")
    if batch_in is not None and batch_out is not None:
        return float(batch_in) * int(prompt_tokens) + float(batch_out) * int(completion_tokens)
    regular = cost(model, prompt_tokens, completion_tokens)
    return None if regular is None else regular * BATCH_DISCOUNT
