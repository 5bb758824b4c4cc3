"""The Resonant Consensus section of a run's Markdown report. Pure: plain dicts in, lines out.

``rounds`` is the run summary's list of rounds (each with its resonance states, in SPEC §1 order);
``artifacts`` maps an artifact key to ``{"author", "cluster", "text"}``; ``votes`` maps it to the
votes cast on it (``{"voter", "value", "status", "reason"}``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workbench.core import report_md as md
from workbench.core.protocols.rcp.guidance import guidance_for, mixed_results_guidance
from workbench.core.protocols.shared.truth import accuracy_by_tier, run_states, tier_lines

TIER_LABELS = {
    "positive_consensus": "Positive consensus",
    "positive_polar": "Positive polar",
    "negative_polar": "Negative polar",
    "negative_consensus": "Negative consensus",
    "unclassified": "Unclassified",
}
TIER_MEANING = {
    "positive_consensus": "approved across clusters (resonance ratio at or above tau)",
    "positive_polar": "approved by the reference cluster, not across clusters",
    "negative_polar": "approved only by clusters other than the reference",
    "negative_consensus": "rejected across clusters (resonance ratio at or below 1 - tau)",
    "unclassified": "no vote was cast on it, so it has no tier",
}
VOTE_LABELS = {1: "approve", 0: "reject", None: "missing"}


def _rates(state: Mapping) -> str:
    rates = state.get("cluster_rates") or {}
    return ", ".join(f"{md.text(name)} {md.pct(rate)}" for name, rate in rates.items()) or "—"


def _bias(direction: object) -> str:
    if direction in (None, "neutral"):
        return "no lean to either side"
    if direction == "non-reference":
        return "leans away from the reference cluster"
    return f"leans to the {md.text(direction)} cluster"


def how_to_read(reference: str | None, tau: float | None) -> list[str]:
    ref = f" The reference cluster is **{md.text(reference)}**." if reference else ""
    tau_text = f" (tau = {md.num(tau)})" if tau is not None else ""
    return [
        "## How to read this report", "",
        "Each agent belongs to a cluster (a perspective). Every agent writes a response (an *artifact*), "
        "and every other agent votes on it: approve or reject, never on its own. A cluster approves an "
        "artifact when the share of its members approving reaches the cluster's threshold (theta). "
        f"The *resonance ratio* is the share of clusters that approve{tau_text}.{ref}", "",
        *[f"- **{TIER_LABELS[t]}**: {TIER_MEANING[t]}." for t in TIER_LABELS], "",
        "The *score* is the share of approvals among the votes cast; the *balanced score* lowers it when "
        "the clusters disagree with each other. Percentages are rounded; the exact values are in the "
        "JSONL and CSV exports.", "",
    ]


def round_lines(rnd: Mapping, reference: str, artifacts: Mapping[str, Mapping],
                votes: Mapping[str, Sequence[Mapping]], last: bool) -> list[str]:
    states = rnd.get("states") or []
    lines = [f"## Round {rnd.get('round')}", ""]
    if not states:
        return lines + ["No artifact was classified in this round.", ""]
    rows = []
    for s in states:
        author = s.get("author")
        who = f"{md.text(author)} ({md.text(s.get('author_cluster'))})" if author else "outside the panel"
        rows.append([md.text(TIER_LABELS.get(s["tier"], md.label(s["tier"]))), f"`{s['artifact']}`", who,
                     md.num(s.get("score")), md.num(s.get("score_balanced")), _rates(s),
                     md.text(", ".join(s.get("approval_set") or [])) or "none"])
    lines += md.table(["Tier", "Artifact", "Author", "Score", "Balanced", "Approval by cluster", "Approved by"],
                      rows)
    lines.append("")
    for s in states:
        lines += _artifact(s, reference, artifacts.get(s["artifact"], {}), votes.get(s["artifact"], ()))
    if last:
        lines += guidance_lines(states, reference)
    return lines


def _artifact(s: Mapping, reference: str, art: Mapping, cast: Sequence[Mapping]) -> list[str]:
    tier = TIER_LABELS.get(s["tier"], md.label(s["tier"]))
    author = md.text(s.get("author") or "outside the panel")
    lines = [f"### `{s['artifact']}` by {author}: {tier}", ""]
    lines += md.block(art.get("text") or "(no text stored)")
    lines.append("")
    if art.get("score") is not None:  # SPEC §8: scored against the question's known answer
        read = f" (read as {md.text(art['extracted'])})" if art.get("extracted") is not None else ""
        lines += [f"- **Against the known answer**: {md.text(art['score'])}{read}"]
    if s["tier"] == "unclassified":
        lines += ["- **Assessment**: not classified: no vote was cast on it.", ""]
    else:
        flags = []
        if s.get("full_consensus"):
            flags.append("every cluster approves")
        if s.get("reference_dissent"):
            flags.append("the reference cluster did not join")
        if s.get("is_persuasive"):
            kind = f" ({s['persuasion_kind']})" if s.get("persuasion_kind") else ""
            flags.append(f"persuasive: it reached {s.get('persuasion_reach')} cluster(s) beyond its author's{kind}")
        lines += [f"- **Assessment**: contestation {md.text(s.get('contestation'))}, risk if acted upon "
                  f"{md.text(s.get('risk_if_acted_upon'))}, {_bias(s.get('bias_direction'))}"
                  + (f"; {'; '.join(flags)}" if flags else ""),
                  f"- **Votes**: {s.get('approvals', '—')} approve of {s.get('votes_cast')} cast"
                  + (f", {s['votes_missing']} missing" if s.get("votes_missing") else ""), ""]
    if cast:
        lines += md.table(["Voter", "Vote", "Reason"],
                          [[md.text(v.get("voter")), VOTE_LABELS.get(v.get("value"), "missing")
                            + ("" if v.get("status") in (None, "valid") else f" ({md.text(v.get('status'))})"),
                            md.cell(v.get("reason"))] for v in cast])
        lines.append("")
    return lines


def guidance_lines(states: Sequence[Mapping], reference: str) -> list[str]:
    """The paper's §8 guidance for each tier reached in the final round, with its artifacts."""
    lines = ["## What to do with the result (RCP guidance)", "",
             "What the RCP paper (§8, orchestrator guidance) advises for each tier the final round reached:", ""]
    by_tier: dict[str, dict[str, list[str]]] = {}
    for s in states:
        text = s.get("guidance") or guidance_for(s, reference)
        by_tier.setdefault(s["tier"], {}).setdefault(text, []).append(s["artifact"])
    for tier in TIER_LABELS:
        for text, keys in by_tier.get(tier, {}).items():
            lines.append(f"- **{TIER_LABELS[tier]}** ({', '.join(f'`{k}`' for k in keys)}): {md.text(text)}")
    mixed = mixed_results_guidance(states)
    if mixed:
        lines.append(f"- **Mixed results**: {md.text(mixed)}")
    return lines + [""]


