"""ARM metrics recomputed with the rules of the trace's own version (SPEC §11, issue 25).

A rule a version did not have is never applied to its traces: ``recomputed`` is the value under
the trace's own rules, so every stored value of every corpus version matches; today's value is
kept beside it (``today``) with a note naming the rule that came later. Checked on the corpus
(skipped with the reason where it is absent), on a workbench export edited to look like each
older version, and on a schema newer than any known (today's rules, with a note). The demo's
simulated ARM runs pass their own stored-versus-recomputed check (the Trace Inspector's rows).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.core.project import _sql
from workbench.core.project.record_detail import record_detail
from workbench.core.project.store import Store
from workbench.core.protocols.arm import (
    ArmRunConfig,
    metrics_report,
    parse_run,
    r1_claims,
    run_arm,
    run_to_upstream,
    tfidf_convergence,
)
from workbench.core.protocols.arm.rounds import workbench_gate_options
from workbench.core.protocols.arm.stored import gate_options
from workbench.core.protocols.arm.versions import (
    AUDIT_V13,
    OVERRIDE_REASON,
    OVERRIDE_RECONCILER,
    POLARITY_GATE,
    RULES,
    SELF_CHECK_OVERRIDE,
    SMOOTHED_IDF,
    TODAY,
    VERDICT_SHIFT,
)
from workbench.core.protocols.shared.steps import AgentReply, Batch

# The corpus by version, as FORMAT.md and SOURCE.md describe it.
CORPUS = {
    "v0.6": ["arm-v06-run-1778083372998.json", "arm-v06-run-justwar.json", "arm-v06-xCGG-values.json"],
    "v0.7.1": ["arm-v0.7.1-run-OT-001.json", "arm-v071-run-FAP-test-007.json",
               "arm-v071FAP-test-010Gamma_Flip_Detected__Drift_Catchable__Polarity_Gate_Override__"
               "Values_Disagreement.json"],
    "arm-trace-v1.1": ["arm-v08-run-CFAAq2-xCGG-roles.json", "arm-v08-run-TDIDF-embedding-001.json"],
    "v0.8, arm-trace-v1.2": ["arm-v0.8-q200-CGG-roles-1781903954497.json",
                             "arm-v0.8-q200-allClaude-roles-1781904686957.json",
                             "arm-v0.8-q200-allGemini-noroles-1781908822315.json",
                             "arm-v0.8-q200-allGpt-roles-1781905642869.json"],
    "v0.9, arm-trace-v1.2": ["arm-v0.9-q201-CGG-noroles-1783475435505-rerunAfterBuild.json",
                             "arm-v0.9-q201-CGG-roles-1782437641004.json",
                             "arm-v0.9-q202-allGpt-noroles-1782429742765.json",
                             "arm-v0.9-q203-CGG-roles-alphaSilent-1782439204981.json",
                             "arm-v0.9-q203-allGemini-roles-1782441315001.json"],
}
LATE_V071 = {"arm-v071-run-FAP-test-007.json", CORPUS["v0.7.1"][2]}  # they write runMeta.polarity_gate_fired
# The rules each version had (the late v0.7.1 builds had the gate and its flags already).
OWN_RULES = {
    "v0.6": set(),
    "v0.7.1": set(),
    "arm-trace-v1.1": {POLARITY_GATE, SELF_CHECK_OVERRIDE, "drift_flags", "harness_fields", "fap_abort",
                       "schema_warnings"},
    "v0.8, arm-trace-v1.2": {POLARITY_GATE, SELF_CHECK_OVERRIDE, OVERRIDE_RECONCILER, OVERRIDE_REASON,
                             "drift_flags", "harness_fields", "fap_abort", "schema_warnings"},
}
OWN_RULES["v0.9, arm-trace-v1.2"] = OWN_RULES["v0.8, arm-trace-v1.2"]


def corpus_file(corpus_dir: Path, name: str) -> Path:
    folder = corpus_dir / ("traces-v1.1" if name in CORPUS["arm-trace-v1.1"] else "traces")
    if not folder.is_dir():
        pytest.skip(f"the ARM corpus has no {folder.name} folder: expected it at {folder}")
    return folder / name


def rwb_metrics(capsys, path: Path) -> tuple[int, dict, str]:
    """``rwb arm metrics FILE`` through the command line's own entry point."""
    code = main(["arm", "metrics", str(path)])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


