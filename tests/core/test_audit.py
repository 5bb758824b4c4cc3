"""Audit notes (core.project.audit): a verdict and a note on any record, kept in the project file,
the newest standing, undone by deleting, and exported with the run (jsonl, csv, md)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tests.core.test_records import RCP_SAMPLE
from workbench.core.errors import InputError
from workbench.core.project import audit, export
from workbench.core.project.records import RecordFilter, count
from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config
from workbench.services.runs.runner import Runner


@pytest.fixture
def run(project):
    runner = Runner(project)
    run_id = runner.create(parse_run_config(json.loads(RCP_SAMPLE.read_text())))
    runner.execute(run_id)
    return run_id


def first(store, sql: str, params=()) -> object:
    return store._connection().execute(sql, params).fetchone()[0]


def test_a_note_is_kept_with_its_record_and_the_newest_verdict_stands(project, run):
    vote = first(project, "SELECT min(id) FROM votes")
    note_id, changes = audit.add_note(project, "vote", vote, "suspect", "reads like an echo", author="ada")
    assert changes.touches("audit_notes") and run in changes.runs
    assert audit.verdict_of(project, "vote", vote) == "suspect"
    second, _ = audit.add_note(project, "vote", vote, "ok", "checked the raw reply", author="bob")
    assert audit.verdict_of(project, "vote", vote) == "ok"
    notes = audit.notes_for(project, "vote", vote)
    assert [(n.id, n.verdict, n.author, n.run_id) for n in notes] == [(second, "ok", "bob", run),
                                                                      (note_id, "suspect", "ada", run)]
    assert audit.verdict_counts(project) == {"ok": 1, "suspect": 0, "wrong": 0}
    assert count(project, RecordFilter(audit="ok")) == 1 and count(project, RecordFilter(audit="suspect")) == 0


def test_undo_deletes_the_note_and_redo_puts_it_back(project, run):
    call = first(project, "SELECT min(id) FROM llm_calls")
    note_id, _ = audit.add_note(project, "call", call, "wrong", "the fence was broken")
    kept = audit.note(project, note_id)
    audit.delete_note(project, note_id)
    assert audit.notes_for(project, "call", call) == []
    audit.restore_note(project, kept)
    assert audit.notes_for(project, "call", call) == [kept]


def test_notes_survive_closing_and_reopening(project, run, tmp_path):
    trace_less = first(project, "SELECT min(id) FROM artifacts")
    audit.add_note(project, "artifact", trace_less, "ok", "fine", author="ada")
    project.close_connection()
    reopened = Store.open(project.path)
    try:
        assert [n.note for n in audit.notes_for(reopened, "artifact", trace_less)] == ["fine"]
    finally:
        reopened.close_connection()


@pytest.mark.parametrize("kind, record, verdict, field", [
    ("vote", 1, "maybe", "verdict"), ("run", 1, "ok", "record_kind"), ("banana", 1, "ok", "record_kind"),
    ("vote", 10**9, "ok", "record"), ("call", "not-a-number", "ok", "record"), ("finding", "nope", "ok", "record")])
def test_bad_notes_are_refused_and_nothing_is_written(project, run, kind, record, verdict, field):
    with pytest.raises(InputError) as err:
        audit.add_note(project, kind, record, verdict, "x")
    assert err.value.field == field
    assert first(project, "SELECT count(*) FROM audit_notes") == 0


def test_notes_are_exported_with_their_run(project, run):
    vote = first(project, "SELECT min(id) FROM votes")
    call = first(project, "SELECT min(id) FROM llm_calls")
    audit.add_note(project, "vote", vote, "wrong", "the voter | quoted the prompt", author="ada")
    audit.add_note(project, "call", call, "ok", "", author="bob")
    lines = [json.loads(line) for line in export.to_jsonl(project, run).splitlines()]
    notes = [r for r in lines if r["kind"] == "audit"]
    assert [(n["record_kind"], n["record_id"], n["verdict"], n["note"], n["author"]) for n in notes] == [
        ("vote", str(vote), "wrong", "the voter | quoted the prompt", "ada"), ("call", str(call), "ok", "", "bob")]
    assert all(n["simulated"] is True for n in notes)
    audited = [r for r in lines if "audit" in r]
    assert sorted(r["kind"] for r in audited) == ["call", "vote"]
    rows = list(csv.DictReader(io.StringIO(export.to_csv(project, run))))
    assert "audit" in rows[0]
    assert sorted(r["audit"] for r in rows if r["audit"]) == ["ok", "wrong"]
    assert sum(r["kind"] == "audit" for r in rows) == 2
    md = export.to_markdown(project, run)
    assert "## Auditors' notes" in md  # the report's own section, with labels and escaped cells
    [row] = [line for line in md.splitlines() if line.startswith(f"| vote {vote} |")]
    assert "| Wrong |" in row and "| the voter \\| quoted the prompt | ada |" in row


def test_a_run_without_notes_exports_as_before(project, run):
    lines = [json.loads(line) for line in export.to_jsonl(project, run).splitlines()]
    assert not any(r["kind"] == "audit" or "audit" in r for r in lines)
    assert "## Audit" not in export.to_markdown(project, run)
