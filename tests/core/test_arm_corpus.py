"""Every value stored in the 17 corpus traces (``traces/`` and ``traces-v1.1/``) is recomputed by
the workbench (SPEC §4).

Every entry matches within 1e-9 under the rules of the file's own version (SPEC §11), or is a
value not recomputable offline (``match: null`` and a note). Where today's rules give another
value, the entry adds ``today`` and a note naming the rule that came later. The exact set of
notes is pinned here so a regression (a check that stops matching, or a note that appears)
shows up.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from workbench.core.errors import InputError
from workbench.core.protocols.arm import (
    export_integrity_hash,
    metrics_report,
    parse_run,
    r1_claims,
    tfidf_convergence,
)
from workbench.core.protocols.arm.stored import NOTE_EMBEDDING
from workbench.core.protocols.arm.versions import (
    AUDIT_V13,
    OVERRIDE_REASON,
    OVERRIDE_RECONCILER,
    POLARITY_GATE,
    RULES,
    SELF_CHECK_OVERRIDE,
    SMOOTHED_IDF,
)

pytestmark = pytest.mark.corpus

FLIP = ("arm-v071FAP-test-010Gamma_Flip_Detected__Drift_Catchable__Polarity_Gate_Override__"
        "Values_Disagreement.json")
V11 = ["arm-v08-run-CFAAq2-xCGG-roles.json", "arm-v08-run-TDIDF-embedding-001.json"]  # traces-v1.1/
V12 = [
    "arm-v0.8-q200-CGG-roles-1781903954497.json",
    "arm-v0.8-q200-allClaude-roles-1781904686957.json",
    "arm-v0.8-q200-allGemini-noroles-1781908822315.json",
    "arm-v0.8-q200-allGpt-roles-1781905642869.json",
    "arm-v0.9-q201-CGG-noroles-1783475435505-rerunAfterBuild.json",
    "arm-v0.9-q201-CGG-roles-1782437641004.json",
    "arm-v0.9-q202-allGpt-noroles-1782429742765.json",
    "arm-v0.9-q203-CGG-roles-alphaSilent-1782439204981.json",
    "arm-v0.9-q203-allGemini-roles-1782441315001.json",
]
# How many stored values each file holds that the workbench re-derives (a dropped check shows).
# Legacy files include the self_check override re-run on every trace that reported clean.
STORED_COUNTS = {
    "arm-v0.7.1-run-OT-001.json": 17,
    "arm-v0.8-q200-CGG-roles-1781903954497.json": 34,
    "arm-v0.8-q200-allClaude-roles-1781904686957.json": 29,
    "arm-v0.8-q200-allGemini-noroles-1781908822315.json": 34,
    "arm-v0.8-q200-allGpt-roles-1781905642869.json": 32,
    "arm-v0.9-q201-CGG-noroles-1783475435505-rerunAfterBuild.json": 36,
    "arm-v0.9-q201-CGG-roles-1782437641004.json": 32,
    "arm-v0.9-q202-allGpt-noroles-1782429742765.json": 33,
    "arm-v0.9-q203-CGG-roles-alphaSilent-1782439204981.json": 31,
    "arm-v0.9-q203-allGemini-roles-1782441315001.json": 35,
    "arm-v06-run-1778083372998.json": 19,
    "arm-v06-run-justwar.json": 15,
    "arm-v06-xCGG-values.json": 15,
    "arm-v071-run-FAP-test-007.json": 23,
    FLIP: 24,
    "arm-v08-run-CFAAq2-xCGG-roles.json": 28,
    "arm-v08-run-TDIDF-embedding-001.json": 36,
}
FOLDERS = ("traces", "traces-v1.1")


def load(corpus_dir: Path, name: str) -> dict:
    folder = "traces-v1.1" if name in V11 else "traces"
    return json.loads((corpus_dir / folder / name).read_text(encoding="utf-8"))


def corpus_names(corpus_dir: Path) -> list[str]:
    """The corpus files of both folders; traces-v1.1 is skipped visibly when it is absent."""
    if not (corpus_dir / "traces-v1.1").is_dir():
        pytest.skip(f"the ARM corpus has no traces-v1.1 folder: expected it at {corpus_dir / 'traces-v1.1'}")
    return sorted(p.name for folder in FOLDERS for p in (corpus_dir / folder).glob("*.json"))


@pytest.fixture
def reports(corpus_dir) -> dict[str, dict]:
    names = corpus_names(corpus_dir)
    assert names == sorted(STORED_COUNTS)
    return {name: metrics_report(load(corpus_dir, name)) for name in names}


def test_every_stored_value_matches_under_its_own_versions_rules(reports):
    for name, report in reports.items():
        for entry in report["stored"]:
            assert set(entry) - {"today"} == {"metric", "stored", "recomputed", "match", "note"}
            assert entry["match"] is True or (entry["match"] is None and entry["note"]), (name, entry)
            if "today" in entry:  # today's rule differs: said, never counted against the file
                assert entry["note"].startswith("older rule: ") and entry["today"]["match"] is False, (name, entry)
        summary = report["summary"]
        assert summary["unexplained"] == summary["mismatched"] == 0, name
        assert summary["older_rule"] == sum("today" in e for e in report["stored"]), name
        assert summary["stored_values"] == STORED_COUNTS[name], name


def test_the_exact_set_of_notes(reports):
    notes = {(name, e["metric"]) for name, r in reports.items() for e in r["stored"] if e["note"]}
    rules = {(name, e["metric"], _rule_of(e["note"])) for name, r in reports.items() for e in r["stored"]
             if e["note"] and e["note"] != NOTE_EMBEDDING}
    expected = {(name, metric) for name in [*V12, "arm-v08-run-TDIDF-embedding-001.json"]
                for metric in ("embedding_convergence", "runMeta.embedding_convergence")}
    older = {("arm-v0.7.1-run-OT-001.json", "r2.gamma.reconciliation_status", POLARITY_GATE),
             ("arm-v0.7.1-run-OT-001.json", "r2.gamma.self_check.status (gate override)", POLARITY_GATE)}
    older |= {(name, f"{where}.self_check (override)", SELF_CHECK_OVERRIDE)
              for name in ("arm-v0.7.1-run-OT-001.json", FLIP) for where in ("r1.beta", "r2.beta")}
    older.add(("arm-v06-xCGG-values.json", "r2.gamma.self_check (override)", SELF_CHECK_OVERRIDE))
    # arm-trace-v1.1: the flags path without override_reason, and no reconciler path yet
    older |= {("arm-v08-run-TDIDF-embedding-001.json", f"{where}.self_check (override)", OVERRIDE_REASON)
              for where in ("r1.beta", "r2.beta")}
    older.add(("arm-v08-run-CFAAq2-xCGG-roles.json", "r2.gamma.self_check (override)", OVERRIDE_RECONCILER))
    # the unsmoothed idf of every stored TF-IDF (v1.1 and v1.2: smoothed came with v1.3)
    older |= {(name, f"{where}tfidf_convergence", SMOOTHED_IDF)
              for name in [*V12, "arm-v08-run-TDIDF-embedding-001.json"] for where in ("", "runMeta.")}
    # a fired gate's audit before v1.3 (no baseline_mode, blind spot on the self-reported delta)
    older |= {(name, "r2.gamma.polarity_audit", AUDIT_V13) for name in (FLIP, "arm-v08-run-TDIDF-embedding-001.json")}
    assert rules == older
    assert notes == expected | {(name, metric) for name, metric, _ in older}


def _rule_of(text: str) -> str:
    """Which rule an "older rule" note names (by the words the versions table gives it)."""
    named = [r.name for r in RULES if text.startswith(f"older rule: {r.what} came with {r.came_with};")]
    assert len(named) == 1, text
    return named[0]


def test_older_rules_report_both_values(reports, corpus_dir):
    """Today's value stays visible next to the value under the file's own (older) rule."""
    entry = next(e for e in reports["arm-v0.7.1-run-OT-001.json"]["stored"]
                 if e["metric"] == "r2.gamma.reconciliation_status")
    assert (entry["stored"], entry["recomputed"], entry["match"]) == ("success", "success", True)
    assert entry["today"] == {"value": "gamma_flip_detected", "match": False}
    assert "this trace's version (v0.6/v0.7.1, no schema_version) predates it" in entry["note"]
    assert entry["note"].endswith("today's gate fires here (YES→NO)")
    v11 = next(e for e in reports["arm-v08-run-TDIDF-embedding-001.json"]["stored"]
               if e["metric"] == "r1.beta.self_check (override)")
    assert v11["stored"] == v11["recomputed"] == {"status": "auto_warn", "override_reason": None}
    assert v11["today"] == {"value": {"status": "auto_warn", "override_reason": "values_tension_flag"}, "match": False}
    tfidf = next(e for e in reports[V12[1]]["stored"] if e["metric"] == "tfidf_convergence")
    assert tfidf["recomputed"] == tfidf["stored"] == 0.022419287385592446  # unsmoothed, the file's own idf
    claims = r1_claims(parse_run(load(corpus_dir, V12[1])))
    assert tfidf["today"]["value"] == tfidf_convergence(claims, smooth=True) != tfidf["stored"]


def test_numbers_match_within_1e9_and_most_are_bit_exact(reports):
    inexact = []
    for name, report in reports.items():
        for e in report["stored"]:
            if isinstance(e["stored"], float) and e["match"]:
                assert abs(e["stored"] - e["recomputed"]) <= 1e-9
                if e["stored"] != e["recomputed"]:
                    inexact.append((name, e["metric"]))
    # only the TF-IDF of the one file whose engine rounded ln 3 correctly differs (by ~1e-17)
    assert inexact == [("arm-v0.9-q201-CGG-noroles-1783475435505-rerunAfterBuild.json", "tfidf_convergence"),
                       ("arm-v0.9-q201-CGG-noroles-1783475435505-rerunAfterBuild.json",
                        "runMeta.tfidf_convergence")]


def test_tfidf_log_engines(corpus_dir):
    # fdlibm's log (V8) reproduces 9 of the 10 stored TF-IDF values bit for bit (the v1.1 one
    # too, unsmoothed like v1.2); the other was produced with a correctly rounded log, which the
    # standard library's math.log gives.
    for name in [*V12, "arm-v08-run-TDIDF-embedding-001.json"]:
        data = load(corpus_dir, name)
        claims = r1_claims(parse_run(data))
        fd = tfidf_convergence(claims, smooth=False)
        cr = tfidf_convergence(claims, smooth=False, log=math.log)
        if name.endswith("rerunAfterBuild.json"):
            assert cr == data["tfidf_convergence"] and fd != data["tfidf_convergence"]
        else:
            assert fd == data["tfidf_convergence"], name


def test_export_integrity_hashes(corpus_dir):
    with_hash = [n for n in corpus_names(corpus_dir) if "export_integrity_hash" in load(corpus_dir, n)]
    assert sorted(with_hash) == sorted(["arm-v071-run-FAP-test-007.json", FLIP, *V11,
                                        "arm-v0.9-q201-CGG-noroles-1783475435505-rerunAfterBuild.json"])
    for name in with_hash:
        data = load(corpus_dir, name)
        assert export_integrity_hash(data) == data["export_integrity_hash"]
        tampered = {**data, "question": data["question"] + " "}
        assert export_integrity_hash(tampered) != data["export_integrity_hash"]


def test_spec_shape_and_known_values(reports):
    r = reports["arm-v0.8-q200-allClaude-roles-1781904686957.json"]
    for key in ("schema_version", "jaccard_convergence", "tfidf_convergence", "directional_unanimity",
                "disagreement_type", "agents", "polarity_gate", "stored"):
        assert key in r
    assert r["schema_version"] == "arm-trace-v1.2"
    assert r["jaccard_convergence"] == 0.15831547503084617 and r["tfidf_convergence"] == 0.022419287385592446
    alpha = r["agents"]["alpha"]
    assert (alpha["cr1"], alpha["cr2"], alpha["delta"]) == (0.72, 0.68, -0.039999999999999925)
    assert alpha["band"] == "downward shift" and alpha["band_legacy"] == "epistemic tightening"
    assert alpha["delta_mismatch"] is False
    gamma = r["agents"]["gamma"]
    assert (gamma["cr1"], gamma["cr2"], gamma["baseline"]) == (0.74, 0.65, 0.74)
    assert gamma["delta"] == -0.08999999999999997
    assert r["disagreement_type"] == "values" and r["directional_unanimity"] is False
    assert r["polarity_gate"] == {**r["polarity_gate"], "fired": False, "reconciliation_status": "success"}


def test_gamma_flip_file(reports):
    r = reports[FLIP]
    assert r["polarity_gate"]["fired"] and r["polarity_gate"]["reconciliation_status"] == "gamma_flip_detected"
    assert r["polarity_gate"]["transition"] == "flip" and r["jaccard_convergence"] == 0.6
    assert r["disagreement_type"] == "values"
    assert r["disagreement_second_opinion"]["type"] == "reasoning"  # both answer NO, by different bases
    assert r["disagreement_second_opinion"]["agrees_with_gamma"] is False


def test_failed_legacy_run(reports):
    r = reports["arm-v06-run-1778083372998.json"]
    assert r["jaccard_convergence"] is None and r["convergence_claims"] == 1
    assert r["directional_unanimity"] is None and r["verdicts_r1"]["beta"] == "unknown"


def test_unanimity_and_second_opinions_over_the_corpus(reports):
    unanimous = {n for n, r in reports.items() if r["directional_unanimity"] is True}
    assert unanimous == {"arm-v0.9-q202-allGpt-noroles-1782429742765.json"}  # all three answer NO
    second = {n: (r["disagreement_second_opinion"]["type"], r["disagreement_type"]) for n, r in reports.items()}
    assert second[FLIP] == ("reasoning", "values")
    assert second["arm-v06-xCGG-values.json"] == ("values", "values")
    assert second["arm-v0.9-q201-CGG-noroles-1783475435505-rerunAfterBuild.json"] == ("information", "reasoning")
    assert second["arm-v0.9-q202-allGpt-noroles-1782429742765.json"] == ("none", "reasoning")
    agree = [r["disagreement_second_opinion"]["agrees_with_gamma"] for name, r in reports.items() if name not in V11]
    assert (agree.count(True), agree.count(False), agree.count(None)) == (6, 3, 6)


# ── robustness: whatever the JSON, a report or an InputError, never a crash ──────────────────
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20)
trace_keys = st.sampled_from(["claim", "verdict", "confidence", "flags", "self_check", "drift_score",
                              "disagreement_classification", "values_in_conflict", "self_delta_vs_baseline",
                              "_ok", "_meta", "reconciliation_status", "polarity_gate_fired"])
traces = st.dictionaries(trace_keys, json_values, max_size=8) | json_values
rounds = st.fixed_dictionaries({}, optional={r: traces for r in ("alpha", "beta", "gamma", "silent")})
runs = st.fixed_dictionaries({"r1": rounds}, optional={
    "r2": rounds, "runMeta": st.dictionaries(st.sampled_from(
        ["polarity_gate_fired", "fap_drift_triggered", "providers", "silentAgent", "fap_requeue",
         "verdict_shift_flagged", "dispatch", "convergence"]), json_values, max_size=5),
    "schema_version": st.sampled_from(["arm-trace-v1.1", "arm-trace-v1.2", "arm-trace-v1.3", "v9"]),
    "export_integrity_hash": st.text(max_size=5), "convergence": json_values})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs)
def test_metrics_report_never_crashes(data):
    try:
        report = metrics_report(data)
    except InputError:
        return
    json.dumps(report)  # always serialisable
