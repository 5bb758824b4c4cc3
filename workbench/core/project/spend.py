"""What runs have spent, for budgets (SPEC §6 "Budgets"), and how often the reply cache answered.

Spend counts the calls that reached a model: a cache hit or a replayed reply spent nothing. A call
whose server reported no token usage counts about one token per 4 characters of its request and
reply (the same rule the runner applies while the run goes on, :func:`fallback_tokens`), so a
token cap holds on servers that report none. A call of unknown price adds nothing to the dollars
spent and is counted in ``unknown_cost_calls``.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.project import _sql
from workbench.core.project.store import Store

CHARS_PER_TOKEN = 4
_ANSWERED = "status IN ('ok', 'invalid')"
_SPENT = (f"SELECT coalesce(sum(coalesce(total_tokens, prompt_tokens + completion_tokens, "
          f"CASE WHEN {_ANSWERED} THEN (length(coalesce(request_json, '')) + length(coalesce(reply_text, ''))) "
          f"/ {CHARS_PER_TOKEN} ELSE 0 END)), 0), coalesce(sum(cost_usd), 0), "
          f"coalesce(sum(cost_usd IS NULL AND {_ANSWERED}), 0), count(*) "
          "FROM llm_calls WHERE cached = 0 AND model IS NOT 'manual' AND ")


@dataclass(frozen=True)
class Spend:
    tokens: int = 0
    usd: float = 0.0
    unknown_cost_calls: int = 0  # answered calls whose price is unknown: not in ``usd``
    calls: int = 0

    def to_dict(self) -> dict:
        return {"tokens": self.tokens, "usd": round(self.usd, 6), "unknown_cost_calls": self.unknown_cost_calls}


def fallback_tokens(request_json: str | None, reply_text: str | None) -> int:
    """A call's tokens when its server reported none: about 4 characters a token."""
    return (len(request_json or "") + len(reply_text or "")) // CHARS_PER_TOKEN


def _spend(store: Store, where: str, params: tuple) -> Spend:
    tokens, usd, unknown, calls = _sql.tuples(store, _SPENT + where, params)[0]
    return Spend(int(tokens), float(usd), int(unknown), int(calls))


def run_spend(store: Store, run_id: str) -> Spend:
    return _spend(store, "run_id = ?", (run_id,))


def batch_spend(store: Store, batch_id: str, *, besides: str | None = None) -> Spend:
    """The spend of every run of the batch (but ``besides``, the run counted on its own)."""
    return _spend(store, "run_id IN (SELECT id FROM runs WHERE batch_id = ? AND id IS NOT ?)", (batch_id, besides))


def study_spend(store: Store, study_id: str, *, besides: str | None = None) -> Spend:
    """The spend of every run of the study (but ``besides``, the run counted on its own)."""
    return _spend(store, "run_id IN (SELECT id FROM runs WHERE study_id = ? AND id IS NOT ?)", (study_id, besides))


def cache_counts(store: Store, run_id: str) -> tuple[int, int]:
    """(hits, calls): the run's calls answered by the reply cache, of its calls that went through the
    gateway (not the simulated panel, a person or a replay)."""
    hits, calls = _sql.tuples(store, "SELECT coalesce(sum(cost_source = 'cache'), 0), count(*) FROM llm_calls "
                                     "WHERE run_id = ? AND model NOT IN ('sim', 'manual') "
                                     "AND coalesce(cost_source, '') NOT LIKE 'replay of %'", (run_id,))[0]
    return int(hits), int(calls)


# ----- caps raised on resume (rwb resume --max-usd/--max-tokens) ----------------------------------
def set_run_budget(store: Store, run_id: str, budget: dict) -> None:
    """The run's cap from now on, kept in ``runs.provenance_json["budget"]`` (its configuration
    stays as it was run)."""
    from workbench.core.project import runs

    run = runs.get_run(store, run_id)
    runs.set_provenance(store, run_id, {**(run.provenance or {}), "budget": budget})


def set_batch_budget(store: Store, batch_id: str, budget: dict | None = None, run_budget: dict | None = None) -> None:
    """The batch's caps from now on: ``budget`` over the whole batch, ``run_budget`` for runs it has yet to create."""
    from workbench.core.project import runs

    data = dict(runs.batch_config(store, batch_id) or {})
    if budget is not None:
        data["budget"] = budget
    if run_budget is not None:
        data["run_budget"] = run_budget
    _sql.update(store, "batches", batch_id, {"config_json": data})
