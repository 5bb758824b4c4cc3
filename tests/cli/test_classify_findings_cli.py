"""``rwb classify findings FILE``, end to end through a subprocess (SPEC §2 contract)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SEED_PAYLOAD = {
    "threshold": 0.6,
    "findings": [
        {"id": "f1", "claim": "commit e8f2a91 implements OAuth2 login", "votes": [
            {"agent": "scout", "vote_type": "confirm", "confidence": 0.85, "reason": "in git log"},
            {"agent": "auditor", "vote_type": "challenge", "confidence": 0.65, "reason": "stale"},
            {"agent": "dev", "vote_type": "confirm", "confidence": 0.95, "reason": "ran git log"},
        ]},
        {"id": "f2", "claim": "nobody has looked yet", "votes": []},
        {"id": "f3", "claim": "agreed", "votes": [
            {"agent": "scout", "vote_type": "confirm", "confidence": 0.7, "reason": ""},
            {"agent": "auditor", "vote_type": "uncertain", "confidence": 0.9, "reason": ""},
            {"agent": "dev", "vote_type": "confirm", "confidence": 0.5, "reason": ""},
        ]},
    ],
}


def rwb(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args],
        cwd=REPO, env=env, input=stdin, capture_output=True, text=True, timeout=60,
    )


def check_seed_output(out: list[dict]) -> None:
    assert [e["id"] for e in out] == ["f1", "f2", "f3"]
    for entry in out:
        assert {"id", "consensus_score", "status", "voting_agents"} <= set(entry)
    f1, f2, f3 = out
    assert abs(f1["consensus_score"] - 0.3833) < 5e-5
    assert f1["consensus_score"] == pytest.approx(1.15 / 3, abs=1e-12)  # unrounded
    assert f1["status"] == "challenged"
    assert f1["voting_agents"] == ["scout", "auditor", "dev"]
    assert f2["consensus_score"] is None and f2["status"] == "pending" and f2["voting_agents"] == []
    assert f3["consensus_score"] == pytest.approx(0.6, abs=1e-12)
    assert f3["status"] == "confirmed"
    assert f3["voting_agents"] == ["scout", "dev"] and f3["k"] == 2


def test_classify_findings_file(tmp_path):
    path = tmp_path / "findings.json"
    path.write_text(json.dumps(SEED_PAYLOAD), encoding="utf-8")
    proc = rwb("classify", "findings", str(path))
    assert proc.returncode == 0, proc.stderr
    check_seed_output(json.loads(proc.stdout))


def test_classify_findings_stdin():
    proc = rwb("classify", "findings", "-", stdin=json.dumps(SEED_PAYLOAD))
    assert proc.returncode == 0, proc.stderr
    check_seed_output(json.loads(proc.stdout))


def test_threshold_from_the_file_is_used():
    payload = dict(SEED_PAYLOAD, threshold=0.38)
    proc = rwb("classify", "findings", "-", stdin=json.dumps(payload))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["status"] == "confirmed"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"findings": [{"id": "f", "votes": ['
         '{"agent": "a", "vote_type": "confirm", "confidence": 0.5},'
         ' {"agent": "b", "vote_type": "confirm", "confidence": 1.5}]}]}',
         "findings[0].votes[1].confidence: must be between 0 and 1"),
        ('{"findings": [{"id": "f", "votes": ['
         '{"agent": "a", "vote_type": "confirm", "confidence": NaN}]}]}',
         "findings[0].votes[0].confidence: must be a finite number"),
        ('{"findings": [{"id": "f", "votes": ['
         '{"agent": "a", "vote_type": "confirm", "confidence": 1e999}]}]}',
         "findings[0].votes[0].confidence: must be a finite number"),
        ('{"findings": [{"id": "f", "votes": ['
         '{"agent": "a", "vote_type": "maybe", "confidence": 0.5}]}]}',
         "findings[0].votes[0].vote_type: unknown vote_type 'maybe'"),
        ('{"findings": [{"id": "f", "votes": [{"vote_type": "confirm", "confidence": 0.5}]}]}',
         "findings[0].votes[0].agent: is required"),
        ('{"findings": [{"id": "f"}, {"id": "f"}]}', "findings[1].id: duplicate finding id 'f'"),
        ('{"threshold": 3, "findings": []}', "threshold: must be between -1 and 1"),
        ('{"threshold": "high", "findings": []}', "threshold: must be a number"),
        ("[1, 2]", "expected a JSON object"),
        ("{not json", "not valid JSON"),
    ],
)
def test_invalid_input_exits_2_naming_the_field(text, expected):
    proc = rwb("classify", "findings", "-", stdin=text)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert expected in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_missing_file_exits_2(tmp_path):
    proc = rwb("classify", "findings", str(tmp_path / "absent.json"))
    assert proc.returncode == 2
    assert "no such file" in proc.stderr and "Traceback" not in proc.stderr
