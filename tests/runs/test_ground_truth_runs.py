"""Ground truth through the real entry points (SPEC §8): ``rwb run`` with a dataset item or a batch
over a dataset, what the project stores and scores, ``rwb export`` and the report, the dataset
refusals (exit 2, one line naming the field, nothing written), and the known answer never sent to
a model while the simulated panel still reads it."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from tests.support.fake_llm_server import FakeLLMServer, Reply
from workbench.cli import main
from workbench.core.datasets import arithmetic, to_jsonl
from workbench.core.protocols.shared.replies import fenced_texts

SIM = {"sim": {"model": "sim"}}
KEY = "RWB_GROUND_TRUTH_KEY"


def agents(skills, **params) -> list[dict]:
    return [{"id": f"a{i + 1}", "provider": "sim", "params": {"skill": s, **params}} for i, s in enumerate(skills)]


@pytest.fixture
def folder(tmp_path) -> Path:
    (tmp_path / "items.jsonl").write_text(to_jsonl(arithmetic(6, 4)), encoding="utf-8")
    return tmp_path


def rwb(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def write(folder: Path, name: str, data: dict) -> Path:
    path = folder / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def rows(project: Path, sql: str, params=()) -> list[tuple]:
    with sqlite3.connect(project) as db:
        return db.execute(sql, params).fetchall()


def summary_of(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


# ----- a run of one item, a batch over a dataset ----------------------------------------------------
def test_a_run_of_one_item_asks_its_question_and_scores_its_answers(capsys, folder):
    path = write(folder, "vote.json", {"protocol": "vote", "seed": 3, "providers": SIM,
                                        "agents": agents([1.0, 1.0, 0.0]), "dataset": "items.jsonl", "item": "arith-2"})
    project = folder / "p.rwb"
    code, out, err = rwb(capsys, "run", path, "--project", project)
    assert code == 0, err
    item = arithmetic(6, 4)[1]
    summary = summary_of(out)
    assert summary["scored"]["item"] == "arith-2" and summary["scored"]["answer"] == item.answer
    assert summary["scored"]["answers"] == [{"key": "final", "agent": "a1", "extracted": item.answer, "score": "correct"}]
    assert summary["scored"]["artifacts"] == {"correct": 2, "incorrect": 1, "unscorable": 0, "accuracy": 2 / 3}
    (config,) = rows(project, "SELECT config_json FROM runs")
    stored = json.loads(config[0])
    assert stored["query"] == item.question and stored["item"] == item.to_json() and stored["dataset"] == "items.jsonl"
    assert all(item.question in json.loads(r)["messages"][-1]["content"] for (r,) in rows(project, "SELECT request_json FROM llm_calls"))
    # The stored config is self-contained: the run resumes (and replays) with the dataset gone.
    (folder / "items.jsonl").unlink()
    run_id = summary["run_id"]
    rows_before = rows(project, "SELECT key, extracted, score FROM artifacts ORDER BY key")
    code, out, err = rwb(capsys, "resume", run_id, "--project", project)
    assert code == 0, err
    assert rows(project, "SELECT key, extracted, score FROM artifacts ORDER BY key") == rows_before


def test_a_batch_over_a_dataset_runs_each_item_and_its_label_keeps_the_item_id(capsys, folder):
    path = write(folder, "batch.json", {"protocol": "single", "label": "Arithmetic", "seed": 3, "providers": SIM,
                                         "agents": agents([1.0]),
                                         "batch": {"dataset": "items.jsonl", "replicates": 2}})
    project = folder / "p.rwb"
    code, out, err = rwb(capsys, "run", path, "--project", project)
    assert code == 0, err
    batch = summary_of(out)
    assert batch["runs"] == 12 and batch["scored"]["answers"]["accuracy"] == 1.0
    labels = [label for (label,) in rows(project, "SELECT label FROM runs ORDER BY rowid")]
    assert labels[:3] == ["Arithmetic · arith-1 · as configured · rep 1", "Arithmetic · arith-1 · as configured · rep 2",
                          "Arithmetic · arith-2 · as configured · rep 1"]
    seeds = rows(project, "SELECT json_extract(config_json, '$.item.id'), seed FROM runs ORDER BY rowid")
    assert seeds[:2] == [("arith-1", 3), ("arith-1", 4)]
    # The batch stores the items it read: it resumes without the file.
    (stored,) = rows(project, "SELECT config_json FROM batches")
    assert [i["id"] for i in json.loads(stored[0])["batch"]["items"]] == [f"arith-{n}" for n in range(1, 7)]


# ----- refusals --------------------------------------------------------------------------------------
BASE = {"protocol": "vote", "seed": 1, "providers": SIM, "agents": agents([0.5])}


@pytest.mark.parametrize("extra, line", [
    ({"query": "Another question?", "dataset": "items.jsonl", "item": "arith-1"},
     "query: a run asks a query or a dataset item, not both"),
    ({"dataset": "missing.jsonl", "item": "arith-1"}, "dataset: no such file: "),
    ({"dataset": "bad.jsonl", "item": "q1"}, "dataset: bad.jsonl: line 2: answer_type: must be one of"),
    ({"dataset": "items.jsonl", "item": "arith-99"}, "item: no item 'arith-99' in items.jsonl (6 items)"),
    ({"dataset": "items.jsonl"}, "item: required with dataset"),
    ({"item": {"id": "q", "question": "Q?", "answer": "x", "answer_type": "number"}},
     "item.answer: must hold a number for answer_type number"),
    ({"item": {"id": "q", "question": "Q?", "answer": 1, "answerr": 2}}, "item.answerr: unknown key"),
    ({"batch": {"dataset": "items.jsonl", "questions": ["Q?"]}}, "batch.questions: a batch takes its questions"),
    ({"query": "Q?", "batch": {"dataset": "items.jsonl"}}, "query: a batch over a dataset asks each of its items"),
    ({"batch": {"dataset": "nope.jsonl"}}, "batch.dataset: no such file: "),
    ({"protocol": "findings", "findings": [{"id": "f", "claim": "c"}], "agents": None,
      "clusters": [{"name": "c", "agents": [{"id": "a", "provider": "sim"}]}], "dataset": "items.jsonl", "item": "arith-1"},
     "item: a findings run puts no question to its agents"),
])
def test_a_bad_dataset_or_item_is_refused_naming_its_field_and_nothing_is_written(capsys, folder, extra, line):
    (folder / "bad.jsonl").write_text('{"id": "q1", "question": "Q?", "answer": 1}\n'
                                      '{"id": "q2", "question": "Q?", "answer": 1, "answer_type": "numeric"}\n')
    data = {k: v for k, v in {**BASE, **extra}.items() if v is not None}
    project = folder / "p.rwb"
    code, out, err = rwb(capsys, "run", write(folder, "run.json", data), "--project", project)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"rwb run: error: {line}"), err
    assert not project.exists()


# ----- the truth reaches sim, never a model ---------------------------------------------------------
def test_sim_reads_the_answer_from_the_calls_meta_never_from_the_prompt(capsys, folder):
    """An edited template that leaves the question out: sim at skill 1 still answers right."""
    data = {"protocol": "single", "seed": 1, "providers": SIM, "agents": agents([1.0]),
            "item": {"id": "q", "question": "What is the capital of the test?", "answer": "Zanzibar-7319"},
            "prompts": {"answer": "{% block user %}Reply. {{ answer_format }}{% endblock %}"}}
    project = folder / "p.rwb"
    code, out, err = rwb(capsys, "run", write(folder, "run.json", data), "--project", project)
    assert code == 0, err
    assert rows(project, "SELECT score FROM answers") == [("correct",)]
    (request,) = rows(project, "SELECT request_json FROM llm_calls")
    assert "Zanzibar" not in request[0] and "Capital" not in request[0]


def test_a_model_is_never_sent_the_known_answer(capsys, folder, monkeypatch):
    monkeypatch.setenv(KEY, "sk-test")
    def text(request) -> str:  # an RCP vote is asked for as JSON (a model's own words are shown to its peers)
        asked = json.dumps(request.body)
        return '{"vote": "YES", "reason": "Sound."}' if '{\\"vote\\"' in asked else "It is far away."

    with FakeLLMServer(default=Reply(text=text)) as server:
        local = {"model": "openai/fake-model", "api_base": server.base_url, "api_key_env": KEY,
                 "timeout_s": 10, "max_retries": 0}
        for protocol in ("single", "vote", "debate", "rcp"):
            people = [{"id": f"m{i}", "provider": "local"} for i in range(3)]
            panel = ({"clusters": [{"name": "x", "agents": people[:2]}, {"name": "y", "agents": people[2:]}]}
                     if protocol == "rcp" else {"agents": people})
            data = {"protocol": protocol, "seed": 1, "providers": {"local": local}, **panel,
                    "item": {"id": "q", "question": "Where is the hidden city?", "answer": "Zanzibar-7319"}}
            code, out, err = rwb(capsys, "run", write(folder, f"{protocol}.json", data), "--project", folder / "p.rwb")
            assert code == 0, (protocol, err)
            scored = summary_of(out)["scored"]["artifacts"]
            assert scored["correct"] == 0 and scored["incorrect"] > 0  # a model's answers are scored all the same
        assert server.requests and not any("Zanzibar" in json.dumps(r.body) for r in server.requests)


# ----- debate: each agent sees exactly its peers' previous answers, fenced --------------------------
def test_debate_shows_each_agent_its_peers_previous_answers_fenced_and_no_others(capsys, folder):
    data = {"protocol": "debate", "seed": 9, "rounds": 2, "providers": SIM,
            "agents": agents([0.9, 0.5, 0.2, 0.6], conformity=0.5), "dataset": "items.jsonl", "item": "arith-3"}
    data["agents"][1]["params"]["malformed_rate"] = 1.0  # a2 never gives a readable answer: still a peer
    project = folder / "p.rwb"
    code, out, err = rwb(capsys, "run", write(folder, "debate.json", data), "--project", project)
    assert code == 0, err
    replies = {step: text for step, text in rows(project, "SELECT step_key, reply_text FROM llm_calls")}
    order = ["a1", "a2", "a3", "a4"]
    checked = 0
    for step, request, _text in rows(project, "SELECT step_key, request_json, reply_text FROM llm_calls"):
        r, kind, agent = step.split("/")
        rnd = int(r.removeprefix("r"))
        body = json.loads(request)
        if rnd == 1:
            assert kind == "answer" and "fence" not in body
            continue
        previous = {a: replies[f"r{rnd - 1}/{'answer' if rnd == 2 else 'debate'}/{a}"] for a in order}
        shown = fenced_texts(body["messages"], body["fence"]["delimiter"])
        assert list(shown) == [previous[a] for a in order if a != agent], step
        user = body["messages"][-1]["content"]
        assert user.count(body["fence"]["delimiter"]) == 2 * (len(order) - 1)  # every answer inside its fence
        checked += 1
    assert checked == 8


# ----- RCP on a scorable dataset: the report's accuracy per tier is a count over the export ---------
def test_rcp_accuracy_per_tier_in_the_report_equals_a_count_over_the_exported_artifacts(capsys, folder):
    data = {"protocol": "rcp", "seed": 2, "providers": SIM, "dataset": "items.jsonl", "item": "arith-5",
            "clusters": [{"name": "right", "agents": agents([0.9, 0.8, 0.7])},
                         {"name": "other", "agents": [{**a, "id": "b" + a["id"]} for a in agents([0.4, 0.3, 0.5])]}]}
    project = folder / "p.rwb"
    code, out, err = rwb(capsys, "run", write(folder, "rcp.json", data), "--project", project)
    assert code == 0, err
    summary = summary_of(out)
    tiers = {s["artifact"]: s["tier"] for rnd in summary["rounds"] for s in rnd["states"]}
    code, exported, err = rwb(capsys, "export", summary["run_id"], "--project", project, "--format", "jsonl")
    arts = [r for r in map(json.loads, exported.splitlines()) if r["kind"] == "artifact"]
    assert len(arts) == 6 and all(set(a) >= {"correct", "extracted", "score"} for a in arts)
    counted: dict[str, list[int]] = {}
    for a in arts:
        c = counted.setdefault(tiers[a["id"]], [0, 0])
        c[0] += 1
        c[1] += a["correct"] is True
    code, report, err = rwb(capsys, "export", summary["run_id"], "--project", project, "--format", "md")
    section = report.split("## Against the known answer", 1)[1].split("\n## ", 1)[0]
    table = {}
    for label, n, correct, *_rest in re.findall(r"^\| ([^|*]+?) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| [^|]+ \|$",
                                                section, re.M):
        table[label] = [int(n), int(correct)]
    labels = {"positive_consensus": "Positive consensus", "positive_polar": "Positive polar",
              "negative_polar": "Negative polar", "negative_consensus": "Negative consensus"}
    assert table == {labels[t]: v for t, v in counted.items()} and len(table) >= 2
    assert "AUROC of the resonance score against correctness" in section


def test_the_export_carries_correct_and_extracted_on_artifacts_and_answers(capsys, folder):
    data = {"protocol": "vote", "seed": 3, "providers": SIM, "agents": agents([1.0, 0.0, 0.0]),
            "dataset": "items.jsonl", "item": "arith-1"}
    project = folder / "p.rwb"
    code, out, err = rwb(capsys, "run", write(folder, "vote.json", data), "--project", project)
    run_id = summary_of(out)["run_id"]
    code, exported, err = rwb(capsys, "export", run_id, "--project", project, "--format", "jsonl")
    records = [json.loads(line) for line in exported.splitlines()]
    (answer,) = [r for r in records if r["kind"] == "answer"]
    right = arithmetic(6, 4)[0].answer
    assert (answer["correct"], answer["score"], answer["agent"]) == (False, "incorrect", "a2")  # two wrong agree
    assert sorted((r["author"], r["correct"]) for r in records if r["kind"] == "artifact") == [
        ("a1", True), ("a2", False), ("a3", False)]
    assert next(r for r in records if r.get("author") == "a1")["extracted"] == right
    code, csv_text, err = rwb(capsys, "export", run_id, "--project", project, "--format", "csv")
    header = csv_text.splitlines()[0].split(",")
    assert {"correct", "extracted", "score"} <= set(header)


# ----- rwb dataset ---------------------------------------------------------------------------------
def test_rwb_dataset_arithmetic_is_reproducible_from_its_seed(capsys, tmp_path):
    code, first, err = rwb(capsys, "dataset", "arithmetic", "--n", "25", "--seed", "7")
    assert code == 0 and err == ""
    assert rwb(capsys, "dataset", "arithmetic", "--n", "25", "--seed", "7")[1] == first == to_jsonl(arithmetic(25, 7))
    assert rwb(capsys, "dataset", "arithmetic", "--n", "25", "--seed", "8")[1] != first
    out = tmp_path / "a.jsonl"
    assert rwb(capsys, "dataset", "arithmetic", "--n", "25", "--seed", "7", "--out", out)[0] == 0
    assert out.read_text(encoding="utf-8") == first
    code, _out, err = rwb(capsys, "dataset", "arithmetic", "--n", "3", "--seed", "7", "--out", out)
    assert code == 2 and "--out" in err and out.read_text(encoding="utf-8") == first  # never overwritten


@pytest.mark.parametrize("args, field", [(["--n", "0", "--seed", "1"], "--n"), (["--n", "ten", "--seed", "1"], "--n"),
                                         (["--n", "100001", "--seed", "1"], "--n"), (["--n", "3", "--seed", "-1"], "--seed")])
def test_rwb_dataset_refuses_a_bad_count_or_seed(capsys, args, field):
    code, out, err = rwb(capsys, "dataset", "arithmetic", *args)
    assert code == 2 and out == "" and err.startswith(f"rwb dataset: error: {field}: must be a whole number")
