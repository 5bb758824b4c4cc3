"""The study file (SPEC §9): JSON Merge Patch (RFC 7396's own examples), JSON Patch, the arms
resolved and checked as run configurations, refusals naming the arm, dropped keys on a protocol
switch, the paths each arm changes, and which arms are rule-only."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from workbench.core.errors import InputError
from workbench.core.limits import MAX_STUDY_ARMS
from workbench.core.studies.merge_patch import merge_patch
from workbench.core.studies.paths import changed_paths, without
from workbench.core.studies.spec import parse_study, read_study_file

# RFC 7396, Appendix A: target, patch, result.
RFC_7396 = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "result"), RFC_7396)
def test_merge_patch_gives_rfc_7396s_results_and_leaves_the_target_alone(target, patch, result):
    before = copy.deepcopy(target)
    assert merge_patch(target, patch) == result
    assert target == before


def test_changed_paths_are_json_pointers():
    a = {"theta": 0.5, "clusters": [{"name": "x", "agents": [1, 2]}], "a/b": 1, "t": True}
    b = {"theta": 0.67, "clusters": [{"name": "x", "agents": [1, 2, 3]}], "a/b": 2, "t": 1, "tau": 0.7}
    assert changed_paths(a, b) == ["/theta", "/clusters/0/agents/2", "/a~1b", "/t", "/tau"]
    assert changed_paths(a, a) == [] and changed_paths({"x": 1}, {"x": 1.0}) == []
    assert without(b, ("/theta", "/clusters/*/name")) == {"clusters": [{"agents": [1, 2, 3]}], "a/b": 2, "t": 1,
                                                          "tau": 0.7}


def base() -> dict:
    agents = lambda side, n: [{"id": f"{side[0]}{i}", "provider": "sim", "params": {"stance": 0.7 if side == "advocate"
                                                                                     else 0.3}} for i in range(1, n + 1)]
    return {"protocol": "rcp", "query": "Close the centre to cars?", "seed": 7, "providers": {"sim": {"model": "sim"}},
            "theta": 0.5, "tau": 0.6, "clusters": [{"name": "advocate", "agents": agents("advocate", 3)},
                                                   {"name": "critic", "agents": agents("critic", 3)}]}


def study(*arms: dict, **extra) -> dict:
    return {"study": "t", "base": base(), "replicates": 2, "arms": list(arms), **extra}


def refusal(data: dict) -> str:
    with pytest.raises(InputError) as info:
        parse_study(data)
    return str(info.value)


def test_each_arm_is_resolved_with_its_changes_and_rule_only_arms_found():
    s = parse_study(study({"name": "as configured"}, {"name": "theta 0.67", "set": {"theta": 0.67}},
                          {"name": "strict", "patch": [{"op": "add", "path": "/clusters/1/agents/0/params/strictness",
                                                        "value": 0.9}]},
                          {"name": "tau and a cluster theta", "set": {"tau": 0.8},
                           "patch": [{"op": "add", "path": "/clusters/0/theta", "value": 0.6}]}))
    arms = {a.name: a for a in s.arms}
    assert s.baseline == "as configured" and s.runs == 8
    assert arms["theta 0.67"].changes == ("/theta",) and arms["theta 0.67"].source == "as configured"
    assert arms["strict"].changes == ("/clusters/1/agents/0/params/strictness",) and arms["strict"].source is None
    assert arms["tau and a cluster theta"].source == "as configured"
    assert set(arms["tau and a cluster theta"].changes) == {"/tau", "/clusters/0/theta"}
    # Pairing: replicate r of every arm runs with seed base seed + r.
    assert [s.config(arms["strict"], s.items[0], r).seed for r in (0, 1)] == [7, 8]
    assert s.config(arms["theta 0.67"], s.items[0], 1).theta == 0.67


def test_a_bad_patch_is_refused_naming_the_arm():
    why = refusal(study({"name": "ok"}, {"name": "broken", "patch": [{"op": "replace", "path": "/nope/0", "value": 1}]}))
    assert why.startswith("arms[1] (broken): patch: cannot be applied")
    why = refusal(study({"name": "ok"}, {"name": "not a patch", "patch": [{"path": "/theta"}]}))
    assert why.startswith("arms[1] (not a patch): patch: ")


def test_a_patch_that_yields_an_invalid_config_is_refused_naming_the_arm_and_the_field():
    why = refusal(study({"name": "ok"}, {"name": "theta 2", "set": {"theta": 2}}))
    assert why.startswith("arms[1] (theta 2): theta: ")
    why = refusal(study({"name": "typo", "set": {"temprature": 0.2}}))
    assert why.startswith("arms[0] (typo): temprature: ")


def test_an_unknown_baseline_is_refused_naming_it():
    assert refusal(study({"name": "a"}, {"name": "b"}, baseline="c")) == "baseline: no arm named 'c' (arms: a, b)"


def test_other_refusals():
    assert refusal(study({"name": "a"}, {"name": "a"})).startswith("arms[1].name: duplicate arm name 'a'")
    assert "cannot change the seed" in refusal(study({"name": "a", "set": {"seed": 9}}))
    assert refusal({"study": "t", "arms": [{"name": "a"}]}).startswith("base: ")
    assert refusal(study()).startswith("arms: ")
    too_many = study(*({"name": f"arm {i}"} for i in range(MAX_STUDY_ARMS + 1)))
    assert refusal(too_many).startswith("arms: ")
    assert "batch" in refusal({**study({"name": "a"}), "base": {**base(), "batch": {"replicates": 2}}})


def test_an_arm_that_switches_protocol_drops_the_keys_the_new_one_does_not_take():
    s = parse_study(study({"name": "rcp"}, {"name": "vote", "set": {"protocol": "vote"}}))
    vote = s.arm("vote")
    assert vote.dropped == ("theta", "tau") and "/theta" in vote.changes and "/protocol" in vote.changes
    assert s.config(vote, s.items[0], 0).protocol == "vote"
    # A key the arm writes itself is never dropped: a config written by hand stays strict.
    why = refusal(study({"name": "rcp"}, {"name": "vote", "set": {"protocol": "vote", "tau": 0.7}}))
    assert why.startswith("arms[1] (vote): tau: ")


def test_a_study_file_reads_its_base_and_dataset_relative_to_itself(tmp_path):
    (tmp_path / "base.json").write_text(json.dumps(base()))
    (tmp_path / "items.jsonl").write_text('{"id": "q1", "question": "2+2?", "answer": "4", "answer_type": "number"}\n'
                                          '{"id": "q2", "question": "3+3?", "answer": "6", "answer_type": "number"}\n')
    (tmp_path / "study.json").write_text(json.dumps({"base": "base.json", "dataset": "items.jsonl",
                                                     "arms": [{"name": "a"}, {"name": "single",
                                                                              "set": {"protocol": "single"}}]}))
    s = parse_study(read_study_file(tmp_path / "study.json"))
    assert s.name == "study" and [i.id for i in s.items] == ["q1", "q2"] and s.runs == 4
    cfg = s.config(s.arm("single"), s.items[1], 0)
    assert cfg.query == "3+3?" and cfg.item.answer == "6"
    assert s.arm("a").changes == ()  # the items replace the base's query: not a change of the arm


SHIPPED = sorted((Path(__file__).resolve().parents[2] / "sample_runs").glob("study-*.json"))
STUDIES = [p for p in SHIPPED if not p.name.endswith("-base.json")]


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.name)
def test_every_shipped_study_parses_with_each_arm_a_valid_run_config(path):
    study = parse_study(read_study_file(path))
    assert len(study.arms) >= 2 and study.baseline in {arm.name for arm in study.arms}
