"""Provider batch APIs (SPEC §10) against a loopback stand-in of OpenAI's /v1/files and /v1/batches:
each phase goes out as one batch; detached, the run waits and ``rwb resume`` collects it; requests a
batch left undone go out again; unreadable replies are asked again in a follow-up batch; a run
killed while it waits resumes and records every reply once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_batch_api import BatchScript, FakeBatchAPI
from tests.support.fake_llm_server import FakeLLMServer, Reply
from workbench.core.project import _sql, batch_jobs
from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config
from workbench.services.runs.runner import Runner

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-batch-SECRET-0a1b2c3d4e5f60718293"
WAIT_S = 60


def model_reply(request) -> str:
    user = request.messages[-1]["content"]
    if "Answer in one or two short paragraphs" in user:
        return "Closing the centre cuts traffic and noise; shops need deliveries."
    return '{"vote": "YES", "reason": "fair"}'


def config(base_url: str, agents: int = 2, **provider) -> dict:
    return {"protocol": "rcp", "query": "Should the city close its downtown to private cars?", "seed": 5,
            "dispatch": "concurrent",
            "providers": {"gpt": {"model": "openai/fake-model", "api_base": base_url, "api_key_env": "BATCH_TEST_KEY",
                                  "batch_api": True, "batch_poll_s": 0.01, **provider}},
            "clusters": [{"name": name, "agents": [{"id": f"{name[0]}{i}", "provider": "gpt"} for i in range(agents)]}
                         for name in ("advocate", "critic")]}


@pytest.fixture
def stand_in(monkeypatch):
    monkeypatch.setenv("BATCH_TEST_KEY", SECRET)
    batches = FakeBatchAPI()
    with FakeLLMServer(Reply(text=model_reply), batches=batches) as server:
        yield server, batches


def rows(store: Store, run_id: str) -> list[dict]:
    return _sql.query(store, "SELECT step_key, purpose, status, request_json, reply_text, cost_source, attempts "
                             "FROM llm_calls WHERE run_id = ? ORDER BY id", (run_id,))


def test_each_phase_goes_out_as_one_batch_and_every_reply_is_recorded_once(tmp_path, stand_in):
    server, batches = stand_in
    store = Store.create(tmp_path / "p.rwb")
    try:
        runner = Runner(store)
        run_id = runner.create(parse_run_config(config(server.base_url)))
        summary = runner.execute(run_id)
        assert summary["status"] == "completed", summary.get("error")
        assert summary["calls"] == 4 + 12 and summary["failed_calls"] == 0
        assert not server.chat_requests  # nothing went one by one
        assert [b.counts["total"] for b in batches.batches.values()] == [4, 12]  # one batch per phase
        calls = rows(store, run_id)
        assert len(calls) == 16 == len({c["step_key"] for c in calls}) and {c["status"] for c in calls} == {"ok"}
        sent = [c["request_json"] for c in calls]  # decoded
        assert all(r["batch"]["id"] in batches.batches and r["batch_api"] for r in sent)
        assert SECRET not in json.dumps(sent) and SECRET.encode() not in (tmp_path / "p.rwb").read_bytes()
        assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.requests)
        votes = _sql.count(store, "votes", "run_id = ? AND value = 1", (run_id,))
        assert votes == 12
        jobs = [j for r in _sql.rows(store, "rounds", "run_id = ?", (run_id,)) for j in
                (r["detail_json"].get("batch") or {}).get("jobs", [])]
        assert [j["status"] for j in jobs] == ["completed", "completed"] and not batch_jobs.open_jobs(store, run_id)
    finally:
        store.close_connection()


def rwb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=180, env={**os.environ, "BATCH_TEST_KEY": SECRET})


def test_detach_leaves_the_run_waiting_and_resume_collects_it(tmp_path, stand_in):
    server, batches = stand_in
    cfg = tmp_path / "run.json"
    cfg.write_text(json.dumps(config(server.base_url)))
    project = tmp_path / "p.rwb"
    out = rwb("run", str(cfg), "--project", str(project), "--detach")
    assert out.returncode == 3, out.stderr  # SPEC §10: the run is waiting
    run_id, summary = out.stdout.splitlines()[0], json.loads(out.stdout.splitlines()[-1])
    assert summary["status"] == "waiting" and summary["calls"] == 0
    [waiting] = summary["waiting_for_batch"]
    assert waiting["id"] in batches.batches and waiting["provider"] == "gpt"
    assert f"rwb resume {run_id}" in out.stderr and "Traceback" not in out.stderr
    assert "waiting for batch" in out.stderr  # the progress note, with the provider's counts
    listed = json.loads(rwb("runs", "--project", str(project), "--json").stdout)
    assert [(r["run_id"], r["status"]) for r in listed] == [(run_id, "waiting")]

    again = rwb("resume", run_id, "--project", str(project), "--detach")  # phase 1 collected, phase 2 sent
    assert again.returncode == 3 and json.loads(again.stdout.splitlines()[-1])["calls"] == 4
    done = rwb("resume", run_id, "--project", str(project))
    assert done.returncode == 0, done.stderr
    final = json.loads(done.stdout.splitlines()[-1])
    assert final["status"] == "completed" and final["calls"] == 16 and final["failed_calls"] == 0
    assert batches.lines_answered == 16 and len(batches.batches) == 2  # every request sent once
    store = Store.open(project)
    try:
        assert len({r["step_key"] for r in rows(store, run_id)}) == len(rows(store, run_id)) == 16
    finally:
        store.close_connection()


def test_requests_a_batch_left_undone_go_out_again_in_a_new_batch(tmp_path, stand_in):
    server, batches = stand_in
    batches.enqueue(BatchScript(done=1, polls=1))  # the first batch expires with 3 of its 4 requests undone
    store = Store.create(tmp_path / "p.rwb")
    try:
        runner = Runner(store)
        run_id = runner.create(parse_run_config(config(server.base_url)))
        summary = runner.execute(run_id)
        assert summary["status"] == "completed", summary.get("error")
        made = list(batches.batches.values())
        assert [(b.status, b.counts["total"]) for b in made] == [("expired", 4), ("completed", 3), ("completed", 12)]
        assert batches.lines_answered == 16  # nothing answered twice
        calls = rows(store, run_id)
        assert len(calls) == 16 and {c["status"] for c in calls} == {"ok"}
        ids = {c["request_json"]["batch"]["id"] for c in calls if c["purpose"] == "generate"}
        assert ids == {made[0].id, made[1].id}
    finally:
        store.close_connection()


def test_an_unreadable_reply_is_asked_again_in_a_follow_up_batch(tmp_path, stand_in):
    server, batches = stand_in
    asked: dict[str, int] = {}

    def first_vote_unreadable(request):
        user = request.messages[-1]["content"]
        if "could not be read" in user:
            return Reply(text='{"vote": "NO", "reason": "on second thought"}')
        if "Answer in one or two short paragraphs" not in user and not asked:
            asked["once"] = 1
            return Reply(text="Hmm, perhaps.")  # no vote in it
        return None

    server.rule = first_vote_unreadable
    store = Store.create(tmp_path / "p.rwb")
    try:
        runner = Runner(store)
        run_id = runner.create(parse_run_config(config(server.base_url)))
        summary = runner.execute(run_id)
        assert summary["status"] == "completed", summary.get("error")
        assert [b.counts["total"] for b in batches.batches.values()] == [4, 12, 1]  # the re-ask, a batch of its own
        calls = rows(store, run_id)
        [superseded] = [c for c in calls if c["purpose"].endswith("/superseded")]
        assert superseded["status"] == "invalid" and superseded["step_key"].endswith("/try1")
        key = superseded["step_key"].removesuffix("/try1")
        [final] = [c for c in calls if c["step_key"] == key]
        assert final["status"] == "ok" and "on second thought" in final["reply_text"]
        assert final["request_json"]["reask"]["superseded"] == [superseded["step_key"]]
        assert "could not be read" in final["request_json"]["messages"][-1]["content"]
        assert _sql.count(store, "votes", "run_id = ? AND value = 0", (run_id,)) == 1
    finally:
        store.close_connection()


def test_a_batch_run_killed_while_waiting_resumes_and_records_every_reply_once(tmp_path, stand_in):
    server, batches = stand_in
    batches.enqueue(BatchScript(hold=True))  # phase 1's batch stays in progress until released
    cfg = tmp_path / "run.json"
    cfg.write_text(json.dumps(config(server.base_url)))
    project = tmp_path / "p.rwb"
    proc = subprocess.Popen([sys.executable, "-m", "workbench", "run", str(cfg), "--project", str(project)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "BATCH_TEST_KEY": SECRET})
    try:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:  # until the run polls its stored batch: it is waiting
            if any(b.polls >= 2 for b in batches.batches.values()):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the run never polled its batch")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(30)
    [held] = batches.batches.values()
    listed = json.loads(rwb("runs", "--project", str(project), "--json").stdout)
    run_id = listed[0]["run_id"]
    assert listed[0]["status"] == "interrupted"  # the killed process left it resumable

    batches.release()
    done = rwb("resume", run_id, "--project", str(project))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["status"] == "completed"
    assert len(batches.batches) == 2 and batches.lines_answered == 16  # the held batch was found, not sent again
    store = Store.open(project)
    try:
        calls = rows(store, run_id)
        assert len(calls) == 16 == len({c["step_key"] for c in calls})
        assert {c["request_json"]["batch"]["id"] for c in calls if c["purpose"] == "generate"} == {held.id}
        assert _sql.count(store, "votes", "run_id = ?", (run_id,)) == 12
    finally:
        store.close_connection()


def test_the_estimate_uses_the_batch_price():
    from workbench.services.runs.estimate import estimate_document

    doc = {"protocol": "rcp", "query": "Close the centre to cars?", "seed": 1,
           "providers": {"g": {"model": "openai/gpt-4o-mini", "api_key_env": "OPENAI_API_KEY"}},
           "clusters": [{"name": "a", "agents": [{"id": "a1", "provider": "g"}, {"id": "a2", "provider": "g"}]},
                        {"name": "c", "agents": [{"id": "c1", "provider": "g"}]}]}
    one_by_one = estimate_document(doc)
    doc["providers"]["g"]["batch_api"] = True
    batched = estimate_document(doc)
    assert batched["tokens"] == one_by_one["tokens"]
    # litellm's map has gpt-4o-mini's batch prices: half its prices
    assert batched["cost_usd"] == pytest.approx(one_by_one["cost_usd"] / 2, rel=1e-3)
    assert batched["providers"]["g"]["batch_api"] is True


@pytest.mark.parametrize("provider, field", [({"model": "sim", "batch_api": True}, "batch_api"),
                                             ({"model": "openai/m", "batch_api": True,
                                               "deployments": [{"api_base": "http://127.0.0.1:9/v1"}]}, "batch_api"),
                                             ({"model": "openai/m", "batch_poll_s": 0}, "batch_poll_s"),
                                             ({"model": "openai/m", "max_wait_s": -1}, "max_wait_s"),
                                             ({"model": "openai/m", "max_wait_s": 90_000}, "max_wait_s"),
                                             ({"model": "openai/m", "batch_api": "yes"}, "batch_api")])
def test_bad_batch_and_wait_settings_are_refused_naming_the_field(tmp_path, provider, field):
    doc = config("http://127.0.0.1:9/v1")
    doc["providers"]["gpt"] = provider
    cfg = tmp_path / "run.json"
    cfg.write_text(json.dumps(doc))
    out = rwb("run", str(cfg), "--project", str(tmp_path / "p.rwb"))
    assert out.returncode == 2 and f"providers.gpt.{field}" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "p.rwb").exists()
