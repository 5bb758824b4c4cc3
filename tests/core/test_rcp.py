"""Resonant Consensus Protocol engine: the paper's tables, SPEC §1 rules, hand-computed cases."""

from __future__ import annotations

import copy
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from workbench.core.errors import InputError
from workbench.core.protocols.rcp.classify import (
    TIERS,
    classify_arrays,
    classify_payload,
    config_warnings,
    guidance_for,
    mixed_results_guidance,
    parse_input,
    reachable_tiers,
)

REQUIRED_KEYS = {
    "artifact", "author", "author_cluster", "cluster_rates", "approval_set", "resonance_ratio", "tier",
    "contestation", "bias_direction", "risk_if_acted_upon", "score", "score_balanced", "votes_cast",
    "is_persuasive", "persuasion_reach", "persuasion_kind", "full_consensus", "reference_dissent",
}

SPEC_EXAMPLE = {
    "clusters": [{"name": "advocate", "agents": ["a1", "a2", "a3"], "theta": 0.5, "weight": 1.0},
                 {"name": "critic", "agents": ["c1", "c2", "c3"]}],
    "reference": "advocate", "theta": 0.5, "tau": 0.6, "weighted": False,
    "artifacts": [{"id": "w1", "author": "a1", "votes": {"a2": 1, "a3": 0, "c1": 1, "c2": None, "c3": 1}}],
}


def binary(artifacts: list[dict], **kw) -> dict:
    """advocate (reference) = a1, a2; critic = c1, c2; tau 0.6, theta 0.5."""
    return {"clusters": [{"name": "advocate", "agents": ["a1", "a2"]},
                         {"name": "critic", "agents": ["c1", "c2"]}],
            "artifacts": artifacts, **kw}


def three(artifacts: list[dict], **kw) -> dict:
    """ref = r1, r2; x = x1, x2; y = y1, y2."""
    return {"clusters": [{"name": "ref", "agents": ["r1", "r2"]},
                         {"name": "x", "agents": ["x1", "x2"]},
                         {"name": "y", "agents": ["y1", "y2"]}],
            "artifacts": artifacts, **kw}


def votes(**groups: int | None) -> dict:
    """votes(a=1, c=0) -> every agent whose id starts with that letter votes that value (2 each)."""
    return {f"{g}{i}": v for g, v in groups.items() for i in (1, 2)}


def by_id(states: list[dict]) -> dict[str, dict]:
    return {s["artifact"]: s for s in states}


# ---------------------------------------------------------------- the paper's tables

@pytest.mark.parametrize(("groups", "approval_set", "rho", "tier"), [
    ({"a": 1, "c": 1}, ["advocate", "critic"], 1.0, "positive_consensus"),
    ({"a": 1, "c": 0}, ["advocate"], 0.5, "positive_polar"),
    ({"a": 0, "c": 1}, ["critic"], 0.5, "negative_polar"),
    ({"a": 0, "c": 0}, [], 0.0, "negative_consensus"),
])
def test_paper_4_2_table_n2_tau_06(groups, approval_set, rho, tier):
    [s] = classify_payload(binary([{"id": "w", "votes": votes(**groups)}], tau=0.6))
    assert s["approval_set"] == approval_set
    assert s["resonance_ratio"] == rho
    assert s["tier"] == tier
    assert s["full_consensus"] is (len(approval_set) == 2)


@pytest.mark.parametrize(("groups", "tier", "contestation", "bias", "risk"), [
    ({"a": 1, "c": 1}, "positive_consensus", "low", "neutral", "low"),
    ({"a": 0, "c": 0}, "negative_consensus", "low", "neutral", "high"),
    ({"a": 1, "c": 0}, "positive_polar", "high", "advocate", "moderate"),
    ({"a": 0, "c": 1}, "negative_polar", "high", "non-reference", "moderate"),
])
def test_paper_2_3_assessment_table(groups, tier, contestation, bias, risk):
    [s] = classify_payload(binary([{"id": "w", "votes": votes(**groups)}]))
    assert (s["tier"], s["contestation"], s["bias_direction"], s["risk_if_acted_upon"]) == (
        tier, contestation, bias, risk)


