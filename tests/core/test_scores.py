"""What the project keeps of ground truth (SPEC §8, schema step 10): artifacts and answers scored as
they are written (never by a protocol), the reads the GUI needs (accuracy per tier for the
Quadrant, an artifact's score in a record's detail, the Trace Inspector's filter on it), and an
older project migrated."""

from __future__ import annotations

import sqlite3

import pytest

from workbench.core.project import _sql, quadrant, records, scores
from workbench.core.project.protocol_records import Where, write_records
from workbench.core.project.record_detail import record_detail
from workbench.core.project.schema import SCHEMA_VERSION
from workbench.core.project.store import Store
from workbench.core.protocols.shared.declaration import Record
from workbench.core.protocols.shared.truth import accuracy_by_tier, tally
from workbench.core.runs.config import parse_run_config
from workbench.services.runs.runner import Runner

ITEM = {"id": "q7", "question": "What is the result of 3+4*5+6-7*8?", "answer": "-27", "answer_type": "number"}


def rcp(**extra) -> dict:
    people = lambda p, skills: [{"id": f"{p}{i}", "provider": "sim", "params": {"skill": s}}
                                for i, s in enumerate(skills, 1)]
    return {"protocol": "rcp", "seed": 4, "providers": {"sim": {"model": "sim"}}, "item": ITEM,
            "clusters": [{"name": "sharp", "agents": people("s", [0.9, 0.8, 0.9])},
                         {"name": "dull", "agents": people("d", [0.3, 0.4, 0.2])}], **extra}


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "p.rwb")
    yield s
    s.close_connection()


def run(store: Store, data: dict) -> str:
    runner = Runner(store)
    run_id = runner.create(parse_run_config(data))
    assert runner.execute(run_id)["status"] == "completed"
    return run_id


def test_the_writer_scores_an_artifact_against_the_runs_truth_and_leaves_others_alone(store):
    with _sql.write(store) as tx:
        tx.insert("runs", {"id": "r1", "protocol": "vote", "config_json": {}, "status": "completed",
                           "started_at": "2026-11-28T00:00:00Z"})
        truth = {"item": "q", "answer": "1,234", "answer_type": "number"}
        write_records(tx, Where("r1", "vote", truth=truth), [
            Record("artifact", {"key": "r1-a", "author": "a", "content": "It is 1234 in all."}),
            Record("artifact", {"key": "r1-b", "author": "b", "content": "forty"}),
            Record("answer", {"key": "final", "text": "It is 1234 in all.", "agent": "a", "extracted": "1234"})])
        write_records(tx, Where("r1", "vote"), [Record("artifact", {"key": "r1-c", "author": "c", "content": "7"})])
    got = scores.artifact_scores(store, "r1")
    assert got == {"r1-a": ("1234", "correct"), "r1-b": (None, "unscorable"), "r1-c": (None, None)}
    assert [(a["key"], a["score"], a["extracted"]) for a in scores.answers(store, "r1")] == [("final", "correct", "1234")]


def test_accuracy_counts_an_unscorable_answer_against_it():
    assert tally(["correct", "unscorable", "incorrect", "correct", None]).to_json() == {
        "correct": 2, "incorrect": 1, "unscorable": 1, "accuracy": 0.5}
    acc = accuracy_by_tier(
        [{"artifact": "x", "tier": "positive_consensus", "score": 0.9}, {"artifact": "y", "tier": "positive_consensus",
                                                                          "score": 0.8},
         {"artifact": "z", "tier": "negative_consensus", "score": 0.1}, {"artifact": "w", "tier": "unclassified",
                                                                          "score": None}],
        {"x": "correct", "y": "unscorable", "z": "incorrect", "w": "correct"})
    assert {t: v.to_json()["accuracy"] for t, v in acc.by_tier.items()} == {
        "positive_consensus": 0.5, "negative_consensus": 0.0, "unclassified": 1.0}
    assert acc.auroc == 1.0 and acc.auroc_n == (1, 2)  # w has no score: no part in the AUROC
    assert accuracy_by_tier([{"artifact": "x", "tier": "positive_consensus"}], {}) is None


