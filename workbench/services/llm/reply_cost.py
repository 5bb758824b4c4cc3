"""What a reply cost, from litellm's price map (the pinned litellm's own, never fetched at run
time): the gateway prices each reply here. A model the map lacks costs unknown, never $0."""

from __future__ import annotations

import threading
from typing import Any

from workbench.services.llm.result import UNKNOWN_COST

# Model names litellm's price map does not have. The map is the pinned litellm's own (never
# fetched at run time, and nothing registers prices in it), so a name missing once is missing for
# the whole process. Asking again cost each call of a local model about 0.6 ms of litellm's name
# matching, with the interpreter lock held: at 32 calls in flight, 20 ms a wave.
_UNMAPPED: set[str] = set()
_UNMAPPED_LOCK = threading.Lock()


def _remember_if_unmapped(model: object, exc: Exception) -> None:
    if isinstance(model, str) and "isn't mapped" in str(exc):  # litellm's wording for a missing name
        with _UNMAPPED_LOCK:
            _UNMAPPED.add(model)


def remember_unmapped(litellm: Any) -> None:
    """litellm prices every reply itself too, for its logging (``litellm.response_cost_calculator``,
    its one caller being that logging). For a model its map lacks that raises, and the logging
    formats the traceback: about 1 ms a call of a local model, interpreter lock held. The names it
    could not price are remembered, and for them it is answered None at once: what its logging
    makes of the exception. Our own price of the reply is :func:`reply_cost`'s."""
    original = litellm.response_cost_calculator

    def response_cost_calculator(**kwargs: Any) -> Any:
        model = kwargs.get("model")
        if model in _UNMAPPED and not kwargs.get("custom_pricing") and not kwargs.get("base_model"):
            return None
        try:
            return original(**kwargs)
        except Exception as exc:
            _remember_if_unmapped(model, exc)
            raise

    litellm.response_cost_calculator = response_cost_calculator


def reply_cost(litellm: Any, response: Any, configured_model: str) -> tuple[float | None, str]:
    """litellm's price for a reply, or (None, "unknown"); an unmapped model is never $0. The
    model the server says it served is tried first (a dated version has its own price), then the
    configured one."""
    provider = (getattr(response, "_hidden_params", None) or {}).get("custom_llm_provider")
    served = getattr(response, "model", None)
    candidates = []
    if served:
        candidates.append(f"{provider}/{served}" if provider and not served.startswith(f"{provider}/") else served)
    candidates.append(configured_model)
    for model in dict.fromkeys(candidates):
        if model in _UNMAPPED:
            continue
        try:
            cost = litellm.completion_cost(completion_response=response, model=model)
        except Exception as exc:  # noqa: BLE001 - litellm raises for a model it cannot price
            _remember_if_unmapped(model, exc)
            continue
        if cost is not None:
            return float(cost), f"litellm:{model}"
    return None, UNKNOWN_COST
