"""The Consensus Server's tools in process, through ``mcp.Client``: every tool's success and error
paths, typed schemas, who sent each vote, and a bad argument never crashing the server."""

from __future__ import annotations

import json
import sqlite3

import anyio
import mcp_types as types
import pytest
from mcp import Client

from workbench.core.project import _sql
from workbench.core.project.findings import FindingsStore
from workbench.core.project.schema import SCHEMA_VERSION
from workbench.core.project.store import Store, utc_now
from workbench.services.mcp.server import ConsensusServer

TOOLS = {"submit_vote", "get_consensus_results", "get_challenged_findings", "create_finding",
         "list_findings", "get_finding_history"}


@pytest.fixture
def store(tmp_path):
    store = Store.create(tmp_path / "p.rwb")
    yield store
    store.close_connection()


@pytest.fixture
def server(store):
    with ConsensusServer(store) as server:
        yield server


def session(server, body, name="scout-agent", mode="auto"):
    """Run ``await body(client)`` with one connected client named ``name``; return its result."""

    async def main():
        async with Client(server, client_info=types.Implementation(name=name, version="1.0"),
                          mode=mode) as client:
            return await body(client)

    return anyio.run(main)


def call(server, tool, args=None, name="scout-agent"):
    """One tool call: (True, structured content) or (False, the error text)."""

    async def body(client):
        result = await client.call_tool(tool, args or {})
        if result.is_error:
            return False, result.content[0].text
        return True, result.structured_content

    return session(server, body, name)


def ok(server, tool, args=None, name="scout-agent"):
    good, value = call(server, tool, args, name)
    assert good, value
    return value


def error(server, tool, args=None) -> str:
    good, value = call(server, tool, args)
    assert not good, f"{tool} accepted {args}: {value}"
    return value


def seed_example(server):
    ok(server, "create_finding", {"claim": "commit e8f2a91 implements OAuth2 login", "finding_id": "f1",
                                  "context": {"repo": "auth-service"}})
    for agent, vote, confidence in (("scout", "confirm", 0.85), ("auditor", "challenge", 0.65),
                                    ("dev", "confirm", 0.95)):
        receipt = ok(server, "submit_vote", {"finding_id": "f1", "agent": agent, "vote_type": vote,
                                             "confidence": confidence, "reason": f"{agent} checked"})
    return receipt


# ----- listing and schemas -----------------------------------------------------------------------
def test_the_six_tools_have_typed_inputs_and_outputs(server):
    tools = {t.name: t for t in session(server, lambda c: c.list_tools()).tools}
    assert set(tools) == TOOLS
    vote = tools["submit_vote"].input_schema
    assert vote["required"] == ["finding_id", "agent", "vote_type", "confidence"]
    assert vote["properties"]["confidence"]["minimum"] == 0 and vote["properties"]["confidence"]["maximum"] == 1
    assert json.dumps(vote).count('"confirm"') >= 1 and "uncertain" in json.dumps(vote)
    assert tools["list_findings"].input_schema["properties"]["status"]["enum"] == [
        "all", "confirmed", "challenged", "pending"]
    for tool in tools.values():
        assert tool.output_schema and tool.output_schema["type"] == "object", tool.name
        assert tool.description
    assert tools["get_consensus_results"].annotations.read_only_hint is True
    assert tools["submit_vote"].annotations.read_only_hint is False


# ----- create_finding ----------------------------------------------------------------------------
def test_create_finding_stores_the_claim_and_who_created_it(server, store):
    made = ok(server, "create_finding", {"claim": "  The /api/v2/users endpoint returns 200  ",
                                         "context": {"source": "curl", "n": 3}, "threshold": 0.7})
    assert made["id"].startswith("f-") and len(made["id"]) == 12
    assert made["claim"] == "The /api/v2/users endpoint returns 200"
    assert made["status"] == "pending" and made["consensus_score"] is None and made["k"] == 0
    assert made["threshold"] == 0.7 and made["created_by"] == "scout-agent"
    row = _sql.get(store, "findings", made["id"])
    assert row["context_json"] == {"source": "curl", "n": 3} and row["created_by"] == "scout-agent"

    own = ok(server, "create_finding", {"claim": "x", "finding_id": "my-id"})
    assert own["id"] == "my-id" and own["threshold"] == 0.6


