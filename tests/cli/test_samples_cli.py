"""``rwb samples``: rebuilding the sample projects, and ``--check`` against the committed files."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_runs"


def rwb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def test_check_passes_on_a_clean_checkout():
    done = rwb("samples", "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rcp-tiers: same" in done.stdout and "cons-verdicts: same" in done.stdout


def test_check_names_the_differing_row_and_exits_1(tmp_path):
    shutil.copyfile(SAMPLES / "cons-verdicts.rwb", tmp_path / "cons-verdicts.rwb")
    conn = sqlite3.connect(tmp_path / "cons-verdicts.rwb")
    with conn:
        conn.execute("UPDATE cons_ballots SET confidence = 0.5 WHERE id = 3")
    conn.close()
    done = rwb("samples", "--check", "--out", str(tmp_path), "--only", "cons-verdicts")
    assert done.returncode == 1
    assert "cons-verdicts: differs" in done.stdout and "cons_ballots row 3 column confidence" in done.stdout
    assert done.stderr.count("\n") == 1 and "cons-verdicts" in done.stderr


def test_samples_builds_into_out_and_refuses_bad_input(tmp_path):
    done = rwb("samples", "--out", str(tmp_path), "--only", "findings-review")
    assert done.returncode == 0, done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["findings-review.rwb"]  # no temporary file left
    assert rwb("samples", "--only", "nope").returncode == 2
    assert rwb("samples", "--out", str(tmp_path / "missing")).returncode == 2
    assert rwb("samples", "--corpus", str(tmp_path / "missing")).returncode == 2
