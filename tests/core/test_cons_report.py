"""CONS renderers: the seed's voting structure, Markdown Consensus Report, manifest (CONS-007)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from workbench.core.protocols.cons import (
    classify_payload,
    evaluate,
    manifest_entry,
    render_markdown,
    report_status,
    voting_structure,
)
from workbench.core.protocols.cons.report import option_label

CODE = {"file": "src/map.py", "section": "save", "type": "code", "line": 12}
MANIFEST_KEYS = ["id", "file", "title", "date", "status", "agent_type", "topics", "key_findings",
                 "actionable", "needs_followup", "linked_tasks"]
SEED_SECTIONS = ["# Consensus Report: ", "**Task**: ", "**Date**: ", "**Status**: ",
                 "**Agent Type**: analysis", "---", "## Decision Question", "## Options Evaluated",
                 "### Option A: ", "### Option B: ", "## Voting Matrix", "| Agent |", "## Verdict",
                 "**Result**: ", "**Consensus**: ", "**Recommendation**: ", "## Conflicts",
                 "## Next Steps", "1. "]


def v(agent: str, option: str, vote: str, confidence: float, rationale: str,
      evidence: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"agentId": agent, "option": option, "vote": vote, "confidence": confidence,
            "rationale": rationale, "evidence": evidence or []}


SPEC_CASE = {
    "questionId": "T2216-map", "question": "Should the codebase map be one file or split?",
    "votes": [v("opus-1", "Single file", "accept", 0.90, "Atomic operations matter most", [CODE]),
              v("sonnet-1", "Single file", "accept", 0.85, "One artefact to back up"),
              v("haiku-1", "Split files", "accept", 0.50, "Smaller diffs | fewer merge conflicts")],
}
PROVEN_CASE = {
    "questionId": "Q-7", "question": "Does the cache survive a restart?",
    "votes": [v(f"a{i}", "claim", "accept", 0.8, f"reason number {i} is different {'x' * i}", [CODE])
              for i in range(1, 5)] + [v("a5", "claim", "reject", 0.6, "Saw a cold start once")],
}


def _positions(text: str, needles: list[str]) -> list[int]:
    out, start = [], 0
    for n in needles:
        i = text.find(n, start)
        assert i >= 0, f"{n!r} missing (or out of order) after offset {start}"
        out.append(i)
        start = i + len(n)
    return out


# --- voting structure -------------------------------------------------------------------------------

def test_voting_structure_has_the_seed_keys() -> None:
    out = evaluate(SPEC_CASE)
    vs = voting_structure(out)
    assert list(vs) == ["questionId", "question", "options", "verdict", "consensusThreshold",
                        "actualConsensus"]
    assert vs["actualConsensus"] == 1.75 / 2.25 and vs["consensusThreshold"] == 0.8
    assert vs["verdict"] is None
    first = vs["options"][0]
    assert {"option", "vote", "confidence", "rationale", "evidence"} <= set(first)
    assert first["agentId"] == "opus-1"
    assert first["evidence"] == [{"file": "src/map.py", "section": "save", "type": "code", "line": 12}]
    assert len(vs["options"]) == 3


def test_classify_output_extends_the_voting_structure() -> None:
    out = classify_payload(SPEC_CASE)
    assert {"leadingOption", "nextAction", "conflicts", "escalations"} <= set(out)
    assert out["leadingOption"] == "Single file" and out["nextAction"] == "challenge_round"
    assert out["tally"]["acceptWeight"] == 1.75 and out["tally"]["opposeWeight"] == 0.5
    json.dumps(out, allow_nan=False)


# --- Markdown ---------------------------------------------------------------------------------------

def test_markdown_follows_the_seed_layout_in_order() -> None:
    md = render_markdown(evaluate(SPEC_CASE), date="2026-01-26", task="T2216", title="Codebase Map")
    _positions(md, SEED_SECTIONS)
    assert md.startswith("# Consensus Report: Codebase Map\n")
    assert "**Task**: T2216\n**Date**: 2026-01-26\n**Status**: partial\n**Agent Type**: analysis" in md
    headings = [line for line in md.splitlines() if line.startswith("## ")]
    assert headings == ["## Decision Question", "## Options Evaluated", "## Voting Matrix",
                        "## Verdict", "## Conflicts", "## Next Steps"]


def test_markdown_option_sections() -> None:
    md = render_markdown(evaluate(SPEC_CASE), date="2026-01-26")
    a = md.index("### Option A: Single file")
    b = md.index("### Option B: Split files")
    section = md[a:b]
    _positions(section, ["**Confidence**: 0.88", "**Rationale**: Atomic operations matter most (opus-1)",
                         "**Evidence**: `src/map.py` § save [code] (opus-1, accept)",
                         "**Pros**: opus-1: Atomic operations matter most; sonnet-1: One artefact to back up",
                         "**Cons**: -"])
    assert "**Evidence**: None cited." in md[b:]


def test_markdown_cons_come_from_reject_rationales() -> None:
    md = render_markdown(evaluate(PROVEN_CASE), date=dt.date(2026, 2, 3))
    assert "**Cons**: a5: Saw a cold start once" in md
    assert "**Date**: 2026-02-03" in md


def test_markdown_voting_matrix_has_a_column_per_option() -> None:
    md = render_markdown(evaluate(SPEC_CASE), date="2026-01-26")
    rows = [line for line in md.splitlines() if line.startswith("|")]
    assert rows[0] == "| Agent | Option A | Option B | Confidence | Notes |"
    assert rows[2] == "| opus-1 | Accept | - | 0.90 | Atomic operations matter most |"
    assert rows[4] == "| haiku-1 | - | Accept | 0.50 | Smaller diffs \\| fewer merge conflicts |"
    assert len(rows) == 5


def test_markdown_verdict_section() -> None:
    md = render_markdown(evaluate(SPEC_CASE), date="2026-01-26")
    assert "**Result**: PENDING" in md
    assert "**Consensus**: 77.8% weighted agreement" in md
    assert "**Recommendation**: Run challenge round 1 of 2." in md
    proven = render_markdown(evaluate(PROVEN_CASE), date="2026-01-26")
    assert "**Result**: PROVEN" in proven and "**Recommendation**: Adopt claim." in proven
    assert "**Consensus**: 84.2% weighted agreement" in proven  # 3.2 / 3.8


def test_markdown_lists_conflicts_and_next_steps() -> None:
    contested = dict(PROVEN_CASE, votes=PROVEN_CASE["votes"][:3]
                     + [v("a4", "claim", "reject", 0.8, "Restart wipes the tmpfs"),
                        v("a5", "claim", "reject", 0.7, "Saw a cold start")], challengeRounds=2)
    out = evaluate(contested)
    md = render_markdown(out, date="2026-01-26")
    conflicts = md[md.index("## Conflicts"):md.index("## Next Steps")]
    assert out.conflicts[0].conflict_id in conflicts and "(high, contradiction)" in conflicts
    assert "  - a4: reject claim (0.80)" in conflicts
    steps = md[md.index("## Next Steps"):]
    assert "1. Escalate to a human (contested_verdict): Present conflict to user: no threshold" in steps
    assert "**Status**: blocked" in md
    assert "## Conflicts\n\nNone." in render_markdown(evaluate(
        dict(PROVEN_CASE, votes=PROVEN_CASE["votes"][:4])), date="2026-01-26")


def test_report_status() -> None:
    assert report_status(evaluate(SPEC_CASE)) == "partial"
    assert report_status(evaluate(PROVEN_CASE)) == "complete"
    assert report_status(evaluate(dict(PROVEN_CASE, votes=PROVEN_CASE["votes"][:1]))) == "blocked"


def test_option_labels() -> None:
    assert [option_label(i) for i in (0, 1, 25, 26, 27, 701, 702)] == [
        "A", "B", "Z", "AA", "AB", "ZZ", "AAA"]


# --- manifest ---------------------------------------------------------------------------------------

def test_manifest_is_one_line_of_json_with_the_seed_keys() -> None:
    line = manifest_entry(evaluate(PROVEN_CASE), date="2026-01-26", task="T2216",
                          title="Cache restart", topics=["cache"], linked_tasks=["T2204"])
    assert "\n" not in line and len(line.splitlines()) == 1
    entry = json.loads(line)
    assert list(entry) == MANIFEST_KEYS
    assert entry["agent_type"] == "analysis"  # CONS-007
    assert entry == {
        "id": "T2216-consensus-q-7", "file": "2026-01-26_consensus-q-7.md",
        "title": "Consensus: Cache restart", "date": "2026-01-26", "status": "complete",
        "agent_type": "analysis", "topics": ["consensus", "decision", "cache"],
        "key_findings": ["Verdict: PROVEN", "claim selected", "4/5 agents agree",
                         "84.2% weighted agreement"],
        "actionable": True, "needs_followup": [], "linked_tasks": ["T2216", "T2204"]}


def test_manifest_for_pending_and_escalated_outcomes() -> None:
    pending = json.loads(manifest_entry(evaluate(SPEC_CASE), date="2026-01-26"))
    assert pending["id"] == "consensus-t2216-map" and pending["linked_tasks"] == []
    assert pending["status"] == "partial" and pending["actionable"] is False
    assert pending["needs_followup"] == ["challenge_round"]
    assert pending["key_findings"][0] == "Verdict pending: challenge round 1 of 2"
    few = json.loads(manifest_entry(evaluate(dict(PROVEN_CASE, votes=PROVEN_CASE["votes"][:2])),
                                    date="2026-01-26", needs_followup=["T9"]))
    assert few["needs_followup"] == ["T9", "hitl:insufficient_evidence"]
    assert few["status"] == "blocked" and few["agent_type"] == "analysis"


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x85", "\n", "\r"])
def test_manifest_stays_one_line_with_odd_separators(sep: str) -> None:
    case = dict(SPEC_CASE, question=f"Split{sep}or not?")
    line = manifest_entry(evaluate(case), date="2026-01-26", title=f"A{sep}B",
                          topics=[f"x{sep}y"], task=f"T1{sep}")
    assert len(line.splitlines()) == 1
    entry = json.loads(line)
    assert entry["agent_type"] == "analysis" and entry["topics"][2] == f"x{sep}y"
