"""CONS renderers: the seed's JSON voting structure, the Markdown "Consensus Report" and the
one-line manifest entry. Pure: the date is passed in, nothing reads the clock or the disk."""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Sequence
from typing import Any

from workbench.core.protocols.cons.models import Ballot, Evidence
from workbench.core.protocols.cons.outcome import ConsOutcome

AGENT_TYPE = "analysis"  # CONS-007


def _evidence_json(e: Evidence) -> dict[str, Any]:
    return {k: v for k, v in e.model_dump(mode="json").items() if v is not None}


def voting_structure(out: ConsOutcome) -> dict[str, Any]:
    """The seed's voting structure; ``options`` holds one entry per ballot (with its agentId)."""
    q = out.question
    return {
        "questionId": q.question_id,
        "question": q.question,
        "options": [{"agentId": b.agent_id, "option": b.option, "vote": b.vote,
                     "confidence": b.confidence, "rationale": b.rationale,
                     "evidence": [_evidence_json(e) for e in b.evidence]} for b in q.votes],
        "verdict": out.verdict,
        "consensusThreshold": q.consensus_threshold,
        "actualConsensus": out.tally.actual_consensus,
    }


def outcome_json(out: ConsOutcome) -> dict[str, Any]:
    """The ``rwb classify cons`` output: the voting structure plus the engine's findings."""
    q, t = out.question, out.tally
    result = voting_structure(out)
    result.update({
        "leadingOption": t.leading_option,
        "nextAction": out.next_action,
        "conflicts": [c.to_json() for c in out.conflicts],
        "escalations": [e.to_json() for e in out.escalations],
        "verdictRule": out.verdict_rule,
        "verdictReason": out.verdict_reason,
        "singleClaim": out.single_claim,
        "optionOrder": list(t.options),
        "countThreshold": q.count_threshold,
        "minVoters": q.min_voters,
        "challengeRounds": q.challenge_rounds,
        "maxChallengeRounds": q.max_challenge_rounds,
        "tally": {k: v for k, v in t.to_json().items() if k not in ("options", "leadingOption",
                                                                    "actualConsensus")},
    })
    return result


# --- Markdown -----------------------------------------------------------------------------------

def report_status(out: ConsOutcome) -> str:
    """partial while no verdict; blocked while a human must act; complete otherwise."""
    if out.verdict is None:
        return "partial"
    return "blocked" if out.escalations else "complete"


def option_label(i: int) -> str:
    """A, B, ..., Z, AA, AB, ... as in the seed's "Option A"."""
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(65 + r) + s
    return s


def _inline(text: str) -> str:
    return " ".join(text.split())


def _cell(text: str) -> str:
    return _inline(text).replace("|", "\\|")


def _cite(e: Evidence, b: Ballot) -> str:
    loc = " § ".join(x for x in (f"`{e.file}`" if e.file else "", e.section or "") if x)
    return f"{loc or '(no location)'} [{e.type}] ({b.agent_id}, {b.vote})"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:.1f}%"


def _recommendation(out: ConsOutcome) -> str:
    q, lead = out.question, out.tally.leading_option
    if out.verdict == "PROVEN":
        text = f"Adopt {lead}."
    elif out.verdict == "REFUTED":
        text = f"Reject {lead}: {out.verdict_reason}."
        if any(e.reason == "critical_conflict" for e in out.escalations):
            text += " Resolve the critical conflict with the user before acting."
    elif out.verdict == "CONTESTED":
        text = (f"No consensus after {q.challenge_rounds} challenge round(s); present both sides "
                "to the user and document them.")
    elif out.verdict == "INSUFFICIENT_EVIDENCE":
        text = f"Request investigation: {out.verdict_reason}."
    else:
        text = f"Run challenge round {q.challenge_rounds + 1} of {q.max_challenge_rounds}."
    if any(e.reason == "suspicious_unanimity" for e in out.escalations):
        text += " Verify the unanimous result with the user before acting."
    return text


