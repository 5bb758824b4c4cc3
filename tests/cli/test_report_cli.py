"""``rwb runs`` (a table, or JSON with --json), ``rwb export --format md|html|jsonl|csv`` (the same
bytes as :func:`export_bytes`, which the GUI's Export writes too) and the progress line's words."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.report_runs import run_sample
from workbench.commands.progress import Progress, echo_event, phase_label, progress_line
from workbench.core.project.export import export_bytes
from workbench.core.project.store import Store

REPO = Path(__file__).resolve().parents[2]
SPEC_KEYS = ["run_id", "protocol", "status", "label", "simulated", "source", "started_at", "finished_at", "error"]
STUDY_KEYS = ["batch_id", "study_id", "arm", "item", "replicate", "seed"]


def rwb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *map(str, args)], cwd=REPO, capture_output=True,
                          timeout=120)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    path = tmp_path_factory.mktemp("reports") / "p.rwb"
    store = Store.create(path)
    mp = pytest.MonkeyPatch()
    try:
        ids = [run_sample(store, name, mp) for name in ("findings", "cons")]
    finally:
        mp.undo()
        store.close_connection()
    return path, ids


def test_runs_prints_a_readable_table_by_default(project):
    path, ids = project
    out = rwb("runs", "--project", path)
    assert out.returncode == 0, out.stderr
    text = out.stdout.decode()
    lines = text.splitlines()
    assert lines[0].split() == ["RUN", "PROTOCOL", "STATUS", "KIND", "STARTED", "(UTC)", "LABEL", "BATCH/STUDY", "ARM",
                                "ITEM", "REP", "NOTE"]  # issue 29: where each run belongs
    assert set(lines[1]) <= {"-", " "}
    assert any(line.startswith(ids[0]) and "completed" in line and " sim " in line for line in lines)
    assert "2 runs. Full details as JSON: rwb runs --json" in text
    assert not text.lstrip().startswith("[")


def test_runs_json_keeps_the_spec_contract(project):
    path, ids = project
    out = rwb("runs", "--project", path, "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["run_id"] for r in rows] == ids
    # The keys it always had, in their order, then where the run belongs (issue 29).
    assert all(list(r) == SPEC_KEYS + STUDY_KEYS for r in rows)
    assert rows[0]["simulated"] is True and rows[0]["status"] == "completed"
    # the exact layout it always had: json.dump(indent=2, ensure_ascii=False) and a newline
    assert out.stdout.decode() == json.dumps(rows, indent=2, ensure_ascii=False) + "\n"


def test_runs_table_of_an_empty_project_says_how_to_start(tmp_path):
    path = tmp_path / "empty.rwb"
    Store.create(path).close_connection()
    out = rwb("runs", "--project", path)
    assert out.returncode == 0 and b"No runs in this project yet" in out.stdout
    assert json.loads(rwb("runs", "--project", path, "--json").stdout) == []


@pytest.mark.parametrize("fmt", ["md", "html", "jsonl", "csv"])
def test_export_writes_the_bytes_export_bytes_gives(project, tmp_path, fmt):
    path, ids = project
    store = Store.open(path)
    try:
        expected = {run_id: export_bytes(store, run_id, fmt) for run_id in ids}
    finally:
        store.close_connection()
    for run_id in ids:
        out = rwb("export", run_id, "--project", path, "--format", fmt)
        assert out.returncode == 0, out.stderr
        assert out.stdout == expected[run_id]
        target = tmp_path / f"{run_id}.{fmt}"
        written = rwb("export", run_id, "--project", path, "--format", fmt, "--out", target)
        assert written.returncode == 0, written.stderr
        assert target.read_bytes() == expected[run_id]


def test_export_html_is_a_page_of_the_markdown(project):
    path, ids = project
    html = rwb("export", ids[1], "--project", path, "--format", "html").stdout.decode()
    assert html.startswith("<!DOCTYPE html>") and "<h2>Manifest entry</h2>" in html
    assert "<table>" in html and "<script" not in html


def test_export_of_an_unknown_run_is_refused_in_one_line(project):
    path, _ = project
    out = rwb("export", "nope", "--project", path, "--format", "md")
    assert out.returncode == 2 and out.stderr.decode().count("\n") == 1 and b"no run" in out.stderr


# ----- progress ---------------------------------------------------------------------------------

@pytest.mark.parametrize("phase, label", [
    ("Round 1: vote", "Round 1 · votes"),
    ("Round 2: generate", "Round 2 · responses"),
    ("Round 1: vote (wave 2/5)", "Round 1 · votes (wave 2/5)"),
    ("Ballots", "Ballots"),
    ("Agents vote on the findings", "Agents vote on the findings"),
    ("result", "Results"),
    ("echo.verification", "Echo · marker check"),
])
def test_phases_are_named_as_a_user_knows_them(phase, label):
    assert phase_label(phase) == label


def test_progress_line_names_phase_agent_calls_failures_and_eta():
    assert progress_line("Round 1: vote", "critic-2", 15, 36, 1, 42.4) == \
        "Round 1 · votes · critic-2 — 15/36 calls, 1 failed, ETA 42 s"
    assert progress_line("Round 1: vote", None, 36, 36, 0, None) == "Round 1 · votes — 36/36 calls, 0 failed"
    assert progress_line("Ballots", "r1", 1, 5, 0, 125) == "Ballots · r1 — 1/5 calls, 0 failed, ETA 2 min 05 s"


def test_echo_events_get_a_line_only_when_they_matter():
    assert echo_event("echo.verification", "a1: marker 3d190f verified (interval)") is None
    assert echo_event("echo.verification", "c1: marker 1fa74d FAILED (interval)") == \
        "Echo · c1 lost its marker (marker 1fa74d not recited (interval))"
    assert echo_event("echo.transition", "c1: restoration resume") == "Echo · c1 restored, resuming"
    assert echo_event("echo.transition", "c1: restoration inject") is None
    assert echo_event("echo.seed", "c1: session seed checkpoint") is None


class _P:
    def __init__(self, phase, done, total, failed=0, eta_s=None, message=""):
        self.phase, self.done, self.total, self.failed, self.eta_s, self.message = phase, done, total, failed, eta_s, message


class _E:
    def __init__(self, agent):
        self.agent = agent


def test_progress_into_a_file_writes_a_line_per_phase_and_the_end():
    stream = io.StringIO()
    progress = Progress(quiet=False, stream=stream)
    progress.on_call(_E("advocate-1"))
    progress(_P("Round 1: generate", 0, 6))
    progress(_P("Round 1: generate", 3, 6, eta_s=1.0))  # same phase: no new line into a file
    progress.on_call(_E("critic-2"))
    progress(_P("Round 1: vote", 6, 12, failed=1, eta_s=3.0))
    progress(_P("echo.verification", 6, 12, message="critic-2: marker abcdef FAILED (interval)"))
    progress(_P("result", 12, 12, failed=1))
    progress.close()
    assert stream.getvalue().splitlines() == [
        "Round 1 · responses · advocate-1 — 0/6 calls, 0 failed",
        "Round 1 · votes · critic-2 — 6/12 calls, 1 failed, ETA 3 s",
        "Echo · critic-2 lost its marker (marker abcdef not recited (interval))",
        "Done — 12/12 calls, 1 failed",
    ]


def test_quiet_progress_writes_nothing():
    stream = io.StringIO()
    progress = Progress(quiet=True, stream=stream)
    progress(_P("Round 1: vote", 1, 2))
    progress.close()
    assert stream.getvalue() == ""
