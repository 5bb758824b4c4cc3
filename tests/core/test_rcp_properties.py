"""Property tests of the RCP engine, and the vectorised path against a tiny scalar reference."""

from __future__ import annotations

import copy
import math
import statistics

from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.core.protocols.rcp.classify import TIERS, classify_payload

SETTINGS = settings(deadline=None, derandomize=True, max_examples=150)
# Tier "height" for monotonicity: adding an approval never moves an artifact down this scale.
LEVEL = {"unclassified": -1, "negative_consensus": 0, "negative_polar": 1, "positive_polar": 2, "positive_consensus": 3}

THETAS = [None, 0.25, 0.5, 2 / 3, 0.9, 1.0]
TAUS = [0.51, 0.6, 2 / 3, 0.75, 0.9, 1.0]
WEIGHTS = [None, 0.5, 1.0, 2.0, 3.0]
VOTE = st.sampled_from([1, 0, None, "absent"])


@st.composite
def payloads(draw, n_clusters=st.integers(1, 4), tau=st.sampled_from(TAUS)):
    n = draw(n_clusters)
    sizes = [draw(st.integers(1, 4)) for _ in range(n)]
    clusters = [{"name": f"k{i}", "agents": [f"k{i}a{j}" for j in range(size)],
                 "theta": draw(st.sampled_from(THETAS)), "weight": draw(st.sampled_from(WEIGHTS))}
                for i, size in enumerate(sizes)]
    agents = [a for c in clusters for a in c["agents"]]
    artifacts = []
    for k in range(draw(st.integers(1, 8))):
        author = draw(st.one_of(st.none(), st.sampled_from(agents)))
        votes = {}
        for a in agents:
            v = draw(VOTE)
            if a != author and v != "absent":
                votes[a] = v
        artifacts.append({"id": draw(st.sampled_from("abcdefgh")) + str(k), "author": author, "votes": votes})
    return {"clusters": clusters, "reference": f"k{draw(st.integers(0, n - 1))}",
            "theta": draw(st.sampled_from([0.25, 0.5, 0.75])), "tau": draw(tau),
            "weighted": draw(st.booleans()), "artifacts": artifacts}


# ---------------------------------------------------------------- scalar reference (independent)

def reference_states(p: dict) -> list[dict]:
    """SPEC §1 written out plainly, one artifact at a time, with no numpy."""
    eps = 1e-9
    clusters = p["clusters"]
    names = [c["name"] for c in clusters]
    ref = p.get("reference") or names[0]
    theta = {c["name"]: (p.get("theta", 0.5) if c.get("theta") is None else c["theta"]) for c in clusters}
    weight = {c["name"]: (1.0 if c.get("weight") is None else c["weight"]) for c in clusters}
    home = {a: c["name"] for c in clusters for a in c["agents"]}
    tau, n = p.get("tau", 0.6), len(clusters)
    out = []
    for art in p["artifacts"]:
        author = art.get("author")
        cast = {a: v for a, v in art["votes"].items() if v is not None and a != author}
        rates = {}
        for c in clusters:
            vs = [cast[a] for a in c["agents"] if a in cast]
            rates[c["name"]] = sum(vs) / len(vs) if vs else None
        s = [c for c in names if rates[c] is not None and rates[c] >= theta[c] - eps]
        if p.get("weighted"):
            rho = sum(weight[c] for c in s) / sum(weight.values())
        else:
            rho = len(s) / n
        if rho >= tau - eps:
            tier = "positive_consensus"
        elif rho <= 1 - tau + eps:
            tier = "negative_consensus"
        else:
            tier = "positive_polar" if ref in s else "negative_polar"
        score = sum(cast.values()) / len(cast) if cast else None
        defined = [r for r in rates.values() if r is not None]
        sigma = statistics.pstdev(defined) if defined else None
        a_cl = home.get(author)
        reach = len(set(s) - {a_cl}) if tier == "positive_consensus" and a_cl else 0
        kind = None
        if reach >= 1 and n == 2:
            kind = "accelerator" if a_cl == ref else "mitigator"
        if not cast:  # SPEC §1: no votes, no tier
            s, rho, tier, sigma = [], None, "unclassified", None
        out.append({
            "artifact": art["id"], "author": author, "author_cluster": a_cl, "cluster_rates": rates,
            "approval_set": s, "resonance_ratio": rho, "tier": tier, "score": score,
            "score_balanced": None if score is None else score * (1 - sigma),
            "votes_cast": len(cast), "votes_missing": len(home) - (author is not None) - len(cast),
            "is_persuasive": reach >= 1, "persuasion_reach": reach, "persuasion_kind": kind,
            "full_consensus": len(s) == n, "reference_dissent": tier == "positive_consensus" and ref not in s,
            "bias_direction": None if tier == "unclassified" else
            {"positive_polar": ref, "negative_polar": "non-reference"}.get(tier, "neutral"),
        })
    out.sort(key=lambda x: ((*TIERS, "unclassified").index(x["tier"]), -x["score"] if x["score"] is not None else math.inf,
                            x["artifact"]))
    return out


