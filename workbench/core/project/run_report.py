"""A run's report in Markdown: a header anyone can read, then the protocol's own section.

The header says whether the run was simulated or real, names the models, the seed and the cost;
the sections come from each protocol's ``report`` module (pure functions of plain dicts), and an
Echo-wrapped run gets the Echo section. Nothing here reads the clock: the same stored run always
gives the same bytes. Numbers are rounded for reading; the exact values are in the JSONL and CSV
exports (:mod:`.export`).
"""

from __future__ import annotations

import json
from collections import Counter

from workbench.core import report_md as md
from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project.audit import notes_of_run
from workbench.core.project.store import Store

PROTOCOL_NAMES = {
    "rcp": "Resonant Consensus Protocol (RCP)",
    "findings": "Consensus Server findings",
    "cons": "CONS consensus protocol",
    "arm": "ARM: isolated reasoning, then deliberation",
    "echo": "Resonance Echo",
}
STATUS_LABELS = {
    "completed": "Completed", "degraded": "Degraded: too many votes are missing to trust every result",
    "stopped_at_cap": "Stopped at its budget cap (resumable)", "interrupted": "Interrupted (resumable)",
    "running": "Running", "failed": "Failed: no result",
}


def to_markdown(store: Store, run_id: str) -> str:
    run = _sql.get(store, "runs", run_id)
    if run is None:
        raise InputError("run", f"no run {run_id!r} in this project")
    cfg, summary = run["config_json"] or {}, run["summary_json"] or {}
    lines = _header(store, run, cfg, summary)
    protocol = run["protocol"]
    if protocol == "rcp":
        lines += _rcp(store, run_id, cfg, summary)
    elif protocol == "findings":
        lines += _findings(store, run_id, cfg, summary)
    elif protocol == "cons":
        lines += _cons(run, cfg, summary)
    elif protocol == "arm" and summary.get("arm"):
        from workbench.core.protocols.arm.report import markdown_lines

        lines += markdown_lines(summary["arm"], _traces(store, run_id))
    if summary.get("echo"):
        lines += _echo(store, run_id, summary["echo"])
    lines += _reply_quality(store, run_id)
    lines += _audit(store, run_id)
    lines += ["---", "", f"*Exact values, every prompt and every reply: `rwb export {run_id} --format jsonl` "
              "(or csv).*", ""]
    return "\n".join(lines)


# ----- the header -------------------------------------------------------------------------------

def _header(store: Store, run: dict, cfg: dict, summary: dict) -> list[str]:
    protocol = run["protocol"]
    title = run["label"] or cfg.get("query") or run["id"]
    lines = [f"# {md.text(PROTOCOL_NAMES.get(protocol, protocol))}: {md.text(title)}", ""]
    if run["simulated"]:
        lines += ["> **Simulated run.** Every agent is the workbench's built-in simulated panel: no model was "
                  "called and nothing was paid. The texts and votes are generated from the seed, to show how the "
                  "protocol behaves; they are not anyone's opinion.", ""]
    else:
        lines += ["> **Real run.** The replies below come from the models named in this header.", ""]
    calls = _sql.query(store, "SELECT provider, model, agent_id, status, prompt_tokens, completion_tokens, cost_usd, "
                              "cost_source FROM llm_calls WHERE run_id = ? ORDER BY id", (run["id"],))
    status = summary.get("status") or run["status"]
    question = cfg.get("query") or cfg.get("question")
    lines += [f"- **Question**: {md.text(question)}" if question else "- **Question**: none (the agents vote on "
              "the findings listed below)",
              f"- **Status**: {md.text(STATUS_LABELS.get(status, md.label(status)))}",
              f"- **Run**: `{run['id']}`" + (f", replicate {run['replicate']} of a batch" if run["replicate"] else ""),
              f"- **Seed**: {run['seed'] if run['seed'] is not None else '—'}",
              f"- **Models**: {_models(calls, cfg)}",
              f"- **Calls**: {_calls(calls, summary)}",
              f"- **Tokens**: {_tokens(calls)}",
              f"- **Cost**: {_cost(calls, bool(run['simulated']))}"]
    if run["dispatch"]:
        lines.append(f"- **Dispatch**: {run['dispatch']}" + (" (one call at a time)" if run["dispatch"] == "sequential"
                                                              else " (calls in parallel, within the rate limits)"))
    estimate = (run["provenance_json"] or {}).get("estimate")
    if estimate:
        lines.append(f"- **Estimate beside actual**: {_estimate(estimate, calls, summary)}")
    if (summary.get("budget") or {}).get("caps"):
        lines.append(f"- **Budget**: {_budget(summary['budget'])}")
    if summary.get("cache_hits") is not None:
        rate = summary.get("cache_hit_rate")
        lines.append(f"- **Reply cache**: {summary['cache_hits']} hit(s)"
                     + (f", {md.pct(rate)} of the model calls" if rate is not None else ""))
    if summary.get("votes_expected"):
        lines.append(f"- **Votes**: {_votes(summary)}")
    if status == "degraded":
        lines += ["", f"> **Degraded run.** {md.text(run['error'] or 'Too many votes are missing.')} Every result "
                      "below comes from this run: read it as incomplete."]
    elif run["error"]:
        lines += ["", f"> **Why it stopped**: {md.text(run['error'])}"]
    lines.append("")
    agents = _agents(cfg)
    if agents:
        lines += ["## The panel", "", *md.table(["Agent", "Group", "Provider", "Persona"], agents), ""]
    return lines


