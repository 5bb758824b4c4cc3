"""``rwb classify cons FILE``, run as a real subprocess (SPEC §3 contract)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

CODE = {"file": "src/map.py", "section": "save", "type": "code"}
SPEC_INPUT = {
    "questionId": "CONS-001", "question": "Single file or split?",
    "consensusThreshold": 0.8, "minVoters": 3, "challengeRounds": 0, "maxChallengeRounds": 2,
    "votes": [
        {"agentId": "opus-1", "option": "single", "vote": "accept", "confidence": 0.90,
         "rationale": "Atomic operations", "evidence": [CODE]},
        {"agentId": "sonnet-1", "option": "single", "vote": "accept", "confidence": 0.85,
         "rationale": "One artefact to back up", "evidence": []},
        {"agentId": "haiku-1", "option": "split", "vote": "accept", "confidence": 0.50,
         "rationale": "Smaller diffs", "evidence": []},
    ],
}


def rwb(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=ROOT, env=env,
                          input=stdin, capture_output=True, text=True, timeout=60)


def check(out: dict[str, Any]) -> None:
    assert out["questionId"] == "CONS-001"
    assert out["actualConsensus"] == 1.75 / 2.25
    assert abs(out["actualConsensus"] - 0.778) < 5e-4
    assert out["verdict"] is None and out["nextAction"] == "challenge_round"
    assert out["leadingOption"] == "single" and out["consensusThreshold"] == 0.8
    assert isinstance(out["conflicts"], list) and out["escalations"] == []
    assert [o["agentId"] for o in out["options"]] == ["opus-1", "sonnet-1", "haiku-1"]


def test_classify_cons_file(tmp_path: Path) -> None:
    path = tmp_path / "in.json"
    path.write_text(json.dumps(SPEC_INPUT), encoding="utf-8")
    proc = rwb("classify", "cons", str(path))
    assert proc.returncode == 0, proc.stderr
    check(json.loads(proc.stdout))


def test_classify_cons_stdin() -> None:
    proc = rwb("classify", "cons", "-", stdin=json.dumps(SPEC_INPUT))
    assert proc.returncode == 0, proc.stderr
    check(json.loads(proc.stdout))


def test_classify_cons_contested_after_two_rounds() -> None:
    votes = [{"agentId": f"a{i}", "option": "claim", "vote": "accept" if i <= 3 else "reject",
              "confidence": 0.7, "rationale": f"distinct reason {i}", "evidence": [CODE]}
             for i in range(1, 6)]
    payload = {**SPEC_INPUT, "votes": votes, "challengeRounds": 2}
    proc = rwb("classify", "cons", "-", stdin=json.dumps(payload))
    assert proc.returncode == 1, proc.stderr  # SPEC §6: a contested verdict needs attention
    assert proc.stderr.startswith("rwb classify cons: CONTESTED: ") and proc.stderr.count("\n") == 1
    out = json.loads(proc.stdout)
    assert out["verdict"] == "CONTESTED" and out["nextAction"] == "escalate_to_human"
    assert [e["reason"] for e in out["escalations"]] == ["contested_verdict"]
    assert out["conflicts"][0]["severity"] == "high"


@pytest.mark.parametrize(("change", "needle"), [
    ({"rationale": ""}, "votes[1].rationale: required (CONS-002)"),
    ({"confidence": 1.5}, "votes[1].confidence"),
    ({"vote": "maybe"}, "votes[1].vote"),
])
def test_classify_cons_invalid_ballot_exits_2(tmp_path: Path, change: dict[str, Any], needle: str) -> None:
    payload = json.loads(json.dumps(SPEC_INPUT))
    payload["votes"][1].update(change)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    proc = rwb("classify", "cons", str(path))
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize(("stdin", "needle"), [
    ("[1, 2]", "JSON object"),
    ("{not json", "not valid JSON"),
    (json.dumps({**SPEC_INPUT, "minVoters": 0}), "minVoters"),
])
def test_classify_cons_bad_stdin_exits_2(stdin: str, needle: str) -> None:
    proc = rwb("classify", "cons", "-", stdin=stdin)
    assert proc.returncode == 2
    assert needle in proc.stderr and "Traceback" not in proc.stderr