# ── the corpus, version by version ──────────────────────────────────────────────────────────
@pytest.mark.corpus
@pytest.mark.parametrize("version", list(CORPUS))
def test_every_corpus_value_matches_under_its_own_versions_rules(corpus_dir, capsys, version):
    for name in CORPUS[version]:
        code, report, err = rwb_metrics(capsys, corpus_file(corpus_dir, name))
        assert code == 0 and err == "", (name, err)
        bad = [e for e in report["stored"] if e["match"] is False]
        assert bad == [], (name, bad)
        assert all(e["match"] is True or e["note"].startswith("not recomputable") for e in report["stored"])
        own = {rule for rule, r in report["version"]["rules"].items() if r["applied"]}
        expected = OWN_RULES[version] | ({POLARITY_GATE, "drift_flags"} if name in LATE_V071 else set())
        if name.endswith("rerunAfterBuild.json"):
            expected = expected | {VERDICT_SHIFT}  # the newest v0.9 build: verdicts and the advisory
        assert own == expected, name
        assert report["tfidf_idf"] == "unsmoothed" and report["notes"] == []
        for entry in report["stored"]:
            if "today" in entry:  # today's value beside it, never counted against the file
                assert entry["today"]["match"] is False and entry["note"].startswith("older rule: ")
                assert f"this trace's version ({report['generation']}) predates it" in entry["note"]


# ── a workbench export edited to look like each older version ──────────────────────────────
PROVIDERS = {"alpha": "p-alpha", "beta": "p-beta", "gamma": "p-gamma"}
GAMMA_R2_CHECK = {"status": "clean", "notes": "ok"}  # gamma's own self_check, before any gate


def trace(claim: str, verdict: str, confidence: float, **extra) -> str:
    body = {"claim": claim, "verdict": verdict, "confidence": confidence, "decision_basis": "hybrid",
            "assumptions": ["a"], "critical_path": ["s"], "challenge_surface": ["c"], "flags": [],
            "self_check": {"status": "clean", "notes": "ok"}}
    return json.dumps({**body, **extra})


ANSWERS = {  # gamma flips YES -> NO (the gate fires); alpha flags values tension (the override)
    "r1/alpha": trace("No: agents should never deploy", "no", 0.7, decision_basis="deontological",
                      flags=["values_conflict"]),
    "r1/beta": trace("Yes: agents should deploy the patch", "yes", 0.6, decision_basis="utilitarian"),
    "r1/gamma": trace("Yes: agents should deploy carefully", "yes", 0.8),
    "r1/silent": trace("Yes, deploy.", "yes", 0.75),
    "r2/alpha": trace("No: agents should never deploy", "no", 0.72, decision_basis="deontological",
                      drift_score={"confidence_delta": 0.02}),
    "r2/beta": trace("Yes: agents should deploy the patch", "yes", 0.62, decision_basis="utilitarian",
                     drift_score={"confidence_delta": 0.02}),
    "r2/gamma": trace("No: agents should not deploy yet", "no", 0.7, disagreement_classification="values",
                      values_in_conflict=["duty", "welfare"], self_delta_vs_baseline=0.02,
                      reconciliation_status="success"),
}


def v13_export() -> dict:
    """A workbench run (arm-trace-v1.3) driven from scripted replies, as ARM's JSON."""
    gen = run_arm(ArmRunConfig(question="Should the agents deploy?", providers=PROVIDERS))
    step = next(gen)
    try:
        while True:
            answer = None
            if isinstance(step, Batch):
                answer = {c.key: AgentReply(c.key, ANSWERS[c.key], meta={"provider": c.meta["provider"], "model": "m"})
                          for c in step.calls}
            step = gen.send(answer)
    except StopIteration as stop:
        return json.loads(json.dumps(run_to_upstream(stop.value)))