def test_spec_1_example_by_hand():
    [s] = classify_payload(SPEC_EXAMPLE)
    assert REQUIRED_KEYS <= set(s)
    # advocate: a2=1, a3=0 (a1 is the author) -> 1/2 = 0.5 >= 0.5; critic: c1=1, c3=1 (c2 missing) -> 1.0
    assert s["cluster_rates"] == {"advocate": 0.5, "critic": 1.0}
    assert s["approval_set"] == ["advocate", "critic"]
    assert s["resonance_ratio"] == 1.0
    assert s["tier"] == "positive_consensus"
    assert (s["contestation"], s["bias_direction"], s["risk_if_acted_upon"]) == ("low", "neutral", "low")
    assert s["score"] == 0.75                        # 3 approvals / 4 votes cast
    assert s["votes_cast"] == 4 and s["votes_missing"] == 1 and s["approvals"] == 3
    assert s["sigma"] == 0.25                        # pstdev(0.5, 1.0)
    assert s["score_balanced"] == 0.5625             # 0.75 * (1 - 0.25)
    assert (s["author"], s["author_cluster"]) == ("a1", "advocate")
    assert s["is_persuasive"] is True and s["persuasion_reach"] == 1
    assert s["persuasion_kind"] == "accelerator"
    assert s["full_consensus"] is True and s["reference_dissent"] is False
    assert s["guidance"].startswith("Present with confidence")


def test_output_is_plain_json_types():
    out = classify_payload(SPEC_EXAMPLE)
    assert isinstance(out, list)

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                assert type(k) is str
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        else:
            assert x is None or type(x) in (str, int, float, bool), type(x)
    walk(out)


# ---------------------------------------------------------------- persuasion (paper §6)

def test_accelerator_and_mitigator():
    arts = [{"id": "acc", "author": "a1", "votes": {"a2": 1, "c1": 1, "c2": 1}},
            {"id": "mit", "author": "c1", "votes": {"a1": 1, "a2": 1, "c2": 1}}]
    s = by_id(classify_payload(binary(arts)))
    assert (s["acc"]["persuasion_kind"], s["acc"]["persuasion_reach"]) == ("accelerator", 1)
    assert (s["mit"]["persuasion_kind"], s["mit"]["persuasion_reach"]) == ("mitigator", 1)
    assert s["acc"]["is_persuasive"] and s["mit"]["is_persuasive"]


def test_polar_is_never_persuasive():
    # advocate's own artifact approved only by advocates: positive polar, no persuasion
    [s] = classify_payload(binary([{"id": "w", "author": "a1", "votes": {"a2": 1, "c1": 0, "c2": 0}}]))
    assert s["tier"] == "positive_polar"
    assert (s["is_persuasive"], s["persuasion_reach"], s["persuasion_kind"]) == (False, 0, None)
    # a critic's artifact approved by advocates only: negative? no, reference approves -> positive_polar,
    # which crosses clusters but is not consensus, so not persuasive either
    [s] = classify_payload(binary([{"id": "w", "author": "c1", "votes": {"a1": 1, "a2": 1, "c2": 0}}]))
    assert s["tier"] == "positive_polar" and s["is_persuasive"] is False


def test_persuasion_n3_reach_and_no_kind():
    [s] = classify_payload(three([{"id": "w", "author": "x1", "votes": {**votes(r=1, y=1), "x2": 1}}]))
    assert s["tier"] == "positive_consensus"
    assert s["persuasion_reach"] == 2 and s["is_persuasive"] is True
    assert s["persuasion_kind"] is None                      # only named for n = 2


def test_weighted_consensus_without_persuasion():
    # weights 3 : 1, S = {advocate} -> rho 0.75 >= 0.6: consensus that convinced nobody outside
    p = binary([{"id": "w", "author": "a1", "votes": {"a2": 1, "c1": 0, "c2": 0}}], weighted=True)
    p["clusters"][0]["weight"] = 3
    [s] = classify_payload(p)
    assert (s["tier"], s["resonance_ratio"]) == ("positive_consensus", 0.75)
    assert (s["is_persuasive"], s["persuasion_reach"], s["persuasion_kind"]) == (False, 0, None)
    assert s["full_consensus"] is False


