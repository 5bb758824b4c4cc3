"""Kill ``rwb run`` with SIGKILL at random moments, resume it, and compare with a run that was
never interrupted: same artifacts, same votes, no duplicates, and a file that passes
``PRAGMA integrity_check`` after every kill."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.fake_llm_server import FakeLLMServer, Reply
from tests.support.project_files import integrity

REPO = Path(__file__).resolve().parents[2]
KILLS = 10


def scripted(request) -> str:
    """Deterministic from the request alone, so every run of the same config gets the same replies."""
    user = request.messages[-1]["content"]
    persona = request.messages[0]["content"]
    if "Answer in one or two short paragraphs" in user:
        return f"{persona} says: the centre should be {'closed' if 'Advocate' in persona else 'kept open'}."
    if "Response to evaluate" in user:
        agrees = ("closed" in user) == ("Advocate" in persona)
        return '{"vote": "YES"}' if agrees or "one" in persona else '{"vote": "NO"}'
    return "?"


def hold_after(n: int):
    """A server rule: answer the first ``n`` chat requests as usual, hang on the rest (until the
    server stops): the killed run cannot get past them."""
    lock, seen = threading.Lock(), [0]

    def rule(request):
        with lock:
            seen[0] += 1
            late = seen[0] > n
        return Reply(text=scripted, latency_s=300) if late else None

    return rule


def write_config(path: Path, base_url: str) -> None:
    agents = lambda side: [{"id": f"{side[0]}{i}", "provider": "local", "persona": f"{side} {word}."}
                           for i, word in enumerate(("one", "two", "three"), 1)]
    path.write_text(json.dumps({
        "protocol": "rcp", "query": "Close the centre to cars?", "seed": 11, "dispatch": "concurrent",
        "providers": {"local": {"model": "openai/fake-model", "api_base": base_url, "api_key_env": "KILL_TEST_KEY",
                                "max_concurrency": 3, "timeout_s": 10, "max_retries": 1}},
        "clusters": [{"name": "advocate", "agents": agents("Advocate")}, {"name": "critic", "agents": agents("Critic")}],
    }))


def rwb(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=180, env={**os.environ, "KILL_TEST_KEY": "k"}, **kw)


def outcome(project: Path, run_id: str) -> dict:
    conn = sqlite3.connect(project)
    try:
        artifacts = sorted(conn.execute("SELECT key, author_agent, content FROM artifacts WHERE run_id = ?", (run_id,)))
        votes = sorted(conn.execute(
            "SELECT a.key, v.voter_agent, v.value, v.status FROM votes v JOIN artifacts a ON a.id = v.artifact_id "
            "WHERE v.run_id = ?", (run_id,)))
        ok_calls = [k for (k,) in conn.execute(
            "SELECT step_key FROM llm_calls WHERE run_id = ? AND status IN ('ok', 'invalid')", (run_id,))]
        status = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
        summary = json.loads(conn.execute("SELECT summary_json FROM runs WHERE id = ?", (run_id,)).fetchone()[0])
    finally:
        conn.close()
    assert len(ok_calls) == len(set(ok_calls)), "a call was recorded twice"
    tiers = [(s["artifact"], s["tier"]) for s in summary.get("rounds", [{}])[0].get("states", [])]
    return {"status": status, "artifacts": artifacts, "votes": votes, "calls": sorted(ok_calls), "tiers": tiers}


def wait_for_calls(project: Path, run_id: str, count: int, proc: subprocess.Popen, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True, timeout=1)
            try:
                done = conn.execute("SELECT count(*) FROM llm_calls WHERE run_id = ?", (run_id,)).fetchone()[0]
            finally:
                conn.close()
            if done >= count:
                return
        except sqlite3.Error:
            pass  # not created yet, or briefly locked by the writer
        time.sleep(0.005)


@pytest.mark.timeout(600)
def test_kill_at_random_moments_then_resume_equals_an_uninterrupted_run(tmp_path):
    rng = random.Random(2026)
    with FakeLLMServer(default=Reply(text=scripted, latency_s=0.03)) as server:
        config = tmp_path / "run.json"
        write_config(config, server.base_url)

        reference = tmp_path / "reference.rwb"
        done = rwb("run", str(config), "--project", str(reference), "--quiet")
        assert done.returncode == 0, done.stderr
        ref_id = done.stdout.splitlines()[0]
        expected = outcome(reference, ref_id)
        assert expected["status"] == "completed" and len(expected["votes"]) == 30

        mid_run = 0
        report: list[tuple[int, str, int]] = []
        for trial in range(KILLS):
            project = tmp_path / f"killed-{trial}.rwb"
            proc = subprocess.Popen([sys.executable, "-m", "workbench", "run", str(config), "--project", str(project),
                                     "--quiet"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    text=True, env={**os.environ, "KILL_TEST_KEY": "k"})
            run_id = proc.stdout.readline().strip()
            # Kill once a random number of calls is on disk (the run itself starts after litellm's
            # import): every trial lands somewhere else in the middle of the run. The server holds
            # every request after the first `held` ones, so however slow this machine is, the run
            # cannot finish before the kill (it used to, under load, and the trial proved nothing).
            held = rng.randint(2, 35)
            server.rule = hold_after(held)
            wait_for_calls(project, run_id, rng.randint(1, held - 1), proc)
            time.sleep(rng.uniform(0.0, 0.03))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            proc.stdout.close()
            server.rule = None
            assert integrity(project) == "ok", f"trial {trial}: the killed file is damaged"
            before = outcome(project, run_id)
            mid_run += 0 < len(before["calls"]) < 36
            report.append((trial, before["status"], len(before["calls"])))

            resumed = rwb("resume", run_id, "--project", str(project), "--quiet")
            assert resumed.returncode == 0, resumed.stderr
            after = outcome(project, run_id)
            assert after == expected, f"trial {trial}: the resumed run differs from the uninterrupted one"
            assert integrity(project) == "ok"
        print("\nkill-and-resume: trial, status at the kill, calls already recorded (of 36):")
        for row in report:
            print("  ", *row)
        assert mid_run >= KILLS - 2, "the kills should land in the middle of the run"
