"""Studies in the project file (schema step 11, SPEC §9): the study, its runs, its results.

A study is its document (the study file with its base and items inline) and its plan (the arms
as resolved). Its runs carry ``study_id``, ``arm`` and ``item`` beside step 1's ``replicate``.
Each result, an (arm, item, replicate), is a row of ``study_results``: the run that gave it, or
for a rule-only arm a classification variant of another arm's run (``variant_id``, written in the
same transaction, so a killed study never holds a variant without its result), with its metric
values and the calls it reused. Every write returns its :class:`Changes`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from workbench.core.project import _sql
from workbench.core.project.changes import Changes
from workbench.core.project.runs import Run
from workbench.core.project.store import Store, utc_now


@dataclass(frozen=True)
class StudyRow:
    id: str
    name: str
    document: dict
    plan: dict
    created_at: str


@dataclass(frozen=True)
class ResultRow:
    arm: str
    item: str
    replicate: int
    run_id: str
    variant_id: int | None
    status: str  # the status of the run that gave it
    calls_reused: int
    metrics: dict


# ----- reading ---------------------------------------------------------------------------------------

def get_study(store: Store, study_id: str) -> StudyRow | None:
    row = _sql.get(store, "studies", study_id)
    if row is None:
        return None
    return StudyRow(row["id"], row["name"], row["config_json"] or {}, row["plan_json"] or {}, row["created_at"])


def list_studies(store: Store) -> list[StudyRow]:
    return [StudyRow(r["id"], r["name"], r["config_json"] or {}, r["plan_json"] or {}, r["created_at"])
            for r in _sql.rows(store, "studies", order_by="rowid")]


@dataclass(frozen=True)
class StudyName:
    id: str
    name: str
    created_at: str
    arms: int
    results: int


def study_names(store: Store) -> list[StudyName]:
    """Every study with its arms and stored results counted, newest first, without decoding its
    document (which holds its items inline): the study view's list."""
    return [StudyName(*row) for row in _sql.tuples(
        store, "SELECT s.id, s.name, s.created_at, coalesce(json_array_length(s.plan_json, '$.arms'), 0), "
               "(SELECT count(*) FROM study_results r WHERE r.study_id = s.id) FROM studies s ORDER BY s.rowid DESC")]


def result_runs(store: Store, study_id: str) -> list[tuple[str, str, int, str, int | None, str]]:
    """Each stored result's (arm, item, replicate, run_id, variant_id, status), metrics left
    undecoded: the study view's list of an arm's runs."""
    return _sql.tuples(store, "SELECT arm, item, replicate, run_id, variant_id, status FROM study_results "
                              "WHERE study_id = ? ORDER BY arm, item, replicate", (study_id,))


def study_runs(store: Store, study_id: str) -> list[Run]:
    """Every run of the study, in the order they were made."""
    return [Run.from_row(r) for r in _sql.rows(store, "runs", "study_id = ?", (study_id,), order_by="rowid")]


def results(store: Store, study_id: str) -> list[ResultRow]:
    """Every stored result of the study, in the order they were stored."""
    return [ResultRow(arm, item, rep, run_id, variant, status, reused, json.loads(metrics) if metrics else {})
            for arm, item, rep, run_id, variant, status, reused, metrics in _sql.tuples(
                store, "SELECT arm, item, replicate, run_id, variant_id, status, calls_reused, metrics_json "
                       "FROM study_results WHERE study_id = ? ORDER BY id", (study_id,))]


def arm_calls(store: Store, study_id: str) -> dict[str, int]:
    """The calls each arm's own runs recorded (re-asks and failed calls included)."""
    return dict(_sql.tuples(store, "SELECT r.arm, count(c.id) FROM runs r JOIN llm_calls c ON c.run_id = r.id "
                                   "WHERE r.study_id = ? GROUP BY r.arm", (study_id,)))


@dataclass(frozen=True)
class ArmCounts:
    """An arm's results and runs, counted in SQL (a study of 50,000 runs is never decoded whole)."""

    results: int = 0
    calls_reused: int = 0
    result_statuses: tuple[str, ...] = ()  # each distinct status of its results
    run_statuses: tuple[str, ...] = ()  # each distinct status of its own runs
    ran: int = 0  # results of a rule-only arm that needed calls of their own
    ran_why: str | None = None


def arm_counts(store: Store, study_id: str) -> dict[str, ArmCounts]:
    found: dict[str, dict] = {}
    for arm, n, reused, statuses in _sql.tuples(
            store, "SELECT arm, count(*), coalesce(sum(calls_reused), 0), group_concat(DISTINCT status) "
                   "FROM study_results WHERE study_id = ? GROUP BY arm", (study_id,)):
        found.setdefault(arm, {}).update(results=n, calls_reused=reused, result_statuses=tuple(statuses.split(",")))
    for arm, statuses, ran, why in _sql.tuples(
            store, "SELECT arm, group_concat(DISTINCT status), "
                   "count(json_extract(provenance_json, '$.rule_only_ran')), "
                   "min(json_extract(provenance_json, '$.rule_only_ran')) FROM runs WHERE study_id = ? GROUP BY arm",
            (study_id,)):
        found.setdefault(arm, {}).update(run_statuses=tuple(statuses.split(",")), ran=ran, ran_why=why)
    return {arm: ArmCounts(**values) for arm, values in found.items()}


