"""Studies run in one process (SPEC §9): a rule-only arm makes no call and gives the tiers a full
re-run with its settings gives; one whose settings change a later prompt runs instead, and says
so; other protocols' rule-only arms (findings); metrics across protocols; the contaminated-against-
clean separations."""

from __future__ import annotations

import copy
import json

import pytest

from tests.cli.test_study_cli import base
from workbench.core.project import studies as rows
from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config
from workbench.core.studies.spec import parse_study
from workbench.services.runs.runner import Runner
from workbench.services.runs.studies import StudyRunner, report_of


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "s.rwb")
    yield s
    s.close_connection()


def run_study(store, data: dict) -> tuple[str, dict]:
    runner = StudyRunner(store, Runner(store))
    study_id = runner.create(parse_study(data))
    return study_id, runner.run(study_id)


def final_tiers(summary: dict) -> dict[str, str]:
    return {s["artifact"]: s["tier"] for s in summary["rounds"][-1]["states"]}


def test_a_rule_only_arm_makes_no_call_and_gives_a_full_re_runs_tiers(store):
    study_id, summary = run_study(store, {"base": base(), "replicates": 3,
                                          "arms": [{"name": "as configured"}, {"name": "theta 0.67", "set": {"theta": 0.67}},
                                                   {"name": "tau 0.9 weighted", "set": {"tau": 0.9, "weighted": True},
                                                    "patch": [{"op": "add", "path": "/clusters/0/weight", "value": 3.0}]}]})
    arms = {a["name"]: a for a in summary["arms"]}
    calls_before = store._connection().execute("SELECT count(*) FROM llm_calls").fetchone()[0]
    assert arms["theta 0.67"]["calls"] == arms["tau 0.9 weighted"]["calls"] == 0
    assert arms["theta 0.67"]["calls_reused"] == 108 and calls_before == 108
    variants = {(r.arm, r.replicate): r for r in rows.results(store, study_id) if r.variant_id is not None}
    assert len(variants) == 6
    changed = 0
    for (arm, r), result in variants.items():
        # the same configuration run for real, on the same seed: the same tiers
        settings = {"theta 0.67": {"theta": 0.67},
                    "tau 0.9 weighted": {"tau": 0.9, "weighted": True}}[arm]
        data = copy.deepcopy(base(seed=11 + r, **settings))
        if arm == "tau 0.9 weighted":
            data["clusters"][0]["weight"] = 3.0
        runner = Runner(store)
        full = runner.execute(runner.create(parse_run_config(data)))
        from workbench.core.project.variants import variant_summary

        reclassified = variant_summary(store, result.variant_id)
        assert final_tiers(reclassified) == final_tiers(full)
        source = store._connection().execute("SELECT summary_json FROM runs WHERE id = ?", (result.run_id,)).fetchone()[0]
        changed += final_tiers(reclassified) != final_tiers(json.loads(source))
    assert changed >= 3  # the settings did move tiers: the comparison was not trivial


def test_an_arm_whose_settings_change_a_later_prompt_runs_and_says_so(store):
    # With a refinement round, round 2's prompts hold the positions round 1 endorsed: theta 0.67
    # endorses others, so its round 2 needs calls of its own.
    study_id, summary = run_study(store, {"base": base(refinement_rounds=1), "replicates": 2,
                                          "arms": [{"name": "as configured"}, {"name": "theta 0.67", "set": {"theta": 0.67}}]})
    arm = next(a for a in summary["arms"] if a["name"] == "theta 0.67")
    assert arm["rule_only_of"] == "as configured" and arm["runs"] == 2 and arm["status"] == "completed"
    assert arm["calls"] > 0 and arm["ran_for"]["results"] >= 1 and "prompt differs" in arm["ran_for"]["why"]
    assert any("needed calls of their own" in w for w in summary["warnings"])
    assert len(rows.results(store, study_id)) == 4


def findings_base(**extra) -> dict:
    return {"protocol": "findings", "seed": 3, "providers": {"sim": {"model": "sim"}},
            "clusters": [{"name": "team", "agents": [{"id": "scout", "provider": "sim", "role": "scout"},
                                                     {"id": "auditor", "provider": "sim", "role": "auditor"},
                                                     {"id": "dev", "provider": "sim", "role": "dev"}]}],
            "findings": [{"id": f"f{i}", "claim": f"Claim {i} about the billing code."} for i in range(1, 5)], **extra}


