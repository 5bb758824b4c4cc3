"""The sample projects of ``sample_runs/`` (issue 16): rebuilt from their committed configurations
they hold the same content, row for row (SPEC §6 "Reproducibility": ignoring timestamps, run and
batch ids and fence tokens), and each shows what it is there to show. The comparison itself is
tested on its own: it catches a changed vote and ignores a changed timestamp.

The sample built from the third-party ARM corpus is not committed; its part skips with the
reason where the corpus is absent.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from workbench.core.project import _sql
from workbench.core.project.compare import compact, differences, same_content
from workbench.core.project.store import Store
from workbench.services.samples.build import build_all, corpus_for, default_corpus, load_manifest

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_runs"
CORPUS = default_corpus(SAMPLES)
TIERS = ("positive_consensus", "positive_polar", "negative_polar", "negative_consensus")


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory) -> Path:
    """Every sample rebuilt once from the committed configurations (about 2 s)."""
    out = tmp_path_factory.mktemp("samples")
    build_all(out, folder=SAMPLES, corpus=CORPUS)
    return out


@pytest.fixture(scope="module")
def copies(tmp_path_factory) -> Path:
    """The committed files, copied: opening a project may migrate it, never the committed one."""
    out = tmp_path_factory.mktemp("committed")
    for path in SAMPLES.glob("*.rwb"):
        shutil.copyfile(path, out / path.name)
    return out


@pytest.fixture
def open_store(copies):
    opened: list[Store] = []

    def opener(path_or_name) -> Store:
        if not isinstance(path_or_name, Path):
            assert (SAMPLES / f"{path_or_name}.rwb").is_file(), f"{path_or_name}.rwb is missing: run rwb samples"
            path_or_name = copies / f"{path_or_name}.rwb"
        store = Store.open(path_or_name)
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close_connection()


def rows(store: Store, sql: str, params: tuple = ()) -> list[dict]:
    return _sql.query(store, sql, params)


# ----- the test: regeneration gives the committed files ---------------------------------
@pytest.mark.parametrize("sample", [s.name for s in load_manifest(SAMPLES) if not s.corpus])
def test_regenerating_a_sample_gives_the_committed_file_row_for_row(rebuilt, sample):
    found = [str(d) for d, _ in zip(differences(SAMPLES / f"{sample}.rwb", rebuilt / f"{sample}.rwb"), range(10))]
    assert found == [], "\n".join(found)


def test_the_corpus_sample_is_rebuilt_the_same_and_is_not_committed(rebuilt, tmp_path):
    sample = next(s for s in load_manifest(SAMPLES) if s.corpus)
    if why := corpus_for(sample, CORPUS):
        pytest.skip(f"{sample.name}: {why}")
    again = build_all(tmp_path, folder=SAMPLES, corpus=CORPUS, names=[sample.name])[0].path
    assert same_content(rebuilt / sample.file_name, again)
    assert f"sample_runs/{sample.file_name}" in (REPO / ".gitignore").read_text().splitlines()


def test_the_committed_sample_files_are_small():
    sizes = {p.name: p.stat().st_size for p in SAMPLES.glob("*.rwb") if p.name != "arm-real-trace.rwb"}
    assert len(sizes) == 8, sizes
    # ground-truth.rwb (four batches of 10 runs, 460 calls) is about 1 MB of it, studies.rwb (three
    # studies: 22 runs and 6 re-classifications, about 560 calls) about 2 MB
    assert sum(sizes.values()) < 5_000_000, sizes


# ----- what each sample shows ----------------------------------------------------------------------
def test_rcp_tiers_has_every_tier_an_accelerator_a_mitigator_and_a_refinement_round(open_store):
    store = open_store("rcp-tiers")
    (run,) = rows(store, "SELECT * FROM runs")
    assert run["config_json"]["refinement_rounds"] == 1
    assert [c["name"] for c in run["config_json"]["clusters"]] == ["advocate", "critic"]
    assert all(len(c["agents"]) == 3 for c in run["config_json"]["clusters"])
    rounds = run["summary_json"]["rounds"]
    assert [r["round"] for r in rounds] == [1, 2]  # round 2 is the refinement round
    for r in rounds:
        tiers = Counter(s["tier"] for s in r["states"])
        assert set(tiers) == set(TIERS), tiers
        kinds = Counter(s["persuasion_kind"] for s in r["states"] if s["persuasion_kind"])
        assert kinds["accelerator"] >= 1 and kinds["mitigator"] >= 1, kinds
    # the refinement round's artifacts were written with round 1's consensus shown
    assert rows(store, "SELECT count(*) n FROM artifacts WHERE key LIKE 'r2-%'")[0]["n"] == 6


def test_rcp_weighted_has_three_weighted_clusters_and_a_reference_dissent(open_store):
    store = open_store("rcp-weighted")
    (run,) = rows(store, "SELECT * FROM runs")
    cfg = run["config_json"]
    assert cfg["weighted"] is True and len(cfg["clusters"]) == 3
    assert len({c.get("weight") or 1.0 for c in cfg["clusters"]}) > 1
    states = run["summary_json"]["rounds"][0]["states"]
    assert set(s["tier"] for s in states) == set(TIERS)
    dissent = [s for s in states if s["reference_dissent"]]
    assert dissent and all(s["tier"] == "positive_consensus" and cfg["reference"] not in s["approval_set"]
                           for s in dissent)


def test_arm_study_shows_the_gate_fap_the_rotating_baseline_and_contamination(open_store):
    store = open_store("arm-study")
    runs = rows(store, "SELECT * FROM runs ORDER BY rowid")
    batches = {r["batch_id"] for r in runs}
    assert len(batches) == 2 and None not in batches
    # a gamma flip caught by the polarity gate
    flips = rows(store, "SELECT * FROM traces WHERE role = 'gamma' AND round_no = 2 AND polarity_gate_fired = 1")
    assert flips and all(t["reconciliation_status"] == "gamma_flip_detected" for t in flips)
    # a FAP re-queue: a second, kept attempt of a round-2 trace
    assert rows(store, "SELECT count(*) n FROM traces WHERE round_no = 2 AND attempt > 1")[0]["n"] >= 1
    # the silent baseline's provider takes turns across the batch's runs
    silent = [rows(store, "SELECT provider FROM llm_calls WHERE run_id = ? AND step_key = 'r1/silent'",
                   (r["id"],))[0]["provider"] for r in runs]
    assert len(set(silent)) >= 3, silent
    # contaminated and clean runs, both present (the drift ROC's two classes)
    contaminated = [any(a.get("params", {}).get("contaminated") for c in r["config_json"]["clusters"]
                        for a in c["agents"]) for r in runs]
    assert True in contaminated and False in contaminated
    from workbench.core.project import drift

    every = drift.batch_drift(store, drift.ALL_RUNS)
    assert {run.contaminated for run in every.runs} == {True, False}


def test_findings_review_has_a_challenged_finding_resolved_by_a_person(open_store):
    from workbench.core.project import finding_review

    store = open_store("findings-review")
    resolved = finding_review.window(store, offset=0, limit=10, queue="resolved")
    assert resolved and all(r.status == "challenged" for r in resolved)
    assert resolved[0].decision == "reject" and resolved[0].decided_by == "reviewer" and resolved[0].decision_note
    assert finding_review.queue_counts(store)["confirmed"] >= 1


def test_cons_verdicts_has_each_verdict_with_its_conflicts_and_human_decisions(open_store):
    store = open_store("cons-verdicts")
    questions = {q["verdict"]: q["id"] for q in rows(store, "SELECT id, verdict FROM cons_questions")}
    assert set(questions) == {"PROVEN", "REFUTED", "CONTESTED", "INSUFFICIENT_EVIDENCE"}
    conflicts = Counter(c["question_id"] for c in rows(store, "SELECT question_id FROM cons_conflicts"))
    assert conflicts[questions["CONTESTED"]] >= 1 and conflicts[questions["REFUTED"]] >= 1
    escalations = rows(store, "SELECT * FROM cons_escalations")
    by_question = {e["question_id"] for e in escalations}
    assert {questions["CONTESTED"], questions["INSUFFICIENT_EVIDENCE"]} <= by_question
    assert all(e["status"] == "resolved" and e["decision"] and e["decided_by"] == "conductor" for e in escalations)
    from workbench.core.project.export import to_markdown

    for run in rows(store, "SELECT id FROM runs"):  # each question's report
        assert "Consensus Report" in to_markdown(store, run["id"])


def test_echo_truncation_detects_the_lost_marker_and_resumes_after_restoring(open_store):
    store = open_store("echo-truncation")
    (run,) = rows(store, "SELECT * FROM runs")
    c1 = next(a for c in run["config_json"]["clusters"] for a in c["agents"] if a["id"] == "c1")
    assert c1["params"]["overflow"] == "silent_truncation"
    failed = rows(store, "SELECT v.* FROM echo_verifications v JOIN echo_anchors a ON a.id = v.anchor_id "
                         "WHERE a.agent_id = 'c1' AND v.success = 0")
    assert failed and failed[0]["action"] == "restoration_triggered"
    steps = [r["step"] for r in rows(store, "SELECT step FROM echo_restorations WHERE agent_id = 'c1' ORDER BY id")]
    assert steps == ["log", "read_seed", "new_session", "inject", "verify", "resume"]


def test_studies_hold_rule_only_arms_protocols_compared_and_contamination(open_store):
    from workbench.services.runs.studies import report_of

    store = open_store("studies")
    theta, arithmetic, arm = (r["id"] for r in rows(store, "SELECT id FROM studies ORDER BY rowid"))
    reused = rows(store, "SELECT arm, count(*) AS n, sum(calls_reused) AS reused FROM study_results "
                         "WHERE study_id = ? AND variant_id IS NOT NULL GROUP BY arm ORDER BY arm", (theta,))
    assert [(r["arm"], r["n"], r["reused"]) for r in reused] == [("theta 0.67", 2, 72), ("theta 2/3", 2, 72)]
    assert rows(store, "SELECT count(*) AS n FROM runs WHERE study_id = ? AND arm LIKE 'theta%'", (theta,))[0]["n"] == 0
    compared = report_of(store, arithmetic)
    assert {c["arm"] for c in compared["comparisons"] if c["metric"] == "accuracy"} == {"vote", "debate", "rcp"}
    separations = report_of(store, arm)["separations"]
    assert [s["metric"] for s in separations] == ["drift_alpha", "drift_beta", "drift_gamma"]


def test_arm_real_trace_is_imported_with_audit_notes(rebuilt, open_store):
    sample = next(s for s in load_manifest(SAMPLES) if s.corpus)
    if why := corpus_for(sample, CORPUS):
        pytest.skip(f"{sample.name}: {why}")
    store = open_store(rebuilt / sample.file_name)
    (run,) = rows(store, "SELECT * FROM runs")
    assert run["source"] == "import" and run["provenance_json"]["source_file"].startswith("arm-v0.9-q201")
    notes = rows(store, "SELECT * FROM audit_notes WHERE record_kind = 'trace'")
    assert {n["verdict"] for n in notes} == {"ok", "suspect"} and all(n["run_id"] == run["id"] for n in notes)


# ----- the comparison ----------------------------------------------------------------------------
def _copy(src: Path, dest: Path) -> Path:
    shutil.copyfile(src, dest)
    return dest


def _edit(path: Path, sql: str, params: tuple = ()) -> None:
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.execute(sql, params)
    finally:
        conn.close()


def test_the_comparison_catches_a_changed_vote(tmp_path):
    left = _copy(SAMPLES / "rcp-tiers.rwb", tmp_path / "a.rwb")
    right = _copy(left, tmp_path / "b.rwb")
    assert same_content(left, right)
    _edit(right, "UPDATE votes SET value = 1 - value WHERE id = (SELECT min(id) FROM votes WHERE value IS NOT NULL)")
    found = list(differences(left, right))
    # the stored rows are compared (votes is a view over vote_rows since schema step 14)
    assert [(d.table, d.row, d.column) for d in found] == [("vote_rows", 1, "value")]
    assert str(found[0]).startswith("vote_rows row 1 column value: ")


def test_the_comparison_ignores_timestamps_run_ids_and_fence_tokens(tmp_path):
    left = _copy(SAMPLES / "cons-verdicts.rwb", tmp_path / "a.rwb")
    right = _copy(left, tmp_path / "b.rwb")
    _edit(right, "UPDATE runs SET started_at = '2031-01-02T03:04:05.678Z', finished_at = '2031-01-02T03:04:06Z'")
    _edit(right, "UPDATE cons_ballots SET created_at = '1999-12-31T23:59:59.000Z'")
    conn = sqlite3.connect(right)  # another run id, everywhere it appears (in CONS question ids too)
    with conn:
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table' "
                                             "AND name NOT LIKE 'sqlite_%'")]
        for table in tables:
            for column in [c[1] for c in conn.execute(f"PRAGMA table_info({table})") if c[2] == "TEXT"]:
                conn.execute(f"UPDATE {table} SET {column} = replace({column}, 'cons-verdicts-1', 'cons-19990101-x') "
                             f"WHERE instr({column}, 'cons-verdicts-1') > 0")
    conn.close()
    # a fresh fence name in a stored request (fence names come from a CSPRNG, never from the seed)
    conn = sqlite3.connect(right)
    with conn:
        call_id, request = conn.execute("SELECT id, request_json FROM llm_calls WHERE request_json LIKE '%FENCE-%' "
                                        "ORDER BY id LIMIT 1").fetchone()
        name = re.search(r"FENCE-[0-9A-F]{32}", request).group(0)
        conn.execute("UPDATE llm_calls SET request_json = ? WHERE id = ?",
                     (request.replace(name, "FENCE-" + "AB" * 16), call_id))
    conn.close()
    assert list(differences(left, right)) == []
    _edit(right, "UPDATE cons_questions SET verdict = 'CONTESTED' WHERE verdict = 'PROVEN'")
    assert [d.table for d in differences(left, right)] == ["cons_questions"]


def test_compact_keeps_the_content_and_shrinks_the_file(tmp_path):
    path = tmp_path / "p.rwb"
    Store.create(path).close_connection()
    before = path.stat().st_size
    copy = _copy(path, tmp_path / "q.rwb")
    compact(copy)
    assert copy.stat().st_size < before and same_content(path, copy)
    Store.open(copy).close_connection()  # still a project the workbench opens
