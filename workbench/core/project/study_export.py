"""A study's tables for its bundle (``rwb study export``, SPEC §9): one row per result, artifact,
vote and call, each naming its study, arm, item and replicate and the project rows it comes from
(``run_id``, ``variant_id``, ``artifact_id``, ``vote_id``, ``call_id``), so every row joins back to
the project file. A rule-only arm's result lists its source run's artifacts and votes, with the
tiers of its own classification; it made no call, so it has no row in the calls table.

Values are exact (the CSV writer protects text cells against formulas, ``core.safe_output``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from workbench.core.project import _sql
from workbench.core.project.store import Store

_RESULTS = ("SELECT s.arm, s.item, s.replicate, s.run_id, s.variant_id, s.status, s.calls_reused, s.metrics_json, "
            "r.seed, r.protocol, r.label, r.provenance_json, r.summary_json, v.summary_json, v.settings_json "
            "FROM study_results s JOIN runs r ON r.id = s.run_id "
            "LEFT JOIN classification_variants v ON v.id = s.variant_id WHERE s.study_id = ? ORDER BY s.id")


def _results(store: Store, study_id: str) -> list[dict]:
    out = []
    for (arm, item, rep, run_id, variant_id, status, reused, metrics, seed, protocol, label, provenance, summary,
         variant_summary, settings) in _sql.tuples(store, _RESULTS, (study_id,)):
        out.append({"arm": arm, "item": item, "replicate": rep, "run_id": run_id, "variant_id": variant_id,
                    "status": status, "calls_reused": reused, "metrics": json.loads(metrics or "{}"), "seed": seed,
                    "protocol": protocol, "label": label, "provenance": json.loads(provenance or "{}"),
                    "summary": json.loads(variant_summary or summary or "{}"),
                    "settings": json.loads(settings) if settings else None})
    return out


def _where(r: dict) -> list:
    return [r["arm"], r["item"], r["replicate"], r["run_id"], r["variant_id"]]


PLACE = ["arm", "item", "replicate", "run_id", "variant_id"]


def runs_table(store: Store, study_id: str, metrics: list[str], settings_of: dict[str, dict]) -> tuple[list, list]:
    """One row per result; ``settings_of``: each arm's changed paths and their values."""
    calls = dict(_sql.tuples(store, "SELECT run_id, count(*) FROM llm_calls WHERE run_id IN "
                                    "(SELECT id FROM runs WHERE study_id = ?) GROUP BY run_id", (study_id,)))
    header = [*PLACE, "seed", "result", "status", "protocol", "label", "calls", "calls_reused", "prompt_set",
              "prompts", "settings", *(f"metric_{m}" for m in metrics)]
    rows = []
    for r in _results(store, study_id):
        prompts = {step: p.get("sha256") for step, p in (r["provenance"].get("prompts") or {}).items()
                   if isinstance(p, dict)}
        own = r["variant_id"] is None
        rows.append([*_where(r), r["seed"], "run" if own else "reclassified", r["status"], r["protocol"], r["label"],
                     calls.get(r["run_id"], 0) if own else 0, r["calls_reused"],
                     (r["provenance"].get("prompt_set") or {}).get("name", ""), json.dumps(prompts, sort_keys=True),
                     json.dumps(settings_of.get(r["arm"], {}), sort_keys=True),
                     *(_number(r["metrics"].get(m)) for m in metrics)])
    return header, rows


def _states(summary: dict) -> dict[str, dict]:
    return {s["artifact"]: s for rnd in summary.get("rounds") or [] if isinstance(rnd, dict)
            for s in rnd.get("states") or [] if isinstance(s, dict) and "artifact" in s}


