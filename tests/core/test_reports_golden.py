"""Every protocol's report, from a deterministic simulated run, equals its committed golden file.

The runs are the sample configurations with their fixed seeds and fixed run ids; dates are
replaced (tests/support/report_runs.py). After a deliberate change to a report, regenerate with
``RWB_UPDATE_GOLDEN=1 pytest tests/core/test_reports_golden.py`` and read the diff.
"""

from __future__ import annotations

import os

import pytest

from tests.support.report_runs import GOLDEN, RUNS, normalise, run_sample
from workbench.core.project.export import export_bytes, to_html, to_markdown
from workbench.core.project.store import Store

UPDATE = os.environ.get("RWB_UPDATE_GOLDEN") == "1"


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "golden.rwb")
    yield s
    s.close_connection()


def check(path, text: str) -> None:
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path}: run with RWB_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8"), f"{path.name} differs from its golden file"


@pytest.mark.parametrize("name", list(RUNS))
def test_each_protocols_report_equals_its_golden_file(store, monkeypatch, name):
    run_id = run_sample(store, name, monkeypatch)
    md = to_markdown(store, run_id)
    check(GOLDEN / f"{name}.md", normalise(md))
    # the export is the report, as UTF-8 ending in one newline
    assert export_bytes(store, run_id, "md") == (md if md.endswith("\n") else md + "\n").encode()
    if name == "rcp":
        check(GOLDEN / "rcp.html", normalise(to_html(store, run_id)))


def test_the_same_seed_gives_the_same_report_twice(store, monkeypatch, tmp_path):
    first = to_markdown(store, run_sample(store, "rcp", monkeypatch))
    other = Store.create(tmp_path / "again.rwb")
    try:
        second = to_markdown(other, run_sample(other, "rcp", monkeypatch))
    finally:
        other.close_connection()
    assert normalise(first) == normalise(second)


def test_report_header_says_simulated_models_seed_and_cost(store, monkeypatch):
    md = to_markdown(store, run_sample(store, "findings", monkeypatch))
    assert "**Simulated run.**" in md
    assert "- **Seed**: 3" in md and "- **Models**: the simulated panel" in md and "- **Cost**: $0.00" in md


def test_reports_round_numbers_and_use_labels(store, monkeypatch):
    md = to_markdown(store, run_sample(store, "findings", monkeypatch))
    assert "-0.2333" not in md and "-0.23" in md  # exact values stay in the JSONL
    assert "Challenged" in md and "consensus_score" not in md
    jsonl = export_bytes(store, "findings-golden", "jsonl").decode()
    assert "0.85" in jsonl or "confidence" in jsonl


def test_the_cons_report_has_the_seeds_report_and_its_manifest_entry(store, monkeypatch):
    import json

    md = to_markdown(store, run_sample(store, "cons", monkeypatch))
    assert "## Consensus Report:" in md and "### Voting Matrix" in md and "### Conflicts" in md
    entry = md.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert "\n" not in entry
    data = json.loads(entry)
    assert data["agent_type"] == "analysis" and data["status"] == "complete"
    assert set(data) == {"id", "file", "title", "date", "status", "agent_type", "topics", "key_findings",
                         "actionable", "needs_followup", "linked_tasks"}


def test_an_echo_wrapped_run_has_the_echo_section(store, monkeypatch):
    md = to_markdown(store, run_sample(store, "rcp-echo", monkeypatch))
    section = md.split("## Resonance Echo", 1)[1]
    assert "### Markers and checks per agent" in section and "### Failed checks" in section
    assert "### Restorations" in section and ": restored." in section
    assert "## Resonance Echo" not in to_markdown(store, run_sample(store, "rcp", monkeypatch))


def test_rcp_report_gives_the_guidance_for_each_tier(store, monkeypatch):
    md = to_markdown(store, run_sample(store, "rcp", monkeypatch))
    guidance = md.split("## What to do with the result (RCP guidance)", 1)[1]
    for tier in ("Positive consensus", "Positive polar", "Negative polar"):
        assert f"- **{tier}**" in guidance


def test_a_cons_escalation_shows_its_reason_and_the_human_decision(store, monkeypatch):
    from workbench.core.project.run_view import RunView
    from workbench.core.protocols.cons.declaration import report as section

    view = RunView(store, run_sample(store, "cons", monkeypatch))
    summary = view.summary
    escalated = {**summary["cons"], "escalations": [{"reason": "suspicious_unanimity", "detail": "all <b>agree</b>",
                                                      "action": "verify"}]}
    view.summary = {**summary, "cons": escalated}
    waiting = "\n".join(section(view))
    assert "## Human decision" in waiting and "**Suspicious unanimity**: all \\<b\\>agree\\</b\\>" in waiting
    assert "- **Decision**: none yet: a person must decide" in waiting
    view.summary = {**summary, "cons": {**escalated, "humanDecision": "Adopt it after a review"}}
    decided = "\n".join(section(view))
    assert "- **Decision**: Adopt it after a review" in decided


def test_an_artifact_nobody_could_vote_on_is_reported_unclassified_not_rejected(store):
    """SPEC §1 through a whole run: every voter's reply is unreadable ("Maybe."), so no vote is
    cast; the report gives no tier, no risk and no negative-consensus advice."""
    import json

    from tests.support.report_runs import SAMPLES
    from workbench.core.runs.config import parse_run_config
    from workbench.services.runs.runner import Runner

    cfg = json.loads((SAMPLES / "rcp-sim.json").read_text())
    for cluster in cfg["clusters"]:
        for agent in cluster["agents"]:
            agent["params"] = {**agent.get("params", {}), "malformed_rate": 1.0}
    runner = Runner(store)
    run_id = runner.create(parse_run_config(cfg))
    summary = runner.execute(run_id)
    states = summary["rounds"][-1]["states"]
    assert states and all(s["tier"] == "unclassified" and s["risk_if_acted_upon"] == "unknown" for s in states)
    md = to_markdown(store, run_id)
    assert "Negative consensus**" not in md.split("## What to do with the result", 1)[1]
    assert "- **Assessment**: not classified: no vote was cast on it." in md
    assert "- **Unclassified** (" in md and "nothing to act on" in md