@pytest.mark.parametrize("args, message", [
    ({"claim": "   "}, "claim: must not be empty"),
    ({}, "claim: is required"),
    ({"claim": 5}, "claim: must be a string, not 5"),
    ({"claim": "c", "context": [1, 2]}, "context: must be an object, not a list"),
    ({"claim": "c", "threshold": 1.5}, "threshold: must be between -1 and 1, not 1.5"),
    ({"claim": "c", "threshold": "high"}, "threshold: must be a number, not 'high'"),
    ({"claim": "c", "finding_id": ""}, "finding_id: must not be empty"),
    ({"claim": "x" * 20_001}, "claim: is too long"),
])
def test_create_finding_refuses_bad_arguments_plainly(server, store, args, message):
    assert message in error(server, "create_finding", args)
    assert _sql.count(store, "findings") == 0


def test_create_finding_refuses_a_duplicate_id(server):
    ok(server, "create_finding", {"claim": "a", "finding_id": "dup"})
    assert "finding_id: a finding with id 'dup' already exists" in error(
        server, "create_finding", {"claim": "b", "finding_id": "dup"})


# ----- submit_vote -------------------------------------------------------------------------------
def test_submit_vote_scores_the_seed_example_and_records_client_and_agent(server, store):
    receipt = seed_example(server)
    result = receipt["result"]
    assert result["consensus_score"] == pytest.approx(0.38333333, abs=1e-6)
    assert result["status"] == "challenged" and result["k"] == 3
    assert result["voting_agents"] == ["scout", "auditor", "dev"]
    assert receipt["vote"] | {"created_at": None} == {
        "id": 3, "finding_id": "f1", "agent": "dev", "vote_type": "confirm", "confidence": 0.95,
        "reason": "dev checked", "status": "valid", "invalid_reason": None, "client": "scout-agent",
        "run_id": None, "simulated": False, "created_at": None, "counted": True}
    rows = _sql.rows(store, "finding_votes", order_by="id")
    assert [(r["agent"], r["client"]) for r in rows] == [
        ("scout", "scout-agent"), ("auditor", "scout-agent"), ("dev", "scout-agent")]
    raw = json.loads(rows[0]["raw"])
    assert raw["client"] == {"name": "scout-agent", "version": "1.0"}
    assert raw["transport"] == "in-process" and raw["arguments"]["confidence"] == 0.85


def test_each_client_is_recorded_by_its_own_name_in_both_protocol_eras(server, store):
    ok(server, "create_finding", {"claim": "c", "finding_id": "f1"})

    async def both():
        for name, mode in (("claude-code", "auto"), ("legacy-agent", "legacy")):
            async with Client(server, client_info=types.Implementation(name=name, version="2"),
                              mode=mode) as client:
                result = await client.call_tool("submit_vote", {"finding_id": "f1", "agent": name,
                                                                "vote_type": "confirm", "confidence": 0.9})
                assert not result.is_error

    anyio.run(both)
    assert {r["agent"]: r["client"] for r in _sql.rows(store, "finding_votes")} == {
        "claude-code": "claude-code", "legacy-agent": "legacy-agent"}


def test_a_later_vote_replaces_the_earlier_and_uncertain_has_no_influence(server):
    seed_example(server)
    receipt = ok(server, "submit_vote", {"finding_id": "f1", "agent": "auditor", "vote_type": "Uncertain",
                                         "confidence": 0.5, "reason": "local git was stale"})
    result = receipt["result"]
    assert result["consensus_score"] == pytest.approx(0.9) and result["status"] == "confirmed"
    assert result["k"] == 2 and result["uncertain_agents"] == ["auditor"] and result["votes_total"] == 4
    assert receipt["vote"]["vote_type"] == "uncertain"  # case-insensitive, stored lower-case