def report_lines(summary: Mapping, *, reference: str, tau: float | None, artifacts: Mapping[str, Mapping],
                 votes: Mapping[str, Sequence[Mapping]]) -> list[str]:
    rounds = summary.get("rounds") or []
    lines = how_to_read(reference, tau)
    if not rounds:
        return lines + ["No round finished, so nothing was classified.", ""]
    for i, rnd in enumerate(rounds):
        lines += round_lines(rnd, reference, artifacts, votes, last=i == len(rounds) - 1)
    return lines


def section(view) -> list[str]:
    """RCP's section of a run's report (``Protocol.report``), from the stored run's artifacts
    and votes (``view``: a ``shared.declaration.RunView``)."""
    artifacts = {a["key"]: {"author": a["author"], "cluster": a["cluster"], "text": a["text"],
                            "extracted": a.get("extracted"), "score": a.get("score")}
                 for a in view.records("artifact")}
    votes: dict[str, list[dict]] = {}
    for v in view.records("vote"):
        votes.setdefault(v["artifact"], []).append({k: v[k] for k in ("voter", "value", "status", "reason")})
    for cast in votes.values():
        cast.sort(key=lambda v: str(v["voter"]))
    clusters = view.config.get("clusters") or []
    reference = view.config.get("reference") or (clusters[0]["name"] if clusters else "")
    lines = report_lines(view.summary, reference=reference, tau=view.config.get("tau"), artifacts=artifacts,
                         votes=votes)
    # SPEC §8: against a known answer, each tier's accuracy and the AUROC of the resonance score.
    acc = accuracy_by_tier(run_states(view.summary), {a["key"]: a.get("score") for a in view.records("artifact")})
    if acc is not None:
        lines += tier_lines(acc, TIER_LABELS, (view.config.get("item") or {}).get("answer"))
    return lines
