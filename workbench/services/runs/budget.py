"""A run's spending caps, kept while its calls go out (SPEC §6 "Budgets").

The run's caps are its own ``budget`` (raised by ``rwb resume --max-usd/--max-tokens``, kept in
``runs.provenance_json["budget"]``) and, in a batch, the batch's ``budget`` less what the batch's
other runs have spent. Every call to a model passes :meth:`BudgetGate.acquire` before it is sent:

- it reserves the call's estimate (prompt at 4 characters a token plus the call's output cap, and
  their price) while the call is in flight;
- a call goes out only while ``spent + reserved < cap`` for every cap; otherwise it waits for the
  calls in flight to end (their actual spend replaces their reservation) and goes out if there is
  room then;
- once the cap is reached with nothing in flight, no call goes out again in this session: the run
  ends ``stopped_at_cap`` and every call not sent is issued on resume.

So the spend passes a cap by at most what the calls already in flight spend beyond their reservation,
and with one call at a time, by at most the last call.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Cap:
    name: str  # "budget.max_tokens", "batch budget.max_usd", ...
    kind: str  # "tokens" | "usd"
    limit: float  # the cap itself
    spent_before: float  # spent against it before this session (earlier sessions, the batch's other runs)
    scope: str = "run"  # "run" | "batch"

    @property
    def room(self) -> float:
        return self.limit - self.spent_before


class BudgetGate:
    def __init__(self, caps: list[Cap]):
        self.caps = caps
        self._cond = threading.Condition()
        self.spent = {"tokens": 0.0, "usd": 0.0}  # in this session
        self.reserved = {"tokens": 0.0, "usd": 0.0}
        self.in_flight = 0
        self.reached: Cap | None = None  # the cap that stopped the run
        self.refused = 0  # calls not sent because of it

    def __bool__(self) -> bool:
        return bool(self.caps)

    def _full(self) -> Cap | None:
        for cap in self.caps:
            if self.spent[cap.kind] + self.reserved[cap.kind] >= cap.room - 1e-12:
                return cap
        return None

    def acquire(self, tokens: float, usd: float | None, cancel: threading.Event) -> bool:
        """Reserve room for one call; False (send nothing) once a cap is reached with nothing in flight."""
        with self._cond:
            while True:
                if self.reached is not None or cancel.is_set():
                    self.refused += self.reached is not None
                    return False
                full = self._full()
                if full is None:
                    self.reserved["tokens"] += tokens
                    self.reserved["usd"] += usd or 0.0
                    self.in_flight += 1
                    return True
                if self.in_flight == 0:
                    self.reached = full
                    self.refused += 1
                    self._cond.notify_all()
                    return False
                self._cond.wait(0.25)

    def release(self, reserved_tokens: float, reserved_usd: float | None, tokens: float, usd: float | None) -> None:
        """A call ended: its reservation goes, what it spent stays."""
        with self._cond:
            self.reserved["tokens"] -= reserved_tokens
            self.reserved["usd"] -= reserved_usd or 0.0
            self.spent["tokens"] += tokens
            self.spent["usd"] += usd or 0.0
            self.in_flight -= 1
            self._cond.notify_all()

    def summary(self) -> dict:
        """Which caps held, what was spent against them, and the one reached."""
        out: dict = {"caps": [{"name": c.name, "limit": c.limit, "scope": c.scope,
                               "spent": _round(c.kind, c.spent_before + self.spent[c.kind])} for c in self.caps]}
        if self.reached is not None:
            out["stopped_at"] = self.reached.name
            out["scope"] = self.reached.scope
        return out


def _round(kind: str, value: float) -> float | int:
    return int(round(value)) if kind == "tokens" else round(value, 6)


def caps_for(budget: dict | None, spent_tokens: float, spent_usd: float, *, prefix: str = "budget",
             scope: str = "run") -> list[Cap]:
    """The caps of a ``{"max_usd", "max_tokens"}`` budget, given what was spent against it before."""
    caps: list[Cap] = []
    if not budget:
        return caps
    if budget.get("max_tokens") is not None:
        caps.append(Cap(f"{prefix}.max_tokens", "tokens", float(budget["max_tokens"]), spent_tokens, scope))
    if budget.get("max_usd") is not None:
        caps.append(Cap(f"{prefix}.max_usd", "usd", float(budget["max_usd"]), spent_usd, scope))
    return caps


def describe(cap: Cap, spent: float) -> str:
    if cap.kind == "tokens":
        return f"{cap.name} {int(cap.limit):,} reached: {int(round(spent)):,} tokens spent"
    return f"{cap.name} ${cap.limit:g} reached: ${spent:.4f} spent"


def run_budget_of(run) -> dict | None:
    """A run's cap: the one a resume raised it to, else its configuration's ``budget``."""
    if isinstance(run.provenance, dict) and "budget" in run.provenance:
        return run.provenance["budget"]
    return (run.config or {}).get("budget")


def batch_budget_of(store, batch_id: str | None) -> dict | None:
    if batch_id is None:
        return None
    from workbench.core.project import runs as run_rows

    data = run_rows.batch_config(store, batch_id) or {}
    return data.get("budget")


def budget_gate(store, run) -> BudgetGate | None:
    """The gate for a run about to go on: its own caps and its batch's, less what each has spent."""
    from workbench.core.project.spend import batch_spend, run_spend

    own, whole = run_budget_of(run), batch_budget_of(store, run.batch_id)
    study = study_budget_of(store, getattr(run, "study_id", None))
    if not own and not whole and not study:
        return None
    spent = run_spend(store, run.id)
    caps = caps_for(own, spent.tokens, spent.usd)
    if whole:
        others = batch_spend(store, run.batch_id, besides=run.id)
        caps += caps_for(whole, spent.tokens + others.tokens, spent.usd + others.usd, prefix="batch budget",
                         scope="batch")
    if study:  # SPEC §9: a study's budget caps the whole study, all its runs together
        from workbench.core.project.spend import study_spend

        others = study_spend(store, run.study_id, besides=run.id)
        caps += caps_for(study, spent.tokens + others.tokens, spent.usd + others.usd, prefix="study budget",
                         scope="study")
    return BudgetGate(caps) if caps else None


def study_budget_of(store, study_id: str | None) -> dict | None:
    """A study's cap on all its runs (its file's ``budget``, or what ``rwb study resume`` raised it to)."""
    if study_id is None:
        return None
    from workbench.core.project.studies import get_study

    study = get_study(store, study_id)
    return (study.document.get("budget") or None) if study is not None else None


def check_run_budget(run, cfg) -> None:
    """The run's cap as it stands (raised or configured), refused when a dollar cap cannot be kept."""
    from workbench.core.runs.config import Budget
    from workbench.services.runs.estimate import check_usd_cap

    own = run_budget_of(run)
    if own:
        check_usd_cap(Budget.model_validate(own), [cfg])