@pytest.mark.parametrize("change, message", [
    ({"finding_id": "nope"}, "finding_id: no finding with id 'nope'"),
    ({"confidence": 1.5}, "confidence: must be between 0 and 1, not 1.5"),
    ({"confidence": -0.1}, "confidence: must be between 0 and 1, not -0.1"),
    ({"confidence": "0.8"}, "confidence: must be a number, not '0.8'"),
    ({"confidence": True}, "confidence: must be a number, not true"),
    ({"confidence": None}, "confidence: must be a number, not null"),
    ({"vote_type": "yes"}, "vote_type: must be one of 'confirm', 'challenge', 'uncertain', not 'yes'"),
    ({"vote_type": 1}, "vote_type: must be one of"),
    ({"agent": "  "}, "agent: must not be empty"),
    ({"agent": ["a"]}, "agent: must be a string, not a list"),
    ({"reason": "r" * 20_001}, "reason: is too long"),
])
def test_submit_vote_refuses_invalid_votes_and_stores_nothing(server, store, change, message):
    ok(server, "create_finding", {"claim": "c", "finding_id": "f1"})
    args = {"finding_id": "f1", "agent": "scout", "vote_type": "confirm", "confidence": 0.8} | change
    text = error(server, "submit_vote", args)
    assert text.startswith("Error executing tool submit_vote: ") and message in text
    assert "validation error" not in text and "pydantic" not in text
    assert _sql.count(store, "finding_votes") == 0


def test_missing_arguments_are_named(server):
    text = error(server, "submit_vote", {"finding_id": "f1"})
    assert "agent: is required; vote_type: is required; confidence: is required" in text


def test_many_votes_at_once_are_all_stored_once_in_group_commits(server, store):
    ok(server, "create_finding", {"claim": "c", "finding_id": "f1"})

    async def main():
        async def agent(n):
            async with Client(server, client_info=types.Implementation(name=f"c{n}", version="1")) as client:
                for i in range(10):
                    result = await client.call_tool("submit_vote", {
                        "finding_id": "f1", "agent": f"a{n}", "vote_type": "challenge" if i % 2 else "confirm",
                        "confidence": 0.5, "reason": f"{n}:{i}"})
                    assert not result.is_error, result.content

        async with anyio.create_task_group() as tg:
            for n in range(8):
                tg.start_soon(agent, n)

    anyio.run(main)
    rows = _sql.rows(store, "finding_votes")
    assert len(rows) == 80 and len({r["reason"] for r in rows}) == 80
    assert server.threads.batches < 80  # votes that arrived together shared a transaction
    results = ok(server, "get_consensus_results", {"finding_id": "f1"})
    assert results["votes_total"] == 80 and results["consensus_score"] == pytest.approx(-0.5)


# ----- reading -----------------------------------------------------------------------------------
def test_get_consensus_results_shows_each_agents_standing_vote(server):
    seed_example(server)
    ok(server, "submit_vote", {"finding_id": "f1", "agent": "scout", "vote_type": "confirm", "confidence": 0.9},
       name="second-client")
    results = ok(server, "get_consensus_results", {"finding_id": "f1"})
    assert results["status"] == "challenged" and results["votes_total"] == 4
    assert results["consensus_score"] == pytest.approx((0.9 - 0.65 + 0.95) / 3)
    assert [(v["agent"], v["confidence"], v["client"]) for v in results["latest_votes"]] == [
        ("scout", 0.9, "second-client"), ("auditor", 0.65, "scout-agent"), ("dev", 0.95, "scout-agent")]
    assert results["context"] == {"repo": "auth-service"}


def test_get_consensus_results_of_a_pending_finding_and_of_an_unknown_one(server):
    ok(server, "create_finding", {"claim": "nobody voted", "finding_id": "quiet"})
    results = ok(server, "get_consensus_results", {"finding_id": "quiet"})
    assert results["status"] == "pending" and results["consensus_score"] is None and results["latest_votes"] == []
    assert "finding_id: no finding with id 'ghost'" in error(server, "get_consensus_results", {"finding_id": "ghost"})
    assert "finding_id: is required" in error(server, "get_consensus_results", {})


def test_get_challenged_findings_lists_only_the_challenged(server):
    assert ok(server, "get_challenged_findings") == {"status": "challenged", "count": 0, "findings": []}
    seed_example(server)
    ok(server, "create_finding", {"claim": "fine", "finding_id": "f2"})
    ok(server, "submit_vote", {"finding_id": "f2", "agent": "dev", "vote_type": "confirm", "confidence": 1})
    ok(server, "create_finding", {"claim": "waiting", "finding_id": "f3"})
    challenged = ok(server, "get_challenged_findings")
    assert challenged["count"] == 1 and [f["id"] for f in challenged["findings"]] == ["f1"]
    assert "Error executing tool" not in json.dumps(challenged)