def close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=0, abs_tol=1e-12)


@SETTINGS
@given(payloads())
def test_vectorised_equals_scalar_reference(p):
    got, want = classify_payload(p), reference_states(p)
    assert [g["artifact"] for g in got] == [w["artifact"] for w in want]
    for g, w in zip(got, want, strict=True):
        for key, value in w.items():
            if key in ("resonance_ratio", "score", "score_balanced"):
                assert close(g[key], value), (key, g[key], value)
            elif key == "cluster_rates":
                assert g[key].keys() == value.keys()
                assert all(close(g[key][c], value[c]) for c in value), (g[key], value)
            else:
                assert g[key] == value, (key, g[key], value)


@SETTINGS
@given(payloads())
def test_rho_in_unit_interval_and_consistent_fields(p):
    for s in classify_payload(p):
        assert (s["resonance_ratio"] is None) is (s["tier"] == "unclassified") is (s["votes_cast"] == 0)
        if s["resonance_ratio"] is None:
            continue
        assert 0.0 <= s["resonance_ratio"] <= 1.0
        assert s["score"] is None or 0.0 <= s["score"] <= 1.0
        assert s["score_balanced"] is None or s["score_balanced"] <= s["score"] + 1e-15
        assert s["is_persuasive"] is (s["persuasion_reach"] >= 1)
        assert not s["is_persuasive"] or s["tier"] == "positive_consensus"


@SETTINGS
@given(payloads(), st.data())
def test_one_more_approval_never_moves_down(p, data):
    """Turning a 0 or missing vote into 1 can only grow S, so rho, score and tier never drop."""
    k = data.draw(st.integers(0, len(p["artifacts"]) - 1))
    art = p["artifacts"][k]
    voters = [a for c in p["clusters"] for a in c["agents"]
              if a != art["author"] and art["votes"].get(a) != 1]
    if not voters:
        return
    voter = data.draw(st.sampled_from(voters))
    q = copy.deepcopy(p)
    q["artifacts"][k]["votes"][voter] = 1
    before = {s["artifact"]: s for s in classify_payload(p)}[art["id"]]
    after = {s["artifact"]: s for s in classify_payload(q)}[art["id"]]
    assert set(before["approval_set"]) <= set(after["approval_set"])
    assert before["resonance_ratio"] is None or after["resonance_ratio"] >= before["resonance_ratio"]
    assert before["score"] is None or after["score"] >= before["score"]
    assert LEVEL[after["tier"]] >= LEVEL[before["tier"]]


@SETTINGS
@given(payloads(), st.randoms(use_true_random=False))
def test_cluster_order_does_not_matter(p, rnd):
    """Shuffle the cluster list (the reference is named, so it stays the reference)."""
    q = copy.deepcopy(p)
    rnd.shuffle(q["clusters"])
    a, b = classify_payload(p), classify_payload(q)
    assert [s["artifact"] for s in a] == [s["artifact"] for s in b]
    for x, y in zip(a, b, strict=True):
        assert set(x["approval_set"]) == set(y["approval_set"])
        assert x["cluster_rates"] == y["cluster_rates"]
        assert close(x["score_balanced"], y["score_balanced"])
        for key in ("tier", "resonance_ratio", "score", "author_cluster", "persuasion_reach",
                    "persuasion_kind", "reference_dissent", "bias_direction", "full_consensus"):
            assert x[key] == y[key], key


QUADRANT = {(True, True): "positive_consensus", (True, False): "positive_polar",
            (False, True): "negative_polar", (False, False): "negative_consensus"}


@SETTINGS
@given(payloads(n_clusters=st.just(2), tau=st.just(0.6)))
def test_n2_tau06_tier_is_the_quadrant(p):
    p["weighted"] = False
    ref = p["reference"]
    other = next(c["name"] for c in p["clusters"] if c["name"] != ref)
    for s in classify_payload(p):
        if s["votes_cast"] == 0:
            assert s["tier"] == "unclassified"
            continue
        assert s["tier"] == QUADRANT[(ref in s["approval_set"], other in s["approval_set"])]
        assert s["resonance_ratio"] == len(s["approval_set"]) / 2