def _votes(summary: dict) -> str:
    """SPEC §1: expected, cast, abstained, unreadable and failed; the share missing when any is."""
    parts = [f"{summary['votes_expected']} expected", f"{summary.get('votes_cast', 0)} cast"]
    parts += [f"{summary[k]} {word}" for k, word in (("votes_abstained", "abstained"),
                                                     ("votes_invalid", "unreadable"),
                                                     ("votes_failed", "lost to failed calls")) if summary.get(k)]
    missing = summary.get("missing_share") or 0
    return ", ".join(parts) + (f" ({md.pct(missing)} missing)" if missing else "")


def _estimate(est: dict, calls: list[dict], summary: dict) -> str:
    """The estimate made before the run (``runs.provenance_json``), each figure beside the actual one."""
    tokens = sum((c["prompt_tokens"] or 0) + (c["completion_tokens"] or 0) for c in calls)
    known = [c["cost_usd"] for c in calls if c["cost_usd"] is not None]
    actual_cost = md.usd(sum(known)) if known else "unknown"
    est_cost = "unknown" if est.get("cost_usd") is None else md.usd(est["cost_usd"])
    return (f"calls {est.get('calls', 0):,} estimated, {summary.get('calls', len(calls)):,} made; "
            f"tokens {est.get('tokens', 0):,} estimated (completions at their caps), {tokens:,} used; "
            f"cost {est_cost} estimated, {actual_cost} spent")


def _budget(budget: dict) -> str:
    parts = []
    for cap in budget.get("caps") or []:
        dollars = cap["name"].endswith("max_usd")
        limit = f"${cap['limit']:g}" if dollars else f"{int(cap['limit']):,} tokens"
        spent = f"${cap['spent']:.4f}" if dollars else f"{int(cap['spent']):,}"
        parts.append(f"{md.text(cap['name'])} {limit} ({spent} spent)")
    if budget.get("stopped_at"):
        parts.append(f"stopped at {md.text(budget['stopped_at'])}")
    return "; ".join(parts)


def _models(calls: list[dict], cfg: dict) -> str:
    if not calls:
        providers = cfg.get("providers") or {}
        return ", ".join(sorted({md.text(p.get("model")) for p in providers.values() if isinstance(p, dict)})) or "—"
    per: Counter = Counter((c["provider"] or "—", c["model"] or "—") for c in calls)
    out = []
    for (provider, model), n in sorted(per.items()):
        name = "the simulated panel" if model == "sim" else f"`{md.text(model)}`"
        out.append(f"{name} via {md.text(provider)} ({n} call{'s' if n != 1 else ''})")
    return "; ".join(out)


def _calls(calls: list[dict], summary: dict) -> str:
    total = summary.get("calls", len(calls))
    failed = summary.get("failed_calls", sum(1 for c in calls if c["status"] == "failed"))
    invalid = summary.get("invalid_calls", sum(1 for c in calls if c["status"] == "invalid"))
    return f"{total} ({failed} failed, {invalid} unreadable replies)"


def _tokens(calls: list[dict]) -> str:
    prompt = sum(c["prompt_tokens"] or 0 for c in calls)
    completion = sum(c["completion_tokens"] or 0 for c in calls)
    return f"{prompt:,} in, {completion:,} out"