def _option_section(label: str, opt: str, ballots: Sequence[Ballot]) -> list[str]:
    acc = [b for b in ballots if b.vote == "accept"]
    rej = [b for b in ballots if b.vote == "reject"]
    conf = f"{sum(b.confidence for b in acc) / len(acc):.2f} (mean of {len(acc)} accept(s))" \
        if acc else "- (no accepts)"
    top = max(acc, key=lambda b: b.confidence) if acc else None
    why = f"{_inline(top.rationale)} ({top.agent_id})" if top else "No agent accepted this option."
    cites = [_cite(e, b) for b in ballots for e in b.evidence]
    return [
        f"### Option {label}: {_inline(opt)}", "",
        f"**Confidence**: {conf}",
        f"**Rationale**: {why}",
        f"**Evidence**: {'; '.join(cites) if cites else 'None cited.'}",
        f"**Pros**: {'; '.join(f'{b.agent_id}: {_inline(b.rationale)}' for b in acc) or '-'}",
        f"**Cons**: {'; '.join(f'{b.agent_id}: {_inline(b.rationale)}' for b in rej) or '-'}",
        "",
    ]


def _matrix(out: ConsOutcome, labels: dict[str, str]) -> list[str]:
    t, votes = out.tally, out.question.votes
    cols = ["Agent", *(f"Option {labels[o]}" for o in t.options), "Confidence", "Notes"]
    head = "| " + " | ".join(cols) + " |"
    rule = "|" + "|".join(["-------"] * len(cols)) + "|"
    rows = [head, rule]
    for agent in t.agents:
        mine = [b for b in votes if b.agent_id == agent]
        cells = {b.option: b.vote.capitalize() for b in mine}
        on_lead = [b for b in mine if b.option == t.leading_option]
        main = on_lead[0] if on_lead else max(mine, key=lambda b: b.confidence)
        rows.append(f"| {_cell(agent)} | " + " | ".join(cells.get(o, "-") for o in t.options)
                    + f" | {main.confidence:.2f} | {_cell(main.rationale)} |")
    return rows


def _conflicts(out: ConsOutcome) -> list[str]:
    if not out.conflicts:
        return ["None."]
    lines = []
    for c in out.conflicts:
        res = c.resolution.status + (f", {c.resolution.resolution_type}"
                                     if c.resolution.resolution_type else "")
        lines.append(f"- **{c.conflict_id}** ({c.severity}, {c.conflict_type}): "
                     f"{_inline(c.detail)}; resolution {res}")
        lines += [f"  - {p.agent_id}: {_inline(p.position)} ({p.confidence:.2f})" for p in c.positions]
    return lines


def _next_steps(out: ConsOutcome) -> list[str]:
    q = out.question
    steps = [f"Escalate to a human ({e.reason}): {e.action}: {_inline(e.detail)}."
             for e in out.escalations]
    if out.next_action == "challenge_round":
        steps.append(f"Run challenge round {q.challenge_rounds + 1} of {q.max_challenge_rounds}: "
                     "each agent answers the strongest opposing rationale and may revise its ballot.")
    elif out.next_action == "request_investigation":
        steps.append("Request investigation: gather reproducible evidence and vote again (CONS-004).")
    if not steps:
        steps.append("None: the verdict stands; act on the recommendation.")
    return [f"{i}. {s}" for i, s in enumerate(steps, 1)]


def render_markdown(out: ConsOutcome, *, date: _dt.date | str, task: str | None = None,
                    title: str | None = None) -> str:
    """The seed's "Consensus Report" (File Output), section by section, in the seed's order."""
    q, t = out.question, out.tally
    labels = {o: option_label(i) for i, o in enumerate(t.options)}
    consensus = (f"{_pct(t.actual_consensus)} weighted agreement" if t.actual_consensus is not None
                 else "n/a (no weighted votes)")
    if t.leading_option is not None:
        consensus += (f" on Option {labels[t.leading_option]} ({_inline(t.leading_option)}): "
                      f"{t.accept_count} of {len(t.voters)} agents accept")
    lines = [
        f"# Consensus Report: {_inline(title or q.question)}", "",
        f"**Task**: {task or '-'}",
        f"**Date**: {date}",
        f"**Status**: {report_status(out)}",
        f"**Agent Type**: {AGENT_TYPE}", "",
        "---", "",
        "## Decision Question", "",
        q.question.strip(), "",
        "## Options Evaluated", "",
    ]
    for o in t.options:
        lines += _option_section(labels[o], o, [b for b in q.votes if b.option == o])
    if not t.options:
        lines += ["No options were voted on.", ""]
    lines += ["## Voting Matrix", "", *_matrix(out, labels), "",
              "## Verdict", "",
              f"**Result**: {out.verdict or 'PENDING (no verdict yet)'}",
              f"**Consensus**: {consensus}",
              f"**Recommendation**: {_inline(_recommendation(out))}", "",
              "## Conflicts", "", *_conflicts(out), "",
              "## Next Steps", "", *_next_steps(out), ""]
    return "\n".join(lines)