def each_trace(data: dict):
    for block in ("r1", "r2"):
        yield from data[block].values()


def as_v12(data: dict) -> dict:
    """What an ARM v0.9 build (arm-trace-v1.2) writes for the same run."""
    d = copy.deepcopy(data)
    d["schema_version"] = d["runMeta"]["schema_version"] = "arm-trace-v1.2"
    unsmoothed = tfidf_convergence(r1_claims(parse_run(d)), smooth=False)
    d["tfidf_convergence"] = d["runMeta"]["tfidf_convergence"] = unsmoothed
    for key in ("dispatch", "silentProvider", "directional_unanimity", "gamma_context", "disagreement_second_opinion"):
        d["runMeta"].pop(key, None)  # the workbench's own keys
    gamma = d["r2"]["gamma"]
    audit = gamma["polarity_audit"]
    for key in ("baseline_mode", "silent_agent"):  # came with v1.3
        audit.pop(key)
    audit["confidence_delta_blindspot"] = abs(gamma["self_delta_vs_baseline"]) <= 0.04  # ARM: the self-report
    gamma["self_check"] = {k: gamma["self_check"][k] for k in ("status", "notes")}  # ARM never stamped the gate
    return d


def as_v11(data: dict) -> dict:
    """What an early v0.8 build (arm-trace-v1.1) writes: no override_reason, no reconciler path."""
    d = as_v12(data)
    d["schema_version"] = d["runMeta"]["schema_version"] = "arm-trace-v1.1"
    for t in each_trace(d):
        check = t["self_check"]
        if check.get("override_reason") == "reconciler_values_disagreement":
            t["self_check"] = {"status": "clean", "notes": check["notes"]}
        check.pop("override_reason", None)
    return d


def as_v071(data: dict, arm_version: str | None = None) -> dict:
    """What an early v0.7.1 build writes: no schema, no gate, no override, no harness fields."""
    d = as_v11(data)
    del d["schema_version"], d["runMeta"]["schema_version"]
    if arm_version:
        d = {"arm_version": arm_version, **d}
    for key in ("polarity_gate_fired", "verdict_shift_flagged", "fap_drift_triggered", "gamma_drift_exceeded",
                "self_check_divergence", "tfidf_convergence", "embedding_convergence", "silentBaselineFailed"):
        d["runMeta"].pop(key, None)
    for key in ("tfidf_convergence", "embedding_convergence"):
        d.pop(key, None)
    for t in each_trace(d):
        for key in ("_ok", "harness_self_delta_vs_baseline", "self_delta_mismatch", "polarity_gate_fired",
                    "polarity_audit", "verdict_shift"):
            t.pop(key, None)
        if isinstance(t.get("drift_score"), dict):
            t["drift_score"] = {"confidence_delta": t["drift_score"]["confidence_delta"]}
        if t["self_check"].get("self_check_overridden"):
            t["self_check"] = {"status": "clean", "notes": t["self_check"]["notes"]}
    gamma = d["r2"]["gamma"]
    gamma["reconciliation_status"], gamma["self_check"] = "success", dict(GAMMA_R2_CHECK)  # the model's own
    return d


def rows(report: dict) -> dict[str, dict]:
    return {e["metric"]: e for e in report["stored"]}


def check_clean(tmp_path: Path, capsys, data: dict) -> dict:
    """``rwb arm metrics`` on ``data``: exit 0, nothing on stderr, every value matches."""
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, report, err = rwb_metrics(capsys, path)
    assert code == 0 and err == "", err
    assert [e for e in report["stored"] if e["match"] is False] == []
    return report