# ---------------------------------------------------------------- extensions (paper §11)

def test_weighted_rho_by_hand():
    # weights ref 2, x 1, y 1 (total 4), tau 0.6: band (0.4, 0.6)
    arts = [{"id": "xy", "votes": votes(r=0, x=1, y=1)},     # 2/4 = 0.5: polar, ref out
            {"id": "r", "votes": votes(r=1, x=0, y=0)},      # 2/4 = 0.5: polar, ref in
            {"id": "rx", "votes": votes(r=1, x=1, y=0)},     # 3/4 = 0.75: consensus
            {"id": "x", "votes": votes(r=0, x=1, y=0)}]      # 1/4 = 0.25: negative consensus
    p = three(arts, weighted=True)
    p["clusters"][0]["weight"] = 2.0
    s = by_id(classify_payload(p))
    assert [(s[k]["resonance_ratio"], s[k]["tier"]) for k in ("xy", "r", "rx", "x")] == [
        (0.5, "negative_polar"), (0.5, "positive_polar"), (0.75, "positive_consensus"),
        (0.25, "negative_consensus")]
    # unweighted, the same votes give |S| / 3
    p["weighted"] = False
    s = by_id(classify_payload(p))
    assert s["xy"]["resonance_ratio"] == 2 / 3 and s["xy"]["tier"] == "positive_consensus"
    assert s["xy"]["reference_dissent"] is True
    assert s["r"]["resonance_ratio"] == 1 / 3 and s["r"]["tier"] == "negative_consensus"


def test_per_cluster_theta_by_hand():
    p = {"clusters": [{"name": "adv", "agents": ["a1", "a2", "a3"]},
                      {"name": "safety", "agents": ["s1", "s2", "s3", "s4", "s5"], "theta": 0.9}],
         "artifacts": [
             {"id": "four", "votes": {"a1": 1, "a2": 1, "a3": 0, "s1": 1, "s2": 1, "s3": 1, "s4": 1, "s5": 0}},
             {"id": "five", "votes": {"a1": 1, "a2": 1, "a3": 0, "s1": 1, "s2": 1, "s3": 1, "s4": 1, "s5": 1}}]}
    s = by_id(classify_payload(p))
    assert s["four"]["cluster_rates"] == {"adv": 2 / 3, "safety": 0.8}
    assert s["four"]["approval_set"] == ["adv"] and s["four"]["tier"] == "positive_polar"
    assert s["five"]["approval_set"] == ["adv", "safety"] and s["five"]["tier"] == "positive_consensus"


@pytest.mark.parametrize(("theta", "approves"), [
    (0.6666666666, True),     # below 2/3
    (0.666666667, True),      # 3.3e-10 above 2/3: inside the 1e-9 tolerance
    (0.66666667, False),      # 3.3e-9 above 2/3: outside it
])
def test_theta_tolerance(theta, approves):
    p = {"clusters": [{"name": "adv", "agents": ["a1", "a2", "a3"], "theta": theta},
                      {"name": "crit", "agents": ["c1"]}],
         "artifacts": [{"id": "w", "votes": {"a1": 1, "a2": 1, "a3": 0, "c1": 0}}]}
    [s] = classify_payload(p)
    assert ("adv" in s["approval_set"]) is approves


def test_tau_tolerance_five_clusters():
    # n = 5, tau = 0.6: 3/5 is consensus and 2/5 is negative consensus, both exactly on the edge
    clusters = [{"name": f"k{i}", "agents": [f"k{i}a"]} for i in range(5)]
    arts = [{"id": "three", "votes": {"k0a": 1, "k1a": 1, "k2a": 1, "k3a": 0, "k4a": 0}},
            {"id": "two", "votes": {"k0a": 1, "k1a": 1, "k2a": 0, "k3a": 0, "k4a": 0}}]
    s = by_id(classify_payload({"clusters": clusters, "artifacts": arts}))
    assert (s["three"]["resonance_ratio"], s["three"]["tier"]) == (0.6, "positive_consensus")
    assert (s["two"]["resonance_ratio"], s["two"]["tier"]) == (0.4, "negative_consensus")