def artifacts_table(store: Store, study_id: str) -> tuple[list, Iterator[list]]:
    header = [*PLACE, "artifact_id", "key", "author", "author_cluster", "tier", "resonance_ratio", "score",
              "score_balanced", "votes_cast", "extracted", "verdict", "content"]

    def rows() -> Iterator[list]:
        for r in _results(store, study_id):
            states = _states(r["summary"])
            for aid, key, author, cluster, extracted, verdict, content in _sql.tuples(
                    store, "SELECT id, key, author_agent, author_cluster, extracted, score, content FROM artifacts "
                           "WHERE run_id = ? ORDER BY id", (r["run_id"],)):
                s = states.get(key, {})
                yield [*_where(r), aid, key, author, cluster, s.get("tier", ""), _number(s.get("resonance_ratio")),
                       _number(s.get("score")), _number(s.get("score_balanced")), s.get("votes_cast", ""),
                       extracted or "", verdict or "", content]
    return header, rows()


def votes_table(store: Store, study_id: str) -> tuple[list, Iterator[list]]:
    header = [*PLACE, "vote_id", "artifact_id", "artifact_key", "voter", "value", "status", "reason"]

    def rows() -> Iterator[list]:
        for r in _results(store, study_id):
            for vid, aid, key, voter, value, status, reason in _sql.tuples(
                    store, "SELECT v.id, v.artifact_id, a.key, v.voter_agent, v.value, v.status, v.reason FROM votes v "
                           "JOIN artifacts a ON a.id = v.artifact_id WHERE v.run_id = ? ORDER BY v.id", (r["run_id"],)):
                yield [*_where(r), vid, aid, key, voter, "" if value is None else value, status, reason or ""]
    return header, rows()


def calls_table(store: Store, study_id: str) -> tuple[list, Iterator[list]]:
    """Every call of the study's own runs (a rule-only arm's re-classification made none)."""
    header = ["arm", "item", "replicate", "run_id", "call_id", "step_key", "agent", "provider", "model", "purpose",
              "status", "attempts", "prompt_tokens", "completion_tokens", "total_tokens", "cost_usd", "latency_ms",
              "template_sha256", "error"]

    def rows() -> Iterator[list]:
        for row in _sql.tuples(store, "SELECT r.arm, r.item, r.replicate, c.run_id, c.id, c.step_key, c.agent_id, "
                                      "c.provider, c.model, c.purpose, c.status, c.attempts, c.prompt_tokens, "
                                      "c.completion_tokens, c.total_tokens, c.cost_usd, c.latency_ms, "
                                      "c.template_sha256, c.error FROM llm_calls c JOIN runs r ON r.id = c.run_id "
                                      "WHERE r.study_id = ? ORDER BY c.id", (study_id,)):
            yield ["" if v is None else v for v in row]
    return header, rows()


def prompt_texts(store: Store, study_id: str) -> dict[str, str]:
    """Every effective template the study's runs used, by its sha256 (the runs' provenance)."""
    out: dict[str, str] = {}
    for (provenance,) in _sql.tuples(store, "SELECT provenance_json FROM runs WHERE study_id = ? OR id IN "
                                            "(SELECT run_id FROM study_results WHERE study_id = ?)",
                                     (study_id, study_id)):
        for p in (json.loads(provenance or "{}").get("prompts") or {}).values():
            if isinstance(p, dict) and isinstance(p.get("sha256"), str) and isinstance(p.get("text"), str):
                out.setdefault(p["sha256"], p["text"])
    return out


def arm_prompts(store: Store, study_id: str) -> dict[str, dict[str, str]]:
    """Each arm's templates by step, as hashes (its first result's run)."""
    out: dict[str, dict[str, str]] = {}
    for r in _results(store, study_id):
        if r["arm"] not in out:
            out[r["arm"]] = {step: p.get("sha256") for step, p in (r["provenance"].get("prompts") or {}).items()
                             if isinstance(p, dict)}
    return out


def _number(value: object) -> object:
    return "" if value is None else repr(value) if isinstance(value, float) else value


__all__ = ["arm_prompts", "artifacts_table", "calls_table", "prompt_texts", "runs_table", "votes_table"]
