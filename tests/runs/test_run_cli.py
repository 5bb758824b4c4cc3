"""``rwb run``, ``resume``, ``runs`` and ``export`` through a subprocess, against the loopback server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_llm_server import FakeLLMServer, Reply

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-cli-SECRET-9f8e7d6c5b4a39281706"


def answer(request) -> str:
    user = request.messages[-1]["content"]
    if "Answer in one or two short paragraphs" in user:
        return f"{request.messages[0]['content']} Close it on weekends first."
    return '{"vote": "YES", "reason": "measured"}'


def config(base_url: str, **extra) -> dict:
    agents = lambda p: [{"id": f"{p}{i}", "provider": "local", "persona": f"Agent {p}{i}."} for i in (1, 2)]
    return {"protocol": "rcp", "query": "Close the centre to cars?", "seed": 3, "dispatch": "concurrent",
            "providers": {"local": {"model": "openai/fake-model", "api_base": base_url, "api_key_env": "CLI_TEST_KEY",
                                    "max_concurrency": 4, "rpm": 600, "timeout_s": 10, "max_retries": 1}},
            "clusters": [{"name": "advocate", "agents": agents("a")}, {"name": "critic", "agents": agents("c")}],
            **extra}


def rwb(*args: str, env_key: str | None = SECRET) -> subprocess.CompletedProcess:
    env = {**os.environ}
    if env_key:
        env["CLI_TEST_KEY"] = env_key
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=180, env=env)


@pytest.fixture
def server():
    with FakeLLMServer(default=Reply(text=answer)) as s:
        yield s


def test_run_prints_the_id_then_a_summary_and_exports_without_the_key(tmp_path, server):
    cfg = tmp_path / "run.json"
    cfg.write_text(json.dumps(config(server.base_url)))
    project = tmp_path / "study.rwb"
    out = rwb("run", str(cfg), "--project", str(project))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    run_id, summary = lines[0], json.loads(lines[-1])
    assert summary["run_id"] == run_id and summary["status"] == "completed"
    assert summary["calls"] == 4 + 4 * 3 and summary["failed_calls"] == 0 and summary["duration_s"] > 0
    assert "16/16 calls, 0 failed" in out.stderr  # progress on stderr
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.chat_requests)

    runs = json.loads(rwb("runs", "--project", str(project), "--json").stdout)
    assert [(r["run_id"], r["status"], r["simulated"]) for r in runs] == [(run_id, "completed", False)]

    exports = {}
    for fmt in ("jsonl", "csv", "md"):
        done = rwb("export", run_id, "--project", str(project), "--format", fmt)
        assert done.returncode == 0, done.stderr
        exports[fmt] = done.stdout
    records = [json.loads(line) for line in exports["jsonl"].splitlines()]
    kinds = {r["kind"] for r in records}
    assert {"run", "call", "artifact", "vote"} <= kinds
    vote = next(r for r in records if r["kind"] == "vote")
    assert {"voter", "author", "value"} <= set(vote) and vote["author"] != vote["voter"]
    call = next(r for r in records if r["kind"] == "call")
    assert {"agent", "status", "attempts"} <= set(call)
    assert exports["csv"].splitlines()[0].startswith("kind,")
    assert "**Real run.**" in exports["md"] and "Positive consensus" in exports["md"]
    assert "`openai/fake-model` via local" in exports["md"]

    for text in (out.stdout, out.stderr, *exports.values()):
        assert SECRET not in text
    assert SECRET.encode() not in project.read_bytes()


def test_invalid_config_names_the_field_and_exits_2(tmp_path, server):
    cfg = tmp_path / "run.json"
    data = config(server.base_url)
    data["clusters"][1]["agents"][0]["provider"] = "missing"
    cfg.write_text(json.dumps(data))
    out = rwb("run", str(cfg), "--project", str(tmp_path / "p.rwb"))
    assert out.returncode == 2
    assert "clusters[1].agents[0].provider: no provider named 'missing'" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_429_storm_stops_resumable_then_resume_completes(tmp_path, server):
    server.default = Reply(status=429, retry_after="0", error_message="slow down")
    cfg = tmp_path / "run.json"
    data = config(server.base_url)
    data["providers"]["local"]["max_wait_s"] = 0.5  # 429s use no retry: each call waits them out this long
    cfg.write_text(json.dumps(data))
    project = tmp_path / "p.rwb"
    out = rwb("run", str(cfg), "--project", str(project))
    assert out.returncode == 3  # SPEC §6: a run that ended with incomplete results
    run_id, summary = out.stdout.splitlines()[0], json.loads(out.stdout.splitlines()[-1])
    assert summary["status"] == "interrupted"
    assert f"rwb resume {run_id}" in out.stderr.splitlines()[-1]
    runs = json.loads(rwb("runs", "--project", str(project), "--json").stdout)
    assert runs[0]["status"] == "interrupted" and "rate-limited" in runs[0]["error"]

    server.default = Reply(text=answer)  # the provider recovers
    done = rwb("resume", run_id, "--project", str(project))
    assert done.returncode == 0, done.stderr
    final = json.loads(done.stdout.splitlines()[-1])
    assert final["status"] == "completed"
    records = [json.loads(line) for line in rwb("export", run_id, "--project", str(project)).stdout.splitlines()]
    votes = [r for r in records if r["kind"] == "vote"]
    assert len(votes) == 12 and all(v["value"] == 1 for v in votes)