# ---------------------------------------------------------------- votes, authors, rates

def test_missing_votes_leave_the_denominators():
    # a1 = 1, a2 = null, c1 = 0, c2 absent
    [s] = classify_payload(binary([{"id": "w", "votes": {"a1": 1, "a2": None, "c1": 0}}]))
    assert s["cluster_rates"] == {"advocate": 1.0, "critic": 0.0}
    assert s["votes_cast"] == 2 and s["votes_missing"] == 2
    assert s["score"] == 0.5
    assert s["tier"] == "positive_polar"


def test_cluster_without_votes_has_null_rate_and_does_not_approve():
    [s] = classify_payload(binary([{"id": "w", "votes": {"a1": 1, "a2": 1, "c1": None}}]))
    assert s["cluster_rates"] == {"advocate": 1.0, "critic": None}
    assert s["approval_set"] == ["advocate"] and s["tier"] == "positive_polar"
    # sigma over the single defined rate is 0, so score_balanced == score
    assert s["sigma"] == 0.0 and s["score_balanced"] == s["score"] == 1.0


def test_no_votes_no_tier():
    """SPEC §1: an artifact nobody voted on is unclassified, not a "high risk" negative consensus,
    and it comes after every classified artifact."""
    states = classify_payload(binary([{"id": "w", "votes": {}}, {"id": "b", "votes": {"a1": None}},
                                      {"id": "a", "votes": {"a1": 0, "a2": 0, "c1": 0, "c2": 0}}]))
    assert [s["artifact"] for s in states] == ["a", "b", "w"]
    assert states[0]["tier"] == "negative_consensus" and states[0]["risk_if_acted_upon"] == "high"
    for s in states[1:]:
        assert s["cluster_rates"] == {"advocate": None, "critic": None}
        assert s["score"] is None and s["score_balanced"] is None and s["sigma"] is None
        assert s["votes_cast"] == 0 and s["votes_missing"] == 4
        assert s["tier"] == "unclassified" and s["risk_if_acted_upon"] == "unknown"
        assert s["resonance_ratio"] is None and s["contestation"] is None and s["bias_direction"] is None
        assert s["approval_set"] == [] and not s["is_persuasive"] and not s["full_consensus"]
        assert not s["reference_dissent"] and s["persuasion_kind"] is None


def test_author_is_excluded_from_their_cluster():
    # author a1 in a 2-agent cluster: the advocate rate is a2's vote alone
    [s] = classify_payload(binary([{"id": "w", "author": "a1", "votes": {"a2": 0, "c1": 1, "c2": 1}}]))
    assert s["cluster_rates"] == {"advocate": 0.0, "critic": 1.0}
    assert s["votes_cast"] == 3 and s["votes_missing"] == 0
    assert s["score"] == 2 / 3


def test_author_null_entry_is_ignored_but_a_vote_is_refused():
    [s] = classify_payload(binary([{"id": "w", "author": "a1", "votes": {"a1": None, "a2": 1}}]))
    assert s["votes_cast"] == 1 and s["votes_missing"] == 2
    with pytest.raises(InputError) as err:
        classify_payload(binary([{"id": "w", "author": "a1", "votes": {"a1": 1, "a2": 1}}]))
    assert str(err.value) == "artifacts[0].votes.a1: the author never votes on their own artifact"


def test_booleans_and_integral_floats_are_votes():
    [s] = classify_payload(binary([{"id": "w", "votes": {"a1": True, "a2": 1.0, "c1": False, "c2": 0.0}}]))
    assert s["cluster_rates"] == {"advocate": 1.0, "critic": 0.0}


def test_authorless_artifact():
    [s] = classify_payload(binary([{"id": "w", "author": None, "votes": votes(a=1, c=1)}]))
    assert (s["author"], s["author_cluster"]) == (None, None)
    assert s["votes_cast"] == 4
    assert s["tier"] == "positive_consensus"
    assert (s["is_persuasive"], s["persuasion_reach"], s["persuasion_kind"]) == (False, 0, None)


