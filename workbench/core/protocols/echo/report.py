"""The Resonance Echo section of a run's Markdown report. Pure: plain dicts in, lines out.

``sessions`` is the run summary's ``echo`` block (one entry per agent: pattern, interval, turns,
checks, failures, restorations, marker); ``failed_checks`` the checks that failed
(``{"agent", "turn", "trigger", "marker", "reply_excerpt"}``); ``restorations`` one entry per
episode (``{"id", "agent", "steps": [{"step", "detail"}]}``), in the order they started.
Timestamps are left out: the report reads the same for the same seed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workbench.core import report_md as md

PATTERN_LABELS = {
    "stateless": "Stateless (pacemaker: the seed goes into every turn)",
    "stateful": "Stateful (anchor: given at session start, checked on boot and after errors)",
    "compaction_aware": "Compaction-aware (anchor, checked after every compaction)",
}
STEP_LABELS = {"log": "loss logged", "read_seed": "session seed read", "new_session": "new session",
               "inject": "new marker injected", "verify": "verified", "resume": "resumed",
               "escalate": "escalated to the conductor"}


def _outcome(steps: Sequence[Mapping]) -> str:
    names = [s.get("step") for s in steps]
    if "resume" in names:
        return "restored"
    if "escalate" in names:
        return "escalated to the conductor"
    return "unfinished"


def report_lines(sessions: Mapping[str, Mapping], failed_checks: Sequence[Mapping],
                 restorations: Sequence[Mapping]) -> list[str]:
    lines = [
        "## Resonance Echo", "",
        "This run was wrapped in Resonance Echo: each agent was given a *marker* (a poetic fragment and "
        "six hex digits) and asked to recite it at intervals. A reply without the marker's hex means the "
        "agent lost part of its context (it was truncated or compacted); the agent is then *restored*: "
        "the loss is logged, its session seed is read back, a new session starts with a new marker, and "
        "the marker is verified before the agent resumes.", "",
    ]
    if not sessions:
        return lines + ["No Echo session was recorded.", ""]
    rows = []
    for agent, s in sessions.items():
        rows.append([md.text(agent), md.text(PATTERN_LABELS.get(s.get("pattern"), md.label(s.get("pattern")))),
                     md.num(s.get("interval")) if s.get("interval") is not None else "—",
                     md.num(s.get("turns")), md.num(s.get("checks")), md.num(s.get("failures")),
                     md.num(len(s.get("restorations") or [])), md.cell(s.get("marker")),
                     md.label(s.get("status"))])
    lines += ["### Markers and checks per agent", "",
              *md.table(["Agent", "Injection pattern", "Check every (turns)", "Turns", "Checks", "Failed",
                         "Restorations", "Marker at the end", "Session"], rows), ""]
    lines += ["### Failed checks", ""]
    if failed_checks:
        lines += md.table(["Agent", "Turn", "Checked because", "Marker expected", "What the agent replied"],
                          [[md.text(c.get("agent")), md.num(c.get("turn")),
                            md.text(", ".join(md.label(t).lower() for t in str(c.get("trigger") or "").split(",") if t))
                            or "—", md.cell(c.get("marker")), md.cell(c.get("reply_excerpt"))]
                           for c in failed_checks])
    else:
        lines.append("Every check passed: no agent lost its marker.")
    lines += ["", "### Restorations", ""]
    if not restorations:
        return lines + ["None were needed.", ""]
    for i, r in enumerate(restorations, 1):
        steps = r.get("steps") or []
        detail = {s.get("step"): s.get("detail") or {} for s in steps}
        log, inject = detail.get("log", {}), detail.get("inject", {})
        lost = log.get("lost_marker")
        turn = f" at turn {log['turn']}" if log.get("turn") is not None else ""
        path = " → ".join(STEP_LABELS.get(s.get("step"), md.label(s.get("step"))) for s in steps)
        lines.append(f"{i}. **{md.text(r.get('agent'))}**{turn}: {_outcome(steps)}. "
                     + (f"Lost “{md.text(lost)}”" if lost else "Lost its marker")
                     + (f"; given “{md.text(inject['marker'])}”" if inject.get("marker") else "")
                     + (f" ({md.text(log['reason'])})" if log.get("reason") else "") + f". Steps: {path}.")
    return lines + [""]


def section(view) -> list[str]:
    """Echo's section of a wrapped run's report (``Protocol.report``): the sessions the runner
    kept in the summary, the failed checks and the restorations (``view``: a
    ``shared.declaration.RunView``). Agents run in parallel: everything in a stable order."""
    sessions = view.summary.get("echo") or {}
    failed = [{k: c[k] for k in ("agent", "turn", "trigger", "marker", "reply_excerpt")}
              for c in view.records("echo_check") if c["success"] == 0]
    failed.sort(key=lambda c: (str(c["agent"]), c["turn"] or 0))
    episodes: dict[str, dict] = {}
    for r in view.records("echo_restoration"):
        ep = episodes.setdefault(r["restoration"], {"id": r["restoration"], "agent": r["agent"], "steps": []})
        ep["steps"].append({"step": r["step"], "detail": r["detail"]})

    def started(ep: dict) -> tuple:
        log = next((s["detail"] for s in ep["steps"] if s["step"] == "log"), {}) or {}
        return (str(ep["agent"]), log.get("turn") or 0)

    ordered = {agent: sessions[agent] for agent in sorted(sessions)}
    return report_lines(ordered, failed, sorted(episodes.values(), key=started))
