"""The controls and debate (SPEC §8), driven in-process: vote's plurality and its tie rule, the
simulated panel's skill (1.0: every answer right, 0.0: none), wrong agents sharing the item's one
distractor (a vote of three agents at skill 0.6 lands near Condorcet's 0.648), conformity, and an
RCP voter with a skill approving exactly the answers that agree with its own."""

from __future__ import annotations

import pytest

from workbench.core import registry
from workbench.core.datasets import arithmetic
from workbench.core.errors import InputError
from workbench.core.protocols.shared.answers import plurality
from workbench.core.protocols.shared.steps import AgentReply, drive
from workbench.core.runs.config import DatasetItem, parse_run_config
from workbench.core.runs.provenance import prompts_for
from workbench.core.scoring import score
from workbench.core.sim import SimPanel

SIM = {"sim": {"model": "sim"}}


def config(protocol: str, skills: list[float], **extra) -> dict:
    agents = [{"id": f"a{i + 1}", "provider": "sim", "params": {"skill": s}} for i, s in enumerate(skills)]
    return {"protocol": protocol, "seed": 5, "providers": SIM, "agents": agents,
            "item": {"id": "q1", "question": "What is the result of 1+2*3+4-5*6?", "answer": -19}, **extra}


def run_in_process(cfg, sim: SimPanel | None = None):
    """The protocol's generator answered by the simulated panel, each reply read by the protocol."""
    protocol = registry.get(cfg.protocol)
    sim = sim or SimPanel(cfg.seed, {a.id: a.params for a in cfg.agents})
    calls = []

    def answer(call):
        calls.append(call)
        return sim.answer(call)

    return drive(protocol.generator(cfg, prompts_for(cfg)), answer, read=protocol.read), calls


# ----- the plurality ------------------------------------------------------------------------------
def test_the_plurality_counts_answers_as_the_scorer_reads_them_and_unscorable_ones_take_no_part():
    found = plurality([("a", "I get 41."), ("b", "forty-two"), ("c", "It is 42"), ("d", "42.0 exactly"),
                       ("e", "Nothing to say")], "number")
    assert (found.answer, found.agent, found.counts, found.tied) == ("42", "c", {"41": 1, "42": 2}, ())


def test_a_tie_goes_to_the_answer_of_the_agent_that_comes_first_in_the_config():
    answers = [("b", "7"), ("a", "8"), ("c", "8"), ("d", "7")]
    found = plurality(answers, "number")
    assert (found.answer, found.agent, found.tied) == ("7", "b", ("7", "8"))
    assert plurality(list(reversed(answers)), "number").answer == "7"  # d now comes first
    assert plurality([("a", "8"), *answers], "number").answer == "8"  # a plurality beats the order


def test_over_a_query_without_answer_type_texts_are_compared_normalised():
    found = plurality([("a", "Lyon"), ("b", "  PARIS. "), ("c", "paris"), ("d", None)], None)
    assert (found.answer, found.agent) == ("paris", "b")
    assert plurality([("a", None), ("b", "   ")], None).answer is None


def test_choice_answers_are_read_as_letters():
    assert plurality([("a", "I pick (B)."), ("b", "A good case for C"), ("c", "Answer: C")], "choice").answer == "C"


# ----- vote and single through their generators ---------------------------------------------------
def scripted(texts: dict[str, str | None]):
    def answer(call):
        text = texts[call.agent]
        return AgentReply(call.key, text, None if text is not None else "call failed")
    return answer


def test_vote_returns_the_plurality_and_the_record_the_project_scores():
    cfg = parse_run_config(config("vote", [0.5, 0.5, 0.5, 0.5]))
    vote = registry.get("vote")
    result = drive(vote.generator(cfg, prompts_for(cfg)), scripted(
        {"a1": "It comes to -18.", "a2": "-19", "a3": "I get -19.", "a4": None}), read=vote.read)
    finished = vote.finish(cfg, "run-1", result)
    (record,) = finished.records
    assert record.kind == "answer" and record.fields["text"] == "-19" and record.fields["agent"] == "a2"
    assert record.fields["detail"]["counts"] == {"-18": 1, "-19": 2}
    assert finished.summary["answer"]["answer"] == "-19"


def test_single_answers_with_its_first_agent_only():
    cfg = parse_run_config(config("single", [1.0, 0.0, 0.0]))
    result, calls = run_in_process(cfg)
    assert [c.agent for c in calls] == ["a1"]
    assert score(result["answers"][0][1], "-19", "number").verdict == "correct"


# ----- simulated skill -------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", ["single", "vote", "debate", "rcp"])
@pytest.mark.parametrize("skill, verdict", [(1.0, "correct"), (0.0, "incorrect")])
def test_skill_one_answers_every_item_right_and_skill_zero_none(protocol, skill, verdict):
    extra = {"rounds": 2} if protocol == "debate" else {}
    base = config(protocol, [skill] * 3, **extra)
    if protocol == "rcp":  # the same agents, in RCP's two clusters
        agents = base.pop("agents")
        base["clusters"] = [{"name": "x", "agents": agents[:2]}, {"name": "y", "agents": agents[2:]}]
    for item in arithmetic(10, 1):
        cfg = parse_run_config({**base, "item": item.to_json()})
        _result, calls = run_in_process(cfg)
        answers = [c for c in calls if c.purpose in ("answer", "generate")]
        replies = SimPanel(cfg.seed, {a.id: a.params for a in cfg.agents})
        for call in answers:
            assert score(replies.answer(call).text, item.answer, "number").verdict == verdict, call.key


