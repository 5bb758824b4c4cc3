"""Bad inputs to the protocols, through the command line: each is refused with exit 2, one line on
stderr that names the field (never a traceback), and nothing written.

The cases run ``workbench.cli.main(argv)`` in-process (stderr captured by capsys); a few run the
real ``python -m workbench`` in a subprocess. Families: run configurations (every field: wrong
type, out of range, too long, unknown key), classify inputs (rcp, findings, cons), ARM files
(wrong types field by field, truncated JSON, huge claim, wrong schema version), Echo inputs,
and huge inputs. The limits themselves are in docs/limits.md.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.core import limits as L

REPO = Path(__file__).resolve().parents[2]
BIG = "x" * (L.MAX_QUERY_CHARS + 1)
NAME = "n" * (L.MAX_NAME_CHARS + 1)


def refused(argv: list[str], capsys, field: str, words: str = "") -> str:
    """Run the CLI; assert exit 2, nothing on stdout, one stderr line naming ``field``."""
    code = main(argv)
    out, err = capsys.readouterr()
    line = err.strip()
    assert code == 2, (code, err)
    assert out == "", out[:200]
    assert "Traceback" not in err and len(line.splitlines()) == 1, err
    assert f"{field}: " in line, line
    assert words in line, line
    return line


def sim_agents(prefix: str, n: int = 2, **extra) -> list[dict]:
    return [{"id": f"{prefix}{i}", "provider": "sim", **extra} for i in range(1, n + 1)]


RCP = {"protocol": "rcp", "query": "Should the city close its centre to cars?", "seed": 7,
       "providers": {"sim": {"model": "sim"}},
       "clusters": [{"name": "advocate", "agents": sim_agents("a")}, {"name": "critic", "agents": sim_agents("c")}]}
FINDINGS = {**RCP, "protocol": "findings", "findings": [{"id": "f1", "claim": "The cache is safe."}]}
CONS = {**RCP, "protocol": "cons", "options": ["A", "B"]}
ARM = {**RCP, "protocol": "arm", "clusters": [{"name": "panel", "agents": [
    {"id": "alpha", "provider": "sim", "role": "alpha"}, {"id": "beta", "provider": "sim", "role": "beta"},
    {"id": "gamma", "provider": "sim", "role": "gamma"}]}]}


def changed(base: dict, change: Callable[[dict], object]) -> dict:
    data = copy.deepcopy(base)
    change(data)
    return data


def agent(data: dict) -> dict:
    return data["clusters"][0]["agents"][0]


def provider(data: dict) -> dict:
    return data["providers"]["sim"]


# ── run configurations (rwb run CONFIG --project P) ──────────────────────────────────────────
RUN_CASES = [
    # (id, base, change, field, words)
    ("protocol-unknown", RCP, lambda d: d.update(protocol="delphi"), "protocol", "must be one of"),
    ("protocol-wrong-type", RCP, lambda d: d.update(protocol=5), "protocol", "must be one of"),
    ("query-wrong-type", RCP, lambda d: d.update(query=42), "query", "must be text"),
    ("query-too-long", RCP, lambda d: d.update(query=BIG), "query", "is too long (20,001 characters; at most 20,000)"),
    ("query-missing", RCP, lambda d: d.pop("query"), "query", "required"),
    ("seed-text", RCP, lambda d: d.update(seed="7"), "seed", "must be a whole number"),
    ("seed-float", RCP, lambda d: d.update(seed=7.5), "seed", "must be a whole number"),
    ("seed-bool", RCP, lambda d: d.update(seed=True), "seed", "must be a whole number"),
    ("seed-negative", RCP, lambda d: d.update(seed=-1), "seed", "from 0 to 9,223,372,036,854,775,807"),
    ("seed-2**63", RCP, lambda d: d.update(seed=2**63), "seed", "from 0 to 9,223,372,036,854,775,807"),
    ("seed-2**80", RCP, lambda d: d.update(seed=2**80), "seed", "got 1208925819614629174706176"),
    ("dispatch-unknown", RCP, lambda d: d.update(dispatch="parallel"), "dispatch", "must be one of"),
    ("unknown-top-key", RCP, lambda d: d.update(temprature=0.7), "temprature", "unknown key"),
    ("label-too-long", RCP, lambda d: d.update(label=NAME), "label", "is too long"),
    ("notes-too-long", RCP, lambda d: d.update(notes="n" * (L.MAX_NOTES_CHARS + 1)), "notes", "is too long"),
    ("notes-wrong-type", RCP, lambda d: d.update(notes=["a"]), "notes", "must be text"),
    ("reference-unknown", RCP, lambda d: d.update(reference="judge"), "reference", "no cluster named"),
    ("providers-not-object", RCP, lambda d: d.update(providers=["sim"]), "providers", "must be an object"),
    ("providers-too-many", RCP, lambda d: d["providers"].update(
        {f"p{i}": {"model": "sim"} for i in range(L.MAX_PROVIDERS)}), "providers", "has too many items"),
    ("provider-model-missing", RCP, lambda d: provider(d).pop("model"), "providers.sim.model", "required"),
    ("provider-model-wrong-type", RCP, lambda d: provider(d).update(model=3), "providers.sim.model", "must be text"),
    ("provider-model-too-long", RCP, lambda d: provider(d).update(model=NAME), "providers.sim.model", "is too long"),
    ("provider-key-is-a-key", RCP, lambda d: provider(d).update(api_key_env="sk-abc123 xyz"),
     "providers.sim.api_key_env", "environment variable"),
    ("provider-api-base-too-long", RCP, lambda d: provider(d).update(api_base="http://h/" + "p" * L.MAX_URL_CHARS),
     "providers.sim.api_base", "is too long"),
    ("provider-concurrency-zero", RCP, lambda d: provider(d).update(max_concurrency=0),
     "providers.sim.max_concurrency", "at least 1"),
    ("provider-concurrency-huge", RCP, lambda d: provider(d).update(max_concurrency=10**6),
     "providers.sim.max_concurrency", "at most 256"),
    ("provider-rpm-zero", RCP, lambda d: provider(d).update(rpm=0), "providers.sim.rpm", "at least 1"),
    ("provider-timeout-negative", RCP, lambda d: provider(d).update(timeout_s=-1), "providers.sim.timeout_s",
     "greater than 0"),
    ("provider-timeout-text", RCP, lambda d: provider(d).update(timeout_s="60"), "providers.sim.timeout_s",
     "must be a number"),
    ("provider-timeout-huge", RCP, lambda d: provider(d).update(timeout_s=1e9), "providers.sim.timeout_s", "at most"),
    ("provider-retries-huge", RCP, lambda d: provider(d).update(max_retries=100), "providers.sim.max_retries",
     "at most 20"),
    ("provider-unknown-key", RCP, lambda d: provider(d).update(temprature=0.2), "providers.sim.temprature",
     "unknown key"),
    ("clusters-empty", RCP, lambda d: d.update(clusters=[]), "clusters", "must not be empty"),
    ("clusters-not-list", RCP, lambda d: d.update(clusters={"a": []}), "clusters", "must be a list"),
    ("clusters-too-many", RCP, lambda d: d.update(clusters=[{"name": f"k{i}", "agents": sim_agents(f"k{i}-", 1)}
                                                            for i in range(L.MAX_CLUSTERS + 1)]),
     "clusters", "has too many items (101; at most 100)"),
    ("agents-too-many", RCP, lambda d: d["clusters"][0].update(agents=sim_agents("a", L.MAX_RUN_AGENTS)),
     "clusters", "has too many agents (52; at most 50)"),
    ("cluster-name-too-long", RCP, lambda d: d["clusters"][0].update(name=NAME), "clusters[0].name", "is too long"),
    ("cluster-name-wrong-type", RCP, lambda d: d["clusters"][0].update(name=7), "clusters[0].name", "must be text"),
    ("cluster-agents-empty", RCP, lambda d: d["clusters"][0].update(agents=[]), "clusters[0].agents",
     "must not be empty"),
    ("cluster-theta-out-of-range", RCP, lambda d: d["clusters"][0].update(theta=1.5), "clusters[0].theta", "at most 1"),
    ("cluster-weight-negative", RCP, lambda d: d["clusters"][0].update(weight=-1.0), "clusters[0].weight", "positive"),
    ("cluster-unknown-key", RCP, lambda d: d["clusters"][0].update(colour="red"), "clusters[0].colour",
     "unknown key"),
    ("agent-id-wrong-type", RCP, lambda d: agent(d).update(id=1), "clusters[0].agents[0].id", "must be text"),
    ("agent-id-too-long", RCP, lambda d: agent(d).update(id=NAME), "clusters[0].agents[0].id", "is too long"),
    ("agent-provider-unknown", RCP, lambda d: agent(d).update(provider="gpt"), "clusters[0].agents[0].provider",
     "no provider named"),
    ("agent-persona-too-long", RCP, lambda d: agent(d).update(persona="p" * (L.MAX_PERSONA_CHARS + 1)),
     "clusters[0].agents[0].persona", "is too long"),
    ("agent-duplicate", RCP, lambda d: d["clusters"][1]["agents"].append({"id": "a1", "provider": "sim"}),
     "clusters[1].agents[2]", "already in cluster"),
    ("rcp-tau-out-of-range", RCP, lambda d: d.update(tau=0.4), "tau", "greater than 0.5"),
    ("rcp-theta-text", RCP, lambda d: d.update(theta="0.5"), "theta", "must be a number"),
    ("rcp-refinement-rounds-huge", RCP, lambda d: d.update(refinement_rounds=9), "refinement_rounds", "at most 5"),
    ("rcp-weighted-text", RCP, lambda d: d.update(weighted="yes"), "weighted", "true or false"),
    ("echo-not-object", RCP, lambda d: d.update(echo="on"), "echo", "must be an object"),
    ("echo-interval-zero", RCP, lambda d: d.update(echo={"interval": 0}), "echo.interval", "at least 1"),
    ("echo-interval-huge", RCP, lambda d: d.update(echo={"interval": 10**9}), "echo.interval", "at most 10000"),
    ("echo-pattern-unknown-agent", RCP, lambda d: d.update(echo={"patterns": {"zz": "stateless"}}),
     "echo.patterns.zz", "no such agent"),
    ("echo-pattern-unknown-kind", RCP, lambda d: d.update(echo={"patterns": {"a1": "telepathic"}}),
     "echo.patterns.a1", ""),
    ("echo-decisions-too-many", RCP, lambda d: d.update(echo={"decisions": ["d"] * (L.MAX_LIST_ITEMS + 1)}),
     "echo.decisions", "has too many items"),
    ("echo-decision-too-long", RCP, lambda d: d.update(echo={"decisions": ["d" * (L.MAX_RATIONALE_CHARS + 1)]}),
     "echo.decisions[0]", "is too long"),
    ("echo-unknown-key", RCP, lambda d: d.update(echo={"intervall": 3}), "echo.intervall", "unknown key"),
    ("findings-none", FINDINGS, lambda d: d.update(findings=[]), "findings", "at least one finding"),
    ("findings-threshold-out-of-range", FINDINGS, lambda d: d.update(threshold=2), "threshold", "at most 1"),
    ("findings-claim-too-long", FINDINGS, lambda d: d["findings"][0].update(claim="c" * (L.MAX_CLAIM_CHARS + 1)),
     "findings[0].claim", "is too long"),
    ("findings-claim-wrong-type", FINDINGS, lambda d: d["findings"][0].update(claim=["c"]), "findings[0].claim",
     "must be text"),
    ("findings-too-many", FINDINGS, lambda d: d.update(findings=[{"id": f"f{i}", "claim": "c"}
                                                                 for i in range(L.MAX_FINDINGS + 1)]),
     "findings", "has too many items"),
    ("findings-duplicate-id", FINDINGS, lambda d: d["findings"].append({"id": "f1", "claim": "again"}),
     "findings[1].id", "duplicate"),
    ("findings-unknown-key", FINDINGS, lambda d: d["findings"][0].update(weight=1), "findings[0].weight",
     "unknown key"),
    ("cons-options-empty", CONS, lambda d: d.update(options=[]), "options", "must not be empty"),
    ("cons-options-too-many", CONS, lambda d: d.update(options=[f"o{i}" for i in range(L.MAX_OPTIONS + 1)]),
     "options", "has too many items"),
    ("cons-option-too-long", CONS, lambda d: d.update(options=["A", NAME]), "options[1]", "is too long"),
    ("cons-option-duplicate", CONS, lambda d: d.update(options=["A", "A"]), "options[1]", "duplicate"),
    ("cons-min-voters-zero", CONS, lambda d: d.update(min_voters=0), "min_voters", "at least 1"),
    ("cons-min-voters-huge", CONS, lambda d: d.update(min_voters=2**70), "min_voters", "at most 100000"),
    ("cons-rounds-huge", CONS, lambda d: d.update(max_challenge_rounds=10**6), "max_challenge_rounds", "at most 100"),
    ("cons-threshold-zero", CONS, lambda d: d.update(consensus_threshold=0), "consensus_threshold", "greater than 0"),
    ("arm-attempts-huge", ARM, lambda d: d.update(arm={"fap_max_attempts": 1000}), "arm.fap_max_attempts",
     "at most 10"),
    ("arm-budget-zero", ARM, lambda d: d.update(arm={"budgets": {"r1": 0}}), "arm.budgets.r1", "at least 1"),
    ("arm-budget-huge", ARM, lambda d: d.update(arm={"budgets": {"r2": 10**9}}), "arm.budgets.r2", "at most"),
    ("arm-threshold-out-of-range", ARM, lambda d: d.update(arm={"fap_threshold": 3}), "arm.fap_threshold",
     "at most 1"),
    ("arm-unknown-role", ARM, lambda d: d.update(arm={"providers": {"delta": "sim"}}), "arm.providers.delta", ""),
    ("arm-schema-unknown", ARM, lambda d: d.update(arm={"schema_version": "arm-trace-v9"}), "arm.schema_version",
     "must be one of"),
    ("arm-missing-role", ARM, lambda d: d["clusters"][0]["agents"].pop(), "clusters", "no agent has the role"),
]


@pytest.mark.parametrize("base, change, field, words", [c[1:] for c in RUN_CASES], ids=[c[0] for c in RUN_CASES])
def test_a_bad_run_configuration_is_refused_and_nothing_is_written(tmp_path, capsys, base, change, field, words):
    config = tmp_path / "run.json"
    config.write_text(json.dumps(changed(base, change)), encoding="utf-8")
    project = tmp_path / "p.rwb"
    refused(["run", str(config), "--project", str(project), "--quiet"], capsys, field, words)
    assert not project.exists()


BATCH_CASES = [
    ("replicates-zero", {"replicates": 0}, "batch.replicates", "at least 1"),
    ("replicates-text", {"replicates": "3"}, "batch.replicates", "must be a whole number"),
    ("question-too-long", {"questions": [BIG]}, "batch.questions[0]", "is too long"),
    ("mixes-too-many", {"provider_mixes": [{"name": f"m{i}"} for i in range(L.MAX_BATCH_MIXES + 1)]},
     "batch.provider_mixes", "has too many items"),
    ("batch-unknown-key", {"replicate": 3}, "batch.replicate", "unknown key"),
]


@pytest.mark.parametrize("batch, field, words", [c[1:] for c in BATCH_CASES], ids=[c[0] for c in BATCH_CASES])
def test_a_bad_batch_is_refused_and_nothing_is_written(tmp_path, capsys, batch, field, words):
    config = tmp_path / "batch.json"
    config.write_text(json.dumps({**RCP, "batch": batch}), encoding="utf-8")
    project = tmp_path / "p.rwb"
    refused(["run", str(config), "--project", str(project), "--quiet"], capsys, field, words)
    assert not project.exists()


def test_a_batch_whose_last_seed_overflows_is_refused(tmp_path, capsys):
    config = tmp_path / "batch.json"
    config.write_text(json.dumps({**RCP, "seed": L.SEED_MAX, "batch": {"replicates": 2}}), encoding="utf-8")
    refused(["run", str(config), "--project", str(tmp_path / "p.rwb")], capsys, "seed", "the last seed would be")
    assert not (tmp_path / "p.rwb").exists()


def test_yaml_configurations_are_checked_alike(tmp_path, capsys):
    import yaml

    data = changed(RCP, lambda d: provider(d).update(timeout_s=float("inf")))
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    refused(["run", str(tmp_path / "run.yaml"), "--project", str(tmp_path / "p.rwb")], capsys,
            "providers.sim.timeout_s", "finite")
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8))  # a "billion laughs": 10**9 values through aliases
    (tmp_path / "bomb.yaml").write_text(bomb, encoding="utf-8")
    refused(["run", str(tmp_path / "bomb.yaml"), "--project", str(tmp_path / "p.rwb")], capsys,
            "bomb.yaml", "holds too many values")
    assert not (tmp_path / "p.rwb").exists()


def test_a_configuration_nested_too_deeply_is_refused(tmp_path, capsys):
    deep = changed(RCP, lambda d: agent(d).update(params={"p": json.loads("[" * 100 + "]" * 100)}))
    (tmp_path / "run.json").write_text(json.dumps(deep), encoding="utf-8")
    refused(["run", str(tmp_path / "run.json"), "--project", str(tmp_path / "p.rwb")], capsys,
            "run.json", "nests too deeply")
    (tmp_path / "run.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    refused(["run", str(tmp_path / "run.json"), "--project", str(tmp_path / "p.rwb")], capsys,
            "run.json", "nests too deeply")
    assert not (tmp_path / "p.rwb").exists()


# ── classify inputs (rwb classify rcp|findings|cons FILE) ────────────────────────────────────
RCP_IN = {"clusters": [{"name": "advocate", "agents": ["a1", "a2"]}, {"name": "critic", "agents": ["c1", "c2"]}],
          "tau": 0.6, "artifacts": [{"id": "w1", "author": "a1", "votes": {"a2": 1, "c1": 0, "c2": 1}}]}
FINDINGS_IN = {"threshold": 0.6, "findings": [{"id": "f1", "claim": "c", "votes": [
    {"agent": "scout", "vote_type": "confirm", "confidence": 0.85, "reason": "seen"}]}]}
CONS_IN = {"questionId": "Q-1", "question": "Which cache?", "votes": [
    {"agentId": f"a{i}", "option": "A", "vote": "accept", "confidence": 0.9, "rationale": "fast",
     "evidence": [{"file": "x.py", "type": "code"}]} for i in range(3)]}


def ballot(i: int, option: str = "A") -> dict:
    return {"agentId": f"a{i}", "option": option, "vote": "accept", "confidence": 0.5, "rationale": "r"}


CLASSIFY_CASES = [
    ("rcp", "rcp-not-object", lambda d: d.clear() or d.update(theta=0.5), "clusters", "Field required"),
    ("rcp", "rcp-unknown-key", lambda d: d.update(taus=0.7), "taus", "unknown key"),
    ("rcp", "rcp-cluster-unknown-key", lambda d: d["clusters"][0].update(thta=0.3), "clusters[0].thta", "unknown key"),
    ("rcp", "rcp-artifact-unknown-key", lambda d: d["artifacts"][0].update(vots={}), "artifacts[0].vots", "unknown key"),
    ("rcp", "rcp-clusters-wrong-type", lambda d: d.update(clusters="a"), "clusters", ""),
    ("rcp", "rcp-clusters-too-many", lambda d: d.update(clusters=[{"name": f"k{i}", "agents": [f"k{i}"]}
                                                                  for i in range(L.MAX_CLUSTERS + 1)]),
     "clusters", "has too many items"),
    ("rcp", "rcp-agents-too-many", lambda d: d["clusters"][0].update(
        agents=[f"x{i}" for i in range(L.MAX_CLASSIFY_AGENTS + 1)]), "clusters[0].agents", "has too many items"),
    ("rcp", "rcp-agents-too-many-in-all", lambda d: d.update(clusters=[
        {"name": f"k{j}", "agents": [f"k{j}-{i}" for i in range(600)]} for j in range(2)]),
     "clusters", "has too many agents (1,200; at most 1,000)"),
    ("rcp", "rcp-cluster-name-too-long", lambda d: d["clusters"][0].update(name=NAME), "clusters[0].name",
     "is too long"),
    ("rcp", "rcp-agent-id-too-long", lambda d: d["clusters"][0]["agents"].append(NAME), "clusters[0].agents[2]",
     "is too long"),
    ("rcp", "rcp-tau-text", lambda d: d.update(tau="0.6"), "tau", ""),
    ("rcp", "rcp-tau-out-of-range", lambda d: d.update(tau=0.2), "tau", "greater than 0.5"),
    ("rcp", "rcp-theta-zero", lambda d: d.update(theta=0), "theta", "greater than 0"),
    ("rcp", "rcp-weight-infinite", lambda d: d["clusters"][0].update(weight=1e400), "clusters[0].weight", ""),
    ("rcp", "rcp-artifacts-too-many", lambda d: d.update(artifacts=[{"id": f"w{i}"}
                                                                    for i in range(L.MAX_ARTIFACTS + 1)]),
     "artifacts", "has too many items (100,001; at most 100,000)"),
    ("rcp", "rcp-vote-cells", lambda d: d.update(
        clusters=[{"name": "k", "agents": [f"a{i}" for i in range(1000)]}],
        artifacts=[{"id": f"w{i}"} for i in range(L.MAX_VOTE_CELLS // 1000 + 1)]),
     "artifacts", "artifacts x agents is 5,001,000"),
    ("rcp", "rcp-artifact-id-too-long", lambda d: d["artifacts"][0].update(id=NAME), "artifacts[0].id",
     "is too long"),
    ("rcp", "rcp-vote-value", lambda d: d["artifacts"][0]["votes"].update(a2=2), "artifacts[0].votes.a2",
     "a vote is 1, 0 or null"),
    ("rcp", "rcp-vote-unknown-voter", lambda d: d["artifacts"][0]["votes"].update(zz=1), "artifacts[0].votes.zz",
     "not an agent"),
    ("rcp", "rcp-votes-too-many", lambda d: d["artifacts"][0].update(
        votes={f"v{i}": 1 for i in range(L.MAX_CLASSIFY_AGENTS + 1)}), "artifacts[0].votes", "has too many items"),
    ("rcp", "rcp-author-wrong-type", lambda d: d["artifacts"][0].update(author=1), "artifacts[0].author", ""),
    ("findings", "findings-not-object", lambda d: d.clear() or d.update(findings="f"), "findings",
     "must be a list"),
    ("findings", "findings-threshold-text", lambda d: d.update(threshold="high"), "threshold", "must be a number"),
    ("findings", "findings-threshold-range", lambda d: d.update(threshold=3), "threshold", "between -1 and 1"),
    ("findings", "findings-id-too-long", lambda d: d["findings"][0].update(id=NAME), "findings[0].id",
     "is too long"),
    ("findings", "findings-claim-too-long", lambda d: d["findings"][0].update(claim="c" * (L.MAX_CLAIM_CHARS + 1)),
     "findings[0].claim", "is too long"),
    ("findings", "findings-too-many", lambda d: d.update(findings=[{"id": f"f{i}"}
                                                                   for i in range(L.MAX_FINDINGS + 1)]),
     "findings", "has too many items"),
    ("findings", "findings-votes-too-many", lambda d: d.update(findings=[
        {"id": f"f{j}", "votes": [{"agent": "a", "vote_type": "confirm", "confidence": 1}] * 60_000}
        for j in range(2)]), "findings", "has too many votes over all findings (120,000; at most 100,000)"),
    ("findings", "findings-confidence-text", lambda d: d["findings"][0]["votes"][0].update(confidence="0.8"),
     "findings[0].votes[0].confidence", "must be a number"),
    ("findings", "findings-confidence-range", lambda d: d["findings"][0]["votes"][0].update(confidence=1.5),
     "findings[0].votes[0].confidence", "between 0 and 1"),
    ("findings", "findings-vote-type", lambda d: d["findings"][0]["votes"][0].update(vote_type="maybe"),
     "findings[0].votes[0].vote_type", "unknown vote_type"),
    ("findings", "findings-reason-too-long", lambda d: d["findings"][0]["votes"][0].update(
        reason="r" * (L.MAX_RATIONALE_CHARS + 1)), "findings[0].votes[0].reason", "is too long"),
    ("findings", "findings-agent-too-long", lambda d: d["findings"][0]["votes"][0].update(agent=NAME),
     "findings[0].votes[0].agent", "is too long"),
    ("findings", "findings-sequence-huge", lambda d: d["findings"][0]["votes"][0].update(sequence=2**80),
     "findings[0].votes[0].sequence", ""),
    ("findings", "findings-unknown-key", lambda d: d["findings"][0]["votes"][0].update(weight=2),
     "findings[0].votes[0].weight", "unknown field"),
    ("cons", "cons-question-too-long", lambda d: d.update(question=BIG), "question", "is too long"),
    ("cons", "cons-question-wrong-type", lambda d: d.update(question=5), "question", "must be text"),
    ("cons", "cons-question-id-too-long", lambda d: d.update(questionId=NAME), "questionId", "is too long"),
    ("cons", "cons-votes-too-many", lambda d: d.update(votes=[ballot(i) for i in range(L.MAX_BALLOTS + 1)]),
     "votes", "has too many items (100,001; at most 100,000)"),
    ("cons", "cons-options-derived-too-many", lambda d: d.update(votes=[ballot(i, f"o{i}")
                                                                         for i in range(L.MAX_OPTIONS + 1)]),
     "votes", "names too many options (101; at most 100)"),
    ("cons", "cons-options-too-many", lambda d: d.update(options=[f"o{i}" for i in range(L.MAX_OPTIONS + 1)]),
     "options", "has too many items"),
    ("cons", "cons-rationale-too-long", lambda d: d["votes"][0].update(rationale="r" * (L.MAX_RATIONALE_CHARS + 1)),
     "votes[0].rationale", "is too long"),
    ("cons", "cons-rationale-missing", lambda d: d["votes"][0].pop("rationale"), "votes[0].rationale", "CONS-002"),
    ("cons", "cons-confidence-text", lambda d: d["votes"][0].update(confidence="high"), "votes[0].confidence",
     "CONS-003"),
    ("cons", "cons-vote-unknown", lambda d: d["votes"][0].update(vote="maybe"), "votes[0].vote", "CONS-001"),
    ("cons", "cons-agent-too-long", lambda d: d["votes"][0].update(agentId=NAME), "votes[0].agentId",
     "is too long"),
    ("cons", "cons-evidence-too-many", lambda d: d["votes"][0].update(evidence=[{"type": "code"}] * 101),
     "votes[0].evidence", "has too many items"),
    ("cons", "cons-evidence-wrong-type", lambda d: d["votes"][0].update(evidence="x.py"), "votes[0].evidence",
     "must be a list"),
    ("cons", "cons-rounds-huge", lambda d: d.update(maxChallengeRounds=10**9), "maxChallengeRounds", "at most 100"),
    ("cons", "cons-min-voters-text", lambda d: d.update(minVoters="3"), "minVoters", ""),
    ("cons", "cons-unknown-key", lambda d: d.update(quorum=3), "quorum", "unknown key"),
]


@pytest.mark.parametrize("protocol, change, field, words", [(c[0], *c[2:]) for c in CLASSIFY_CASES],
                         ids=[c[1] for c in CLASSIFY_CASES])
def test_a_bad_classify_input_is_refused(tmp_path, capsys, protocol, change, field, words):
    base = {"rcp": RCP_IN, "findings": FINDINGS_IN, "cons": CONS_IN}[protocol]
    path = tmp_path / "in.json"
    path.write_text(json.dumps(changed(base, change)), encoding="utf-8")
    refused(["classify", protocol, str(path)], capsys, field, words)


@pytest.mark.parametrize("protocol", ["rcp", "findings", "cons"])
def test_a_truncated_classify_input_is_refused(tmp_path, capsys, protocol):
    base = {"rcp": RCP_IN, "findings": FINDINGS_IN, "cons": CONS_IN}[protocol]
    path = tmp_path / "in.json"
    path.write_text(json.dumps(base)[:-7], encoding="utf-8")
    refused(["classify", protocol, str(path)], capsys, str(path), "not valid JSON")


# ── ARM files (rwb arm import / rwb arm metrics) ─────────────────────────────────────────────
def arm_trace() -> dict:
    def trace(claim: str, confidence: float) -> dict:
        return {"claim": claim, "confidence": confidence, "decision_basis": "hybrid", "assumptions": ["a"],
                "critical_path": ["step"], "flags": [], "self_check": {"status": "clean", "notes": ""},
                "_meta": {"stopReason": "stop", "usage": {"input_tokens": 10, "output_tokens": 20},
                          "provider": "gpt", "model": "m", "latencyMs": 100}, "_ok": True}
    r2 = trace("Yes, it should act.", 0.7)
    r2["drift_score"] = {"confidence_delta": -0.05, "harness_confidence_delta": -0.05, "delta_mismatch": False}
    return {"schema_version": "arm-trace-v1.2",
            "r1": {role: trace("Yes, the system should act now.", 0.75) for role in ("alpha", "beta", "gamma", "silent")},
            "r2": {"alpha": r2, "beta": copy.deepcopy(r2)},
            "convergence": 1.0, "runMeta": {"schema_version": "arm-trace-v1.2", "roleInjection": True,
                                            "silentAgent": "gamma", "providers": {"alpha": "gpt"}},
            "question": "Should it act?", "providers": {"alpha": "gpt", "beta": "gpt", "gamma": "gpt"}}


def r1a(d: dict) -> dict:
    return d["r1"]["alpha"]


ARM_CASES = [
    ("confidence-text", lambda d: r1a(d).update(confidence="high"), "r1.alpha.confidence",
     'must be a number, got "high"'),
    ("confidence-bool", lambda d: r1a(d).update(confidence=True), "r1.alpha.confidence", "must be a number"),
    ("claim-null", lambda d: r1a(d).update(claim=None), "r1.alpha.claim", "must be text"),
    ("claim-number", lambda d: r1a(d).update(claim=3), "r1.alpha.claim", "must be text, got 3"),
    ("ok-text", lambda d: r1a(d).update(_ok="yes"), "r1.alpha._ok", "must be true or false"),
    ("flags-text", lambda d: r1a(d).update(flags="values_conflict"), "r1.alpha.flags", "must be a list"),
    ("flags-item-number", lambda d: r1a(d).update(flags=["a", 2]), "r1.alpha.flags[1]", "must be text"),
    ("assumptions-too-many", lambda d: r1a(d).update(assumptions=["a"] * (L.MAX_LIST_ITEMS + 1)),
     "r1.alpha.assumptions", "has too many items"),
    ("self-check-text", lambda d: r1a(d).update(self_check="clean"), "r1.alpha.self_check", "must be an object"),
    ("self-check-status-number", lambda d: r1a(d)["self_check"].update(status=1), "r1.alpha.self_check.status",
     "must be text"),
    ("self-check-overridden-text", lambda d: r1a(d)["self_check"].update(self_check_overridden="true"),
     "r1.alpha.self_check.self_check_overridden", "must be true or false"),
    ("drift-mismatch-text", lambda d: d["r2"]["alpha"]["drift_score"].update(delta_mismatch="no"),
     "r2.alpha.drift_score.delta_mismatch", "must be true or false"),
    ("harness-delta-text", lambda d: d["r2"]["alpha"]["drift_score"].update(harness_confidence_delta="-0.05"),
     "r2.alpha.drift_score.harness_confidence_delta", "must be a number"),
    ("usage-negative", lambda d: r1a(d)["_meta"]["usage"].update(input_tokens=-1), "r1.alpha._meta.usage.input_tokens",
     "must be a whole number >= 0"),
    ("latency-text", lambda d: r1a(d)["_meta"].update(latencyMs="100"), "r1.alpha._meta.latencyMs",
     "must be a number"),
    ("meta-list", lambda d: r1a(d).update(_meta=[]), "r1.alpha._meta", "must be an object"),
    ("discarded-path-number", lambda d: r1a(d).update(discarded_paths=[{"path": "p", "reason": 5}]),
     "r1.alpha.discarded_paths[0].reason", "must be text"),
    ("polarity-fired-text", lambda d: r1a(d).update(polarity_gate_fired="yes"), "r1.alpha.polarity_gate_fired",
     "must be true or false"),
    ("role-not-object", lambda d: d["r1"].update(beta="oops"), "r1.beta", "must be an object"),
    ("roles-too-many", lambda d: d["r1"].update({f"extra{i}": None for i in range(L.MAX_ARM_ROLES)}), "r1",
     "has too many agent traces"),
    ("r2-list", lambda d: d.update(r2=[]), "r2", "must be an object of agent traces"),
    ("convergence-text", lambda d: d.update(convergence="0.5"), "convergence", "must be a number"),
    ("question-number", lambda d: d.update(question=5), "question", "must be text"),
    ("run-meta-flag-text", lambda d: d["runMeta"].update(roleInjection="true"), "runMeta.roleInjection",
     "must be true or false"),
    ("run-meta-providers-number", lambda d: d["runMeta"]["providers"].update(alpha=1), "runMeta.providers.alpha",
     "must be text"),
    ("schema-unknown", lambda d: d.update(schema_version="arm-trace-v0.1"), "schema_version",
     "unsupported ARM schema 'arm-trace-v0.1'"),
    ("schema-number", lambda d: d.update(schema_version=1.2), "schema_version", "unsupported ARM schema 1.2"),
    ("claim-too-long", lambda d: r1a(d).update(claim="y" * (L.MAX_ARM_TEXT_CHARS + 1)), "r1.alpha.claim",
     "is too long (100,001 characters; at most 100,000)"),
    ("extra-text-too-long", lambda d: r1a(d).update(notes_of_mine="y" * (L.MAX_ARM_TEXT_CHARS + 1)),
     "r1.alpha.notes_of_mine", "is too long"),
    ("deep-extra", lambda d: d.update(extra=json.loads("[" * 80 + "]" * 80)), "", "nests too deeply"),
]


@pytest.mark.parametrize("change, field, words", [c[1:] for c in ARM_CASES], ids=[c[0] for c in ARM_CASES])
def test_a_bad_arm_file_is_refused_by_metrics(tmp_path, capsys, change, field, words):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(changed(arm_trace(), change)), encoding="utf-8")
    refused(["arm", "metrics", str(path)], capsys, f"{path}: {field}" if field else str(path), words)


@pytest.fixture
def project(tmp_path, capsys):
    path = tmp_path / "arm.rwb"
    assert main(["new", str(path)]) == 0
    capsys.readouterr()
    return path


def runs_in(project: Path) -> int:
    from workbench.core.project import _sql
    from workbench.core.project.store import Store

    store = Store.open(project)
    try:
        return _sql.count(store, "runs")
    finally:
        store.close_connection()


@pytest.mark.parametrize("change, field, words", [c[1:] for c in ARM_CASES[::3]], ids=[c[0] for c in ARM_CASES[::3]])
def test_a_bad_arm_file_is_not_imported(tmp_path, capsys, project, change, field, words):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(changed(arm_trace(), change)), encoding="utf-8")
    code = main(["arm", "import", str(path), "--project", str(project)])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert (f"{field}: " if field else "") + words in err
    assert [r["ok"] for r in json.loads(out)] == [False]
    assert runs_in(project) == 0


def test_the_good_arm_file_is_accepted(tmp_path, capsys, project):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(arm_trace()), encoding="utf-8")
    assert main(["arm", "metrics", str(path)]) == 0
    assert main(["arm", "import", str(path), "--project", str(project)]) == 0
    capsys.readouterr()
    assert runs_in(project) == 1


@pytest.mark.parametrize("text, words", [
    ('{"r1": {"alpha": {"claim": "Yes", "confid', "not valid JSON"),
    ("", "not valid JSON"),
    ('["r1"]', "must hold a JSON object"),
    ('{"r2": {}}', "r1: missing"),
], ids=["truncated", "empty", "list", "no-r1"])
def test_a_file_that_is_not_a_whole_arm_trace_is_refused(tmp_path, capsys, text, words):
    path = tmp_path / "trace.json"
    path.write_text(text, encoding="utf-8")
    code = main(["arm", "metrics", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and words in err and "Traceback" not in err


def test_a_truncated_arm_file_is_not_imported(tmp_path, capsys, project):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(arm_trace())[:-40], encoding="utf-8")
    assert main(["arm", "import", str(path), "--project", str(project)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert runs_in(project) == 0


# ── Echo inputs ──────────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("argv, field, words", [
    (["echo", "marker", "--seed", str(2**80)], "--seed", "from 0 to 9,223,372,036,854,775,807"),
    (["echo", "marker", "--seed", "-1"], "--seed", "got -1"),
    (["echo", "marker", "--seed", str(2**63)], "--seed", "got 9223372036854775808"),
], ids=["seed-2**80", "seed-negative", "seed-2**63"])
def test_a_bad_echo_marker_seed_is_refused(capsys, argv, field, words):
    refused(argv, capsys, field, words)


def test_an_echo_marker_seed_at_the_largest_is_accepted(capsys):
    assert main(["echo", "marker", "--seed", str(L.SEED_MAX)]) == 0
    assert " — " in capsys.readouterr().out


def test_a_bad_echo_verify_input_is_refused(tmp_path, capsys):
    reply = tmp_path / "reply.txt"
    reply.write_text("fine — 7f3a9c", encoding="utf-8")
    code = main(["echo", "verify", "--marker", "not-a-marker", str(reply)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "Traceback" not in err and len(err.strip().splitlines()) == 1
    code = main(["echo", "verify", "--marker", "7f3a9c", str(tmp_path / "missing.txt")])
    out, err = capsys.readouterr()
    assert code == 2 and "no such file" in err and "Traceback" not in err


# ── huge inputs ──────────────────────────────────────────────────────────────────────────────
def test_a_ten_megabyte_query_is_refused_at_once_in_a_real_process(tmp_path):
    config = tmp_path / "run.json"
    config.write_text(json.dumps({**RCP, "query": "q" * 10 * 1024 * 1024}), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "workbench", "run", str(config), "--project", str(tmp_path / "p.rwb")],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == "rwb run: error: query: is too long (10,485,760 characters; at most 20,000)"
    assert not (tmp_path / "p.rwb").exists()


def test_a_seed_of_2_80_is_refused_in_a_real_process(tmp_path):
    config = tmp_path / "run.json"
    config.write_text(json.dumps({**RCP, "seed": 2**80}), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "workbench", "run", str(config), "--project", str(tmp_path / "p.rwb")],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "seed: must be a whole number from 0 to 9,223,372,036,854,775,807" in done.stderr
    assert not (tmp_path / "p.rwb").exists()


def test_a_fifty_megabyte_arm_claim_is_refused_in_a_real_process(tmp_path):
    data = arm_trace()
    r1a(data)["claim"] = "y" * 50 * 1024 * 1024
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "workbench", "arm", "metrics", str(path)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert "r1.alpha.claim: is too long" in done.stderr or "too large" in done.stderr or "too long" in done.stderr