def _cost(calls: list[dict], simulated: bool) -> str:
    if simulated:
        return "$0.00 (simulated)"
    known = [c["cost_usd"] for c in calls if c["cost_usd"] is not None]
    unknown = len(calls) - len(known)
    text = md.usd(sum(known)) if known else "unknown"
    return text + (f" ({unknown} call(s) without a known price)" if known and unknown else "")


def _agents(cfg: dict) -> list[list[str]]:
    rows = []
    for cluster in cfg.get("clusters") or []:
        for a in cluster.get("agents") or []:
            role = f" ({md.text(a['role'])})" if a.get("role") and a["role"] != a.get("id") else ""
            rows.append([md.text(a.get("id")) + role, md.text(cluster.get("name")), md.text(a.get("provider")),
                         md.cell(a.get("persona"))])
    return rows


# ----- the protocols ----------------------------------------------------------------------------

def _rcp(store: Store, run_id: str, cfg: dict, summary: dict) -> list[str]:
    from workbench.core.protocols.rcp.report import report_lines

    artifacts: dict[str, dict] = {}
    by_id: dict[int, str] = {}
    for a in _sql.rows(store, "artifacts", "run_id = ?", (run_id,), order_by="id"):
        artifacts[a["key"]] = {"author": a["author_agent"], "cluster": a["author_cluster"], "text": a["content"]}
        by_id[a["id"]] = a["key"]
    votes: dict[str, list[dict]] = {}
    for v in _sql.rows(store, "votes", "run_id = ?", (run_id,), order_by="id"):
        key = by_id.get(v["artifact_id"])
        if key is not None:
            votes.setdefault(key, []).append({"voter": v["voter_agent"], "value": v["value"], "status": v["status"],
                                              "reason": v["reason"]})
    for cast in votes.values():
        cast.sort(key=lambda v: str(v["voter"]))
    clusters = cfg.get("clusters") or []
    reference = cfg.get("reference") or (clusters[0]["name"] if clusters else "")
    return report_lines(summary, reference=reference, tau=cfg.get("tau"), artifacts=artifacts, votes=votes)


def _findings(store: Store, run_id: str, cfg: dict, summary: dict) -> list[str]:
    from workbench.core.protocols.findings.report import report_lines

    results = summary.get("findings") or []
    ids = [f["id"] for f in results]
    claims = {f.get("id"): f.get("claim") for f in cfg.get("findings") or [] if isinstance(f, dict)}
    for fid in ids:
        row = _sql.get(store, "findings", fid)
        if row is not None:
            claims[fid] = row["claim"]
    votes: dict[str, list[dict]] = {}
    for v in _sql.rows(store, "finding_votes", "run_id = ?", (run_id,), order_by="id"):
        votes.setdefault(v["finding_id"], []).append(dict(v))
    for cast in votes.values():  # calls run in parallel: by agent (each agent's votes in the order cast)
        cast.sort(key=lambda v: str(v["agent"]))
    return report_lines(results, threshold=cfg.get("threshold"), claims=claims, votes=votes)


def _cons(run: dict, cfg: dict, summary: dict) -> list[str]:
    from workbench.core.protocols import cons

    c = summary.get("cons")
    if not c:
        return ["## Verdict", "", "No ballot was tallied yet.", ""]
    payload = {"questionId": c["questionId"], "question": c["question"],
               "consensusThreshold": c.get("consensusThreshold"), "minVoters": c.get("minVoters"),
               "challengeRounds": c.get("challengeRounds"), "maxChallengeRounds": c.get("maxChallengeRounds"),
               "votes": c.get("options") or []}
    outcome = cons.evaluate({k: v for k, v in payload.items() if v is not None})
    date = (run["started_at"] or "")[:10] or "—"
    task = cfg.get("question_id") or c["questionId"]
    report = cons.render_markdown(outcome, date=date, task=task)
    # The seed's report has its own title; as a section of this report its headings go one level down.
    body = ["#" + line if line.startswith("#") else line for line in report.split("\n")]
    lines = [*body]
    escalations = c.get("escalations") or []
    if escalations or c.get("humanDecision"):
        lines += ["## Human decision", ""]
        lines += [f"- **{md.label(e.get('reason'))}**: {md.text(e.get('detail') or e.get('action') or '')}"
                  for e in escalations]
        decision = c.get("humanDecision")
        if isinstance(decision, dict):
            decision = decision.get("decision") or json.dumps(decision, ensure_ascii=False)
        lines += [f"- **Decision**: {md.text(decision) if decision else 'none yet: a person must decide'}", ""]
    entry = cons.manifest_entry(outcome, date=date, task=task, title=run["label"] or None)
    lines += ["## Manifest entry", "", "The one-line entry CONS appends to the project's manifest:", "",
              "```json", entry, "```", ""]
    return lines