def test_wrong_agents_share_the_items_one_distractor():
    cfg = parse_run_config(config("vote", [0.0] * 5))
    result, _calls = run_in_process(cfg)
    found = result["final"]
    assert found.counts and len(found.counts) == 1 and found.answer != "-19"


def test_a_vote_of_three_agents_at_skill_0_6_lands_near_condorcets_0_648():
    """P(majority right) = 0.6^3 + 3 * 0.6^2 * 0.4 = 0.648 when wrong agents agree on one distractor."""
    cfg = parse_run_config(config("vote", [0.6, 0.6, 0.6]))
    sim = SimPanel(cfg.seed, {a.id: a.params for a in cfg.agents})
    right = 0
    for item in arithmetic(1000, 11):
        one = cfg.model_copy(update={"item": DatasetItem.model_validate(item.to_json()), "query": item.question})
        result, _calls = run_in_process(one, sim)
        text = dict(result["answers"]).get(result["final"].agent)
        right += score(text, item.answer, "number").verdict == "correct"
    assert abs(right / 1000 - 0.648) < 0.05, right


def test_debate_conformity_one_adopts_the_peers_plurality_and_zero_answers_afresh():
    base = config("debate", [1.0, 0.0, 0.0], rounds=1)
    base["agents"][0]["params"]["conformity"] = 1.0  # the right agent follows its two wrong peers
    result, _calls = run_in_process(parse_run_config(base))
    first, last = result["rounds"]
    assert [score(t, "-19", "number").verdict for _a, t in first] == ["correct", "incorrect", "incorrect"]
    assert [score(t, "-19", "number").verdict for _a, t in last] == ["incorrect", "incorrect", "incorrect"]
    base["agents"][0]["params"]["conformity"] = 0.0
    result, _calls = run_in_process(parse_run_config(base))
    assert score(result["rounds"][1][0][1], "-19", "number").verdict == "correct"


def test_the_same_seed_gives_the_same_answers_and_another_seed_others():
    cfg = parse_run_config(config("debate", [0.5, 0.5, 0.5]))
    one, _ = run_in_process(cfg)
    assert run_in_process(cfg)[0]["rounds"] == one["rounds"]
    other = [run_in_process(cfg.model_copy(update={"seed": s}))[0]["rounds"] for s in range(6, 12)]
    assert any(r != one["rounds"] for r in other)


def test_an_rcp_voter_with_a_skill_approves_exactly_the_answers_that_agree_with_its_own():
    base = config("rcp", [1.0, 1.0, 0.0, 0.0])
    agents = base.pop("agents")
    base["clusters"] = [{"name": "right", "agents": agents[:2]}, {"name": "wrong", "agents": agents[2:]}]
    cfg = parse_run_config(base)
    result, calls = run_in_process(cfg)
    states = {s["artifact"]: s for s in result[-1].states}
    assert states["r1-a1"]["cluster_rates"] == {"right": 1.0, "wrong": 0.0}
    assert states["r1-a3"]["cluster_rates"] == {"right": 0.0, "wrong": 1.0}


# ----- the panel of an answer protocol ---------------------------------------------------------------
@pytest.mark.parametrize("extra, field", [
    ({"agents": [{"id": "a1", "provider": "nope"}]}, "agents[0].provider"),
    ({"agents": [{"id": "a1", "provider": "sim"}], "clusters": [{"name": "x", "agents": [{"id": "b", "provider": "sim"}]}]},
     "agents"),
    ({"agents": None, "clusters": [{"name": "x", "theta": 0.5, "agents": [{"id": "b", "provider": "sim"}]}]},
     "clusters[0].theta"),
    ({"theta": 0.5}, "theta"),
    ({"reference": "x"}, "reference"),
])
def test_an_answer_protocols_panel_stays_strict(extra, field):
    data = {k: v for k, v in {**config("vote", [0.5]), **extra}.items() if v is not None}
    with pytest.raises(InputError) as refused:
        parse_run_config(data)
    assert refused.value.field == field


def test_a_debate_needs_two_agents_and_at_least_one_round():
    with pytest.raises(InputError, match="^agents: a debate needs at least two agents"):
        parse_run_config(config("debate", [0.5]))
    with pytest.raises(InputError, match="^rounds: must be at least 1"):
        parse_run_config(config("debate", [0.5, 0.5], rounds=0))


def test_an_rcp_configs_clusters_are_flattened_in_order():
    data = config("vote", [])
    data.pop("agents")
    data["clusters"] = [{"name": "x", "agents": [{"id": "b", "provider": "sim"}]},
                        {"name": "y", "agents": [{"id": "a", "provider": "sim"}]}]
    cfg = parse_run_config(data)
    _result, calls = run_in_process(cfg)
    assert [c.agent for c in calls] == ["b", "a"]