def call_counts(store: Store, run_ids: Iterable[str]) -> dict[str, int]:
    ids = list(dict.fromkeys(run_ids))
    out: dict[str, int] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        out.update(_sql.tuples(store, f"SELECT run_id, count(*) FROM llm_calls WHERE run_id IN "
                                      f"({', '.join('?' * len(chunk))}) GROUP BY run_id", chunk))
    return out


@dataclass(frozen=True)
class StoredCall:
    """A run's recorded call as a replay reads it: the request as sent and the reply."""

    key: str
    status: str
    text: str | None
    error: str | None
    meta: dict
    messages: list
    fence: dict | None


def stored_calls(store: Store, run_id: str) -> dict[str, StoredCall]:
    """The run's calls by step key (superseded replies left out: a re-ask's earlier tries)."""
    out = {}
    for key, status, text, error, response, request in _sql.tuples(
            store, "SELECT step_key, status, reply_text, error, response_json, request_json FROM llm_calls "
                   "WHERE run_id = ? AND purpose NOT LIKE '%/superseded' ORDER BY id", (run_id,)):
        meta = (json.loads(response) if response else {}).get("reply_meta") or {}
        sent = json.loads(request) if request else {}
        out[key] = StoredCall(key, status, text, error, meta, list(sent.get("messages") or []), sent.get("fence"))
    return out


# ----- writing ---------------------------------------------------------------------------------------

def create_study(store: Store, study_id: str, name: str, document: dict, plan: dict) -> Changes:
    _, changes = _sql.insert(store, "studies", {"id": study_id, "name": name, "config_json": document,
                                                "plan_json": plan, "created_at": utc_now()})
    return changes


def put_result(store: Store, study_id: str, arm: str, item: str, replicate: int, run_id: str, status: str,
               metrics: dict, *, calls_reused: int = 0) -> Changes:
    """A result that a run of the arm's own gave (replaced if the run was resumed since)."""
    with _sql.write(store) as tx:
        _put(tx, study_id, arm, item, replicate, run_id, None, status, metrics, calls_reused)
    return tx.changes


def _put(tx, study_id, arm, item, replicate, run_id, variant_id, status, metrics, calls_reused) -> None:
    """The result, in place of any earlier one (and of the variant that one was, if any)."""
    key = (study_id, arm, item, replicate)
    where = "study_id = ? AND arm = ? AND item = ? AND replicate = ?"
    old = tx.query(f"SELECT variant_id FROM study_results WHERE {where}", key)
    tx.execute(f"DELETE FROM study_results WHERE {where}", key, tables=("study_results",))
    for row in old:
        if row["variant_id"] is not None and row["variant_id"] != variant_id:
            tx.delete("classification_variants", row["variant_id"])
    tx.insert("study_results", {"study_id": study_id, "arm": arm, "item": item, "replicate": replicate,
                                "run_id": run_id, "variant_id": variant_id, "status": status,
                                "calls_reused": calls_reused, "metrics_json": metrics, "created_at": utc_now()})


def put_reclassified(store: Store, study_id: str, arm: str, item: str, replicate: int, run_id: str, status: str,
                     variant: dict[str, Any], metrics: dict, calls_reused: int) -> Changes:
    """A rule-only arm's result: the classification variant of ``run_id`` it is (see
    :func:`workbench.core.project.variants.save_classification`) and its result row, together."""
    from workbench.core.project.variants import insert_variant

    with _sql.write(store) as tx:
        variant_id = insert_variant(tx, run_id, **variant)
        _put(tx, study_id, arm, item, replicate, run_id, variant_id, status, metrics, calls_reused)
    return tx.changes


__all__ = [
    "ArmCounts",
    "ResultRow",
    "StoredCall",
    "StudyRow",
    "arm_calls",
    "arm_counts",
    "call_counts",
    "create_study",
    "get_study",
    "list_studies",
    "put_reclassified",
    "put_result",
    "results",
    "set_budget",
    "stored_calls",
    "study_runs",
]


def set_budget(store: Store, study_id: str, budget: dict | None) -> Changes:
    """The study's cap from now on (``rwb study resume --max-usd/--max-tokens``): its document's ``budget``."""
    study = get_study(store, study_id)
    document = {**(study.document if study is not None else {}), "budget": budget}
    return _sql.update(store, "studies", study_id, {"config_json": document})
