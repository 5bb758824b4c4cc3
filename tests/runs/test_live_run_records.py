"""The project functions behind Live Run, without Qt: a call read whole (its fenced request, reply,
raw body, tokens, cost), the runner's call events, a CONS escalation as its conductor sees it
(judged again from the ballots while the run waits, read back once it has finished) and the
human's decision, and saved run configurations."""

from __future__ import annotations

import pytest

from workbench.core.errors import InputError
from workbench.core.project import _sql, calls, escalations, panel, run_configs
from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config
from workbench.core.runs.templates import TEMPLATES
from workbench.services.runs.agents import DecisionsFile
from workbench.services.runs.runner import Runner


def cons_config():
    """Five simulated agents, three leaning one way and two the other, no challenge round: contested."""
    def agents(prefix: str, stance: float, n: int) -> list[dict]:
        return [{"id": f"{prefix}{i}", "provider": "sim",
                 "params": {"stance": stance, "strictness": 0.2, "sycophancy": 0.0}} for i in range(1, n + 1)]
    return parse_run_config({
        "protocol": "cons", "seed": 0, "max_challenge_rounds": 0,
        "query": "Which caching strategy should the API gateway use for product data?",
        "options": ["Write-through", "Cache-aside with TTL"], "providers": {"sim": {"model": "sim"}},
        "clusters": [{"name": "panel", "agents": agents("w", 0.95, 3) + agents("c", 0.05, 2)}]})


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "p.rwb")
    yield s
    s.close_connection()


def test_call_events_and_the_call_detail_match_what_was_stored(store):
    events = []
    runner = Runner(store, on_call=events.append)
    run_id = runner.create(parse_run_config(TEMPLATES["rcp-advocate-critic"].run_config()))
    summary = runner.execute(run_id)
    started = [e for e in events if e.kind == "started"]
    finished = [e for e in events if e.kind == "finished"]
    assert len(started) == len(finished) == summary["calls"] == 36
    assert {e.key for e in started} == {e.key for e in finished}
    assert {e.phase for e in started} == {"Round 1: generate", "Round 1: vote"}
    vote = next(e for e in finished if e.purpose == "vote")
    detail = calls.call_detail(store, vote.call_id)
    assert (detail.status, detail.latency_ms, detail.cost_usd, detail.cost_source, detail.attempts) == (
        vote.status, vote.latency_ms, vote.cost_usd, vote.cost_source, vote.attempts)
    assert vote.tokens == detail.prompt_tokens + detail.completion_tokens and vote.model == "sim"
    delimiter = detail.fence["delimiter"]
    text = "\n".join(m["content"] for m in detail.messages)
    assert f"<<<{delimiter}>>>" in text and f"<<<END-{delimiter}>>>" in text
    assert detail.reply_text and detail.simulated and detail.response_raw is None
    logged = calls.run_log(store, run_id)
    assert [c.id for c in logged] == sorted(e.call_id for e in finished)
    assert all(c.cost_usd == 0.0 and c.cost_source == "simulated" and c.tokens for c in logged)
    assert calls.call_detail(store, 10_000) is None