# --- manifest -----------------------------------------------------------------------------------

def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48].strip("-") or "question"


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def manifest_entry(out: ConsOutcome, *, date: _dt.date | str, task: str | None = None,
                   title: str | None = None, file: str | None = None,
                   topics: Sequence[str] = (), linked_tasks: Sequence[str] = (),
                   needs_followup: Sequence[str] = ()) -> str:
    """The seed's manifest entry as one line of JSON (CONS-007: agent_type "analysis")."""
    q, t = out.question, out.tally
    slug = _slug(q.question_id)
    findings = [f"Verdict: {out.verdict}" if out.verdict else
                f"Verdict pending: challenge round {q.challenge_rounds + 1} of {q.max_challenge_rounds}"]
    lead = t.leading_option
    if lead is not None:
        findings.append({"PROVEN": f"{lead} selected", "REFUTED": f"{lead} refuted"}
                        .get(out.verdict or "", f"Leading option: {lead}"))
        findings.append(f"{t.accept_count}/{len(t.voters)} agents agree")
    if t.actual_consensus is not None:
        findings.append(f"{_pct(t.actual_consensus)} weighted agreement")
    followup = list(needs_followup) + [f"hitl:{e.reason}" for e in out.escalations]
    if out.verdict is None:
        followup.append("challenge_round")
    entry = {
        "id": f"{task}-consensus-{slug}" if task else f"consensus-{slug}",
        "file": file or f"{date}_consensus-{slug}.md",
        "title": f"Consensus: {_inline(title or q.question)}",
        "date": str(date),
        "status": report_status(out),
        "agent_type": AGENT_TYPE,
        "topics": _unique(["consensus", "decision", *topics]),
        "key_findings": [_inline(f) for f in findings],
        "actionable": out.verdict in ("PROVEN", "REFUTED") and not out.escalations,
        "needs_followup": _unique(followup),
        "linked_tasks": _unique([task or "", *linked_tasks]),
    }
    line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
    # Characters str.splitlines() would break on, escaped so the entry stays one line.
    for ch in ("\u2028", "\u2029", "\x85"):
        line = line.replace(ch, f"\\u{ord(ch):04x}")
    return line


def section(view, evaluate) -> list[str]:
    """CONS's section of a run's report (``Protocol.report``): the seed's Consensus Report of the
    stored outcome, the human decision and the manifest entry (``view``: a
    ``shared.declaration.RunView``; ``evaluate``: the tally's, given by the declaration, since the
    tally renders with this module)."""
    from workbench.core import report_md as md

    c = view.summary.get("cons")
    if not c:
        return ["## Verdict", "", "No ballot was tallied yet.", ""]
    payload = {"questionId": c["questionId"], "question": c["question"],
               "consensusThreshold": c.get("consensusThreshold"), "minVoters": c.get("minVoters"),
               "challengeRounds": c.get("challengeRounds"), "maxChallengeRounds": c.get("maxChallengeRounds"),
               "votes": c.get("options") or []}
    outcome = evaluate({k: v for k, v in payload.items() if v is not None})
    date = (view.run.get("started_at") or "")[:10] or "—"
    task = view.config.get("question_id") or c["questionId"]
    report = render_markdown(outcome, date=date, task=task)
    # The seed's report has its own title; as a section of this report its headings go one level down.
    lines = ["#" + line if line.startswith("#") else line for line in report.split("\n")]
    escalations = c.get("escalations") or []
    if escalations or c.get("humanDecision"):
        lines += ["## Human decision", ""]
        lines += [f"- **{md.label(e.get('reason'))}**: {md.text(e.get('detail') or e.get('action') or '')}"
                  for e in escalations]
        decision = c.get("humanDecision")
        if isinstance(decision, dict):
            decision = decision.get("decision") or json.dumps(decision, ensure_ascii=False)
        lines += [f"- **Decision**: {md.text(decision) if decision else 'none yet: a person must decide'}", ""]
    entry = manifest_entry(outcome, date=date, task=task, title=view.run.get("label") or None)
    lines += ["## Manifest entry", "", "The one-line entry CONS appends to the project's manifest:", "",
              "```json", entry, "```", ""]
    return lines
