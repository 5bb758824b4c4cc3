"""Kill ``rwb study run`` with SIGKILL at random moments, resume it with ``rwb study resume``, and
compare with a study never interrupted (SPEC §9): the same results for every arm, item and
replicate (metrics and tiers, rule-only arms included), no call recorded twice, and a file that
passes ``PRAGMA integrity_check`` after every kill."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_study_cli import base
from tests.support.project_files import integrity

REPO = Path(__file__).resolve().parents[2]
KILLS = 5


def write_study(tmp_path: Path) -> Path:
    (tmp_path / "base.json").write_text(json.dumps(base()))
    path = tmp_path / "study.json"
    path.write_text(json.dumps({"study": "kill", "base": "base.json", "replicates": 4,
                                "arms": [{"name": "as configured"}, {"name": "theta 0.67", "set": {"theta": 0.67}},
                                         {"name": "strict", "patch": [{"op": "add", "value": 0.9,
                                                                       "path": "/clusters/1/agents/0/params/strictness"}]}]}))
    return path


def rwb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ})


def outcome(project: Path) -> dict:
    conn = sqlite3.connect(project)
    try:
        found = {}
        for arm, item, rep, metrics, status, run_summary, variant_summary in conn.execute(
                "SELECT s.arm, s.item, s.replicate, s.metrics_json, s.status, r.summary_json, v.summary_json "
                "FROM study_results s JOIN runs r ON r.id = s.run_id "
                "LEFT JOIN classification_variants v ON v.id = s.variant_id"):
            summary = json.loads(variant_summary or run_summary)
            tiers = [(s["artifact"], s["tier"]) for s in summary["rounds"][-1]["states"]]
            found[(arm, item, rep)] = (status, json.loads(metrics), tiers)
        keys = conn.execute("SELECT run_id, step_key FROM llm_calls WHERE status IN ('ok', 'invalid')").fetchall()
        variants = conn.execute("SELECT count(*) FROM classification_variants").fetchone()[0]
    finally:
        conn.close()
    assert len(keys) == len(set(keys)), "a call was recorded twice"
    return {"results": found, "calls": len(keys), "variants": variants}


def calls_on_disk(project: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True, timeout=1)
        try:
            return conn.execute("SELECT count(*) FROM llm_calls").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0  # not created yet, or briefly locked by the writer


@pytest.mark.timeout(600)
def test_a_study_killed_at_random_moments_resumes_to_the_same_results(tmp_path):
    rng = random.Random(29)
    study = write_study(tmp_path)
    reference = tmp_path / "reference.rwb"
    done = rwb("study", "run", str(study), "--project", str(reference), "--quiet")
    assert done.returncode == 0, done.stderr
    expected = outcome(reference)
    assert len(expected["results"]) == 12 and expected["calls"] == 288 and expected["variants"] == 4

    report = []
    for trial in range(KILLS):
        project = tmp_path / f"killed-{trial}.rwb"
        proc = subprocess.Popen([sys.executable, "-m", "workbench", "study", "run", str(study), "--project",
                                 str(project), "--quiet"], cwd=REPO, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        study_id = proc.stdout.readline().strip()  # printed once every run of the study exists
        target = rng.randint(1, 240)
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline and calls_on_disk(project) < target:
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        assert integrity(project) == "ok", f"trial {trial}: the killed file is damaged"
        before = outcome(project)
        report.append((trial, target, before["calls"], len(before["results"])))
        resumed = rwb("study", "resume", study_id, "--project", str(project), "--quiet")
        assert resumed.returncode == 0, resumed.stderr
        assert json.loads(resumed.stdout.splitlines()[-1])["status"] == "completed"
        after = outcome(project)
        assert after == expected, f"trial {trial}: the resumed study differs from the uninterrupted one"
        assert integrity(project) == "ok"
    print("\nstudy kill-and-resume: trial, kill after calls, calls and results at the kill (of 288 and 12):")
    for row in report:
        print("  ", *row)
    assert sum(0 < calls < 288 for _t, _k, calls, _r in report) >= KILLS - 2, "the kills should land mid-study"
