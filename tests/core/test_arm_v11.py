"""arm-trace-v1.1 (early v0.8 builds; FORMAT.md §2): read, metrics, import and export byte for byte.

The two v1.1 traces live in the corpus's ``traces-v1.1/`` folder; tests that need them skip with
the reason when it is absent. Upstream has more v1.1 traces than these two, so the version is
also checked on synthetic traces. The per-value older rules (a build that used an older rule
than today's) are checked here too, for every generation that has one.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project.arm_import import export_arm_run, import_arm_file
from workbench.core.project.store import Store
from workbench.core.protocols.arm import metrics_report, parse_run, run_to_upstream
from workbench.core.protocols.arm.fields import SCHEMA_V11, SCHEMA_VERSIONS
from workbench.core.protocols.arm.gates import fap_abort_placeholder
from workbench.core.protocols.arm.js import export_integrity_hash, js_stringify
from workbench.core.protocols.arm.trace import trace_to_upstream
from workbench.core.protocols.arm.versions import HARNESS_FIELDS

REPO = Path(__file__).resolve().parents[2]
FILES = ["arm-v08-run-CFAAq2-xCGG-roles.json", "arm-v08-run-TDIDF-embedding-001.json"]


@pytest.fixture
def v11_dir(corpus_dir) -> Path:
    folder = corpus_dir / "traces-v1.1"
    if not folder.is_dir():
        pytest.skip(f"the ARM corpus has no traces-v1.1 folder: expected it at {folder}")
    assert sorted(p.name for p in folder.glob("*.json")) == FILES
    return folder


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "arm.rwb")
    yield s
    s.close_connection()


def test_the_version_is_accepted(v11_dir):
    assert SCHEMA_V11 in SCHEMA_VERSIONS
    for name in FILES:
        data = json.loads((v11_dir / name).read_text(encoding="utf-8"))
        run = parse_run(data)
        assert run.generation == "arm-trace-v1.1" and not run.smoothed_idf
        assert run_to_upstream(run) == data
        assert export_integrity_hash(data) == data["export_integrity_hash"]


def test_import_then_export_gives_back_each_file_byte_for_byte(store, v11_dir):
    for name in FILES:
        path = v11_dir / name
        result = import_arm_file(store, path)
        assert result.schema_version == "arm-trace-v1.1" and result.traces == 7
        assert js_stringify(export_arm_run(store, result.run_id)).encode("utf-8") == path.read_bytes(), name
        run = _sql.get(store, "runs", result.run_id)
        assert run["provenance_json"]["schema_version"] == "arm-trace-v1.1"


def test_import_then_export_through_the_command_line(tmp_path, v11_dir):
    def rwb(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=REPO, capture_output=True,
                              text=True, timeout=120)

    project = tmp_path / "arm.rwb"
    assert rwb("new", str(project)).returncode == 0
    files = [v11_dir / name for name in FILES]
    out = rwb("arm", "import", *map(str, files), "--project", str(project))
    assert out.returncode == 0, out.stderr
    for path, result in zip(files, json.loads(out.stdout)):
        exported = tmp_path / f"{result['run_id']}.json"
        assert rwb("arm", "export", result["run_id"], "--project", str(project), "--out", str(exported)).returncode == 0
        assert exported.read_bytes() == path.read_bytes(), path.name


def test_metrics_reproduce_every_stored_value_or_name_the_older_rule(v11_dir):
    for name in FILES:
        report = metrics_report(json.loads((v11_dir / name).read_text(encoding="utf-8")))
        assert report["schema_version"] == "arm-trace-v1.1" and report["tfidf_idf"] == "unsmoothed"
        for e in report["stored"]:
            if isinstance(e["stored"], float) and e["match"]:
                assert abs(e["stored"] - e["recomputed"]) <= 1e-9
            assert e["match"] is True or (e["match"] is None and e["note"]), e
            if "today" in e:  # a rule that came after v1.1: today's value is shown, not counted
                assert e["note"].startswith("older rule: ") and "(arm-trace-v1.1) predates it" in e["note"]
        assert report["summary"]["unexplained"] == report["summary"]["mismatched"] == 0
    tdidf = metrics_report(json.loads((v11_dir / FILES[1]).read_text(encoding="utf-8")))
    assert tdidf["tfidf_convergence"] == 0.06049038386613858 and tdidf["jaccard_convergence"] == 0.625
    assert tdidf["polarity_gate"]["fired"] and tdidf["polarity_gate"]["stored_fired"]


def minimal_v11() -> dict:
    trace = {"claim": "Yes, it should act.", "confidence": 0.8, "flags": ["values_conflict"],
             "self_check": {"status": "auto_warn", "notes": "", "self_check_overridden": True,
                            "self_check_original_status": "clean"}, "_ok": True}
    return {"schema_version": "arm-trace-v1.1", "r1": {"alpha": trace, "beta": copy.deepcopy(trace)},
            "convergence": 1.0, "runMeta": {"schema_version": "arm-trace-v1.1", "convergence": 1.0}}


def test_any_v11_trace_is_read_not_just_the_corpus():
    report = metrics_report(minimal_v11())
    entry = next(e for e in report["stored"] if e["metric"] == "r1.alpha.self_check (override)")
    assert entry["stored"] == entry["recomputed"] == {"status": "auto_warn", "override_reason": None}
    assert entry["match"] is True
    assert entry["today"] == {"value": {"status": "auto_warn", "override_reason": "values_tension_flag"}, "match": False}
    bad = minimal_v11()
    bad["r1"]["alpha"]["confidence"] = "high"
    with pytest.raises(InputError, match=r'^r1\.alpha\.confidence: must be a number, got "high"$'):
        parse_run(bad)


def test_a_v11_override_the_build_would_not_make_is_unexplained():
    data = minimal_v11()
    data["r1"]["alpha"]["self_check"] = {"status": "clean", "notes": ""}  # flags path: v1.1 overrode this too
    entry = next(e for e in metrics_report(data)["stored"] if e["metric"] == "r1.alpha.self_check (override)")
    assert entry["match"] is False and entry["recomputed"] == {"status": "auto_warn", "override_reason": None}
    assert metrics_report(data)["summary"]["unexplained"] == 1


def legacy_with_placeholder(complete: bool) -> dict:
    placeholder = trace_to_upstream(fap_abort_placeholder("gpt", "gpt-4o"))
    if not complete:  # the shape a v0.6/v0.7.1 build wrote: no _ok, no harness deltas
        for key in ("_ok", "harness_self_delta_vs_baseline", "self_delta_mismatch"):
            placeholder.pop(key)
    silent = {"claim": "[PARSE FAILED]", "confidence": None, "reconciliation_status": "failed",
              "self_check": {"status": "failed", "notes": "JSON parse error."}}
    return {"r1": {"alpha": {"claim": "Yes.", "confidence": 0.7}, "silent": silent},
            "r2": {"gamma": placeholder}, "convergence": None,
            "runMeta": {"silentConfidence": None, "convergence": None}}


def test_the_legacy_fap_placeholder_shape_is_reported_per_value():
    report = metrics_report(legacy_with_placeholder(complete=False))
    placeholder = [e for e in report["stored"] if "FAP abort placeholder" in e["metric"]]
    absent = {e["metric"]: e for e in placeholder if "today" in e}
    # harness_self_delta_vs_baseline is null in today's placeholder: absent reads the same
    assert set(absent) == {f"r2.gamma.{k} (FAP abort placeholder) (absent)" for k in ("_ok", "self_delta_mismatch")}
    ok = absent["r2.gamma._ok (FAP abort placeholder) (absent)"]
    assert (ok["stored"], ok["recomputed"], ok["match"]) == (None, None, True)
    assert ok["today"] == {"value": False, "match": False}
    assert ok["note"] == parse_run(legacy_with_placeholder(complete=False)).build.older_note(HARNESS_FIELDS)
    assert all(e["match"] is True for e in placeholder)
    assert report["summary"]["unexplained"] == 0 and report["summary"]["older_rule"] == 2


def test_a_current_placeholder_matches_field_by_field():
    data = legacy_with_placeholder(complete=True)
    data["schema_version"] = "arm-trace-v1.2"
    report = metrics_report(data)
    placeholder = [e for e in report["stored"] if "FAP abort placeholder" in e["metric"]]
    assert placeholder and all(e["match"] is True for e in placeholder)
    data["r2"]["gamma"]["claim"] = "[FAP — something else]"
    bad = [e for e in metrics_report(data)["stored"] if e["match"] is False]
    assert [e["metric"] for e in bad] == ["r2.gamma.claim (FAP abort placeholder)"] and "today" not in bad[0]
