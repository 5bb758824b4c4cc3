"""``rwb new``, ``rwb info``, ``rwb demo`` and the CLI's general behaviour, through a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from workbench.core.project.schema import APPLICATION_ID, SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[2]


def rwb(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=REPO, input=stdin,
                          capture_output=True, text=True, timeout=60)


def test_new_then_info(tmp_path):
    created = rwb("new", str(tmp_path / "study"), "--name", "My study")
    assert created.returncode == 0, created.stderr
    path = tmp_path / "study.rwb"  # the suffix is added
    assert path.exists()
    info = json.loads(rwb("info", str(path)).stdout)
    assert info["name"] == "My study"
    assert info["schema_version"] == SCHEMA_VERSION
    assert info["application_id"] == APPLICATION_ID
    assert info["counts"]["project"] == 1 and info["counts"]["runs"] == 0


def test_info_refuses_a_bad_file_with_a_message_not_a_traceback(tmp_path):
    bad = tmp_path / "x.rwb"
    bad.write_text("plain text")
    out = rwb("info", str(bad))
    assert out.returncode == 2  # a project error (SPEC §6)
    assert "x.rwb is not a workbench project" in out.stderr
    assert "Traceback" not in out.stderr


def test_new_refuses_to_overwrite(tmp_path):
    path = tmp_path / "p.rwb"
    path.write_text("keep me")
    out = rwb("new", str(path))
    assert out.returncode == 2 and "already exists" in out.stderr
    assert path.read_text() == "keep me"


def test_demo_builds_a_project_with_the_simulated_panel(tmp_path):
    out = rwb("demo", "--out", str(tmp_path / "demo.rwb"))
    assert out.returncode == 0, out.stderr
    info = json.loads(rwb("info", str(tmp_path / "demo.rwb")).stdout)
    assert info["counts"]["clusters"] == 2 and info["counts"]["agents"] == 6
    assert info["counts"]["providers"] == 1


def test_rcp_config_warnings_go_to_stderr_and_keep_stdout_pure_json():
    payload = {"clusters": [{"name": "a", "agents": ["a1", "a2"]}, {"name": "b", "agents": ["b1", "b2"]},
                            {"name": "c", "agents": ["c1", "c2"]}],
               "tau": 0.6, "artifacts": [{"id": "w1", "author": "a1", "votes": {"a2": 1, "b1": 1}}]}
    out = rwb("classify", "rcp", "-", stdin=json.dumps(payload))
    assert out.returncode == 0
    assert json.loads(out.stdout)[0]["artifact"] == "w1"
    assert "warning: tau = 0.6 with 3 clusters leaves both polar tiers empty" in out.stderr


def test_no_command_prints_help():
    out = rwb()
    assert out.returncode == 0 and "classify" in out.stdout and "gui" in out.stdout
