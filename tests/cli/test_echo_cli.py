"""``rwb echo marker|verify|footer`` through a subprocess: the SPEC §5 contracts and exit codes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.core.project import _sql
from workbench.core.project.store import Store

REPO = Path(__file__).resolve().parents[2]
MARKER_RE = re.compile(r"^[^—\n]+ — [0-9a-f]{6}$")
MARKER = "the hand on the neck, the shape of the breath — 7f3a9c"
FOOTER = ":: SYSTEM :: [Resonance: 7f3a9c] [Role: Architect] [State: Degraded]"


def rwb(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", "echo", *args], cwd=REPO, input=stdin,
                          capture_output=True, text=True, timeout=60)


def no_traceback(out: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in out.stderr and "Traceback" not in out.stdout


# ----- marker -----------------------------------------------------------------------------------
def test_marker_prints_one_marker_in_the_spec_format():
    out = rwb("marker")
    assert out.returncode == 0, out.stderr
    assert MARKER_RE.match(out.stdout.strip()), out.stdout
    assert out.stdout.count("\n") == 1


def test_a_seeded_marker_is_reproducible_without_a_project():
    a, b = rwb("marker", "--seed", "7"), rwb("marker", "--seed", "7")
    assert a.returncode == b.returncode == 0
    assert a.stdout == b.stdout and MARKER_RE.match(a.stdout.strip())


def test_markers_recorded_in_a_project_are_never_reissued(tmp_path):
    path = tmp_path / "p.rwb"
    Store.create(path).close_connection()
    # The same seed would draw the same hex; the project makes the second draw differ.
    first = rwb("marker", "--project", str(path), "--seed", "7")
    second = rwb("marker", "--project", str(path), "--seed", "7")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert first.stdout != second.stdout
    store = Store.open(path)
    try:
        issued = {r["marker"] for r in _sql.rows(store, "echo_markers")}
    finally:
        store.close_connection()
    assert issued == {first.stdout.strip(), second.stdout.strip()}


def test_marker_with_a_missing_project_fails_cleanly(tmp_path):
    out = rwb("marker", "--project", str(tmp_path / "none.rwb"))
    assert out.returncode == 2 and "none.rwb" in out.stderr  # a project error (SPEC §6)
    no_traceback(out)


# ----- verify -----------------------------------------------------------------------------------
def test_verify_exits_0_with_the_json_result_for_a_paraphrase_with_the_right_hex(tmp_path):
    reply = tmp_path / "reply.txt"
    reply.write_text("I hold it: a hand at the neck, breath's shape — 7f3a9c\n", encoding="utf-8")
    out = rwb("verify", "--marker", MARKER, str(reply))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["verified"] is True and result["expected_hex"] == "7f3a9c" and result["found_hex"] == "7f3a9c"
    assert set(result) == {"verified", "expected_hex", "found_hex", "where", "reason", "in_quoted"}


def test_verify_exits_1_with_the_json_result_for_a_wrong_hex():
    out = rwb("verify", "--marker", MARKER, "-", stdin="the hand on the neck, the shape of the breath — 7f3a9d")
    assert out.returncode == 1
    result = json.loads(out.stdout)
    assert result["verified"] is False and result["found_hex"] == "7f3a9d"


def test_verify_accepts_a_bare_hex_and_uppercase_only_on_request():
    assert rwb("verify", "--marker", "7f3a9c", "-", stdin="Resonance: 7f3a9c").returncode == 0
    assert rwb("verify", "--marker", "7f3a9c", "-", stdin="Resonance: 7F3A9C").returncode == 1
    assert rwb("verify", "--marker", "7f3a9c", "--accept-uppercase", "-", stdin="Resonance: 7F3A9C").returncode == 0


def test_verify_ignores_a_hex_inside_quoted_artifact_text(tmp_path):
    reply = "Reviewing:\n[[A]]\nResonance: 7f3a9c\n[[/A]]\nNo marker of my own."
    assert rwb("verify", "--marker", "7f3a9c", "-", stdin=reply).returncode == 0  # unmarked: counted
    out = rwb("verify", "--marker", "7f3a9c", "--delimiters", "[[A]]", "[[/A]]", "-", stdin=reply)
    assert out.returncode == 1 and json.loads(out.stdout)["in_quoted"] is True
    artifact = tmp_path / "art.txt"
    artifact.write_text("Draft by a2. Resonance: 7f3a9c", encoding="utf-8")
    copied = "I paste it: Draft by a2. Resonance: 7f3a9c"
    assert rwb("verify", "--marker", "7f3a9c", "--artifact", str(artifact), "-", stdin=copied).returncode == 1
    assert rwb("verify", "--marker", "7f3a9c", "-", stdin="> Resonance: 7f3a9c").returncode == 1


@pytest.mark.parametrize("args", [
    ("verify", "--marker", "salt on the threshold - 7f3a9c", "-"),  # hyphen, not an em dash
    ("verify", "--marker", "7F3A9C", "-"),
    ("verify", "--marker", "7f3a9", "-"),
    ("verify", "-"),  # --marker missing
    ("verify", "--marker", "7f3a9c", "does-not-exist.txt"),
    ("verify", "--marker", "7f3a9c", "--artifact", "does-not-exist.txt", "-"),
    ("marker", "--seed", "seven"),
    ("frobnicate",),
    (),
])
def test_bad_arguments_exit_2_without_a_traceback(args):
    out = rwb(*args, stdin="Resonance: 7f3a9c")
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert out.stderr.strip()
    no_traceback(out)


# ----- footer -----------------------------------------------------------------------------------
def test_footer_prints_the_fields_as_json(tmp_path):
    reply = tmp_path / "reply.md"
    reply.write_text(f"The design holds.\n{FOOTER}\n", encoding="utf-8")
    out = rwb("footer", str(reply))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"resonance": "7f3a9c", "role": "Architect", "state": "Degraded", "line": 2}


def test_footer_exits_1_with_a_clear_message_when_there_is_none_or_it_is_malformed():
    none = rwb("footer", "-", stdin="No footer here.")
    assert none.returncode == 1 and "no footer" in none.stderr and none.stdout == ""
    bad = rwb("footer", "-", stdin=":: SYSTEM :: [Resonance: 7f3a9c] [Role: Architect] [State: Fine]")
    assert bad.returncode == 1 and "State must be one of Stable, Degraded, Recovering" in bad.stderr
    no_traceback(none)
    no_traceback(bad)


def test_a_footer_quoted_in_an_artifact_is_not_trusted():
    reply = f"Quoting the Critic:\n> {FOOTER}\nThat is all."
    out = rwb("footer", "-", stdin=reply)
    assert out.returncode == 1 and "quoted artifact text" in out.stderr
    fenced = f"<<A>>\n{FOOTER}\n<</A>>\nDone."
    assert rwb("footer", "-", stdin=fenced).returncode == 0  # without the fences named, it would count
    assert rwb("footer", "--delimiters", "<<A>>", "<</A>>", "-", stdin=fenced).returncode == 1


def test_footer_of_a_missing_file_is_bad_input():
    out = rwb("footer", "nope.txt")
    assert out.returncode == 2 and "no such file" in out.stderr
    no_traceback(out)
