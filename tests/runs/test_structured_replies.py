"""Sampling, output caps and structured replies against loopback servers: one that honours
``response_format`` and one that ignores it (prose around JSON, raw newlines, "NO, because...")."""

from __future__ import annotations

import json

import pytest

from tests.runs.test_run_outcomes import rwb, sample, write
from tests.support.fake_llm_server import FakeLLMServer, Reply
from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project.store import Store
from workbench.core.protocols.rcp.run import GENERATE_MAX_TOKENS, VOTE_MAX_TOKENS
from workbench.core.runs.config import parse_run_config
from workbench.services.llm.gateway import Gateway
from workbench.services.runs.runner import Runner

ARTIFACT = "Close it on weekends first, and measure the air."


def honouring(request) -> str:
    """A server that honours response_format: valid JSON whenever a schema is sent."""
    fmt = request.body.get("response_format")
    if fmt is None:
        user = request.messages[-1]["content"]
        return ARTIFACT if "short paragraphs" in user else "Well, I would say probably yes."
    schema = fmt["json_schema"]["schema"] if fmt["type"] == "json_schema" else fmt["schema"]
    assert schema["additionalProperties"] is False
    return json.dumps({"vote": "YES", "reason": "sound"})


def ignoring(replies):
    """A server that ignores response_format and answers votes with the prose in ``replies``, in turn."""
    state = {"n": 0}

    def answer(request) -> str:
        user = request.messages[-1]["content"]
        if "short paragraphs" in user:
            return ARTIFACT
        if request.messages[-2]["role"] == "assistant":  # a re-ask: now it answers as asked
            return '{"vote": "NO", "reason": "on second thought"}'
        state["n"] += 1
        return replies[(state["n"] - 1) % len(replies)]
    return answer


def config(server, *, provider=None, agent=None, agents=2, **extra):
    p = {"model": "openai/fake-model", "api_base": server.base_url, "max_retries": 0, "timeout_s": 10,
         **(provider or {})}
    members = [{"id": f"a{i}", "provider": "local", **(agent or {})} for i in range(agents)]
    return {"protocol": "rcp", "query": "Close downtown to cars?", "seed": 7, "dispatch": "sequential",
            "providers": {"local": p}, "clusters": [{"name": "only", "agents": members}], **extra}


def run(tmp_path, data) -> tuple[Store, str, dict]:
    store = Store.create(tmp_path / "p.rwb")
    runner = Runner(store)
    run_id = runner.create(parse_run_config(data))
    return store, run_id, runner.execute(run_id)


def calls(store, run_id):
    return _sql.rows(store, "llm_calls", "run_id = ?", (run_id,), order_by="id")


# ----- request bodies --------------------------------------------------------------------------
@pytest.mark.parametrize("mode, model, expected", [
    ("json_schema", "openai/fake-model", "json_schema"),
    ("json_object", "openai/fake-model", "json_object"),
    ("off", "openai/fake-model", None),
    ("auto", "openai/fake-model", None),  # litellm knows no schema support for an unknown local model
    ("auto", "openai/gpt-4o-mini", "json_schema"),
])
def test_response_format_per_structured_output_mode(tmp_path, mode, model, expected):
    with FakeLLMServer(default=Reply(text=honouring)) as server:
        store, run_id, summary = run(tmp_path, config(server, provider={"structured_output": mode, "model": model}))
        bodies = [r.body for r in server.chat_requests]
    try:
        assert summary["status"] in ("completed", "degraded")
        generate = [b for b in bodies if "short paragraphs" in b["messages"][-1]["content"]]
        votes = [b for b in bodies if "Response to evaluate" in b["messages"][-1]["content"]]
        assert generate and votes and all("response_format" not in b for b in generate)  # free text: no schema
        for body in votes:
            fmt = body.get("response_format")
            assert (fmt or {}).get("type") == expected
            if expected == "json_schema":
                assert fmt["json_schema"]["name"] == "rcp_vote" and fmt["json_schema"]["strict"] is True
                assert fmt["json_schema"]["schema"]["properties"]["vote"]["enum"] == ["YES", "NO"]
            if expected == "json_object":
                assert set(fmt) == {"type", "schema"} and fmt["schema"]["required"] == ["vote", "reason"]
        stored = _sql.rows(store, "llm_calls", "run_id = ? AND purpose = 'vote'", (run_id,))[0]["request_json"]
        assert stored["structured_output"] == (expected or "off")
        assert stored["params"].get("response_format") == votes[0].get("response_format")  # stored as sent
    finally:
        store.close_connection()