def test_an_escalation_is_judged_from_the_ballots_while_waiting_then_read_back_and_decided(store):
    runner = Runner(store, manual=DecisionsFile({}))
    run_id = runner.create(cons_config())
    assert runner.execute(run_id)["waiting_for_human"] is True
    waiting = escalations.escalation_view(store, run_id)
    assert not waiting.stored and waiting.verdict == "CONTESTED" and waiting.open
    assert [e.reason for e in waiting.escalations] == ["contested_verdict"]
    [conflict] = waiting.conflicts
    assert conflict.conflict_type == "priority-difference" and conflict.severity == "high"
    assert sum(len(v) for v in waiting.sides().values()) == 5 and len(waiting.sides()) == 2
    text = escalations.decision_text(waiting, "override", "Write-through", "Ops can run only one.")
    assert text.startswith("OVERRIDE the CONTESTED verdict: adopt 'Write-through'. Reason: Ops can run only one.")

    with pytest.raises(InputError, match="no stored escalation"):  # the run has not stored its outcome yet
        escalations.record_decision(store, run_id, choice="accept", option=waiting.leading_option, reason="")
    Runner(store, manual=DecisionsFile({"*": text})).execute(run_id)
    done = escalations.escalation_view(store, run_id)
    assert done.stored and done.verdict == "CONTESTED" and not done.open
    assert [c.id for c in done.conflicts] == [conflict.id]  # the same conflict the conductor was shown
    assert done.leading_option == waiting.leading_option and done.escalations[0].decision == text

    with pytest.raises(InputError, match="an override needs a reason"):
        escalations.record_decision(store, run_id, choice="override", option="Write-through", reason=" ")
    with pytest.raises(InputError, match="decision: must be"):
        escalations.record_decision(store, run_id, choice="maybe", option=None, reason="")
    changes = escalations.record_decision(store, run_id, choice="override", option="Write-through",
                                          reason="Ops can run only one.")
    assert "cons_escalations" in changes.tables and run_id in changes.runs
    [e] = escalations.escalation_view(store, run_id).escalations
    assert (e.decision, e.decided_by, e.decision_note, e.status) == (
        "override: Write-through", "conductor", "Ops can run only one.", "resolved") and e.resolved_at
    assert escalations.escalation_view(store, "no-such-run") is None


def test_saved_configurations_round_trip_and_new_ones_come_from_the_panel(store):
    doc = TEMPLATES["findings-crew"].run_config()
    config_id, changes = run_configs.save_config(store, "Crew", doc)
    assert "protocol_configs" in changes.tables
    assert run_configs.saved_config_document(store, config_id) == {**doc, "label": doc.get("label", "Crew")}
    again, _ = run_configs.save_config(store, "Crew", {**doc, "threshold": 0.5})  # same name: replaced
    assert again == config_id and run_configs.saved_config_document(store, config_id)["threshold"] == 0.5
    with pytest.raises(InputError, match="needs a name"):
        run_configs.save_config(store, "  ", doc)
    with pytest.raises(InputError, match="protocol"):
        run_configs.save_config(store, "x", {**doc, "protocol": "nope"})
    fresh = run_configs.panel_config(store, "cons", query="Q?", seed=3)
    assert fresh == {"protocol": "cons", "query": "Q?", "seed": 3, "providers": {}, "clusters": []}
    assert run_configs.batch_ids(store, ["a", "b"]) == {}


def test_tau_theta_and_weighting_are_the_projects_in_one_place(store):
    """A saved RCP configuration follows the project's settings (Clusters & Agents), whatever it
    was saved with; a document from elsewhere keeps its own until it is saved in the project."""
    from workbench.core.project import panel_edits
    from workbench.core.project.panel import run_config_from_project

    doc = TEMPLATES["rcp-advocate-critic"].run_config()
    panel_edits.apply_run_config(store, {**doc, "tau": 0.6}, save_as="Template")
    [saved] = [c for c in panel.saved_configs(store) if c.name == "Template"]
    assert "tau" not in _sql.get(store, "protocol_configs", saved.id)["config_json"]  # the project holds it
    panel_edits.set_tau(store, 0.7)
    panel_edits.set_theta(store, 0.55)
    assert run_configs.saved_config_document(store, saved.id)["tau"] == 0.7
    cfg = run_config_from_project(store, saved.id)
    assert (cfg.tau, cfg.theta) == (0.7, 0.55)
    assert run_configs.panel_config(store, "rcp")["tau"] == 0.7
    # Saved from a file that set its own tau: in the project, the project's applies.
    config_id, _ = run_configs.save_config(store, "From a file", {**doc, "tau": 0.9, "theta": 0.8})
    assert "tau" not in _sql.get(store, "protocol_configs", config_id)["config_json"]
    assert run_configs.saved_config_document(store, config_id)["tau"] == 0.7
    # Another protocol has no tau: nothing is added to it.
    assert "tau" not in run_configs.panel_config(store, "cons", query="Q?")
