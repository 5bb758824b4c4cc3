"""A run's report in Markdown: a header anyone can read, then the protocol's own section.

The header says whether the run was simulated or real, names the models, the seed and the cost;
the sections come from each protocol's ``report`` module (pure functions of plain dicts), and an
Echo-wrapped run gets the Echo section. Nothing here reads the clock: the same stored run always
gives the same bytes. Numbers are rounded for reading; the exact values are in the JSONL and CSV
exports (:mod:`.export`).
"""

from __future__ import annotations

from collections import Counter

from workbench.core import report_md as md
from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project.audit import notes_of_run
from workbench.core.project.run_view import RunView
from workbench.core.project.store import Store

# The headings the built-in protocols' reports have always had (the golden reports hold them);
# any other protocol's report is headed by its declared title.
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
    lines += protocol_sections(RunView(store, run_id))
    lines += _reply_quality(store, run_id)
    lines += _audit(store, run_id)
    lines += ["---", "", f"*Exact values, every prompt and every reply: `rwb export {run_id} --format jsonl` "
              "(or csv).*", ""]
    return "\n".join(lines)


# ----- the header -------------------------------------------------------------------------------

def _header(store: Store, run: dict, cfg: dict, summary: dict) -> list[str]:
    protocol = run["protocol"]
    title = run["label"] or cfg.get("query") or run["id"]
    lines = [f"# {md.text(PROTOCOL_NAMES.get(protocol) or _title(protocol))}: {md.text(title)}", ""]
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
              f"- **Run**: `{run['id']}`" + _place(run),
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
        lines.append(f"- **{_unit_noun(run['protocol']).capitalize()}**: {_votes(summary)}")
    if status == "degraded":
        lines += ["", f"> **Degraded run.** {md.text(run['error'] or 'Too many votes are missing.')} Every result "
                      "below comes from this run: read it as incomplete."]
    elif run["error"]:
        lines += ["", f"> **Why it stopped**: {md.text(run['error'])}"]
    lines.append("")
    agents = _agents(cfg)
    if agents:
        lines += ["## The panel", "", *md.table(["Agent", "Group", "Provider", "Persona"], agents), ""]
    lines += _settings(run, cfg)
    return lines


def _place(run: dict) -> str:
    """Where a run sits: its study's arm, item and replicate, or its batch's replicate."""
    if run.get("study_id"):
        return (f", arm {md.text(run.get('arm'))}, item {md.text(run.get('item'))}, replicate {run['replicate']} "
                f"of study `{md.text(run['study_id'])}`")
    return f", replicate {run['replicate']} of a batch" if run["replicate"] else ""


# ----- every setting that shaped the result ------------------------------------------------------------

# The shared settings a result depends on (the panel, the seed and the dispatch are said above).
_SHARED = ("max_missing_share", "cache", "budget", "echo", "dataset", "item")


def _settings(run: dict, cfg: dict) -> list[str]:
    """The run's protocol settings as configured (its declared config model's fields, defaults
    included: θ, τ, thresholds, rounds...), each cluster's own θ and weight, the shared settings,
    the templates' hashes and prompt set, and the simulated panel's parameters when simulated."""
    from workbench.core import registry

    declared = registry.protocols().get(run["protocol"])
    own = list(declared.config.model_fields) if declared is not None and declared.config is not None else []
    rows = []
    for name in [*own, *_SHARED]:
        if name in cfg:
            rows += _setting_rows(name, cfg[name])
    for i, cluster in enumerate(cfg.get("clusters") or []):
        for key in ("theta", "weight"):
            if cluster.get(key) is not None:
                rows.append([f"clusters[{i}].{key} ({md.text(cluster.get('name'))})", md.text(repr(cluster[key]))])
    lines = ["## Settings", "", "Every setting that shaped the result, as the run was configured (defaults included).",
             "", *md.table(["Setting", "Value"], rows), ""] if rows else []
    provenance = run.get("provenance_json") or {}
    prompts = provenance.get("prompts") or {}
    if prompts:
        lines += ["### Prompts", ""]
        if provenance.get("prompt_set"):
            ps = provenance["prompt_set"]
            lines += [f"From the prompt set **{md.text(ps.get('name'))}** (`{md.text(ps.get('sha256'))}`).", ""]
        lines += md.table(["Step", "Template sha256", "Template"],
                          [[md.text(step), f"`{md.text(p.get('sha256'))}`", "default" if p.get("default") else "edited"]
                           for step, p in prompts.items() if isinstance(p, dict)])
        lines.append("")
    if run["simulated"]:
        params = [[md.text(a.get("id")), md.cell(", ".join(f"{k} {v}" for k, v in sorted((a.get("params") or {}).items())))
                   or "—"] for c in cfg.get("clusters") or [] for a in c.get("agents") or []]
        lines += ["### Simulated panel", "", "Each simulated agent's parameters (docs/simulated-panel.md); an agent "
                  "without one takes the panel's default.", "", *md.table(["Agent", "Parameters"], params), ""]
    return lines


def _setting_rows(name: str, value: object) -> list[list[str]]:
    if isinstance(value, dict):
        return [row for key, v in value.items() for row in _setting_rows(f"{name}.{key}", v)] or [[md.text(name), "—"]]
    if isinstance(value, list):
        shown = (", ".join(md.text(v) for v in value) if all(not isinstance(v, (dict, list)) for v in value)
                 else f"{len(value)} entries (see the configuration)")
        return [[md.text(name), shown or "none"]]
    if value is None:
        return [[md.text(name), "—"]]
    if isinstance(value, float):  # exact: a threshold of 0.6666666667 is not 2/3
        return [[md.text(name), md.text(repr(value))]]
    return [[md.text(name), md.text(md.num(value)) if isinstance(value, (bool, int)) else md.text(value)]]


def _title(protocol: str) -> str:
    from workbench.core import registry

    declared = registry.protocols().get(protocol)
    return declared.title if declared is not None else protocol


def _unit_noun(protocol: str) -> str:
    """What a run's votes are called (its protocol's ValidityUnit: votes, ballots, traces...)."""
    from workbench.core import registry

    declared = registry.protocols().get(protocol)
    unit = declared.validity if declared is not None else None
    return unit.noun if unit is not None else "votes"


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

def protocol_sections(view: RunView) -> list[str]:
    """The run's protocol's own section (its declared ``report``), then the section of each
    wrapper (such as Resonance Echo) whose part the summary holds; every protocol is read
    through its declaration, none by name. A protocol not installed now has no section."""
    from workbench.core import registry

    declared = registry.protocols()
    own = declared.get(view.run["protocol"])
    lines = list(own.report(view)) if own is not None and own.report is not None else []
    for wrapper in declared.values():
        if not wrapper.runnable and wrapper.report is not None and view.summary.get(wrapper.name):
            lines += wrapper.report(view)
    return lines


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
