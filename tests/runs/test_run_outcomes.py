"""How `rwb run`, `resume` and `replay` end (SPEC §6 exit codes), a batch resumed by its id, a
replay that never calls a model, and a conductor's decisions given in a file."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_llm_server import FakeLLMServer, Reply

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_runs"


def rwb(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={"LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": "/usr/bin:/bin",
                                                 "LOOP_KEY": "sk-loop-test-key-0000"})


def sample(name: str) -> dict:
    return json.loads((SAMPLES / name).read_text())


def write(tmp_path: Path, name: str, data: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def rows(project: Path, sql: str, params: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(project)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def last_json(out: subprocess.CompletedProcess) -> dict:
    return json.loads(out.stdout.splitlines()[-1])


@pytest.fixture
def server():
    with FakeLLMServer() as s:
        yield s


def rcp_batch() -> dict:
    """Two questions × two replicates of the simulated RCP panel: four runs."""
    return {**sample("rcp-sim.json"), "batch": {"name": "small study", "replicates": 2, "questions": [
        "Should the city close its downtown to private cars?", "Should schools start an hour later?"]}}


def cons_contested() -> dict:
    return {**sample("cons-sim.json"), "min_voters": 6}  # five voters: insufficient evidence, escalated


# ----- exit codes ------------------------------------------------------------------------------
def test_a_completed_run_exits_0(tmp_path):
    out = rwb("run", str(SAMPLES / "rcp-sim.json"), "--project", str(tmp_path / "p.rwb"))
    assert out.returncode == 0, out.stderr
    assert last_json(out)["status"] == "completed"
    assert not [line for line in out.stderr.splitlines() if line.startswith("rwb:")]  # nothing to explain


def test_a_run_whose_every_call_fails_ends_failed_and_exits_4(tmp_path, server):
    server.default = Reply(status=500, error_message="the model crashed")
    data = {**sample("rcp-sim.json"),
            "providers": {"sim": {"model": "openai/fake-model", "api_base": server.base_url,
                                  "api_key_env": "LOOP_KEY", "max_retries": 0}}}
    out = rwb("run", write(tmp_path, "run.json", data), "--project", str(tmp_path / "p.rwb"))
    assert out.returncode == 4, out.stderr
    summary = last_json(out)
    assert summary["status"] == "failed" and summary["failed_calls"] == summary["calls"] > 0
    [line] = [text for text in out.stderr.splitlines() if text.startswith("rwb:")]
    assert "failed: every call failed" in line and "Traceback" not in out.stderr


def test_a_conductor_without_a_decision_exits_1_and_says_how_to_give_one(tmp_path):
    project = tmp_path / "p.rwb"
    out = rwb("run", write(tmp_path, "cons.json", cons_contested()), "--project", str(project))
    assert out.returncode == 1, out.stderr
    run_id = out.stdout.splitlines()[0]
    assert last_json(out)["status"] == "interrupted" and last_json(out)["waiting_for_human"] is True
    assert f"rwb resume {run_id} --decisions FILE" in out.stderr.splitlines()[-1]

    decisions = write(tmp_path, "decisions.json", {"*": "Split per module, revisit in a month."})
    done = rwb("resume", run_id, "--project", str(project), "--decisions", decisions)
    assert done.returncode == 0, done.stderr
    assert last_json(done)["cons"]["humanDecision"] == "Split per module, revisit in a month."
    assert rows(project, "SELECT DISTINCT status, decision FROM cons_escalations") == [
        ("resolved", "Split per module, revisit in a month.")]


def test_decisions_given_up_front_by_question_id_answer_the_conductor(tmp_path):
    data = cons_contested()
    decisions = write(tmp_path, "d.json", {data.get("question_id", "CONS-001"): "Adopt the majority option."})
    out = rwb("run", write(tmp_path, "cons.json", data), "--project", str(tmp_path / "p.rwb"), "--decisions", decisions)
    assert out.returncode == 0, out.stderr
    assert last_json(out)["cons"]["humanDecision"] == "Adopt the majority option."


@pytest.mark.parametrize("content, message", [
    ("[1, 2]", "--decisions: must be a JSON object of question id to decision text"),
    ('{"CONS-001": ""}', "--decisions: must be a JSON object"),
    ("not json", "not valid JSON"),
])
def test_a_bad_decisions_file_is_refused_before_anything_runs(tmp_path, content, message):
    path = tmp_path / "d.json"
    path.write_text(content)
    project = tmp_path / "p.rwb"
    out = rwb("run", write(tmp_path, "cons.json", cons_contested()), "--project", str(project), "--decisions", str(path))
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr
    assert not project.exists()


# ----- a batch resumed by its id ------------------------------------------------------------------
def content(project: Path, batch_id: str) -> list:
    """What a batch's runs hold, without ids, timestamps or fence tokens (SPEC §6)."""
    out = []
    for run_id, label, replicate, status in rows(project, "SELECT id, label, replicate, status FROM runs "
                                                          "WHERE batch_id = ? ORDER BY rowid", (batch_id,)):
        calls = rows(project, "SELECT step_key, agent_id, reply_text, status FROM llm_calls WHERE run_id = ? "
                              "ORDER BY step_key", (run_id,))
        votes = rows(project, "SELECT a.key, v.voter_agent, v.value, v.status FROM votes v JOIN artifacts a "
                              "ON a.id = v.artifact_id WHERE v.run_id = ? ORDER BY 1, 2", (run_id,))
        out.append((label, replicate, status, calls, votes))
    return out