ROLE_ORDER = {"alpha": 0, "beta": 1, "gamma": 2, "silent": 3}


def _traces(store: Store, run_id: str) -> list[dict]:
    traces = [{"round": t["round_no"], "role": t["role"], "attempt": t["attempt"], "current": bool(t["is_current"]),
             "ok": bool(t["ok"]), "claim": t["claim"], "verdict": t["verdict"], "confidence": t["confidence"]}
              for t in _sql.rows(store, "traces", "run_id = ?", (run_id,), order_by="round_no, id")]
    return sorted(traces, key=lambda t: (t["round"], ROLE_ORDER.get(t["role"], 9), t["attempt"] or 0))


def _echo(store: Store, run_id: str, sessions: dict) -> list[str]:
    from workbench.core.protocols.echo.report import report_lines

    failed = [{"agent": r["agent_id"], "turn": r["turn"], "trigger": r["trigger"], "marker": r["marker"],
               "reply_excerpt": r["reply_excerpt"]}
              for r in _sql.query(store, "SELECT a.agent_id, v.turn, v.trigger, v.reply_excerpt, m.marker "
                                         "FROM echo_verifications v JOIN echo_anchors a ON a.id = v.anchor_id "
                                         "JOIN echo_markers m ON m.hex = a.marker_hex "
                                         "WHERE a.run_id = ? AND v.success = 0 ORDER BY v.id", (run_id,))]
    failed.sort(key=lambda c: (str(c["agent"]), c["turn"] or 0))  # agents run in parallel: a stable order
    episodes: dict[str, dict] = {}
    for r in _sql.rows(store, "echo_restorations", "run_id = ?", (run_id,), order_by="id"):
        ep = episodes.setdefault(r["restoration"], {"id": r["restoration"], "agent": r["agent_id"], "steps": []})
        ep["steps"].append({"step": r["step"], "detail": r["detail_json"]})
    def started(ep: dict) -> tuple:
        log = next((s["detail"] for s in ep["steps"] if s["step"] == "log"), {}) or {}
        return (str(ep["agent"]), log.get("turn") or 0)

    ordered = {agent: sessions[agent] for agent in sorted(sessions)}
    return report_lines(ordered, failed, sorted(episodes.values(), key=started))


def _reply_quality(store: Store, run_id: str) -> list[str]:
    """Issue 19's quality flags per agent: notes for the reader, never a change to a vote."""
    from workbench.core.project import quality

    q = quality.run_quality(store, run_id)
    lines = ["## Reply quality", ""]
    per_agent = q.by_agent()
    if not per_agent:
        checked = f"{q.calls_checked} call{'s were' if q.calls_checked != 1 else ' was'}"
        return lines + [f"No reply was flagged. {checked} checked for template echoes, cuts at the token cap "
                        "and rubber stamps.", ""]
    lines += ["A flag is a note for the reader: it never changes a vote or a result.", ""]
    rows = []
    for agent in sorted(per_agent, key=str):
        counts = per_agent[agent]
        stamp = next((f.detail for (_k, voter), f in sorted(q.stamps.items()) if voter == agent), "")
        rows.append([md.text(agent), *(str(counts.get(code, 0) or "—") for code in quality.FLAGS[:2]),
                     md.cell(stamp) if stamp else "—"])
    lines += md.table(["Agent", "Template echo (calls)", "Cut at cap (calls)", "Rubber stamp"], rows)
    lines += ["", *(f"- **{md.text(quality.LABELS[code])}**: {md.text(quality.EXPLAIN[code])}"
                    for code in quality.FLAGS if any(c.get(code) for c in per_agent.values())), ""]
    return lines


def _audit(store: Store, run_id: str) -> list[str]:
    notes = notes_of_run(store, run_id)
    if not notes:
        return []
    rows = [[f"{md.text(n.record_kind)} {md.text(n.record_id)}", md.label(n.verdict), md.cell(n.note),
             md.cell(n.author), md.text(n.created_at)] for n in notes]
    return ["## Auditors' notes", "", *md.table(["Record", "Verdict", "Note", "Author", "Time (UTC)"], rows), ""]
