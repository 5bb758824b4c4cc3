"""``rwb classify rcp FILE``, run as a real subprocess (SPEC §1 contract)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SPEC_EXAMPLE = {
    "clusters": [{"name": "advocate", "agents": ["a1", "a2", "a3"], "theta": 0.5, "weight": 1.0},
                 {"name": "critic", "agents": ["c1", "c2", "c3"]}],
    "reference": "advocate", "theta": 0.5, "tau": 0.6, "weighted": False,
    "artifacts": [
        {"id": "w1", "author": "a1", "votes": {"a2": 1, "a3": 0, "c1": 1, "c2": None, "c3": 1}},
        {"id": "w2", "author": "c2", "votes": {"a1": 1, "a2": 1, "a3": 1, "c1": 0, "c3": 0}},
        {"id": "w0", "votes": {"a1": 0, "a2": 0, "a3": 0, "c1": 0, "c2": 0, "c3": 1}},
    ],
}


def rwb(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=ROOT, env=env, input=stdin,
                          capture_output=True, text=True, timeout=60)


def check_output(states: list) -> None:
    assert isinstance(states, list)
    assert [s["artifact"] for s in states] == ["w1", "w2", "w0"]
    w1, w2, w0 = states
    assert w1["tier"] == "positive_consensus" and w1["score"] == 0.75 and w1["score_balanced"] == 0.5625
    assert w1["cluster_rates"] == {"advocate": 0.5, "critic": 1.0}
    assert w1["persuasion_kind"] == "accelerator" and w1["votes_cast"] == 4
    # w2: advocates 3/3, critics 0/2 -> positive polar, bias towards the reference cluster
    assert (w2["tier"], w2["bias_direction"], w2["score"]) == ("positive_polar", "advocate", 0.6)
    assert w2["guidance"].startswith("From the advocate perspective: ")
    # w0: author-less, critics 1/3 -> nobody approves
    assert (w0["tier"], w0["author_cluster"], w0["resonance_ratio"]) == ("negative_consensus", None, 0.0)
    assert w0["score"] == 1 / 6


def test_classify_rcp_file(tmp_path):
    path = tmp_path / "in.json"
    path.write_text(json.dumps(SPEC_EXAMPLE), encoding="utf-8")
    out = rwb("classify", "rcp", str(path))
    assert out.returncode == 0, out.stderr
    check_output(json.loads(out.stdout))


def test_classify_rcp_stdin():
    out = rwb("classify", "rcp", "-", stdin=json.dumps(SPEC_EXAMPLE))
    assert out.returncode == 0, out.stderr
    check_output(json.loads(out.stdout))


def test_classify_rcp_invalid_input_exits_2_with_the_field(tmp_path):
    bad = json.loads(json.dumps(SPEC_EXAMPLE))
    bad["clusters"][1]["agents"] = []
    out = rwb("classify", "rcp", "-", stdin=json.dumps(bad))
    assert out.returncode == 2
    assert "rwb classify: error: clusters[1].agents: empty" in out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""


def test_classify_rcp_author_vote_refused():
    bad = json.loads(json.dumps(SPEC_EXAMPLE))
    bad["artifacts"][0]["votes"]["a1"] = 1
    out = rwb("classify", "rcp", "-", stdin=json.dumps(bad))
    assert out.returncode == 2
    assert "artifacts[0].votes.a1: the author never votes on their own artifact" in out.stderr
    assert "Traceback" not in out.stderr


def test_classify_rcp_not_json_and_missing_file(tmp_path):
    out = rwb("classify", "rcp", "-", stdin="{not json")
    assert out.returncode == 2 and "not valid JSON" in out.stderr and "Traceback" not in out.stderr
    out = rwb("classify", "rcp", str(tmp_path / "nope.json"))
    assert out.returncode == 2 and "no such file" in out.stderr and "Traceback" not in out.stderr
