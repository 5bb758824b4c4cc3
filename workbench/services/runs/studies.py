"""Studies, run (SPEC §9): every run of every arm through one :class:`Runner` in this process,
rule-only arms re-classified from the calls of the arm they otherwise equal, each result stored
with its metrics as it comes, and a study killed at any moment resumed to the same results.

Creating a study stores its document and plan, then creates every run its arms need (each
"interrupted", so resumable) before the first one runs. Running it takes the results replicate by
replicate (so a study stopped half way holds whole pairs), item by item, the arms that run first
and then the rule-only arms, whose sources are then done:

- an arm's own run is executed (or resumed) to its end, and its result stored with its metrics;
- a rule-only arm's result is the protocol's steps replayed over its source's stored replies with
  the arm's settings (``core.studies.replay``): a classification variant of the source run, no
  call made, the reused calls counted; when the replay needs a call the source never made as
  asked, the arm makes a run of its own for that result, and the study says so.

A run left interrupted (cancelled, waiting for a person) or stopped at the study's budget stops
the study where it is; ``rwb study resume`` goes on from there. A run stopped at its own budget,
a degraded or a failed run does not stop it. A resume also re-runs a degraded run's failed calls
(as a batch's resume does) and re-classifies what depends on it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

from workbench.core.errors import WorkbenchError
from workbench.core.project import runs as run_rows
from workbench.core.project import studies as rows
from workbench.core.project.run_view import RunView
from workbench.core.project.store import Store, utc_now
from workbench.core.studies.measure import run_metrics
from workbench.core.studies.spec import Arm, Study, StudyItem, parse_study

# A result stands once its run is over: these statuses give results (a failed run's is empty).
OVER = ("completed", "degraded", "failed")


def new_study_id() -> str:
    return f"study-{utc_now()[:19].replace(':', '').replace('-', '')}-{os.urandom(3).hex()}"


@dataclass(frozen=True)
class StudyProgress:
    study_id: str
    done: int  # results stored
    total: int  # results the study will hold
    arm: str
    item: str
    replicate: int
    message: str = ""


def load(store: Store, study_id: str) -> Study:
    row = rows.get_study(store, study_id)
    if row is None:
        raise WorkbenchError(f"There is no study {study_id!r} in this project.")
    return parse_study(row.document)


def check_before_spending(study: Study) -> None:
    """Dollar caps that can be kept and providers that can be called, for every arm (as
    ``rwb study run`` checks them before anything is written)."""
    from workbench.core.runs.config import Budget
    from workbench.services.runs.estimate import check_usd_cap
    from workbench.services.runs.preflight import preflight

    configs = [study.config(arm, study.items[0], 0) for arm in study.arms]
    check_usd_cap(Budget.model_validate(study.budget) if study.budget else None, configs)
    for cfg in configs:
        check_usd_cap(cfg.budget, [cfg], "base.budget")
    preflight(*configs)


class StudyRunner:
    """Creates, runs and resumes studies in ``store`` with one ``runner`` (a ``Runner``) for every run."""

    def __init__(self, store: Store, runner, *, on_progress: Callable[[StudyProgress], None] | None = None,
                 cancel: threading.Event | None = None):
        self.store = store
        self.runner = runner
        self.on_progress = on_progress or (lambda _p: None)
        self.cancel = cancel or getattr(runner, "cancel", None) or threading.Event()

    # ----- creating ---------------------------------------------------------------------------------
    def create(self, study: Study, *, study_id: str | None = None, warnings: list[str] | None = None) -> str:
        study_id = study_id or new_study_id()
        rows.create_study(self.store, study_id, study.name, study.document, {**study.plan(), "warnings": warnings or []})
        self.complete(study_id, study)
        return study_id

    def complete(self, study_id: str, study: Study | None = None) -> Study:
        """Create the runs the study's arms need that it does not hold yet (all of them for a new
        study; those a kill kept it from creating)."""
        study = study or load(self.store, study_id)
        made = {(r.arm, r.item, r.replicate) for r in rows.study_runs(self.store, study_id)}
        for r, item, arm in study.units():
            if not arm.rule_only and (arm.name, item.id, r) not in made:
                self._create_run(study_id, study, arm, item, r)
        return study

    def _create_run(self, study_id: str, study: Study, arm: Arm, item: StudyItem, r: int) -> run_rows.Run:
        run_id = self.runner.create(study.config(arm, item, r), label=study.label_of(arm, item, r), replicate=r,
                                    study=(study_id, arm.name, item.id))
        return run_rows.get_run(self.store, run_id)

    # ----- running ----------------------------------------------------------------------------------
    def run(self, study_id: str) -> dict:
        """Take every result the study lacks, in order; returns the study's summary."""
        study = self.complete(study_id)
        by_unit = {(r.arm, r.item, r.replicate): r for r in rows.study_runs(self.store, study_id)}
        done = {(x.arm, x.item, x.replicate): x for x in rows.results(self.store, study_id)}
        refreshed: set[tuple[str, str, int]] = set()  # runs executed now: what was re-classified from them is redone
        total = study.runs
        order = sorted(study.arms, key=lambda a: (a.rule_only, a.index))
        for r in range(study.replicates):
            for item in study.items:
                for arm in order:
                    unit = (arm.name, item.id, r)
                    if self.cancel.is_set():
                        return self.summary(study_id)
                    if arm.rule_only and unit not in by_unit:
                        source = (arm.source, item.id, r)
                        if unit in done and source not in refreshed:
                            continue
                        run = self._reclassify(study_id, study, arm, item, r, by_unit.get(source))
                        if run is None:
                            done[unit] = True
                            self._progress(study_id, len(done), total, arm, item, r, "re-classified")
                            continue
                        by_unit[unit] = run
                    run = run_rows.get_run(self.store, by_unit[unit].id)
                    if run.status != "completed" or unit not in done:
                        if run.status != "completed":
                            self._progress(study_id, len(done), total, arm, item, r, "running")
                            summary = self.runner.execute(run.id)
                            refreshed.add(unit)
                            run = run_rows.get_run(self.store, run.id)
                            if summary.get("status") == "interrupted" or _stopped_by_study_cap(summary):
                                return self.summary(study_id)
                        if run.status in OVER:
                            rows.put_result(self.store, study_id, arm.name, item.id, r, run.id, run.status,
                                            run_metrics(RunView(self.store, run.id)) if run.status != "failed" else {})
                            done[unit] = True
                            self._progress(study_id, len(done), total, arm, item, r, run.status)
        return self.summary(study_id)

    def _reclassify(self, study_id: str, study: Study, arm: Arm, item: StudyItem, r: int,
                    source: run_rows.Run | None) -> run_rows.Run | None:
        """The rule-only arm's result re-classified from its source's run (None: stored); or, when
        that needs a call the source never made as asked, the arm's own run for it (created)."""
        from workbench.core.runs.provenance import stored_prompts
        from workbench.core.studies.replay import replay

        source = run_rows.get_run(self.store, source.id) if source is not None else None
        cfg = study.config(arm, item, r)
        why = "its source run did not finish"
        if source is not None and source.status in OVER:
            replayed = replay(cfg, stored_prompts(cfg, source.provenance), rows.stored_calls(self.store, source.id),
                              run_id=source.id)
            if replayed.summary is not None:
                summary = {**source.summary, **replayed.summary, "reclassified_from": source.id}
                dump = cfg.model_dump(mode="json", by_alias=True)
                metrics = run_metrics(RunView(self.store, source.id, config=dump, summary=summary), cfg.protocol)
                rows.put_reclassified(self.store, study_id, arm.name, item.id, r, source.id, source.status,
                                      _variant(study, arm, dump, summary), metrics, replayed.reused)
                return None
            why = replayed.needs_call
        run = self._create_run(study_id, study, arm, item, r)
        run_rows.set_provenance(self.store, run.id, {**(run.provenance or {}), "rule_only_ran": why})
        return run

    def _progress(self, study_id: str, done: int, total: int, arm: Arm, item: StudyItem, r: int, message: str) -> None:
        self.on_progress(StudyProgress(study_id, done, total, arm.name, item.id, r, message))

    # ----- what it holds ----------------------------------------------------------------------------
    def summary(self, study_id: str) -> dict:
        return study_summary(self.store, study_id)