def test_an_rcp_run_on_a_known_answer_gives_the_quadrant_its_accuracy_per_tier(store):
    run_id = run(store, rcp())
    data = quadrant.load_run(store, run_id)
    assert data.scored and len(data.scores) == data.m == 6
    acc = quadrant.tier_accuracy(data, quadrant.classify(data))
    stored = scores.run_tier_accuracy(store, run_id)
    assert acc.to_json() == stored.to_json()
    assert acc.overall.scored == 6 and sum(v.scored for v in acc.by_tier.values()) == 6
    verdicts = dict(zip(data.keys, data.scores))
    assert acc.overall.correct == sum(v == "correct" for v in verdicts.values())
    # a what-if is counted under its own thresholds, from the same verdicts
    strict = quadrant.Settings(tuple(1.0 for _ in data.settings.thetas), 1.0, None, 0)
    assert quadrant.tier_accuracy(data, quadrant.classify(data, strict)).overall == acc.overall
    plain = run(store, {k: v for k, v in rcp().items() if k != "item"} | {"query": "Close the centre?"})
    assert quadrant.tier_accuracy(*(lambda d: (d, quadrant.classify(d)))(quadrant.load_run(store, plain))) is None


def test_the_inspector_filters_on_an_artifacts_score_and_the_detail_shows_it(store):
    run_id = run(store, rcp())
    verdicts = {k: s for k, (_e, s) in scores.artifact_scores(store, run_id).items()}
    assert set(verdicts.values()) == {"correct", "incorrect"}
    right = sum(v == "correct" for v in verdicts.values())
    f = records.RecordFilter(kind="call", run=run_id, score="correct")
    assert records.count(store, f) == right
    assert records.count(store, records.RecordFilter(kind="call", run=run_id, score="scored")) == 6
    wrong_votes = records.count(store, records.RecordFilter(kind="vote", run=run_id, score="incorrect"))
    assert wrong_votes == 5 * (6 - right)
    shown = records.window(store, f, offset=0, limit=50)
    assert shown and all(row["score"] == "correct" and row["extracted"] == "-27" for row in shown)
    detail = record_detail(store, "call", shown[0]["id"])
    assert detail.extras["score"] == {"score": "correct", "extracted": "-27", "answer": "-27", "answer_type": "number",
                                      "item": "q7", "final": []}  # RCP has no final answer: its artifacts are
    vote = records.window(store, records.RecordFilter(kind="vote", run=run_id, score="incorrect"), offset=0, limit=1)[0]
    assert record_detail(store, "vote", vote["id"]).extras["score"]["score"] == "incorrect"
    assert records.count(store, records.RecordFilter(kind="trace", score="correct")) == 0  # no artifact: no score


def test_a_project_of_schema_9_opens_and_gains_the_scores(tmp_path, monkeypatch):
    import workbench.core.project.store as store_module

    path = tmp_path / "old.rwb"
    with monkeypatch.context() as m:  # a project made by the workbench of schema 9
        m.setattr(store_module, "SCHEMA_VERSION", 9)
        Store.create(path).close_connection()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript("BEGIN; INSERT INTO runs (id, protocol, status, started_at) VALUES ('r1', 'rcp', 'completed', 'T'); "
                       "INSERT INTO artifacts (run_id, key, content, created_at) VALUES ('r1', 'r1-a', 'It is 4.', 'T'); "
                       "COMMIT;")
    assert "answers" not in {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    migrated = Store.open(path)
    try:
        assert migrated.info()["schema_version"] == SCHEMA_VERSION >= 10
        assert scores.artifact_scores(migrated, "r1") == {"r1-a": (None, None)}
        assert scores.answers(migrated, "r1") == []
        with _sql.write(migrated) as tx:  # the new table takes an answer, scored
            write_records(tx, Where("r1", "rcp", truth={"answer": "4", "answer_type": "number"}),
                          [Record("answer", {"text": "4", "agent": "a"})])
        assert [a["score"] for a in scores.answers(migrated, "r1")] == ["correct"]
    finally:
        migrated.close_connection()