def test_the_workbench_export_itself_applies_every_rule_of_today(tmp_path, capsys):
    data = v13_export()
    assert data["r2"]["gamma"]["reconciliation_status"] == "gamma_flip_detected"
    report = check_clean(tmp_path, capsys, data)
    assert all(r["applied"] for r in report["version"]["rules"].values())
    assert report["summary"]["older_rule"] == 0 and not any("today" in e for e in report["stored"])


def test_as_v12_the_idf_and_the_gate_audit_are_v12s(tmp_path, capsys):
    report = check_clean(tmp_path, capsys, as_v12(v13_export()))
    got = rows(report)
    assert report["tfidf_idf"] == "unsmoothed" and not report["version"]["rules"][SMOOTHED_IDF]["applied"]
    tfidf = got["tfidf_convergence"]
    assert tfidf["today"]["value"] == v13_export()["tfidf_convergence"]  # the smoothed one, beside it
    assert "smoothed TF-IDF idf" in tfidf["note"] and "(arm-trace-v1.2) predates it" in tfidf["note"]
    audit = got["r2.gamma.polarity_audit"]
    assert "baseline_mode" not in audit["recomputed"] and audit["today"]["value"]["baseline_mode"] == "visible_r1"
    assert audit["note"] == parse_run(as_v12(v13_export())).build.older_note(AUDIT_V13)
    assert got["r1.alpha.self_check (override)"]["recomputed"]["override_reason"] == "values_tension_flag"


def test_as_v11_no_override_reason_and_no_reconciler_path(tmp_path, capsys):
    report = check_clean(tmp_path, capsys, as_v11(v13_export()))
    alpha = rows(report)["r1.alpha.self_check (override)"]
    assert alpha["recomputed"] == {"status": "auto_warn", "override_reason": None}
    assert alpha["today"] == {"value": {"status": "auto_warn", "override_reason": "values_tension_flag"},
                              "match": False}
    assert "override_reason on overridden self_checks came with arm-trace-v1.2" in alpha["note"]


@pytest.mark.parametrize("arm_version", [None, "0.7.1"])
def test_as_v071_recomputes_without_the_gate(tmp_path, capsys, arm_version):
    data = as_v071(v13_export(), arm_version)
    report = check_clean(tmp_path, capsys, data)
    got = rows(report)
    status = got["r2.gamma.reconciliation_status"]
    assert (status["stored"], status["recomputed"], status["match"]) == ("success", "success", True)
    assert status["today"] == {"value": "gamma_flip_detected", "match": False}
    assert status["note"].startswith("older rule: the polarity gate") and status["note"].endswith("(YES→NO)")
    assert got["r2.gamma.self_check.status (gate override)"]["today"]["value"] == "warning"
    alpha = got["r1.alpha.self_check (override)"]
    assert alpha["recomputed"] == {"status": "clean", "override_reason": None} and "today" in alpha
    assert report["polarity_gate"]["gate_in_build"] is False and report["polarity_gate"]["fired"] is True
    assert not any(r["applied"] for r in report["version"]["rules"].values())
    if arm_version:
        assert report["generation"] == "no schema_version, arm_version 0.7.1"
        assert "arm_version 0.7.1 predates it" in report["version"]["rules"][POLARITY_GATE]["why"]
    assert report["summary"]["older_rule"] >= 3


def test_an_app_version_without_a_schema_brings_its_rules():
    data = as_v071(v13_export(), "0.9")  # no schema_version: v0.9 builds had the gate and the override
    build = parse_run(data).build
    assert build.has(POLARITY_GATE) and build.has(OVERRIDE_REASON) and not build.has(SMOOTHED_IDF)
    report = metrics_report(data)
    assert rows(report)["r2.gamma.reconciliation_status"]["match"] is False  # the gate applies: a real difference


