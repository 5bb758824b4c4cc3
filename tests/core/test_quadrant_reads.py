"""The Quadrant's and the Drift panel's reads (workbench.core.project.quadrant / .drift), with no Qt.

The helpers at the top build projects with the real runner and the simulated panel; the UI tests
(tests/ui/test_quadrant.py, tests/ui/test_drift.py) use them too.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from workbench.core.project import _sql, drift, quadrant
from workbench.core.project import runs as run_rows
from workbench.core.project.arm_import import import_arm_file
from workbench.core.project.store import Store
from workbench.core.protocols.arm import metrics_report
from workbench.core.runs.config import parse_run_config
from workbench.services.runs.runner import Runner

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"
GATE_FILE = ("arm-v071FAP-test-010Gamma_Flip_Detected__Drift_Catchable__Polarity_Gate_Override__"
             "Values_Disagreement.json")


def rcp_config(**changes) -> dict:
    data = json.loads((SAMPLES / "rcp-sim.json").read_text())
    data.update(changes)
    return data


def three_clusters(**changes) -> dict:
    data = rcp_config(**changes)
    data["clusters"].append({"name": "moderate", "agents": [
        {"id": "m1", "provider": "sim", "params": {"stance": 0.5}},
        {"id": "m2", "provider": "sim", "params": {"stance": 0.55, "strictness": 0.3}},
        {"id": "m3", "provider": "sim", "params": {"stance": 0.45}}]})
    return data


def weighted_3_to_1(**changes) -> dict:
    data = rcp_config(weighted=True, **changes)
    data["clusters"][0]["weight"] = 3.0  # advocate, the reference cluster
    return data


def run_config(store: Store, data: dict, **create) -> str:
    runner = Runner(store)
    run_id = runner.create(parse_run_config(data), **create)
    summary = runner.execute(run_id)
    # A run built to have unreadable votes ends degraded (SPEC §1); its results stand all the same.
    assert summary["status"] in ("completed", "degraded"), summary
    return run_id


def make_contamination_batch(store: Store, runs: int = 8, batch_id: str = "batch-contamination") -> list[str]:
    """A batch of simulated ARM runs, every other one with alpha and beta contaminated."""
    base = json.loads((SAMPLES / "arm-sim.json").read_text())
    run_rows.create_batch(store, batch_id, "contamination study", {})
    ids = []
    for i in range(runs):
        data = copy.deepcopy(base)
        data["seed"] = 300 + i
        contaminated = i % 2 == 0
        for agent in data["clusters"][0]["agents"]:
            if agent["role"] in ("alpha", "beta"):
                agent.setdefault("params", {})["contaminated"] = contaminated
        mix = "contaminated" if contaminated else "clean"
        ids.append(run_config(store, data, label=f"Q1 · {mix} · rep {i // 2 + 1}", batch_id=batch_id,
                              replicate=i // 2))
    return ids


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "q.rwb")
    yield s
    s.close_connection()


# ----- Quadrant -----------------------------------------------------------------------------------
def test_the_arrays_classify_as_the_run_did(store):
    run_id = run_config(store, rcp_config())
    data = quadrant.load_run(store, run_id)
    assert data.clusters == ("advocate", "critic") and data.n == 2 and data.m == 6
    res = quadrant.classify(data)
    states = {s["artifact"]: s for s in _sql.get(store, "runs", run_id)["summary_json"]["rounds"][0]["states"]}
    for k, key in enumerate(data.keys):
        state = states[key]
        assert ["positive_consensus", "positive_polar", "negative_polar", "negative_consensus"][res.tier[k]] == state["tier"]
        for i, name in enumerate(data.clusters):
            rate = state["cluster_rates"][name]
            assert (math.isnan(res.rates[k, i]) and rate is None) or res.rates[k, i] == pytest.approx(rate, abs=1e-15)
        assert int(res.votes_cast[k]) == state["votes_cast"]


def test_variant_states_are_the_engines_json_and_saving_leaves_the_run_alone(store):
    run_id = run_config(store, weighted_3_to_1())
    data = quadrant.load_run(store, run_id)
    assert data.settings.weights == (3.0, 1.0)
    before = (_sql.get(store, "runs", run_id), _sql.rows(store, "votes", "run_id = ?", (run_id,)))
    what_if = quadrant.Settings((0.5, 0.5), 0.8, (3.0, 1.0), 0)
    states = quadrant.variant_states(data, what_if, 1)
    res = quadrant.classify(data, what_if)
    tiers = dict(zip(data.keys, res.tier.tolist()))
    names = ["positive_consensus", "positive_polar", "negative_polar", "negative_consensus"]
    assert {s["artifact"]: s["tier"] for s in states} == {k: names[t] for k, t in tiers.items()}
    changes = quadrant.save_variant(store, run_id, "tau 0.8", what_if.to_json(data.clusters), {1: states})
    assert changes.touches("classification_variants")
    saved = quadrant.variants(store, run_id)
    assert [(v.label, v.round, v.artifacts) for v in saved] == [("tau 0.8", 1, 6)]
    assert saved[0].settings == {"reference": "advocate", "tau": 0.8, "theta": {"advocate": 0.5, "critic": 0.5},
                                 "weighted": True, "weights": {"advocate": 3.0, "critic": 1.0}}
    assert (_sql.get(store, "runs", run_id), _sql.rows(store, "votes", "run_id = ?", (run_id,))) == before


def test_regions_follow_the_weights():
    plain = quadrant.Settings((0.5, 0.5), 0.6, None, 0)
    assert quadrant.region_tier(plain, (True, False)) == "positive_polar"
    assert quadrant.region_tier(plain, (False, True)) == "negative_polar"
    weighted = quadrant.Settings((0.5, 0.5), 0.6, (3.0, 1.0), 0)
    assert quadrant.region_tier(weighted, (True, False)) == "positive_consensus"  # 3:1, bottom right
    assert quadrant.region_tier(weighted, (False, True)) == "negative_consensus"
    assert quadrant.region_tier(quadrant.Settings((0.5, 0.5), 0.8, (3.0, 1.0), 0), (True, False)) == "positive_polar"


def test_refinement_rounds_and_their_movers(store):
    run_id = run_config(store, rcp_config(refinement_rounds=1))
    data = quadrant.load_run(store, run_id)
    assert data.round_numbers == [1, 2]
    pairs = quadrant.movers(data)
    assert len(pairs) == 6
    for src, dst in pairs:
        assert data.authors[src] == data.authors[dst]
        assert (int(data.rounds[src]), int(data.rounds[dst])) == (1, 2)


def test_an_artifact_nobody_voted_on_is_unclassified_with_why(store):
    data = rcp_config()
    for cluster in data["clusters"]:
        for agent in cluster["agents"]:
            agent.setdefault("params", {})["malformed_rate"] = 1.0
    runner = Runner(store)
    run_id = runner.create(parse_run_config(data))
    runner.execute(run_id)
    vd = quadrant.load_run(store, run_id)
    res = quadrant.classify(vd)
    assert (res.votes_cast == 0).all()
    assert vd.why_unclassified(0) == "no vote cast: 5 unreadable replies"
    states = quadrant.variant_states(vd, vd.settings)
    assert {s["tier"] for s in states} == {"unclassified"}
    assert all(s["risk_if_acted_upon"] == "unknown" and s["score"] is None for s in states)
    # The run itself ended degraded, and the quadrant says so above its results.
    assert vd.status == "degraded" and vd.warnings[0].startswith("degraded run: 100% of the expected votes are missing")


def test_load_run_refuses_other_protocols_and_lists_rcp_runs(store):
    run_id = run_config(store, rcp_config())
    arm = run_config(store, json.loads((SAMPLES / "arm-sim.json").read_text()))
    assert quadrant.load_run(store, arm) is None and quadrant.load_run(store, "nope") is None
    assert [(r.id, r.artifacts) for r in quadrant.rcp_runs(store)] == [(run_id, 6)]


# ----- Drift --------------------------------------------------------------------------------------
def test_drift_of_imported_corpus_traces_is_their_stored_values(store, corpus_dir):
    for path in sorted((corpus_dir / "traces").glob("*.json")):
        source = json.loads(path.read_text())
        run_id = import_arm_file(store, path).run_id
        d = drift.run_drift(store, run_id)
        report = metrics_report(source)
        for role in ("alpha", "beta", "gamma"):
            r1 = (source.get("r1") or {}).get(role) or {}
            assert d.agents[role].cr1 == report["agents"][role]["cr1"] == r1.get("confidence"), path.name
            assert d.agents[role].cr2 == report["agents"][role]["cr2"], path.name
            assert d.agents[role].delta == report["agents"][role]["delta"], path.name
        assert d.silent == report["agents"]["gamma"]["baseline"]
        if isinstance(source.get("convergence"), (int, float)):
            assert d.convergence["jaccard"] == drift.Convergence("jaccard", source["convergence"], "stored")
        assert d.polarity_gate == report["polarity_gate"]["stored_fired"], path.name
        assert d.contaminated is None  # an imported file has no ground truth


def test_the_gate_file_flags_the_polarity_gate(store, corpus_dir):
    d = drift.run_drift(store, import_arm_file(store, corpus_dir / "traces" / GATE_FILE).run_id)
    assert d.polarity_gate and d.gate_transition == "flip"
    assert d.agents["gamma"].fap  # its self-reported delta vs baseline is over 0.04


def test_a_contamination_batch_reads_its_ground_truth_and_groups(store):
    ids = make_contamination_batch(store, runs=4)
    batch = drift.batch_drift(store, "batch-contamination")
    assert [r.run_id for r in batch.runs] == ids
    assert [r.contaminated for r in batch.runs] == [True, False, True, False]
    assert batch.runs[0].contaminated_roles == ("alpha", "beta")
    assert [r.mix for r in batch.runs] == ["contaminated", "clean", "contaminated", "clean"]
    groups, cells = drift.grouped_values(batch, "delta", "role")
    assert set(groups) == {"alpha", "beta", "gamma"} and all(len(v) == 4 for v in groups.values())
    groups, cells = drift.grouped_values(batch, "jaccard", "contamination")
    assert set(groups) == {"contaminated", "clean"}
    assert set(cells) == {(batch.runs[0].question, "contaminated"), (batch.runs[0].question, "clean")}
    for run in batch.runs:  # a finished workbench run stores its convergence
        assert run.convergence["jaccard"].source == "stored"
    everything = drift.batch_drift(store, drift.ALL_RUNS)
    assert len(everything.runs) == 4


def test_drift_of_a_run_still_going_is_recomputed_from_its_claims(store):
    run_id = run_config(store, json.loads((SAMPLES / "arm-sim.json").read_text()))
    finished = drift.run_drift(store, run_id)
    # As it stood before the run finished: no stored upstream yet.
    provenance = _sql.get(store, "runs", run_id)["provenance_json"]
    _sql.update(store, "runs", run_id, {"provenance_json": {}})
    live = drift.run_drift(store, run_id)
    _sql.update(store, "runs", run_id, {"provenance_json": provenance})
    assert live.convergence["jaccard"].source == "recomputed"
    assert live.convergence["jaccard"].value == pytest.approx(finished.convergence["jaccard"].value, abs=1e-12)
    assert live.convergence["tfidf"].value == pytest.approx(finished.convergence["tfidf"].value, abs=1e-12)
