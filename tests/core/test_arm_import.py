"""ARM traces into a project and back: nothing in the source is lost."""

from __future__ import annotations

import json

import pytest

from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project.arm_import import export_arm_run, import_arm_file
from workbench.core.project.store import Store
from workbench.core.project.trace_columns import trace_from_columns, trace_source
from workbench.core.protocols.arm import parse_trace, trace_to_upstream


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "arm.rwb")
    yield s
    s.close_connection()


def corpus_files(corpus_dir):
    files = sorted((corpus_dir / "traces").glob("*.json"))
    assert len(files) == 15
    return files


def test_every_corpus_file_exports_back_exactly(store, corpus_dir):
    for path in corpus_files(corpus_dir):
        result = import_arm_file(store, path)
        original = json.loads(path.read_text(encoding="utf-8"))
        exported = export_arm_run(store, result.run_id)
        # Same values, same key order, all the way down.
        assert json.dumps(exported, ensure_ascii=False) == json.dumps(original, ensure_ascii=False), path.name


def same_keys_everywhere(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same_keys_everywhere(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_keys_everywhere(x, y) for x, y in zip(a, b))
    return True


def test_the_columns_alone_rebuild_every_field_of_every_corpus_trace(store, corpus_dir):
    originals = {}
    for path in corpus_files(corpus_dir):
        originals[import_arm_file(store, path).run_id] = json.loads(path.read_text(encoding="utf-8"))
    rows = _sql.rows(store, "traces")
    assert len(rows) >= 15 * 6
    for row in rows:
        original = originals[row["run_id"]][f"r{row['round_no']}"][row["role"]]
        rebuilt = trace_to_upstream(parse_trace(trace_from_columns(row)))
        where = (row["run_id"], row["round_no"], row["role"])
        # JSON numbers: a REAL column gives 0.0 back for ARM's 0, which is the same JSON number.
        assert rebuilt == original, where
        assert same_keys_everywhere(rebuilt, original), where


def test_a_trace_s_source_is_stored_only_where_its_columns_cannot_give_it_back_exactly(store, corpus_dir):
    """SPEC §10, each text once: the copy in source_json is kept only for a trace whose columns
    rebuild it with a difference in its text (a whole number where the column keeps a real);
    every trace reads back as it was written either way."""
    originals = {}
    for path in corpus_files(corpus_dir):
        originals[import_arm_file(store, path).run_id] = json.loads(path.read_text(encoding="utf-8"))
    rows = _sql.rows(store, "traces")
    rebuilt = [r for r in rows if r["source_rebuilt"]]
    kept = [r for r in rows if not r["source_rebuilt"]]
    assert all(r["source_json"] is None for r in rebuilt) and all(r["source_json"] is not None for r in kept)
    assert len(rebuilt) >= 0.9 * len(rows), (len(rebuilt), len(rows))
    for row in rows:
        original = originals[row["run_id"]][f"r{row['round_no']}"][row["role"]]
        assert json.dumps(trace_source(row), ensure_ascii=False) == json.dumps(original, ensure_ascii=False)
    for row in kept:  # kept for a reason: the rebuild's text differs
        assert json.dumps(trace_from_columns(row)) != json.dumps(row["source_json"])


def test_columns_hold_the_fields_an_auditor_queries(store, corpus_dir):
    path = corpus_dir / "traces" / "arm-v071FAP-test-010Gamma_Flip_Detected__Drift_Catchable__Polarity_Gate_Override__Values_Disagreement.json"
    run_id = import_arm_file(store, path).run_id
    gamma = _sql.rows(store, "traces", "run_id = ? AND round_no = 2 AND role = 'gamma'", (run_id,))[0]
    assert gamma["reconciliation_status"] == "gamma_flip_detected"
    assert gamma["polarity_gate_fired"] == 1
    assert gamma["disagreement_classification"] == "values"
    assert gamma["self_check_json"]["status"] == "warning"
    assert gamma["provider"] and gamma["claim"]
    run = _sql.get(store, "runs", run_id)
    assert run["source"] == "import" and run["status"] == "completed" and run["protocol"] == "arm"
    assert run["provenance_json"]["source_file"] == path.name
    assert run["provenance_json"]["schema_version"] == "legacy"
    report = run["summary_json"]
    assert report["polarity_gate"]["fired"] is True
    assert all(c["match"] or c["note"] for c in report["stored"])


def test_failed_legacy_traces_are_kept_and_marked(store, corpus_dir):
    run_id = import_arm_file(store, corpus_dir / "traces" / "arm-v06-run-1778083372998.json").run_id
    failed = _sql.rows(store, "traces", "run_id = ? AND ok = 0", (run_id,))
    assert len(failed) == 2 and all(r["claim"] == "[PARSE FAILED]" for r in failed)
    assert all(r["raw_reasoning_attempt"] for r in failed)


def test_importing_the_same_file_twice_adds_nothing(store, corpus_dir):
    path = corpus_files(corpus_dir)[0]
    first = import_arm_file(store, path)
    again = import_arm_file(store, path)
    assert again.already_imported and again.run_id == first.run_id
    assert _sql.count(store, "runs") == 1 and _sql.count(store, "traces") == first.traces


def test_values_that_do_not_fit_their_column_are_kept_verbatim(store):
    # A self-reported delta may be a numeric string (ARM reads those): it fits no REAL column.
    trace = {"claim": "Yes.", "confidence": 0.8, "self_delta_vs_baseline": "−0.05", "_ok": True, "new_field": [1]}
    data = {"r1": {"alpha": trace, "beta": {"claim": "No.", "confidence": 0.5}}}
    (store.path.parent / "odd.json").write_text(json.dumps(data))
    run_id = import_arm_file(store, store.path.parent / "odd.json").run_id
    row = _sql.rows(store, "traces", "run_id = ? AND role = 'alpha'", (run_id,))[0]
    assert row["self_delta_vs_baseline"] is None and row["extra_json"]["self_delta_vs_baseline"] == "−0.05"
    assert trace_from_columns(row) == trace
    assert export_arm_run(store, run_id) == data


def test_a_field_of_the_wrong_type_is_refused_with_its_path(store):
    trace = {"claim": "Yes.", "confidence": "0.8", "_ok": True}
    (store.path.parent / "odd.json").write_text(json.dumps({"r1": {"alpha": trace}}))
    with pytest.raises(InputError, match=r'^r1\.alpha\.confidence: must be a number, got "0\.8"$'):
        import_arm_file(store, store.path.parent / "odd.json")
    assert _sql.count(store, "runs") == 0


@pytest.mark.parametrize("content, message", [("not json", "not valid JSON"), ('{"a": 1}', "expected a JSON object with 'r1'")])
def test_a_file_that_is_not_an_arm_trace_is_refused_clearly(store, tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        import_arm_file(store, path)
    assert _sql.count(store, "runs") == 0
