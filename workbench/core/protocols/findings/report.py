"""The Consensus Server section of a run's Markdown report. Pure: plain dicts in, lines out.

``results`` is the run summary's list of findings (score, status, voting agents);
``claims`` maps a finding id to its claim; ``votes`` maps it to its votes in the order cast
(``{"agent", "vote_type", "confidence", "reason", "status", "invalid_reason"}``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workbench.core import report_md as md

STATUS_LABELS = {"confirmed": "Confirmed", "challenged": "Challenged", "pending": "Pending"}


def how_to_read(threshold: float | None) -> list[str]:
    t = md.num(threshold) if threshold is not None else "the threshold"
    return [
        "## How to read this report", "",
        "Agents vote on each finding (a claim): *confirm* (+1), *challenge* (-1) or *uncertain* (0), "
        "each with a confidence between 0 and 1. The consensus score is the sum of direction × "
        "confidence over the agents whose latest vote is not uncertain, divided by their number. "
        f"A finding is **confirmed** when its score reaches {t}, **challenged** below it, and "
        "**pending** while nobody has voted confirm or challenge. A challenged finding waits for a "
        "person's review. Scores are rounded to two decimals; the exact values are in the JSONL and "
        "CSV exports.", "",
    ]


def report_lines(results: Sequence[Mapping], *, threshold: float | None, claims: Mapping[str, str],
                 votes: Mapping[str, Sequence[Mapping]]) -> list[str]:
    lines = how_to_read(threshold)
    if not results:
        return lines + ["No finding was voted on.", ""]
    rows = [[f"`{f['id']}`", md.cell(claims.get(f["id"])), md.num(f.get("consensus_score")),
             STATUS_LABELS.get(f.get("status"), md.label(f.get("status"))),
             str(len(f.get("voting_agents") or []))] for f in results]
    lines += ["## Findings", "", *md.table(["Finding", "Claim", "Score", "Status", "Agents counted"], rows), ""]
    for f in results:
        status = STATUS_LABELS.get(f.get("status"), md.label(f.get("status")))
        lines += [f"### `{f['id']}`: {status}", "", *md.block(claims.get(f["id"]) or "(no claim stored)"), ""]
        thr = f.get("threshold", threshold)
        uncertain = f.get("uncertain_agents") or []
        lines.append(f"- **Score**: {md.num(f.get('consensus_score'))} (threshold {md.num(thr)}; "
                     f"{len(f.get('voting_agents') or [])} agent(s) counted"
                     + (f", {len(uncertain)} uncertain and not counted" if uncertain else "") + ")")
        if f.get("status") == "challenged":
            lines.append("- **Next**: a person reviews it: confirm it, reject it with a reason, or re-research it.")
        lines.append("")
        cast = votes.get(f["id"], ())
        if cast:
            rows = []
            for v in cast:
                kind = md.label(v.get("vote_type")) if v.get("vote_type") else "—"
                if v.get("status") not in (None, "valid"):
                    kind += f" (invalid: {md.text(v.get('invalid_reason') or 'unreadable')})"
                rows.append([md.text(v.get("agent")), kind, md.num(v.get("confidence")), md.cell(v.get("reason"))])
            lines += md.table(["Agent", "Vote", "Confidence", "Reason"], rows)
            lines.append("")
    return lines


def section(view) -> list[str]:
    """The findings' section of a run's report (``Protocol.report``), from the stored run's
    findings and finding votes (``view``: a ``shared.declaration.RunView``)."""
    results = view.summary.get("findings") or []
    ids = {f["id"] for f in results}
    claims = {f.get("id"): f.get("claim") for f in view.config.get("findings") or [] if isinstance(f, dict)}
    claims.update({f["id"]: f["claim"] for f in view.records("finding") if f["id"] in ids})
    votes: dict[str, list[dict]] = {}
    for v in view.records("finding_vote"):
        votes.setdefault(v["finding_id"], []).append(v)
    for cast in votes.values():  # calls run in parallel: by agent (each agent's votes in the order cast)
        cast.sort(key=lambda v: str(v["agent"]))
    return report_lines(results, threshold=view.config.get("threshold"), claims=claims, votes=votes)