def test_a_batch_killed_before_all_its_runs_existed_is_finished_by_its_id(tmp_path):
    config = write(tmp_path, "batch.json", rcp_batch())
    straight = tmp_path / "straight.rwb"
    whole = rwb("run", config, "--project", str(straight))
    assert whole.returncode == 0, whole.stderr
    straight_id = whole.stdout.splitlines()[0]

    # The state a kill leaves: the batch and its first run recorded, the first run half done,
    # the other runs never made.
    project = tmp_path / "killed.rwb"
    code = ("import json, sys\n"
            "from workbench.core.project.store import Store\n"
            "from workbench.core.project import runs\n"
            "from workbench.core.runs.batch import expand_batch\n"
            "from workbench.services.runs.batches import new_batch_id\n"
            "from workbench.services.runs.runner import Runner\n"
            f"data = json.load(open({config!r}))\n"
            f"store = Store.create({str(project)!r})\n"
            "spec, planned = expand_batch(data)\n"
            "batch_id = new_batch_id()\n"
            "runs.create_batch(store, batch_id, spec.name, data)\n"
            "runner = Runner(store)\n"
            "run_id = runner.create(planned[0].config, label=planned[0].label, batch_id=batch_id,\n"
            "                       replicate=planned[0].replicate)\n"
            "print(batch_id)\n")
    made = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    batch_id = made.stdout.strip()
    assert len(rows(project, "SELECT id FROM runs WHERE batch_id = ?", (batch_id,))) == 1

    resumed = rwb("resume", batch_id, "--project", str(project))
    assert resumed.returncode == 0, resumed.stderr
    summary = last_json(resumed)
    assert summary["batch_id"] == batch_id and summary["completed"] == summary["runs"] > 1
    assert content(project, batch_id) == content(straight, straight_id)


def test_resuming_a_finished_batch_runs_nothing_again(tmp_path):
    project = tmp_path / "p.rwb"
    first = rwb("run", write(tmp_path, "batch.json", rcp_batch()), "--project", str(project))
    batch_id = first.stdout.splitlines()[0]
    calls = rows(project, "SELECT count(*) FROM llm_calls")
    again = rwb("resume", batch_id, "--project", str(project))
    assert again.returncode == 0 and last_json(again)["completed"] == last_json(first)["completed"]
    assert rows(project, "SELECT count(*) FROM llm_calls") == calls


def test_an_unknown_id_to_resume_is_a_clear_error(tmp_path):
    project = tmp_path / "p.rwb"
    rwb("run", str(SAMPLES / "rcp-sim.json"), "--project", str(project))
    out = rwb("resume", "batch-nope", "--project", str(project))
    assert out.returncode in (1, 2) and "batch-nope" in out.stderr and "Traceback" not in out.stderr


# ----- replay never calls a model ---------------------------------------------------------------
def test_a_replay_with_replies_missing_reports_them_and_calls_no_model(tmp_path, server):
    server.default = Reply(text=json.dumps({"vote": "YES", "reason": "It holds."}))
    data = {**sample("rcp-sim.json"),
            "providers": {"sim": {"model": "openai/fake-model", "api_base": server.base_url,
                                  "api_key_env": "LOOP_KEY", "max_retries": 0}}}
    project = tmp_path / "p.rwb"
    first = rwb("run", write(tmp_path, "run.json", data), "--project", str(project))
    assert first.returncode == 0, first.stderr
    run_id = first.stdout.splitlines()[0]
    sent = len(server.chat_requests)
    conn = sqlite3.connect(project)
    conn.execute("DELETE FROM llm_calls WHERE run_id = ? AND purpose = 'vote' AND id % 2 = 0", (run_id,))
    conn.commit()
    conn.close()

    replay = rwb("replay", run_id, "--project", str(project))
    assert len(server.chat_requests) == sent  # nothing was sent
    assert replay.returncode == 3, replay.stderr
    summary = last_json(replay)
    assert summary["missing_replies"] > 0
    assert f"{summary['missing_replies']} call(s) had no stored reply" in replay.stderr
    missing = rows(project, "SELECT count(*) FROM llm_calls WHERE run_id = ? AND error_kind = 'missing_reply'",
                   (summary["run_id"],))
    assert missing == [(summary["missing_replies"],)]