def _variant(study: Study, arm: Arm, dump: dict, summary: dict) -> dict:
    """The classification variant a rule-only arm's result is (``core.project.variants``)."""
    from workbench.core import registry
    from workbench.core.studies.paths import changed_paths

    rules = registry.get(arm.protocol).metrics.rules
    settings = {p: _at(dump, p) for p in changed_paths({}, dump) if any(_matches(p, rule) for rule in rules)}
    rounds = [r for r in summary.get("rounds") or [] if isinstance(r, dict)]
    states = list(rounds[-1].get("states") or []) if rounds else []
    round_no = int(rounds[-1].get("round") or len(rounds)) if rounds else 1
    return {"label": f"{study.name or 'study'} · {arm.name}", "settings": settings, "states": states,
            "round_no": round_no, "summary": summary}


def _matches(path: str, rule: str) -> bool:
    from workbench.core.studies.paths import matches

    return matches(path, rule)


def _at(document: object, path: str) -> object:
    from workbench.core.studies.paths import split

    for part in split(path):
        document = document[int(part)] if isinstance(document, list) else document[part]
    return document


def _stopped_by_study_cap(summary: dict) -> bool:
    return summary.get("status") == "stopped_at_cap" and (summary.get("budget") or {}).get("scope") == "study"


# ----- the summary ------------------------------------------------------------------------------------

