"""CONS questions as the Findings & Reports panel reads them (core.project.cons_view), the what-if
from the stored ballots, and the human review of findings (core.project.finding_review)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.core.errors import InputError
from workbench.core.project import cons_view, finding_review
from workbench.core.project.findings import FindingsStore
from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config
from workbench.services.runs.runner import Runner

REPO = Path(__file__).resolve().parents[2]
CONS_SAMPLE = REPO / "sample_runs" / "cons-sim.json"


def run_sample(store: Store, path: Path = CONS_SAMPLE) -> str:
    runner = Runner(store)
    run_id = runner.create(parse_run_config(json.loads(path.read_text())))
    assert runner.execute(run_id)["status"] == "completed"
    return run_id


@pytest.fixture
def cons_project(tmp_path):
    store = Store.create(tmp_path / "cons.rwb")
    run_id = run_sample(store)
    yield store, run_id
    store.close_connection()


def test_a_stored_question_has_every_ballot_its_thresholds_and_its_conflicts(cons_project):
    store, run_id = cons_project
    [row] = cons_view.questions(store)
    assert row.run_id == run_id and row.label == "CONS-001" and row.ballots == 5
    detail = cons_view.question_detail(store, row.id)
    assert detail.thresholds == cons_view.Thresholds(consensus=0.8, count=0.8, min_voters=3, max_rounds=2)
    assert detail.agents() == ("r1", "r2", "r3", "r4", "r5")
    assert detail.columns() == ("single file", "split per module")
    assert len(detail.ballots) == row.ballots and all(b.standing for b in detail.ballots)
    assert all(b.rationale and b.confidence is not None for b in detail.ballots)
    assert detail.verdict == "PROVEN" and detail.conflicts  # one agent accepts the other option
    assert {p.position for p in detail.conflicts[0].positions} == {"accept single file", "accept split per module"}


def test_the_what_if_at_the_questions_own_thresholds_gives_its_stored_verdict(cons_project):
    store, _ = cons_project
    [change] = cons_view.what_if_all(store)
    assert change.before.verdict == change.after.verdict == "PROVEN" and not change.changed


def test_raising_the_thresholds_changes_the_verdict_without_a_model_call(cons_project):
    store, _ = cons_project
    # 4 of 5 accept (0.8) with actualConsensus 0.809: at 0.9 / 0.9 neither threshold is reached,
    # and the stored opening round is all there is: the run would have asked a challenge round.
    [change] = cons_view.what_if_all(store, consensus=0.9, count=0.9)
    assert change.changed and change.before.verdict == "PROVEN" and change.after.verdict == cons_view.UNDECIDED
    assert "challenge round 1 of 2 is next" in change.after.reason
    # Only one of the two thresholds moved: the other still proves it.
    assert not cons_view.what_if_all(store, consensus=0.9)[0].changed
    [fewer] = cons_view.what_if_all(store, min_voters=6)
    assert fewer.after.verdict == "INSUFFICIENT_EVIDENCE"


def test_the_what_if_replays_challenge_rounds_and_stops_at_the_first_verdict(cons_project):
    store, _ = cons_project
    detail = cons_view.question_detail(store, cons_view.questions(store)[0].id)
    # A later round in which r4 comes round: judged only when the opening round had no verdict.
    extra = cons_view.BallotCell(999, "r4", 1, "single file", "accept", 0.9, "convinced",
                                 ({"type": "code", "file": "map.py"},), "valid", None, True)
    moved = type(detail)(**{**detail.__dict__, "ballots": detail.ballots + (extra,)})
    strict = cons_view.Thresholds(consensus=0.9, count=0.9, min_voters=3, max_rounds=2)
    result = cons_view.what_if(moved, strict)
    assert result.verdict == "PROVEN" and result.rounds_used == 1
    assert cons_view.what_if(moved).rounds_used == 0  # at 0.8 the opening round decided


# ----- findings review ---------------------------------------------------------------------------
@pytest.fixture
def findings(tmp_path):
    store = Store.create(tmp_path / "f.rwb")
    book = FindingsStore(store)
    book.create_finding("commit e8f2a91 implements OAuth2 login", finding_id="f1")
    for agent, vote, confidence in (("scout", "confirm", 0.85), ("auditor", "challenge", 0.65), ("dev", "confirm", 0.95)):
        book.submit_vote("f1", agent, vote, confidence, "looked", client="gui")
    book.create_finding("The Pro plan costs $19/month", finding_id="f2")
    book.submit_vote("f2", "scout", "confirm", 0.9, client="claude-code")
    yield store, book
    store.close_connection()


def test_a_decision_moves_a_challenged_finding_to_resolved_and_a_later_vote_reopens_it(findings):
    store, book = findings
    assert finding_review.queue_counts(store) == {"all": 2, "challenged": 1, "pending": 0, "confirmed": 1,
                                                  "resolved": 0}
    with pytest.raises(InputError, match="needs a reason"):
        finding_review.decide(store, "f1", "reject", "  ")
    changes = finding_review.decide(store, "f1", "reject", "the auditor found the commit reverted")
    assert changes.touches("audit_notes")
    row = finding_review.row(store, "f1")
    assert row.resolved and row.decision == "reject" and row.decision_note == "the auditor found the commit reverted"
    assert [r.id for r in finding_review.window(store, offset=0, limit=10, queue="resolved")] == ["f1"]
    assert finding_review.count(store, queue="challenged") == 0
    book.submit_vote("f1", "scout", "confirm", 0.4, client="gui")  # new evidence: back to review
    assert not finding_review.row(store, "f1").resolved
    assert [r.id for r in finding_review.window(store, offset=0, limit=10, queue="challenged")] == ["f1"]


def test_a_vote_in_the_decisions_own_millisecond_still_reopens_the_finding(findings, monkeypatch):
    # Timestamps step by 1 ms: a frozen clock puts the decision and the vote in the same step.
    from workbench.core.project import audit
    from workbench.core.project import findings as findings_module

    store, book = findings
    frozen = finding_review.row(store, "f1").last_vote_at  # the decision lands in the last vote's millisecond
    monkeypatch.setattr(audit, "utc_now", lambda: frozen)
    monkeypatch.setattr(findings_module, "utc_now", lambda: frozen)
    finding_review.decide(store, "f1", "confirm")
    assert finding_review.row(store, "f1").resolved
    book.submit_vote("f1", "auditor", "challenge", 0.9, "still reverted", client="gui")
    row = finding_review.row(store, "f1")
    assert not row.resolved and row.last_vote_at > frozen  # dated one step after the decision
    assert finding_review.count(store, queue="challenged") == 1


def test_the_clients_seen_are_the_mcp_clients_that_voted(findings):
    store, _ = findings
    assert [(c.client, c.votes) for c in finding_review.clients_seen(store)] == [("claude-code", 1)]


def test_a_reresearch_document_is_a_simulated_findings_run_on_the_finding(findings):
    store, _ = findings
    document = finding_review.reresearch_document(store, "f1", seed=4)
    assert document["findings"] == [{"id": "f1", "claim": "commit e8f2a91 implements OAuth2 login"}]
    assert document["providers"] == {"sim": {"model": "sim"}}
    runner = Runner(store)
    run_id = runner.create(parse_run_config(document))
    assert runner.execute(run_id)["status"] == "completed"
    assert finding_review.row(store, "f1").votes_valid == 6  # three more votes, on the same finding
    with pytest.raises(InputError):
        finding_review.reresearch_document(store, "nope")
