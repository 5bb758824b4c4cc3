"""Issue 25 through the real entry point: ``rwb run`` (a subprocess) against the loopback server.

The advocate a1 writes an artifact that opens with a verdict (``YES. This response is sound...``).
The three critics quote it without fence lines (a ``>`` line, a bare passage, a markdown code
block) and then give their own ``{"vote": "NO", ...}``. Each NO must be stored as NO, and the
artifact must get the tier the NO votes give (positive_polar), not positive_consensus. The
advocate a2's artifact holds a JSON vote of its own; the critics vote first and then quote it:
their votes stay valid. Re-asks are on, so a reply misread as unreadable would show as a re-ask.
"""

from __future__ import annotations

import json

from tests.runs.test_run_outcomes import last_json, rows, rwb, write
from tests.support.fake_llm_server import FakeLLMServer, Reply

SOUND = ("YES. This response is sound: close the centre to cars on weekends first, then measure the air "
         "before going further.")
HOLDS_JSON = ('Close it on weekdays too. {"vote": "YES", "reason": "the author endorses this plan"} Buses keep '
              "their lanes.")
TEXTS = {"Advocate one.": SOUND, "Advocate two.": HOLDS_JSON,
         "Critic one.": "Keep the centre open.", "Critic two.": "Toll the ring road.", "Critic three.": "Wait a year."}
NO = '{"vote": "NO", "reason": "it forgets the deliveries"}'
QUOTES = {  # how each critic quotes the artifact before its own vote: never with the workbench's fence
    "Critic one.": lambda text: f"> {text}\n\n{NO}",
    "Critic two.": lambda text: f"The response says: {text[:70]}\n{NO}",
    "Critic three.": lambda text: f"```\n{text}\n```\n{NO}",
}


def reply(request) -> str:
    persona, user = request.messages[0]["content"], request.messages[-1]["content"]
    if "Answer in one or two short paragraphs" in user:
        return TEXTS[persona]
    if not persona.startswith("Critic"):
        return '{"vote": "YES", "reason": "aligned"}'
    if SOUND in user:
        return QUOTES[persona](SOUND)
    if HOLDS_JSON in user:
        return f"{NO}\nFor the record, the response read: {HOLDS_JSON}"
    return '{"vote": "YES", "reason": "a critic agrees with a critic"}'


def test_a_verdict_the_critics_quote_is_not_their_vote_and_the_tier_follows_their_no(tmp_path):
    with FakeLLMServer(default=Reply(text=reply)) as server:
        config = write(tmp_path, "rcp.json", {
            "protocol": "rcp", "query": "Should the city close its centre to cars?", "seed": 11,
            "dispatch": "sequential",
            "providers": {"local": {"model": "openai/fake-model", "api_base": server.base_url,
                                    "api_key_env": "LOOP_KEY", "timeout_s": 10, "max_retries": 0, "reask": 1}},
            "clusters": [
                {"name": "advocate", "agents": [{"id": "a1", "provider": "local", "persona": "Advocate one."},
                                                {"id": "a2", "provider": "local", "persona": "Advocate two."}]},
                {"name": "critic", "agents": [{"id": "c1", "provider": "local", "persona": "Critic one."},
                                              {"id": "c2", "provider": "local", "persona": "Critic two."},
                                              {"id": "c3", "provider": "local", "persona": "Critic three."}]}]})
        project = tmp_path / "p.rwb"
        out = rwb("run", config, "--project", str(project))
        sent = len(server.chat_requests)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert sent == 5 + 5 * 4  # every artifact and every vote once: no reply was found unreadable and re-asked

    votes = {(key, voter): (value, status, reason) for key, voter, value, status, reason in rows(
        project, "SELECT a.key, v.voter_agent, v.value, v.status, v.reason FROM votes v "
                 "JOIN artifacts a ON a.id = v.artifact_id ORDER BY 1, 2")}
    for critic in ("c1", "c2", "c3"):
        assert votes[("r1-a1", critic)] == (0, "valid", "it forgets the deliveries"), critic
        assert votes[("r1-a2", critic)] == (0, "valid", "it forgets the deliveries"), critic
    assert votes[("r1-a1", "a2")][:2] == (1, "valid") and votes[("r1-a2", "a1")][:2] == (1, "valid")

    states = {s["artifact"]: s for s in last_json(out)["rounds"][0]["states"]}
    assert states["r1-a1"]["tier"] == "positive_polar"  # a misread NO made it positive_consensus
    assert states["r1-a2"]["tier"] == "positive_polar"
    raw = dict(rows(project, "SELECT v.voter_agent, v.raw FROM votes v JOIN artifacts a ON a.id = v.artifact_id "
                             "WHERE a.key = 'r1-a1' AND v.voter_agent LIKE 'c%'"))
    assert raw["c1"].startswith("> YES. This response is sound")  # the reply is stored whole
    assert json.loads(raw["c1"].splitlines()[-1]) == json.loads(NO)
