"""``rwb arm metrics FILE``, run as a real subprocess (SPEC §4 contract)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def rwb(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=ROOT, env=env, input=stdin,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.corpus
def test_metrics_of_a_corpus_trace(corpus_dir):
    path = corpus_dir / "traces" / "arm-v0.8-q200-allClaude-roles-1781904686957.json"
    out = rwb("arm", "metrics", str(path))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["schema_version"] == "arm-trace-v1.2"
    assert report["jaccard_convergence"] == 0.15831547503084617
    assert report["tfidf_convergence"] == 0.022419287385592446
    assert report["directional_unanimity"] is False and report["disagreement_type"] == "values"
    assert report["agents"]["alpha"]["delta"] == -0.039999999999999925
    assert report["polarity_gate"]["fired"] is False
    assert report["summary"]["mismatched"] == 0
    assert {"metric": "convergence", "stored": 0.15831547503084617, "recomputed": 0.15831547503084617,
            "match": True, "note": None} in report["stored"]


@pytest.mark.corpus
def test_metrics_of_every_schema_generation(corpus_dir):
    for name in ("arm-v06-run-1778083372998.json", "arm-v071-run-FAP-test-007.json",
                 "arm-v0.9-q201-CGG-noroles-1783475435505-rerunAfterBuild.json"):
        out = rwb("arm", "metrics", str(corpus_dir / "traces" / name))
        assert out.returncode == 0, (name, out.stderr)
        assert json.loads(out.stdout)["summary"]["mismatched"] == 0


@pytest.mark.corpus
def test_metrics_from_stdin(corpus_dir):
    text = (corpus_dir / "traces" / "arm-v071-run-FAP-test-007.json").read_text(encoding="utf-8")
    out = rwb("arm", "metrics", "-", stdin=text)
    assert out.returncode == 0 and json.loads(out.stdout)["jaccard_convergence"] == 1 / 3


def test_a_non_json_file_exits_2_without_a_traceback(tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text("this is not JSON", encoding="utf-8")
    out = rwb("arm", "metrics", str(bad))
    assert out.returncode == 2 and out.stdout == ""
    assert "rwb arm: error:" in out.stderr and "not valid JSON" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("content, message", [
    ('{"hello": 1}', "r1: missing: this is not an ARM trace"),
    ('[1, 2, 3]', "must hold a JSON object"),
    ('{"r1": {}, "schema_version": "arm-trace-v1.0"}', "unsupported ARM schema"),  # older than any known
    ('{"r1": {}, "schema_version": "banana"}', "unsupported ARM schema"),
])
def test_json_that_is_not_an_arm_trace_exits_2(tmp_path, content, message):
    path = tmp_path / "x.json"
    path.write_text(content, encoding="utf-8")
    out = rwb("arm", "metrics", str(path))
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


def test_missing_file_and_bare_arm_command(tmp_path):
    out = rwb("arm", "metrics", str(tmp_path / "absent.json"))
    assert out.returncode == 2 and "no such file" in out.stderr
    bare = rwb("arm")
    assert bare.returncode == 0 and "metrics" in bare.stdout


# ── SPEC §11: the rules of the trace's own version (issue 25) ──────────────────────────────
@pytest.mark.corpus
@pytest.mark.parametrize("folder, name", [
    ("traces", "arm-v06-xCGG-values.json"),
    ("traces", "arm-v0.7.1-run-OT-001.json"),
    ("traces-v1.1", "arm-v08-run-TDIDF-embedding-001.json"),
    ("traces", "arm-v0.8-q200-CGG-roles-1781903954497.json"),
    ("traces", "arm-v0.9-q201-CGG-noroles-1783475435505-rerunAfterBuild.json"),
])
def test_older_rules_match_and_exit_0_with_todays_value_beside(corpus_dir, folder, name):
    if not (corpus_dir / folder).is_dir():
        pytest.skip(f"the ARM corpus has no {folder} folder: expected it at {corpus_dir / folder}")
    out = rwb("arm", "metrics", str(corpus_dir / folder / name))
    assert out.returncode == 0 and out.stderr == "", out.stderr
    report = json.loads(out.stdout)
    assert report["summary"]["mismatched"] == report["summary"]["unexplained"] == 0
    assert report["summary"]["older_rule"] >= 1  # each of these files has a rule that came later
    for entry in report["stored"]:
        assert entry["match"] is not False
        if "today" in entry:
            assert entry["today"]["match"] is False and entry["note"].startswith("older rule: ")


@pytest.mark.corpus
def test_an_unexplained_difference_exits_1_with_one_line(corpus_dir, tmp_path):
    data = json.loads((corpus_dir / "traces" / "arm-v0.7.1-run-OT-001.json").read_text(encoding="utf-8"))
    data["convergence"] = 0.5
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    out = rwb("arm", "metrics", str(path))
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and "convergence (stored 0.5" in out.stderr
    assert json.loads(out.stdout)["summary"]["unexplained"] == 1


@pytest.mark.corpus
def test_a_newer_schema_gets_todays_rules_and_says_so(corpus_dir, tmp_path):
    """OT-001 labelled as a future schema is held to today's gate, which fires there: exit 1."""
    data = json.loads((corpus_dir / "traces" / "arm-v0.7.1-run-OT-001.json").read_text(encoding="utf-8"))
    path = tmp_path / "future.json"
    path.write_text(json.dumps({"schema_version": "arm-trace-v3.0", **data}), encoding="utf-8")
    out = rwb("arm", "metrics", str(path))
    report = json.loads(out.stdout)
    assert report["notes"] == ["schema arm-trace-v3.0 is newer than the newest this workbench knows "
                               "(arm-trace-v1.3): today's rules are applied"]
    assert out.returncode == 1 and "r2.gamma.reconciliation_status" in out.stderr
    assert not any("today" in e for e in report["stored"])  # today's rules are its own


def test_a_simulated_arm_batch_checks_clean_once_exported(tmp_path):
    """`rwb run` a simulated batch whose silent baseline rotates over three providers, then
    `rwb arm export` every run and `rwb arm metrics` it: every stored value matches."""
    from workbench.core.project import _sql
    from workbench.core.project.store import Store

    config = json.loads((ROOT / "sample_runs" / "arm-batch.json").read_text(encoding="utf-8"))
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    project = tmp_path / "arm.rwb"
    assert rwb("run", str(path), "--project", str(project)).returncode == 0
    store = Store.open(project)
    try:
        runs = [r["id"] for r in _sql.rows(store, "runs", "protocol = 'arm'")]
        silent = {t["provider"] for t in _sql.rows(store, "traces", "role = 'silent'")}
    finally:
        store.close_connection()
    assert len(runs) == 4 and {"sim-a", "sim-b"} <= silent
    for run_id in runs:
        exported = tmp_path / f"{run_id}.json"
        assert rwb("arm", "export", run_id, "--project", str(project), "--out", str(exported)).returncode == 0
        out = rwb("arm", "metrics", str(exported))
        assert out.returncode == 0 and out.stderr == "", out.stderr
        report = json.loads(out.stdout)
        assert [e for e in report["stored"] if e["match"] is False] == []
        assert report["schema_version"] == "arm-trace-v1.3" and report["summary"]["older_rule"] == 0
