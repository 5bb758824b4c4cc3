"""Runs you can tell apart (issue 26): a batch run keeps its configured label with its position,
call numbers start at 1 in each run, and every list of runs reads them from one query."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.core.project import calls, drift, runs
from workbench.core.project.store import Store
from workbench.core.runs.batch import expand_batch
from workbench.core.runs.config import parse_run_config
from workbench.services.runs.batches import create_batch
from workbench.services.runs.runner import Runner

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"


def sample(name: str) -> dict:
    return json.loads((SAMPLES / name).read_text())


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "names.rwb")
    yield s
    s.close_connection()


def test_batch_runs_keep_their_configured_label_with_their_position(store):
    doc = {**sample("rcp-sim.json"), "label": "Downtown study",
           "batch": {"questions": ["Q one?", "Q two?"], "replicates": 2}}
    _, planned = expand_batch(doc)
    assert [r.label for r in planned] == [
        "Downtown study · Q1 · as configured · rep 1", "Downtown study · Q1 · as configured · rep 2",
        "Downtown study · Q2 · as configured · rep 1", "Downtown study · Q2 · as configured · rep 2"]
    assert all(r.config.label == "Downtown study" for r in planned)  # never overwritten
    # Without a label, the batch's name; without either, the position alone.
    named = {**doc, "label": "", "batch": {**doc["batch"], "name": "Sweep"}}
    assert expand_batch(named)[1][0].label == "Sweep · Q1 · as configured · rep 1"
    bare = {k: v for k, v in doc.items() if k != "label"}
    assert expand_batch(bare)[1][0].label == "Q1 · as configured · rep 1"
    # As stored: the label, the batch and the replicate, through the one list query.
    batch_id, ids = create_batch(store, doc, Runner(store))
    listed = {r.id: r for r in runs.run_list(store)}
    assert [listed[i].label for i in ids] == [r.label for r in planned]
    assert {listed[i].batch_id for i in ids} == {batch_id} and [listed[i].replicate for i in ids] == [0, 1, 0, 1]


def test_an_arm_batch_runs_mix_is_still_read_from_its_label(store):
    doc = {**sample("arm-sim.json"), "label": "Mesh study",
           "batch": {"provider_mixes": [{"name": "all-sim", "providers": {"*": "sim"}}], "replicates": 1}}
    _, ids = create_batch(store, doc, Runner(store))
    run = runs.get_run(store, ids[0])
    assert run.label == "Mesh study · Q1 · all-sim · rep 1"
    assert drift._mix_and_question({"label": run.label, "config_json": run.config})[0] == "all-sim"


def test_call_numbers_start_at_one_in_every_run(store):
    events: list = []
    runner = Runner(store, on_call=lambda e: events.append(e) if e.kind == "finished" else None)
    first = runner.create(parse_run_config(sample("rcp-sim.json")))
    runner.execute(first)
    events.clear()
    second = runner.create(parse_run_config(sample("rcp-sim.json")))
    runner.execute(second)
    log = calls.run_log(store, second)
    assert log[0].id > len(calls.run_log(store, first))  # the record ids count across the project...
    assert [c.n for c in log] == list(range(1, len(log) + 1))  # ... the numbers shown, within the run
    # Live, each call's number is the one the log gives it once read.
    assert sorted(e.ordinal for e in events) == [c.n for c in log]
    assert {e.call_id: e.ordinal for e in events} == {c.id: c.n for c in log}


def test_every_list_of_runs_reads_the_same_fields(store):
    runner = Runner(store)
    rcp = runner.create(parse_run_config(sample("rcp-sim.json")))
    runner.execute(rcp)
    from workbench.core.project import echo_view, quadrant

    [row] = quadrant.rcp_runs(store)
    assert isinstance(row, runs.RunListRow) and row.artifacts > 0
    assert (row.label, row.protocol, row.status) == ("Downtown cars (simulated)", "rcp", "completed")
    assert row.started_at == runs.run_list(store)[0].started_at
    assert echo_view.echo_runs(store) == [] and drift.arm_runs(store) == []


def test_a_run_is_named_by_label_protocol_status_and_start_time():
    from datetime import date, datetime

    from workbench.ui.widgets.run_names import run_title, run_titles, started_text

    stamp = "2026-11-27T14:02:11.123Z"
    local = datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone()
    row = runs.RunListRow("rcp-20261127-140211-0a11e2", "rcp", "Downtown cars", "completed", True, stamp,
                          None, 36, 0, 0)
    assert run_title(row) == f"Downtown cars · RCP · ✓ completed · {started_text(stamp)} · SIM"
    assert started_text(stamp, today=local.date()) == f"{local:%H:%M:%S}"  # today: the time alone
    assert started_text(stamp, today=date(2000, 1, 1)) == f"{local:%d %b %H:%M:%S}"  # another day: the day too
    assert run_title({**row.__dict__, "label": ""}, status=False, sim=False).startswith("(no label) · RCP · ")
    twin = runs.RunListRow("rcp-20261127-140211-ffffff", *list(row.__dict__.values())[1:10])
    first, second = run_titles([row, twin])
    assert first != second and first.endswith("…0a11e2") and second.endswith("…ffffff")
