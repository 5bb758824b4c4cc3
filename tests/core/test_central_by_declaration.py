"""Central code reads a protocol through its declaration, never its name (SPEC §7): a protocol
the workbench has never heard of (declared here, registered for the test) gets its run stored,
its votes counted by its declared unit, its report section, its records exported, and the
project's settings only when its config has them.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from workbench.core import registry
from workbench.core.project import runs
from workbench.core.project.export import to_jsonl
from workbench.core.project.panel_edits import project_keys
from workbench.core.project.record_detail import run_sides
from workbench.core.project.run_records import CallRecord, record_calls
from workbench.core.project.run_report import to_markdown
from workbench.core.project.store import Store
from workbench.core.project.validity import degraded_reason, run_validity
from workbench.core.protocols.shared.declaration import Protocol, Record, ValidityUnit
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Reading


def _report(view) -> list[str]:
    critiques = view.records("critique")
    return ["## Critiques", "", *(f"- {c['agent']} on {c['key']}: {c['data'].get('text', '—')}" for c in critiques), ""]


TOY = Protocol(name="toy", title="Toy critique protocol", version="0.1", package="workbench.core.protocols.shared",
               summary="Agents critique each other.", steps=(),
               validity=ValidityUnit("critique", "critiques", step_kind="critique"), report=_report)


@pytest.fixture
def toy(monkeypatch):
    found, failures = registry._load()
    monkeypatch.setattr(registry, "_loaded", ({**found, "toy": TOY}, failures))
    return TOY


def _critique(key: str, agent: str, data: dict | None, *, error: str | None = None) -> CallRecord:
    call = AgentCall(key, agent, "critique", ({"role": "user", "content": "Critique it."},),
                     meta={"protocol": "toy", "step": "critique"})
    records = () if data is None else (Record("critique", {"key": key, "agent": agent, "data": data}),)
    valid = None if error else data is not None and data.get("valid", True) is not False
    reply = AgentReply(key, None if error else "text", error, {}, Reading(data, valid, records, None))
    gateway = {"status": "error", "error_kind": "timeout"} if error else {"status": "ok"}
    return CallRecord(call, reply, "sim", True, gateway)


def test_a_protocol_known_only_by_its_declaration_is_stored_counted_reported_and_exported(tmp_path, toy):
    store = Store.create(tmp_path / "p.rwb")
    runs.create_run(store, run_id="toy-1", protocol="toy", label="four critiques", config={"query": "Q?"}, seed=1,
                    dispatch="concurrent", simulated=True)  # schema v9 takes any protocol's name
    cfg = SimpleNamespace(protocol="toy")
    record_calls(store, "toy-1", None, [
        _critique("c1", "a1", {"text": "too vague"}),
        _critique("c2", "a2", {"text": "no view", "abstained": True}),
        _critique("c3", "a3", {"valid": False, "problem": "no critique given"}),
        _critique("c4", "a4", None, error="timed out"),
    ], cfg)

    v = run_validity(store, "toy-1", "toy")
    assert (v.expected, v.cast, v.abstained, v.invalid, v.failed) == (4, 1, 1, 1, 1)
    assert degraded_reason(v, SimpleNamespace(protocol="toy", max_missing_share=0.2)).startswith(
        "50% of the expected critiques are missing (2 of 4")

    report = to_markdown(store, "toy-1")
    assert report.startswith("# Toy critique protocol: four critiques")
    assert "## Critiques\n\n- a1 on c1: too vague\n- a2 on c2: no view\n" in report

    exported = [json.loads(line) for line in to_jsonl(store, "toy-1").splitlines()]
    kept = [r for r in exported if r["kind"] == "protocol_record"]
    assert [(r["record_kind"], r["key"], r["protocol"]) for r in kept] == [
        ("critique", key, "toy") for key in ("c1", "c2", "c3")]
    assert all(r["simulated"] for r in kept)

    assert [s.kind for s in run_sides(store, "toy-1")] == ["call"] * 4  # no record kind of its own to align


def test_a_protocol_no_longer_installed_still_reads(tmp_path, toy, monkeypatch):
    store = Store.create(tmp_path / "p.rwb")
    runs.create_run(store, run_id="toy-1", protocol="toy", label="kept", config={}, seed=1, dispatch="concurrent",
                    simulated=True)
    found, failures = registry._load()
    monkeypatch.setattr(registry, "_loaded", ({k: p for k, p in found.items() if k != "toy"}, failures))
    assert run_validity(store, "toy-1", "toy").expected == 0
    assert to_markdown(store, "toy-1").startswith("# toy: kept")  # its name, no section


def test_the_projects_settings_go_to_the_protocols_whose_config_has_them():
    # (no toy here: the run-config models are built once per process, from the registry as it is)
    assert project_keys("rcp") == ("tau", "theta", "weighted")
    assert project_keys("arm") == project_keys("findings") == project_keys("cons") == ()
    assert project_keys("nonesuch") == project_keys(None) == project_keys(["rcp"]) == ()
