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
    ('{"r1": {}, "schema_version": "arm-trace-v7"}', "unsupported ARM schema"),
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
