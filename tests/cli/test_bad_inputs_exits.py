"""Exit codes and one-line errors (SPEC §6, docs/exit-codes.md), and inputs too big or too deep.

0 done; 1 the answer needs attention (one line on stderr says why); 2 bad input or a project
error; 4 an unexpected internal error (one line, ``--debug`` for the traceback).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.core import limits

REPO = Path(__file__).resolve().parents[2]
CODE = {"type": "code", "ref": "src/auth.py:42"}


@dataclass
class Result:
    code: int
    out: str
    err: str


def cli(*args: str, stdin: str | None = None) -> Result:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        if stdin is not None:
            fake = io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8")  # has .buffer, as stdin does
            stack.enter_context(_patched_stdin(fake))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        code = main([str(a) for a in args])
    return Result(code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _patched_stdin(stream):
    old, sys.stdin = sys.stdin, stream
    try:
        yield
    finally:
        sys.stdin = old


def rwb(*args: str, stdin: str | None = None) -> Result:
    done = subprocess.run([sys.executable, "-m", "workbench", *map(str, args)], cwd=REPO, input=stdin,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    return Result(done.returncode, done.stdout, done.stderr)


def one_line(result: Result, code: int, *needles: str) -> str:
    assert result.code == code, (result.code, result.err)
    assert "Traceback" not in result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# ----- deep, huge and odd inputs ---------------------------------------------------------------
DEEP = "[" * 100_000 + "]" * 100_000
READERS = [("classify", "rcp"), ("classify", "findings"), ("classify", "cons"), ("arm", "metrics")]


@pytest.mark.parametrize("command", READERS, ids=" ".join)
def test_json_nested_100000_deep_is_refused_in_one_line(tmp_path, command):
    path = tmp_path / "deep.json"
    path.write_text(DEEP)
    one_line(cli(*command, path), 2, "nests too deeply")


@pytest.mark.parametrize("depth", [65, 500, 990, 5_000])
def test_json_deeper_than_the_limit_is_refused_at_any_depth(depth):
    nested = '{"a": ' * depth + "1" + "}" * depth
    one_line(cli("classify", "rcp", "-", stdin=nested), 2, "stdin: nests too deeply")


def test_json_deep_through_a_subprocess_is_one_line_not_a_recursion_traceback(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text(DEEP)
    one_line(rwb("classify", "cons", path), 2, "nests too deeply")


@pytest.mark.parametrize("command", READERS, ids=" ".join)
def test_input_over_the_size_limit_is_refused(command, monkeypatch):
    monkeypatch.setattr(limits, "MAX_INPUT_BYTES", 1024)
    one_line(cli(*command, "-", stdin="[" + "1, " * 2000 + "1]"), 2, "stdin: is too large")


@pytest.mark.parametrize("source, needle", [
    ("/dev/zero", "is a device"),
    ("/proc", "is a folder"),
    ("/nonexistent/in.json", "no such file"),
    ("/etc/hostname/in.json", "no such file"),
])
@pytest.mark.parametrize("command", READERS, ids=" ".join)
def test_an_input_that_is_not_a_readable_file_is_refused(command, source, needle):
    one_line(cli(*command, source), 2, source, needle)


def test_not_utf8_is_refused_and_a_byte_order_mark_is_not(tmp_path):
    bad = tmp_path / "latin1.json"
    bad.write_bytes('{"clusters": "é"}'.encode("latin-1"))
    one_line(cli("classify", "rcp", bad), 2, "not UTF-8")
    bom = tmp_path / "bom.json"
    payload = {"threshold": 0.6, "findings": [{"id": "f1", "claim": "c", "votes": []}]}
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(payload).encode())
    assert cli("classify", "findings", bom).code == 0


# ----- exit 1: the answer needs attention ------------------------------------------------------
def cons(votes: list[dict], **extra) -> str:
    return json.dumps({"questionId": "q1", "question": "Is it done?", "votes": votes, **extra})


def vote(agent: str, choice: str, confidence: float = 0.9) -> dict:
    return {"agentId": agent, "option": "claim", "vote": choice, "confidence": confidence,
            "rationale": f"reason of {agent}", "evidence": [CODE]}


def test_a_contested_cons_question_exits_1_with_the_reason_in_one_line():
    votes = [vote(f"a{i}", "accept" if i <= 3 else "reject", 0.7) for i in range(1, 6)]
    out = cli("classify", "cons", "-", stdin=cons(votes, challengeRounds=2))
    line = one_line(out, 1, "rwb classify cons: CONTESTED: ")
    assert json.loads(out.out)["verdict"] == "CONTESTED" and "challenge round" in line


def test_insufficient_evidence_exits_1():
    out = cli("classify", "cons", "-", stdin=cons([vote("a1", "accept"), vote("a2", "accept")]))
    one_line(out, 1, "INSUFFICIENT_EVIDENCE", "minVoters")


def test_a_proven_question_exits_0_and_says_nothing():
    out = cli("classify", "cons", "-", stdin=cons([vote(f"a{i}", "accept") for i in range(5)]))
    assert out.code == 0 and out.err == "" and json.loads(out.out)["verdict"] == "PROVEN"


def test_a_question_still_open_exits_0():
    votes = [vote(f"a{i}", "accept" if i <= 3 else "reject", 0.7) for i in range(1, 6)]
    out = cli("classify", "cons", "-", stdin=cons(votes))
    assert out.code == 0 and json.loads(out.out)["nextAction"] == "challenge_round"


def test_echo_verify_not_verified_exits_1_with_one_line():
    one_line(cli("echo", "verify", "--marker", "7f3a9c", "-", stdin="no marker here"), 1,
             "rwb echo verify: not verified")


# ----- exit 2 and exit 4 -----------------------------------------------------------------------
def test_a_project_error_exits_2(tmp_path):
    one_line(cli("info", tmp_path / "missing.rwb"), 2, "rwb info: error: missing.rwb does not exist")


def test_a_workbench_refusal_exits_2(monkeypatch):
    from workbench.commands import project
    from workbench.core.errors import WorkbenchError

    def refuse(_args):
        raise WorkbenchError("There is no run 'x' in this project.")

    monkeypatch.setattr(project, "run_info", refuse)
    one_line(cli("info", "anything"), 2, "rwb info: error: There is no run 'x'")


def test_an_unexpected_error_exits_4_in_one_line_and_debug_shows_the_traceback(monkeypatch):
    from workbench.commands import project

    def bug(_args):
        raise RuntimeError("something\nunexpected")

    monkeypatch.setattr(project, "run_info", bug)
    line = one_line(cli("info", "anything"), 4, "rwb info: error: RuntimeError: something / unexpected")
    assert "--debug" in line
    debug = cli("--debug", "info", "anything")
    assert debug.code == 4 and "Traceback" in debug.err and "RuntimeError: something" in debug.err


def test_an_unexpected_error_in_a_subprocess_is_one_line_too(tmp_path):
    probe = ("import sys\nfrom workbench import cli\nfrom workbench.commands import project\n"
             "project.run_info = lambda a: 1 / 0\nsys.exit(cli.main(['info', 'x']))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60)
    one_line(Result(done.returncode, done.stdout, done.stderr), 4, "ZeroDivisionError")


def test_a_seed_too_big_for_sqlite_is_refused_before_anything_is_written(tmp_path):
    config = json.loads((REPO / "sample_runs" / "rcp-sim.json").read_text())
    config["seed"] = 2 ** 80
    path = tmp_path / "big-seed.json"
    path.write_text(json.dumps(config))
    one_line(rwb("run", path, "--project", tmp_path / "p.rwb", "--quiet"), 2, "seed")
    assert not (tmp_path / "p.rwb").exists()


def test_a_config_nested_too_deeply_is_refused(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text(DEEP)
    result = rwb("run", path, "--project", tmp_path / "p.rwb", "--quiet")
    assert result.code in (2, 4) and "Traceback" not in result.err and result.err.count("\n") == 1
    assert not (tmp_path / "p.rwb").exists()


def test_a_closed_stdout_is_not_an_error():
    done = subprocess.run(f"{sys.executable} -m workbench --help | head -c 10 > /dev/null; "
                          f"{sys.executable} -m workbench classify rcp - < /dev/null", shell=True, cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert "Traceback" not in done.stderr


def test_arm_metrics_exits_1_when_a_stored_value_is_unexplained(corpus_dir):
    source = corpus_dir / "traces" / "arm-v0.9-q201-CGG-roles-1782437641004.json"
    trace = json.loads(source.read_text(encoding="utf-8"))
    assert cli("arm", "metrics", source).code == 0
    trace["convergence"] = 0.5  # a stored value no rule of any build explains
    line = one_line(cli("arm", "metrics", "-", stdin=json.dumps(trace)), 1, "rwb arm metrics: 1 stored value")
    assert "convergence (stored 0.5" in line