def test_a_findings_threshold_arm_is_rule_only(store):
    study_id, summary = run_study(store, {"base": findings_base(), "replicates": 2,
                                          "arms": [{"name": "0.6"}, {"name": "-0.5", "set": {"threshold": -0.5}}]})
    arms = {a["name"]: a for a in summary["arms"]}
    assert arms["-0.5"]["calls"] == 0 and arms["-0.5"]["calls_reused"] == arms["0.6"]["calls"] > 0
    report = report_of(store, study_id)
    shares = {a["name"]: a["metrics"]["confirmed_share"]["mean"] for a in report["arms"]}
    assert shares["-0.5"] >= shares["0.6"]


def test_arms_tagged_contaminated_and_clean_get_each_drifts_auc(store):
    agents = [{"id": role, "provider": "sim", "role": role, "params": {"confidence": 0.72}}
              for role in ("alpha", "beta", "gamma", "silent")]
    arm_base = {"protocol": "arm", "query": "Should the AI act?", "seed": 5, "dispatch": "sequential",
                "providers": {"sim": {"model": "sim"}}, "clusters": [{"name": "arm", "agents": agents}]}
    contaminate = [{"op": "add", "path": f"/clusters/0/agents/{i}/params/contaminated", "value": True} for i in (0, 1)]
    study_id, _ = run_study(store, {"base": arm_base, "replicates": 4, "baseline": "clean",
                                    "arms": [{"name": "clean", "tags": {"contaminated": False}},
                                             {"name": "contaminated", "tags": {"contaminated": True},
                                              "patch": contaminate}]})
    report = report_of(store, study_id)
    assert [s["metric"] for s in report["separations"]] == ["drift_alpha", "drift_beta", "drift_gamma"]
    for s in report["separations"]:
        assert s["positive_arms"] == ["contaminated"] and s["negative_arms"] == ["clean"]
        assert 0.0 <= s["auc"] <= 1.0
    assert {"drift_alpha", "convergence_r1", "gate_fired_share"} <= set(report["arms"][0]["metrics"])


def test_a_study_budget_caps_the_whole_study_then_resume_with_a_higher_cap_finishes_it(tmp_path):
    from tests.runs.test_budgets import USAGE
    from tests.runs.test_run_outcomes import last_json, rows, rwb, sample, write
    from tests.support.fake_llm_server import FakeLLMServer, Reply

    with FakeLLMServer(default=Reply(text='{"vote": "YES", "reason": "fine"}', usage=USAGE)) as server:
        data = {**sample("rcp-sim.json"), "dispatch": "sequential",
                "providers": {"sim": {"model": "openai/fake-model", "api_base": server.base_url,
                                      "api_key_env": "LOOP_KEY", "max_retries": 0}}}
        study = write(tmp_path, "study.json", {"base": data, "replicates": 2, "budget": {"max_tokens": 5000},
                                               "arms": [{"name": "a"}, {"name": "theta", "set": {"theta": 0.67}}]})
        project = tmp_path / "p.rwb"
        out = rwb("study", "run", study, "--project", str(project))
        assert out.returncode == 3, out.stderr
        summary = last_json(out)
        # 100 tokens a call, one at a time: the first run's 36 calls, then 14 of the second's
        assert summary["status"] == "stopped_at_cap" and len(server.chat_requests) == 50
        assert [a["runs"] for a in summary["arms"]] == [1, 1]  # the rule-only arm followed its source
        assert "study budget.max_tokens 5,000 reached" in out.stderr and "rwb study resume" in out.stderr
        done = rwb("study", "resume", summary["study_id"], "--project", str(project), "--max-tokens", "100000")
        assert done.returncode == 0, done.stderr
        assert last_json(done)["status"] == "completed" and len(server.chat_requests) == 72
        assert rows(project, "SELECT step_key, run_id, count(*) FROM llm_calls GROUP BY 1, 2 HAVING count(*) > 1") == []
