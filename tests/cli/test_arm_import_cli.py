"""``rwb arm import`` and ``rwb arm export`` through a subprocess: a byte-for-byte round trip."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def rwb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def test_import_then_export_gives_back_each_file_byte_for_byte(tmp_path, corpus_dir):
    project = tmp_path / "arm.rwb"
    assert rwb("new", str(project)).returncode == 0
    files = sorted((corpus_dir / "traces").glob("*.json"))
    out = rwb("arm", "import", *map(str, files), "--project", str(project))
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)
    assert [r["ok"] for r in results] == [True] * len(files)
    for path, result in zip(files, results):
        exported = tmp_path / f"{result['run_id']}.json"
        done = rwb("arm", "export", result["run_id"], "--project", str(project), "--out", str(exported))
        assert done.returncode == 0, done.stderr
        assert exported.read_bytes() == path.read_bytes(), path.name


def test_a_bad_file_is_reported_and_the_good_ones_still_imported(tmp_path, corpus_dir):
    project = tmp_path / "arm.rwb"
    rwb("new", str(project))
    bad = tmp_path / "notes.json"
    bad.write_text("these are notes")
    good = sorted((corpus_dir / "traces").glob("*.json"))[0]
    out = rwb("arm", "import", str(bad), str(good), "--project", str(project))
    assert out.returncode == 2
    assert "notes.json: not an ARM trace" in out.stderr and "Traceback" not in out.stderr
    assert [r["ok"] for r in json.loads(out.stdout)] == [False, True]
