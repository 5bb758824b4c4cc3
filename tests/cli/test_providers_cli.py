"""``rwb providers stats --project FILE [--json] [--run RUN_ID]`` through a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.test_provider_stats import build

ROOT = Path(__file__).resolve().parents[2]


def rwb(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    path = tmp_path_factory.mktemp("providers") / "p.rwb"
    build(path).close_connection()
    return path


def test_a_readable_table_by_default(project):
    done = rwb("providers", "stats", "--project", str(project))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:4] == ["PROVIDER", "MODEL", "CALLS", "VALID"]
    local = next(line for line in lines if line.startswith("local"))
    assert "openai/gemma" in local and "86% (18/21)" in local
    assert "110 ms" in local and "200 ms" in local  # p50 and p95
    assert "unknown (1 call)" in local and "$0" not in local
    assert "template echo 1, cut at cap 1, rubber stamp 1" in local
    cloud = next(line for line in lines if line.startswith("cloud"))
    assert "$0.0400" in cloud and "300 ms" in cloud and "500 ms" in cloud


def test_json_and_one_run(project):
    done = rwb("providers", "stats", "--project", str(project), "--json", "--run", "r2")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [(r["provider"], r["calls"], r["cost_usd"]) for r in rows] == [("local", 1, 0.001)]
    every = json.loads(rwb("providers", "stats", "--project", str(project), "--json").stdout)
    local = next(r for r in every if r["provider"] == "local")
    assert local["cost_usd"] is None and local["cost_unknown_calls"] == 1
    assert local["latency_p50_ms"] == 110.0 and local["valid_rate"] == pytest.approx(18 / 21)


def test_a_missing_or_damaged_project_or_an_unknown_run_exits_2_with_one_line(project, tmp_path):
    bad = tmp_path / "bad.rwb"
    bad.write_text("not a project")
    for args in (("--project", str(tmp_path / "none.rwb")), ("--project", str(bad)),
                 ("--project", str(project), "--run", "nope")):
        done = rwb("providers", "stats", *args)
        assert done.returncode == 2 and done.stdout == ""
        assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("rwb providers: error: ")
