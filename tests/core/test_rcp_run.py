"""The RCP run generator: prompts, fairness rules, vote parsing and classification."""

from __future__ import annotations

import pytest

from workbench.core.protocols.rcp.run import (
    RcpAgent,
    RcpRunConfig,
    parse_ballot,
    parse_vote,
    presentation_order,
    run_rcp,
)
from workbench.core.protocols.shared.fencing import mask_fences, new_delimiter
from workbench.core.protocols.shared.steps import AgentReply, Batch

AGENTS = (RcpAgent("a1", "advocate", "pro"), RcpAgent("a2", "advocate", "pro"),
          RcpAgent("c1", "critic", "contra"), RcpAgent("c2", "critic", "contra"))
CLUSTERS = ({"name": "advocate", "agents": ["a1", "a2"]}, {"name": "critic", "agents": ["c1", "c2"]})
TEXTS = {"a1": "Close the centre: cleaner air.", "a2": "Pedestrian zones lift trade.",
         "c1": "Access for disabled residents must stay.", "c2": "Costs shift to the suburbs."}


def drive(cfg, answer):
    """Run the generator with ``answer(call) -> text | None``; returns (rounds, calls, notes)."""
    gen = run_rcp(cfg)
    calls, notes, reply = [], [], None
    try:
        while True:
            step = gen.send(reply)
            if isinstance(step, Batch):
                calls.extend(step.calls)
                reply = {c.key: AgentReply(c.key, answer(c), None if answer(c) is not None else "boom")
                         for c in step.calls}
            else:
                notes.append(step)
                reply = None
    except StopIteration as stop:
        return stop.value, calls, notes


def answer(call):
    if call.purpose == "generate":
        return TEXTS[call.agent]
    if call.purpose == "ballot":
        return '{"votes": {' + ", ".join(f'"{lab}": "YES"' for lab in call.meta["labels"]) + "}}"
    # Votes: everyone approves the advocates' a1; only advocates approve other advocates' work.
    art = call.meta["artifact"]
    if art.endswith("a1"):
        return "YES, it holds."
    same = art.split("-")[1][0] == call.agent[0]
    return '{"vote": "YES", "reason": "aligned"}' if same else '{"vote": "NO", "reason": "no"}'


def config(**kw):
    return RcpRunConfig(query="Close downtown to cars?", seed=7, agents=AGENTS, clusters=CLUSTERS, **kw)


def test_one_call_per_voter_and_artifact_without_self_votes():
    rounds, calls, _ = drive(config(), answer)
    votes = [c for c in calls if c.purpose == "vote"]
    assert len(votes) == 4 * 3  # m(m-1)
    assert all(not c.meta["artifact"].endswith(c.agent) for c in votes)
    [rnd] = rounds
    tiers = {s["artifact"]: s["tier"] for s in rnd.states}
    assert tiers == {"r1-a1": "positive_consensus", "r1-a2": "positive_polar",
                     "r1-c1": "negative_polar", "r1-c2": "negative_polar"}


def test_ballot_mode_asks_each_voter_once():
    rounds, calls, _ = drive(config(ballot_mode=True), answer)
    ballots = [c for c in calls if c.purpose == "ballot"]
    assert len(ballots) == 4  # m, not m(m-1)
    assert all(s["tier"] == "positive_consensus" for s in rounds[0].states)


def test_prompts_hide_authors_and_fence_each_artifact_with_its_own_delimiter():
    _, calls, _ = drive(config(), answer)
    votes = [c for c in calls if c.purpose == "vote"]
    fences = {c.meta["delimiter"] for c in votes}
    assert len(fences) == len(votes)
    for c in votes:
        prompt = c.messages[-1]["content"]
        author = c.meta["artifact"].split("-")[1]
        assert author not in prompt and "advocate" not in prompt and "critic" not in prompt
        assert f"<<<{c.meta['delimiter']}>>>" in prompt and f"<<<END-{c.meta['delimiter']}>>>" in prompt


def test_same_seed_same_prompts_other_seed_other_order():
    _, a, _ = drive(config(), answer)
    _, b, _ = drive(config(), answer)
    masked = lambda calls: [(c.key, [mask_fences(m["content"]) for m in c.messages]) for c in calls]
    assert masked(a) == masked(b)  # the same prompts up to the fence names (SPEC §6)
    keys = ["r1-a1", "r1-a2", "r1-c1", "r1-c2"]
    orders = {tuple(presentation_order(seed, 1, "x", keys)) for seed in range(20)}
    assert len(orders) > 5  # shuffled per seed
    assert new_delimiter() != new_delimiter()  # fresh per call, never from the seed


def test_unreadable_and_failed_votes_are_kept_and_left_out_of_denominators():
    def flaky(call):
        if call.purpose == "vote" and call.agent == "c1":
            return "Perhaps, it depends."
        if call.purpose == "vote" and call.agent == "c2":
            return None  # the call failed
        return answer(call)

    rounds, _, _ = drive(config(), flaky)
    votes = rounds[0].votes["r1-a1"]
    assert votes["c1"].status == "invalid" and votes["c1"].value is None
    assert votes["c2"].status == "failed"
    state = next(s for s in rounds[0].states if s["artifact"] == "r1-a1")
    assert state["votes_cast"] == 1 and state["cluster_rates"]["critic"] is None


def test_refinement_round_sees_the_consensus_artifacts():
    rounds, calls, _ = drive(config(refinement_rounds=1), answer)
    assert len(rounds) == 2
    second = [c for c in calls if c.purpose == "generate" and c.round_no == 2]
    assert all(TEXTS["a1"] in c.messages[-1]["content"] for c in second)
    assert all(TEXTS["c2"] not in c.messages[-1]["content"] for c in second)


@pytest.mark.parametrize("text, value, status", [
    ("YES", 1, "valid"), ("no.", 0, "valid"), ("  Yes - it is sound", 1, "valid"),
    ('{"vote": "no", "reason": "weak"}', 0, "valid"), ('```json\n{"vote": "YES"}\n```', 1, "valid"),
    ('{"vote": "maybe"}', None, "invalid"), ("Yesterday I thought", None, "invalid"), ("{broken", None, "invalid"),
])
def test_vote_parser(text, value, status):
    parsed = parse_vote(text)
    assert (parsed.value, parsed.status) == (value, status)


def test_ballot_parser_marks_missing_labels_invalid():
    parsed = parse_ballot('{"votes": {"A": "YES"}}', ["A", "B"])
    assert parsed["A"].value == 1 and parsed["B"].status == "invalid"
    assert all(v.status == "failed" for v in parse_ballot(None, ["A"]).values())