def test_the_version_signals_where_they_sit():
    data = as_v12(v13_export())
    del data["schema_version"]  # only runMeta names it
    assert parse_run(data).build.rules_of == "arm-trace-v1.2" and metrics_report(data)["summary"]["mismatched"] == 0
    legacy = as_v071(v13_export())
    legacy["runMeta"]["schema_version"] = None  # a null, like any null field, says nothing
    assert parse_run(legacy).build.rules == frozenset()
    legacy["runMeta"]["arm_version"] = "0.9"  # the app version in runMeta
    assert parse_run(legacy).build.has(OVERRIDE_REASON)


def test_the_version_decides_not_the_fields_missing(tmp_path, capsys):
    """The same gate-less file under schema arm-trace-v1.3 is checked with the gate: exit 1."""
    data = as_v071(v13_export())
    data = {"schema_version": "arm-trace-v1.3", **data}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, report, err = rwb_metrics(capsys, path)
    assert code == 1 and report["summary"]["unexplained"] >= 1
    assert err.count("\n") == 1 and "r2.gamma.reconciliation_status" in err and "Traceback" not in err


@pytest.mark.corpus
def test_gammas_own_status_stands_unless_it_claims_the_gates_flip(corpus_dir):
    """ARM validates the status gamma writes and never rewrites it, except for the gate's flip."""
    data = json.loads(corpus_file(corpus_dir, CORPUS["v0.8, arm-trace-v1.2"][3]).read_text(encoding="utf-8"))
    gamma = data["r2"]["gamma"]
    gamma["reconciliation_status"] = "partial"
    gamma["schema_warnings"] = ['reconciliation_status_invalid:"partial"']  # as ARM's harness adds it
    assert metrics_report(data)["summary"]["mismatched"] == 0
    gamma["reconciliation_status"], gamma["schema_warnings"] = "gamma_flip_detected", []
    bad = [e["metric"] for e in metrics_report(data)["stored"] if e["match"] is False]
    assert "r2.gamma.reconciliation_status" in bad  # no flip here: only the gate may log one


# ── a schema newer than any known: today's rules, and a note ───────────────────────────────
def test_an_unknown_newer_schema_gets_todays_rules_with_a_note(tmp_path, capsys):
    data = v13_export()
    data["schema_version"] = data["runMeta"]["schema_version"] = "arm-trace-v1.9"
    report = check_clean(tmp_path, capsys, data)
    assert report["notes"] == ["schema arm-trace-v1.9 is newer than the newest this workbench knows "
                               "(arm-trace-v1.3): today's rules are applied"]
    assert {rule for rule, r in report["version"]["rules"].items() if r["applied"]} == TODAY
    assert report["tfidf_idf"] == "smoothed" and report["schema_version"] == "arm-trace-v1.9"


@pytest.mark.corpus
def test_a_v12_file_relabelled_newer_is_held_to_todays_idf(corpus_dir):
    data = json.loads(corpus_file(corpus_dir, CORPUS["v0.8, arm-trace-v1.2"][1]).read_text(encoding="utf-8"))
    data["schema_version"] = data["runMeta"]["schema_version"] = "arm-trace-v2.0"
    report = metrics_report(data)
    assert [e["metric"] for e in report["stored"] if e["match"] is False] == [
        "tfidf_convergence", "runMeta.tfidf_convergence"]  # smoothed today, unsmoothed stored


def test_an_unknown_schema_between_known_ones_gets_the_older_rules():
    data = v13_export()
    data["schema_version"] = data["runMeta"]["schema_version"] = "arm-trace-v1.2.7"
    build = parse_run(data).build
    assert build.rules_of == "arm-trace-v1.2" and not build.has(SMOOTHED_IDF)
    assert "the rules of arm-trace-v1.2, the newest known schema before it, are applied" in build.notes[0]


# ── the rules table itself ──────────────────────────────────────────────────────────────────
def test_the_rules_table():
    assert len({r.name for r in RULES}) == len(RULES) and TODAY == {r.name for r in RULES}
    for r in RULES:
        assert r.what and r.came_with
    # with every rule, the gate is the one the workbench runs on its own runs
    assert gate_options(TODAY.__contains__, "gamma") == workbench_gate_options("gamma")
    assert gate_options(set().__contains__, "gamma") == {"stamp_override": False}