def test_max_tokens_is_the_smaller_cap_and_seed_is_sent_only_when_set(tmp_path):
    with FakeLLMServer(default=Reply(text=honouring)) as server:
        data = config(server, provider={"max_tokens": 300, "temperature": 0.2, "top_p": 0.9, "stop": ["END"],
                                        "structured_output": "json_schema"})
        data["clusters"][0]["agents"][1]["sampling"] = {"temperature": 0.9, "seed": 42, "max_tokens": 100}
        store, run_id, summary = run(tmp_path, data)
        bodies = [(r.body["messages"][0]["content"], r.body) for r in server.chat_requests]
        rows = calls(store, run_id)
    store.close_connection()
    by_agent = {}
    for row, (_, body) in zip(rows, bodies):
        by_agent.setdefault((row["agent_id"], row["purpose"]), []).append(body)
    gen0, vote0 = by_agent[("a0", "generate")][0], by_agent[("a0", "vote")][0]
    gen1, vote1 = by_agent[("a1", "generate")][0], by_agent[("a1", "vote")][0]
    assert gen0["max_tokens"] == min(300, GENERATE_MAX_TOKENS) and vote0["max_tokens"] == min(300, VOTE_MAX_TOKENS)
    assert gen1["max_tokens"] == 100 and vote1["max_tokens"] == 100  # the agent's cap is smaller still
    assert gen0["temperature"] == 0.2 and gen1["temperature"] == 0.9 and gen0["top_p"] == gen1["top_p"] == 0.9
    assert gen0["stop"] == ["END"] and "seed" not in gen0 and "seed" not in vote0  # the run seed (7) is never sent
    assert gen1["seed"] == 42 and vote1["seed"] == 42
    stored = rows[0]["request_json"]
    stored = json.loads(stored) if isinstance(stored, str) else stored
    assert stored["params"]["max_tokens"] == gen0["max_tokens"] and stored["params"]["temperature"] == 0.2


def test_gateway_without_a_cap_sends_the_providers_own_sampling():
    with FakeLLMServer(default=Reply(text="ok")) as server:
        gw = Gateway({"p": {"model": "openai/m", "api_base": server.base_url, "temperature": 0.5, "seed": 3}})
        assert gw.call("p", [{"role": "user", "content": "hi"}]).ok
        body = server.chat_requests[0].body
    assert body["temperature"] == 0.5 and body["seed"] == 3 and "max_tokens" not in body


# ----- the tolerant reader and the re-ask ---------------------------------------------------------
def test_prose_replies_from_a_server_that_ignores_the_schema_are_read_without_a_reask(tmp_path):
    prose = ['Here is my vote: {"vote": "YES", "reason": "it has braces } in it"} thanks',
             '{"vote": "NO", "reason": "a raw\nnewline"}', "NO, because it ignores the buses."]
    with FakeLLMServer(default=Reply(text=ignoring(prose))) as server:
        store, run_id, summary = run(tmp_path, config(server, agents=3, provider={"structured_output": "json_object"}))
        sent = len(server.chat_requests)
    try:
        assert summary["status"] == "completed" and summary["votes_cast"] == summary["votes_expected"] == 6
        assert sent == 3 + 6  # no re-ask was needed
        assert not [r for r in calls(store, run_id) if "/try" in r["step_key"]]
    finally:
        store.close_connection()


