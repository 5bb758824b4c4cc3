"""What a run (or a batch) is expected to cost, before it starts (SPEC §6 "Budgets").

**Method.** The calls come from the protocol's own step generator, dry-run on the simulated panel
with the run's seed: every agent, whatever its provider, is answered by ``sim`` (its persona
parameters when it has them), so the plan has exactly the calls, keys, purposes and prompts the
generator makes, including those that depend on earlier replies (RCP's refinement rounds, CONS
challenge rounds, ARM re-queues, Echo checks and restorations), as the simulated panel answers
them. Nothing is written and no model is called. For a run on the simulated panel the plan is the
run itself; for a real model the data-dependent branches are the simulated panel's, so read them
as a likely figure, not a bound.

**Tokens.** A call to a model: its prompt at about 4 characters a token, plus 4 a message; its
completion at its output cap, the smallest of the call kind's cap (``AgentCall.meta["max_tokens"]``),
the provider's ``max_tokens`` and the agent's ``sampling.max_tokens`` — :data:`DEFAULT_COMPLETION_TOKENS`
when none is set. The completion side is therefore an upper bound. A simulated call counts the words the
simulated panel writes, as the run records them; a person's call counts nothing.

**Cost.** litellm's price map (:mod:`workbench.services.llm.prices`) for each provider's model; a
model with no price makes the cost unknown (None), never $0. A provider with ``batch_api`` is priced
at its batch price (SPEC §10): litellm's batch prices where its map has them, else half the price.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from workbench.core.errors import InputError
from workbench.core.protocols.shared.steps import AgentCall, AgentReply
from workbench.core.runs.config import Budget, RunConfig, protocol_generator
from workbench.core.runs.drive import drive
from workbench.core.runs.providers import SIM_MODEL

DEFAULT_COMPLETION_TOKENS = 1024  # a call whose output no cap bounds
CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4
MANUAL = "manual"
METHOD = ("dry run of the protocol's generator on the simulated panel (same seed); prompts at 4 characters "
          f"a token; completions at each call's max_tokens cap ({DEFAULT_COMPLETION_TOKENS} where none is set); "
          "prices from litellm's price map (a batch_api provider's batch price, else half its price)")


@dataclass(frozen=True)
class PlannedCall:
    key: str
    agent: str
    purpose: str
    provider: str
    model: str  # "sim", "manual" or a litellm model string
    prompt_tokens: int
    completion_tokens: int
    batch: bool = False  # its provider sends it through the batch API (priced at the batch price)


def price(model: str, prompt: int, completion: int, batch: bool) -> float | None:
    from workbench.services.llm import prices

    return prices.batch_cost(model, prompt, completion) if batch else prices.cost(model, prompt, completion)


def prompt_tokens(messages) -> int:
    return sum(math.ceil(len(str(m.get("content") or "")) / CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE for m in messages)


def completion_cap(cfg: RunConfig, call: AgentCall, provider: str) -> int:
    """The call's output cap: the smallest of the call kind's, the provider's and the agent's."""
    caps = [call.meta.get("max_tokens")]
    spec = cfg.providers.get(provider)
    caps.append(getattr(spec, "max_tokens", None))
    agent = cfg.agent(call.agent)
    caps.append(getattr(getattr(agent, "sampling", None), "max_tokens", None))
    given = [int(c) for c in caps if isinstance(c, int) and not isinstance(c, bool) and c > 0]
    return min(given) if given else DEFAULT_COMPLETION_TOKENS


def call_estimate(cfg: RunConfig, call: AgentCall, provider: str) -> tuple[int, float | None]:
    """One model call's expected tokens (prompt + its output cap) and their price (None: unknown)."""
    from workbench.services.llm import prices

    spec = cfg.providers.get(provider)
    model = spec.model if spec is not None else MANUAL
    if prices.free(model):
        return 0, 0.0
    p, c = prompt_tokens(call.messages), completion_cap(cfg, call, provider)
    return p + c, price(model, p, c, bool(getattr(spec, "batch_api", False)))


def plan_calls(cfg: RunConfig) -> list[PlannedCall]:
    """Every call the run would make, from its generator answered by the simulated panel."""
    from workbench.core.sim import SimPanel
    from workbench.services.runs.agents import AgentRouter

    router = AgentRouter(cfg)  # only for provider_of: which provider answers a call
    sim = SimPanel.for_config(cfg)  # a real model's agent may carry parameters sim does not read
    planned: list[PlannedCall] = []

    def answer(call: AgentCall) -> AgentReply:
        try:
            provider = router.provider_of(call)
        except KeyError:
            provider = MANUAL
        spec = cfg.providers.get(provider)
        model = MANUAL if spec is None or spec.model == MANUAL or provider == MANUAL else spec.model
        answered = sim.answer(call) if model != MANUAL else AgentReply(call.key, None, "a person answers")
        if model == SIM_MODEL:
            p = int(answered.meta.get("prompt_tokens") or 0)
            c = int(answered.meta.get("completion_tokens") or 0)
        elif model == MANUAL:
            p = c = 0
        else:
            p, c = prompt_tokens(call.messages), completion_cap(cfg, call, provider)
        planned.append(PlannedCall(call.key, call.agent, call.purpose, provider, model, p, c,
                                   bool(getattr(spec, "batch_api", False))))
        return answered

    drive(protocol_generator(cfg, run_id="estimate"), answer)
    return planned