def study_summary(store: Store, study_id: str) -> dict:
    """``rwb study run``'s summary: each arm's results (``runs``), calls made and reused, status."""
    row = rows.get_study(store, study_id)
    if row is None:
        raise WorkbenchError(f"There is no study {study_id!r} in this project.")
    plan = row.plan
    units = len(plan.get("items") or []) * int(plan.get("replicates") or 0)
    counts = rows.arm_counts(store, study_id)
    calls = rows.arm_calls(store, study_id)
    arms = []
    for arm in plan["arms"]:
        c = counts.get(arm["name"], rows.ArmCounts())
        entry = {"name": arm["name"], "runs": c.results, "calls": calls.get(arm["name"], 0),
                 "calls_reused": c.calls_reused, "status": _status(c, units),
                 "changes": arm["changes"], "dropped": arm["dropped"], "tags": arm["tags"],
                 "rule_only_of": arm["rule_only_of"]}
        if c.ran:
            entry["ran_for"] = {"results": c.ran, "why": c.ran_why}
        arms.append(entry)
    statuses = [a["status"] for a in arms]
    status = next((s for s in ("stopped_at_cap", "interrupted", "failed", "degraded") if s in statuses), "completed")
    return {"study_id": study_id, "study": row.name, "status": status, "baseline": plan.get("baseline"),
            "runs": sum(a["runs"] for a in arms), "planned": units * len(arms), "calls": sum(a["calls"] for a in arms),
            "calls_reused": sum(a["calls_reused"] for a in arms), "arms": arms, "warnings": _warnings(plan, arms)}


def _warnings(plan: dict, arms: list[dict]) -> list[str]:
    """The design's warnings (stored with the plan), and the rule-only arms that had to run."""
    return [*(plan.get("warnings") or []),
            *(f"arm {a['name']!r} re-classifies {a['rule_only_of']!r}'s calls, but {a['ran_for']['results']} "
              f"result(s) needed calls of their own ({a['ran_for']['why']}), so it ran for them"
              for a in arms if a.get("ran_for"))]


def _status(c: rows.ArmCounts, units: int) -> str:
    if c.results < units:
        return "stopped_at_cap" if "stopped_at_cap" in c.run_statuses else "interrupted"
    if c.result_statuses == ("failed",):
        return "failed"
    return "degraded" if {"degraded", "failed"} & set(c.result_statuses) else "completed"


# ----- the report -------------------------------------------------------------------------------------

def report_of(store: Store, study_id: str) -> dict:
    """The study's report JSON (SPEC §9) from its stored results: what ``rwb study report`` prints
    and the GUI's study view reads."""
    from workbench.core.studies.report import Result, build_report

    row = rows.get_study(store, study_id)
    if row is None:
        raise WorkbenchError(f"There is no study {study_id!r} in this project.")
    results = [Result(x.arm, x.item, x.replicate, x.metrics) for x in rows.results(store, study_id)]
    counts = rows.arm_counts(store, study_id)
    ran = [{**a, "ran_for": {"results": counts[a["name"]].ran, "why": counts[a["name"]].ran_why}}
           for a in row.plan["arms"] if a["name"] in counts and counts[a["name"]].ran]
    return build_report(study_id, row.plan, results, warnings=_warnings(row.plan, ran))