def test_reference_dissent_n3():
    [s] = classify_payload(three([{"id": "w", "votes": votes(r=0, x=1, y=1)}], tau=0.6))
    assert s["approval_set"] == ["x", "y"]
    assert s["resonance_ratio"] == 2 / 3
    assert s["tier"] == "positive_consensus" and s["reference_dissent"] is True
    assert s["bias_direction"] == "neutral" and s["full_consensus"] is False
    assert "reference cluster 'ref' did not join" in s["guidance"]


def test_reference_defaults_to_first_cluster_and_can_be_moved():
    art = [{"id": "w", "votes": votes(a=0, c=1)}]
    assert classify_payload(binary(art))[0]["tier"] == "negative_polar"
    [s] = classify_payload(binary(art, reference="critic"))
    assert s["tier"] == "positive_polar" and s["bias_direction"] == "critic"


def test_score_balanced_by_hand():
    # ref 1,1 -> 1.0; x 1,0 -> 0.5; y 0,0 -> 0.0; score 3/6; sigma = sqrt(((.5)^2 + 0 + (.5)^2) / 3)
    [s] = classify_payload(three([{"id": "w", "votes": {"r1": 1, "r2": 1, "x1": 1, "x2": 0, "y1": 0, "y2": 0}}]))
    assert s["score"] == 0.5
    assert s["sigma"] == pytest.approx(math.sqrt(1 / 6), abs=1e-15)
    assert s["score_balanced"] == pytest.approx(0.5 * (1 - math.sqrt(1 / 6)), abs=1e-15)
    # x at 0.5 meets theta 0.5, so S = {ref, x} and rho = 2/3 >= 0.6
    assert s["approval_set"] == ["ref", "x"] and s["tier"] == "positive_consensus"


def test_ordering_tiers_then_score_then_id():
    arts = [{"id": "nc", "votes": votes(a=0, c=0)},
            {"id": "np", "votes": votes(a=0, c=1)},
            {"id": "pp", "votes": votes(a=1, c=0)},
            {"id": "pc-b", "votes": votes(a=1, c=1)},
            {"id": "pc-a", "votes": votes(a=1, c=1)},                      # ties pc-b: id decides
            {"id": "pc-low", "votes": {"a1": 1, "a2": 0, "c1": 1, "c2": 0}},  # score 0.5
            {"id": "pc-0", "votes": {"a1": 1, "c1": 1, "c2": 1}}]           # score 1.0, missing a2
    assert [s["artifact"] for s in classify_payload(binary(arts))] == [
        "pc-0", "pc-a", "pc-b", "pc-low", "pp", "np", "nc"]


def test_null_score_sorts_last_in_its_tier():
    arts = [{"id": "a-empty", "votes": {}}, {"id": "z-zero", "votes": votes(a=0, c=0)}]
    assert [s["artifact"] for s in classify_payload(binary(arts))] == ["z-zero", "a-empty"]


def test_empty_artifact_list():
    assert classify_payload(binary([])) == []


def test_agent_objects_with_id_are_accepted():
    p = copy.deepcopy(SPEC_EXAMPLE)
    p["clusters"][0]["agents"] = [{"id": "a1", "provider": "sim"}, {"id": "a2"}, {"id": "a3"}]
    assert classify_payload(p) == classify_payload(SPEC_EXAMPLE)


# ---------------------------------------------------------------- guidance (paper §8)

def test_guidance_sentences():
    arts = [{"id": t, "votes": votes(a=a, c=c)} for t, a, c in
            (("pc", 1, 1), ("pp", 1, 0), ("np", 0, 1), ("nc", 0, 0))]
    s = by_id(classify_payload(binary(arts)))
    assert s["pp"]["guidance"].startswith("From the advocate perspective: ")
    assert s["np"]["guidance"].startswith("From the critic perspective: ")
    assert s["nc"]["guidance"].startswith("Surface the rejection: Both perspectives identified concerns")
    assert s["pc"]["guidance"].startswith("Present with confidence: both clusters endorse it")
    for state in s.values():
        assert guidance_for(state, "advocate") == state["guidance"]


def test_mixed_results_guidance():
    polar = classify_payload(binary([{"id": "p", "votes": votes(a=1, c=0)},
                                     {"id": "n", "votes": votes(a=0, c=0)}]))
    assert mixed_results_guidance(polar).startswith("No positive consensus: request clarification")
    assert mixed_results_guidance(classify_payload(SPEC_EXAMPLE)) is None
    assert mixed_results_guidance([]) is None