# ── the demo's simulated ARM runs pass their own check ─────────────────────────────────────
SIM_BATCH = {
    "protocol": "arm", "query": "Should the AI act without a physician's order?", "seed": 22,
    "dispatch": "sequential",
    "providers": {"sim": {"model": "sim"}, "sim-a": {"model": "sim"}, "sim-b": {"model": "sim"}},
    "clusters": [{"name": "arm", "agents": [
        {"id": "alpha", "provider": "sim", "role": "alpha", "params": {"stance": 0.7, "confidence": 0.72}},
        {"id": "beta", "provider": "sim", "role": "beta", "params": {"stance": 0.45, "confidence": 0.72}},
        {"id": "gamma", "provider": "sim", "role": "gamma",
         "params": {"stance": 0.8, "drift": 0.3, "confidence": 0.74, "flip_rate": 0.5}},
        {"id": "silent", "provider": "sim", "role": "silent", "params": {"confidence": 0.74}}]}],
    "batch": {"questions": ["Should the AI act without a physician's order?"],
              "provider_mixes": [{"name": "three", "providers": {"alpha": "sim-a", "beta": "sim-b", "*": "sim"}},
                                 {"name": "one", "providers": {"*": "sim"}}],
              "replicates": 2},
}


@pytest.fixture
def sim_project(tmp_path, capsys):
    config = tmp_path / "arm-batch.json"
    config.write_text(json.dumps(SIM_BATCH), encoding="utf-8")
    project = tmp_path / "arm.rwb"
    assert main(["run", str(config), "--project", str(project)]) == 0
    capsys.readouterr()
    return project


def test_simulated_arm_runs_pass_their_stored_versus_recomputed_check(sim_project):
    store = Store.open(sim_project)
    try:
        runs = _sql.rows(store, "runs", "protocol = 'arm'")
        assert len(runs) == 4
        silent_providers = set()
        for run in runs:
            traces = _sql.rows(store, "traces", "run_id = ? AND is_current = 1", (run["id"],))
            silent_providers |= {t["provider"] for t in traces if t["role"] == "silent"}
            for t in traces:  # what the Trace Inspector shows for each trace
                checks = record_detail(store, "trace", t["id"]).extras["stored"]
                assert checks and [c for c in checks if c["match"] is not True and c["match"] is not None] == []
                assert all(c["note"] for c in checks if c["match"] is None)
            silent = next(c for c in checks if c["metric"] == "r1.silent._meta.provider")
            assert silent["stored"] == silent["recomputed"] == run["provenance_json"]["upstream"]["runMeta"][
                "silentProvider"]  # the rotated baseline's own provider, not gamma's
            assert run["summary_json"]["arm"]["summary"]["mismatched"] == 0  # what `rwb run` stored
        assert {"sim-a", "sim-b"} <= silent_providers  # the baseline rotated away from gamma's provider
    finally:
        store.close_connection()


def test_the_inspector_rechecks_a_run_stored_by_an_earlier_workbench(sim_project):
    """A project's stored report is rebuilt with today's code (the rules of the run's own version)."""
    store = Store.open(sim_project)
    try:
        run = _sql.rows(store, "runs", "protocol = 'arm'")[0]
        stale = copy.deepcopy(run["summary_json"])
        stale["arm"]["stored"] = [{"metric": "r1.silent._meta.provider", "stored": "sim-a", "recomputed": "sim",
                                   "match": False, "note": None}]
        with _sql.write(store) as tx:
            tx.update("runs", run["id"], {"summary_json": stale})
        trace = _sql.rows(store, "traces", "run_id = ?", (run["id"],))[0]
        checks = record_detail(store, "trace", trace["id"]).extras["stored"]
        assert len(checks) > 1 and all(c["match"] is not False for c in checks)
    finally:
        store.close_connection()