def test_list_findings_by_status(server):
    seed_example(server)
    ok(server, "create_finding", {"claim": "fine", "finding_id": "f2"})
    ok(server, "submit_vote", {"finding_id": "f2", "agent": "dev", "vote_type": "confirm", "confidence": 1})
    ok(server, "create_finding", {"claim": "waiting", "finding_id": "f3"})
    ids = lambda status: [f["id"] for f in ok(server, "list_findings", {"status": status})["findings"]]
    assert [f["id"] for f in ok(server, "list_findings")["findings"]] == ["f1", "f2", "f3"]
    assert ids("all") == ["f1", "f2", "f3"]
    assert ids("confirmed") == ["f2"] and ids("Challenged") == ["f1"] and ids("pending") == ["f3"]
    assert "status: must be one of 'all', 'confirmed', 'challenged', 'pending', not 'open'" in error(
        server, "list_findings", {"status": "open"})


def test_get_finding_history_keeps_every_vote_in_order(server, store):
    seed_example(server)
    ok(server, "submit_vote", {"finding_id": "f1", "agent": "scout", "vote_type": "challenge",
                               "confidence": 0.4}, name="other-client")
    # A model reply the runner could not read is kept as an invalid vote: shown, never counted.
    with _sql.write(store) as tx:
        tx.insert("finding_votes", {"finding_id": "f1", "agent": "dev", "status": "invalid",
                                    "invalid_reason": "not JSON", "raw": "sure!", "client": "run",
                                    "created_at": utc_now()})
    history = ok(server, "get_finding_history", {"finding_id": "f1"})
    votes = history["votes"]
    assert [(v["agent"], v["vote_type"], v["counted"]) for v in votes] == [
        ("scout", "confirm", False), ("auditor", "challenge", True), ("dev", "confirm", True),
        ("scout", "challenge", True), ("dev", None, False)]
    assert votes[3]["client"] == "other-client" and votes[4]["status"] == "invalid"
    assert votes[4]["invalid_reason"] == "not JSON"
    assert history["votes_in_history"] == 5 and history["truncated"] is False
    assert history["finding"]["invalid_votes"] == 1 and history["finding"]["votes_total"] == 4
    assert history["finding"]["consensus_score"] == pytest.approx((-0.65 + 0.95 - 0.4) / 3)

    last_two = ok(server, "get_finding_history", {"finding_id": "f1", "limit": 2})
    assert [v["id"] for v in last_two["votes"]] == [4, 5] and last_two["truncated"] is True


@pytest.mark.parametrize("args, message", [
    ({"finding_id": "ghost"}, "finding_id: no finding with id 'ghost'"),
    ({"finding_id": "f1", "limit": 0}, "limit: must be between 1 and 100000, not 0"),
    ({"finding_id": "f1", "limit": "ten"}, "limit: must be a whole number, not 'ten'"),
    ({"finding_id": "f1", "limit": 2.5}, "limit: must be a whole number, not 2.5"),
])
def test_get_finding_history_errors(server, args, message):
    ok(server, "create_finding", {"claim": "c", "finding_id": "f1"})
    assert message in error(server, "get_finding_history", args)


# ----- never a crash -----------------------------------------------------------------------------
def test_an_unknown_tool_and_a_server_that_keeps_serving_after_errors(server):
    assert "Unknown tool" in error(server, "drop_table", {})

    async def body(client):
        bad = await client.call_tool("submit_vote", {"finding_id": 1, "agent": None, "vote_type": {},
                                                      "confidence": [], "reason": 7})
        good = await client.call_tool("list_findings", {})
        return bad, good

    bad, good = session(server, body)
    assert bad.is_error and "finding_id: must be a string" in bad.content[0].text
    assert not good.is_error and good.structured_content["count"] == 0


def test_a_read_only_project_refuses_writes_with_a_reason_and_still_reads(tmp_path):
    path = tmp_path / "newer.rwb"
    Store.create(path).close_connection()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    store = Store.open(path)
    assert store.read_only
    try:
        with ConsensusServer(store) as server:
            text = error(server, "create_finding", {"claim": "c"})
            assert "newer Resonance Workbench" in text and "read-only" in text
            assert ok(server, "list_findings")["count"] == 0
    finally:
        store.close_connection()


def test_the_findings_store_and_the_server_agree(server, store):
    seed_example(server)
    local = FindingsStore(store).results("f1")
    remote = ok(server, "get_consensus_results", {"finding_id": "f1"})
    assert local.model_dump(mode="json") == remote