def test_an_unreadable_reply_is_asked_again_once_and_both_are_kept(tmp_path):
    with FakeLLMServer(default=Reply(text=ignoring(["I think so, mostly."]))) as server:
        store, run_id, summary = run(tmp_path, config(server, provider={"structured_output": "json_object"}))
        reasks = [r for r in server.chat_requests if len(r.messages) > 2]
    try:
        assert summary["status"] == "completed" and summary["votes_cast"] == 2  # both read from the re-ask
        assert len(reasks) == 2
        asked = reasks[0].messages
        assert asked[-2] == {"role": "assistant", "content": "I think so, mostly."}
        assert "could not be read" in asked[-1]["content"] and '"vote"' in asked[-1]["content"]
        assert reasks[0].body["response_format"]["type"] == "json_object"
        rows = calls(store, run_id)
        first = [r for r in rows if r["step_key"].endswith("/try1")]
        main = [r for r in rows if r["purpose"] == "vote"]
        assert len(first) == 2 and {r["purpose"] for r in first} == {"vote/superseded"}
        assert all(r["status"] == "invalid" and r["reply_text"] == "I think so, mostly." and r["error"] for r in first)
        for r in main:
            request = r["request_json"] if isinstance(r["request_json"], dict) else json.loads(r["request_json"])
            assert r["status"] == "ok" and "on second thought" in r["reply_text"]
            assert request["reask"]["reask"] == 1 and request["reask"]["superseded"] == [r["step_key"] + "/try1"]
            assert len(request["messages"]) == 4
        votes = _sql.rows(store, "votes", "run_id = ?", (run_id,))
        assert [v["value"] for v in votes] == [0, 0] and all(v["status"] == "valid" for v in votes)
    finally:
        store.close_connection()


def test_reask_zero_keeps_the_unreadable_reply(tmp_path):
    with FakeLLMServer(default=Reply(text=ignoring(["I think so, mostly."]))) as server:
        store, run_id, summary = run(tmp_path, config(server, provider={"reask": 0}))
        sent = len(server.chat_requests)
    try:
        assert sent == 4 and summary["votes_invalid"] == 2 and summary["status"] == "degraded"
    finally:
        store.close_connection()


def test_a_honouring_server_needs_no_reask(tmp_path):
    with FakeLLMServer(default=Reply(text=honouring)) as server:
        store, run_id, summary = run(tmp_path, config(server, agents=3, provider={"structured_output": "json_schema"}))
        sent = len(server.chat_requests)
    store.close_connection()
    assert summary["status"] == "completed" and summary["votes_cast"] == 6 and sent == 9


# ----- validation before the first call ----------------------------------------------------------
@pytest.mark.parametrize("where, patch, field", [
    ("agent", {"sampling": {"temprature": 0.5}}, "clusters[0].agents[0].sampling.temprature"),
    ("agent", {"sampling": {"top_p": 0}}, "clusters[0].agents[0].sampling.top_p"),
    ("provider", {"temperature": 2.5}, "providers.local.temperature"),
    ("provider", {"stop": ["a", "b", "c", "d", "e"]}, "providers.local.stop"),
    ("provider", {"max_tokens": 0}, "providers.local.max_tokens"),
    ("provider", {"structured_output": "grammar"}, "providers.local.structured_output"),
    ("provider", {"reask": 3}, "providers.local.reask"),
])
def test_sampling_is_validated_with_its_path(where, patch, field):
    data = config(type("S", (), {"base_url": "http://127.0.0.1:9/v1"})())
    if where == "agent":
        data["clusters"][0]["agents"][0].update(patch)
    else:
        data["providers"]["local"].update(patch)
    with pytest.raises(InputError) as err:
        parse_run_config(data)
    assert err.value.field == field


def test_rwb_run_refuses_an_unknown_sampling_key_with_exit_2(tmp_path):
    data = sample("rcp-sim.json")
    data["clusters"][0]["agents"][0]["sampling"] = {"temprature": 0.5}
    out = rwb("run", write(tmp_path, "run.json", data), "--project", str(tmp_path / "p.rwb"))
    assert out.returncode == 2 and "clusters[0].agents[0].sampling.temprature" in out.stderr
    assert not (tmp_path / "p.rwb").exists() or "run" not in out.stdout