def estimate(cfg: RunConfig) -> dict:
    """The run's expected calls, tokens and cost (see the module's docstring), with the design
    guardrails its config shows (SPEC §9: a threshold its votes meet far from its face value)."""
    from workbench.core.studies.guardrails import threshold_warnings

    out = _summarise(plan_calls(cfg), runs=1)
    warnings = threshold_warnings(cfg)
    return {**out, "warnings": warnings} if warnings else out


def estimate_document(data: dict) -> dict:
    """A SPEC §6 document's estimate: one run, or every run of a batch added up."""
    from workbench.core.runs.batch import expand_batch, is_batch
    from workbench.core.runs.config import parse_run_config

    if not is_batch(data):
        return estimate(parse_run_config(data))
    _, planned = expand_batch(data)
    calls = [c for run in planned for c in plan_calls(run.config)]
    return _summarise(calls, runs=len(planned))


def _summarise(calls: list[PlannedCall], *, runs: int) -> dict:

    providers: dict[str, dict] = {}
    for c in calls:
        p = providers.setdefault(c.provider, {"model": c.model, "calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                              **({"batch_api": True} if c.batch else {})})
        p["calls"] += 1
        p["prompt_tokens"] += c.prompt_tokens
        p["completion_tokens"] += c.completion_tokens
    unpriced = []
    for p in providers.values():
        p["cost_usd"] = price(p["model"], p["prompt_tokens"], p["completion_tokens"], bool(p.get("batch_api")))
        if p["cost_usd"] is None:
            unpriced.append(p["model"])
    kinds = Counter(c.model if c.model in (SIM_MODEL, MANUAL) else "model" for c in calls)
    prompt = sum(c.prompt_tokens for c in calls)
    completion = sum(c.completion_tokens for c in calls)
    out = {"calls": len(calls), "model_calls": kinds["model"], "simulated_calls": kinds[SIM_MODEL],
           "human_calls": kinds[MANUAL], "prompt_tokens": prompt, "completion_tokens": completion,
           "tokens": prompt + completion,
           "cost_usd": None if unpriced else round(sum(p["cost_usd"] for p in providers.values()), 6),
           "unpriced_models": sorted(set(unpriced)),
           "by_purpose": dict(sorted(Counter(c.purpose for c in calls).items())),
           "providers": providers, "method": METHOD}
    if runs != 1:
        out = {"runs": runs, **out}
    return out


def estimate_line(est: dict) -> str:
    """One line for people: ``≈ 36 calls · 21,400 tokens · $0.0042`` (cost unknown said so)."""
    cost = "cost unknown" if est.get("cost_usd") is None else f"${est['cost_usd']:.4f}"
    runs = f"{est['runs']} runs · " if est.get("runs") else ""
    unknown = f" ({', '.join(est['unpriced_models'])} has no price)" if est.get("unpriced_models") else ""
    return f"≈ {runs}{est['calls']:,} calls · {est['tokens']:,} tokens · {cost}{unknown}"


# ----- budgets refused up front ------------------------------------------------------------
def check_usd_cap(budget: Budget | None, cfgs: list[RunConfig], field: str = "budget") -> None:
    """A dollar cap needs every model the runs call to have a price, unless a token cap is given
    too: refused (``InputError`` naming ``<field>.max_usd`` and the model) before anything is spent."""
    if budget is None or budget.max_usd is None or budget.max_tokens is not None:
        return
    from workbench.services.llm import prices

    for cfg in cfgs:
        for name in cfg.providers_used():
            model = cfg.providers[name].model
            if not prices.known(model):
                raise InputError(f"{field}.max_usd", f"litellm has no price for model {model!r} (provider {name!r}), "
                                 f"so a dollar cap cannot be kept; add {field}.max_tokens, or drop max_usd")


def check_budget(cfg: RunConfig) -> None:
    check_usd_cap(cfg.budget, [cfg])


def check_document_budget(data: dict, cfgs: list[RunConfig]) -> None:
    """A batch: its ``budget`` over every run, and each run's own (from ``run_budget``)."""
    from workbench.core.runs.batch import batch_budget

    check_usd_cap(batch_budget(data), cfgs)
    for cfg in cfgs:
        check_usd_cap(cfg.budget, [cfg], "run_budget")