# ---------------------------------------------------------------- configuration warnings

def cfg(n: int, tau: float, **kw) -> dict:
    return {"clusters": [{"name": f"k{i}", "agents": [f"k{i}a", f"k{i}b"]} for i in range(n)], "tau": tau, **kw}


@pytest.mark.parametrize(("n", "tau", "empty"), [
    (1, 0.6, True), (2, 0.6, False), (3, 0.6, True), (4, 0.6, False), (5, 0.6, True),
    (3, 0.7, False), (2, 1.0, False), (3, 0.51, True), (4, 0.75, False), (4, 0.76, False),
    (3, 2 / 3, True), (3, 0.67, False), (7, 0.58, False), (1, 1.0, True),
])
def test_empty_polar_warning(n, tau, empty):
    warnings = config_warnings(cfg(n, tau))
    assert any("leaves both polar tiers empty" in w for w in warnings) is empty
    tiers = reachable_tiers(parse_input({**cfg(n, tau), "artifacts": []}))
    assert ("positive_polar" in tiers) is (not empty) and ("negative_polar" in tiers) is (not empty)


def test_empty_polar_warning_text_n3():
    [w] = config_warnings(cfg(3, 0.6))
    assert w.startswith("tau = 0.6 with 3 clusters leaves both polar tiers empty: "
                        "the achievable resonance ratios are 0, 1/3, 2/3 and 1, and none lies strictly "
                        "between 1 - tau = 0.4 and tau = 0.6")


def test_empty_polar_warning_weighted():
    # weights 3 : 1 -> rho in {0, 1/4, 3/4, 1}: nothing in (0.4, 0.6)
    c = cfg(2, 0.6, weighted=True)
    c["clusters"][0]["weight"] = 3
    [w] = config_warnings(c)
    assert "weighted resonance ratios are 0, 1/4, 3/4 and 1" in w
    c["clusters"][0]["weight"] = 1.2          # {0, 1/2.2, 1.2/2.2, 1}: 0.4545 is polar
    assert config_warnings(c) == []


def test_small_cluster_and_ignored_weight_warnings():
    c = {"clusters": [{"name": "adv", "agents": ["a1", "a2", "a3"], "weight": 2},
                      {"name": "solo", "agents": ["s1"]}]}
    w = config_warnings(c)
    assert len(w) == 2
    assert w[0].startswith("clusters[1] 'solo' has 1 agent") and "§10.2" in w[0]
    assert "weights are ignored" in w[1]
    assert config_warnings(SPEC_EXAMPLE) == []


# ---------------------------------------------------------------- validation

def mutate(path_fn):
    p = copy.deepcopy(SPEC_EXAMPLE)
    path_fn(p)
    return p


