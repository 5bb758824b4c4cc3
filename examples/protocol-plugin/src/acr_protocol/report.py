"""ACR's section of a run's report (``rwb export RUN --format md|html``): Markdown lines from the
stored run, read through the :class:`RunView` the workbench hands over (the run's summary, and
its records by kind: the artifacts, and this protocol's ``critique`` records). No SQL, no I/O.

Every text a model wrote goes through ``report_md.text``/``block``/``cell``, which escape it, so
an answer that holds ``# Heading`` or ``| a | b |`` shows as text and never reshapes the report.
"""

from __future__ import annotations

from collections.abc import Iterable

from workbench.core import report_md as md

TITLE = "Ask, critique, revise"


def report(view) -> Iterable[str]:
    acr = view.summary.get("acr")
    if not acr:
        return [f"## {TITLE}", "", "The run stored no result (it did not finish).", ""]
    texts = {a["key"]: a["text"] for a in view.records("artifact")}
    critiques = {r["key"]: r["data"] for r in view.records("critique")}  # keyed by the answer critiqued
    moved = acr.get("mean_changed_share")
    counts = (f"{acr['answers']} answers, {acr['critiques']} readable critiques, {acr['revisions']} revisions. "
              f"How far a revision moved from its answer (1 minus the overlap of their words): "
              f"{md.num(moved)} on average.")
    lines = [f"## {TITLE}", "", counts, ""]
    lines += md.table(("Agent", "Critiqued by", "Severity", "Revised", "Moved"), (
        (md.cell(r["agent"]), md.cell(r["critic"]), md.cell(r["severity"]), md.yes_no(r["revised"]),
         md.num(r["changed_share"])) for r in acr["agents"]))
    lines.append("")
    for row in acr["agents"]:
        agent = row["agent"]
        lines += [f"### {md.text(agent)}", ""]
        lines += ["**Answer**", "", *md.block(texts.get(f"r1-{agent}") or "(none)"), ""]
        critique = critiques.get(f"r1-{agent}")
        if critique:
            said = md.text(critique.get("summary"))
            lines += [f"**Critique** by {md.text(row['critic'])} ({md.text(critique.get('severity'))}): {said}", ""]
            lines += [f"- {md.text(issue)}" for issue in critique.get("issues") or []]
            lines.append("")
        if row["revised"]:
            lines += ["**Revision**", "", *md.block(texts.get(f"r2-{agent}") or ""), ""]
    return lines