@pytest.mark.parametrize(("change", "message"), [
    (lambda p: p.update(clusters=[]), "clusters: empty"),
    (lambda p: p["clusters"][1].update(agents=[]), "clusters[1].agents: empty"),
    (lambda p: p["clusters"][1].update(name="advocate"),
     "clusters[1].name: duplicate cluster name 'advocate' (also clusters[0])"),
    (lambda p: p["clusters"][1]["agents"].append("a2"),
     "clusters[1].agents[3]: agent 'a2' is already in cluster 'advocate'"),
    (lambda p: p["clusters"][0]["agents"].append("a2"), "clusters[0].agents[3]: agent 'a2' is listed twice"),
    (lambda p: p["artifacts"][0]["votes"].update(zz=1),
     "artifacts[0].votes.zz: 'zz' is not an agent of any cluster"),
    (lambda p: p["artifacts"][0]["votes"].update(c1=2), "artifacts[0].votes.c1: a vote is 1, 0 or null"),
    (lambda p: p["artifacts"][0]["votes"].update(c1="yes"), "artifacts[0].votes.c1: a vote is 1, 0 or null"),
    (lambda p: p["artifacts"][0]["votes"].update(c1=0.5), "artifacts[0].votes.c1: a vote is 1, 0 or null"),
    (lambda p: p.update(theta=0), "theta: must be greater than 0 and at most 1, got 0"),
    (lambda p: p.update(theta=1.5), "theta: must be greater than 0 and at most 1"),
    (lambda p: p["clusters"][0].update(theta=-0.1), "clusters[0].theta: must be greater than 0 and at most 1"),
    (lambda p: p.update(tau=0.5), "tau: must be greater than 0.5 and at most 1, got 0.5"),
    (lambda p: p.update(tau=1.01), "tau: must be greater than 0.5 and at most 1"),
    (lambda p: p.update(tau=float("nan")), "tau: must be greater than 0.5 and at most 1"),
    (lambda p: p["clusters"][1].update(weight=0), "clusters[1].weight: must be a positive finite number"),
    (lambda p: p["clusters"][1].update(weight=-2.0), "clusters[1].weight: must be a positive finite number"),
    (lambda p: p.update(reference="judge"), "reference: no cluster named 'judge'"),
    (lambda p: p["artifacts"][0].update(votes={"a1": 1}),
     "artifacts[0].votes.a1: the author never votes on their own artifact"),
    (lambda p: p["artifacts"][0].update(author="zz"), "artifacts[0].author: 'zz' is not an agent of any cluster"),
    (lambda p: p["artifacts"].append({"id": "w1", "votes": {}}),
     "artifacts[1].id: duplicate artifact id 'w1' (also artifacts[0])"),
    (lambda p: p.pop("artifacts"), "artifacts: Field required"),
    (lambda p: p.pop("clusters"), "clusters: Field required"),
    (lambda p: p.update(tau="0.6"), "tau: Input should be a valid number"),
    (lambda p: p["clusters"][0]["agents"].append({"name": "x"}),
     "clusters[0].agents[3]: an agent is a string or an object with an 'id'"),
    (lambda p: p["artifacts"][0].pop("id"), "artifacts[0].id: Field required"),
])
def test_validation_errors_name_their_field(change, message):
    with pytest.raises(InputError) as err:
        classify_payload(mutate(change))
    assert str(err.value).startswith(message)


def test_payload_must_be_an_object():
    with pytest.raises(InputError, match="must be a JSON object"):
        classify_payload([1, 2])


def test_config_warnings_validates_too():
    with pytest.raises(InputError, match=r"^tau: "):
        config_warnings({"clusters": [{"name": "a", "agents": ["x"]}], "tau": 0.2})


# ---------------------------------------------------------------- the array core

def test_classify_arrays_direct():
    nan = np.nan
    v = np.array([[nan, 1, 0, 1, nan, 1],       # the SPEC example, author column 0
                  [1, 1, 1, 0, 0, 0],           # author-less, advocates only: positive polar
                  [0, 0, 0, 0, 0, 0]])
    r = classify_arrays(v, [0, 0, 0, 1, 1, 1], author=[0, -1, -1], ids=["w1", "w2", "w3"])
    assert [TIERS[t] for t in r.tier] == ["positive_consensus", "positive_polar", "negative_consensus"]
    assert r.score.tolist() == [0.75, 0.5, 0.0]
    assert r.votes_missing.tolist() == [1, 0, 0]
    assert r.persuasion_kind.tolist() == [1, 0, 0]
    assert r.order.tolist() == [0, 1, 2]


def test_classify_arrays_ignores_the_author_cell_and_rejects_bad_values():
    v = np.array([[1.0, 0.0, 1.0, 1.0]])
    r = classify_arrays(v, [0, 0, 1, 1], author=[0])
    assert r.rates.tolist() == [[0.0, 1.0]] and r.votes_cast.tolist() == [3]
    with pytest.raises(ValueError, match="1, 0 or NaN"):
        classify_arrays(np.array([[0.5, 1.0]]), [0, 1])


def test_core_does_not_load_qt():
    import subprocess
    code = ("import sys, workbench.core.protocols.rcp.classify as r; r.classify_payload({'clusters': "
            "[{'name': 'a', 'agents': ['x']}], 'artifacts': []}); "
            "print([m for m in sys.modules if m.startswith(('PySide6', 'litellm', 'pyqtgraph'))])")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "[]"
