"""A study's report for reading (SPEC §9): Markdown and HTML with inline SVG plots, and CSV.

The report JSON (:mod:`.report`) is the exact record; these round its numbers for reading and
lay it out: the arms and what each changes, a forest plot per metric (each arm's difference from
the baseline with its 95 % interval), the per-arm metric table, the comparisons, the separations
and the warnings. Text from outside (arm names, study names) is escaped: Markdown shows it
literally, and the SVG and HTML escape every character, so a name never becomes markup. The SVG
is written here (no plotting library): a few rectangles, lines and labels, the same bytes for
the same report.
"""

from __future__ import annotations

import html
import io
import math
from collections.abc import Iterable, Mapping

from workbench.core import report_md as md
from workbench.core.safe_output import write_csv

PLOT_WIDTH, ROW_HEIGHT, LABEL_WIDTH, MARGIN = 640, 26, 190, 16


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{value:.{digits}g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2e}"


def _p(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.2g}" if value >= 1e-3 else f"{value:.1e}"


def _ci(ci: list | None) -> str:
    if not ci or ci[0] is None:
        return "—"
    return f"{_fmt(ci[0])} – {_fmt(ci[1])}"


def _metric_names(report: Mapping) -> list[str]:
    names: list[str] = []
    for arm in report["arms"]:
        for name in arm["metrics"]:
            if name not in names:
                names.append(name)
    return names


# ----- the parts of a report: Markdown text, and SVG the HTML keeps as markup ------------------------

def _parts(report: Mapping, plan: Mapping, title: str) -> list[tuple[str, str]]:
    parts: list[tuple[str, str]] = []
    arms = {a["name"]: a for a in plan.get("arms", [])}
    baseline = plan.get("baseline")
    lines = [f"# Study: {md.text(title)}", "",
             f"- **Study**: `{md.text(report['study_id'])}`",
             f"- **Baseline**: {md.text(baseline)}",
             f"- **Items**: {len(plan.get('items') or [])}; **replicates**: {plan.get('replicates')} "
             f"(replicate r of every arm runs with seed {plan.get('seed', 0)} + r)",
             f"- **Results**: {sum(a['runs'] for a in report['arms'])} "
             f"({', '.join(md.text(a['name']) + ' ' + str(a['runs']) for a in report['arms'])})", "",
             "Each arm's metric is the mean over its runs, with the percentile bootstrap's 95 % interval over "
             "its units (items when the study has several, else replicates; 2,000 resamples). Each comparison is "
             "the mean paired difference from the baseline over the (item, replicate) pairs, its bootstrap "
             "interval, the two-sided paired sign-flip test's p (exact up to 20 non-zero differences, else "
             "100,000 resamples), Holm's correction over the study's comparisons of that metric, and the "
             "smallest p the test could reach. Numbers are rounded here; `rwb study report --format json` has "
             "them exact.", "", "## Arms", ""]
    rows = []
    for a in report["arms"]:
        spec = arms.get(a["name"], {})
        tags = ", ".join(f"{k}: {v}" for k, v in (spec.get("tags") or {}).items())
        how = (f"re-classifies {md.text(spec['rule_only_of'])}'s calls" if spec.get("rule_only_of")
               else "runs")
        rows.append([md.text(a["name"]) + (" (baseline)" if a["name"] == baseline else ""),
                     md.cell(", ".join(spec.get("changes") or [])) if spec.get("changes") else "as the base",
                     md.cell(", ".join(spec.get("dropped") or [])), how, md.cell(tags), str(a["runs"])])
    lines += md.table(["Arm", "Changes", "Dropped", "Calls", "Tags", "Results"], rows)
    lines += ["", "## Metrics per arm", "", "Mean (95 % interval), n units.", ""]
    names = _metric_names(report)
    rows = []
    for name in names:
        row = [f"`{name}`"]
        for a in report["arms"]:
            m = a["metrics"].get(name)
            row.append(f"{_fmt(m['mean'])} ({_ci(m['ci95'])}), n {m['n']}" if m else "—")
        rows.append(row)
    lines += md.table(["Metric", *(md.text(a["name"]) for a in report["arms"])], rows)
    lines += ["", f"## Against the baseline ({md.text(baseline)})", ""]
    parts.append(("md", "\n".join(lines)))
    by_metric: dict[str, list[Mapping]] = {}
    for c in report["comparisons"]:
        by_metric.setdefault(c["metric"], []).append(c)
    if not by_metric:
        parts.append(("md", "No comparison: no arm shares a metric with the baseline over common pairs.\n"))
    for name, found in by_metric.items():
        parts.append(("md", f"### `{name}`\n"))
        parts.append(("svg", forest_svg(name, found)))
        rows = [[md.text(c["arm"]), _fmt(c["diff"]), _ci(c["ci95"]), _p(c["p"]), _p(c["p_holm"]), str(c["pairs"]),
                 _p(c["min_p"])] for c in found]
        parts.append(("md", "\n".join(["", *md.table(["Arm", "Difference", "95 % interval", "p", "p (Holm)", "Pairs",
                                                       "min p"], rows), ""])))
    tail = []
    if report["separations"]:
        tail += ["## Contaminated against clean", "",
                 "The ROC AUC of the runs' values, arms tagged contaminated against arms tagged clean (0.5: no "
                 "separation; 1 or 0: complete).", ""]
        tail += md.table(["Metric", "Contaminated arms", "Clean arms", "AUC"],
                         [[f"`{s['metric']}`", md.text(", ".join(s["positive_arms"])),
                           md.text(", ".join(s["negative_arms"])), _fmt(s["auc"])] for s in report["separations"]])
        tail.append("")
    tail += ["## Warnings", ""]
    tail += [f"- {md.text(w)}" for w in report["warnings"]] or ["None."]
    parts.append(("md", "\n".join(tail) + "\n"))
    return parts


def to_markdown(report: Mapping, plan: Mapping, title: str) -> str:
    return "\n".join(text for _kind, text in _parts(report, plan, title))


def to_html(report: Mapping, plan: Mapping, title: str) -> str:
    body = "\n".join(md.body_html(text) if kind == "md" else f'<figure class="forest">{text}</figure>'
                     for kind, text in _parts(report, plan, title))
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>Study: {html.escape(title)}</title>\n<style>\n{md.STYLE}\nfigure.forest{{margin:1rem 0}}\n"
            f"</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def forest_svg(metric: str, comparisons: Iterable[Mapping]) -> str:
    """Each arm's difference from the baseline (a dot) with its 95 % interval (a line), and 0."""
    rows = [c for c in comparisons if c.get("diff") is not None]
    lows = [c["ci95"][0] if c["ci95"][0] is not None else c["diff"] for c in rows]
    highs = [c["ci95"][1] if c["ci95"][1] is not None else c["diff"] for c in rows]
    lo, hi = min([0.0, *lows]), max([0.0, *highs])
    if hi - lo < 1e-12:
        lo, hi = lo - 1, hi + 1
    pad = (hi - lo) * 0.08
    lo, hi = lo - pad, hi + pad
    inner = PLOT_WIDTH - LABEL_WIDTH - 2 * MARGIN
    height = MARGIN * 2 + ROW_HEIGHT * (len(rows) + 1)

    def x(v: float) -> float:
        return round(LABEL_WIDTH + MARGIN + (v - lo) / (hi - lo) * inner, 2)

    e = html.escape
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{PLOT_WIDTH}" height="{height}" '
           f'viewBox="0 0 {PLOT_WIDTH} {height}" role="img" aria-label="{e(metric)}: difference from the baseline">',
           f'<rect width="{PLOT_WIDTH}" height="{height}" fill="#fff"/>',
           f'<line x1="{x(0)}" y1="{MARGIN}" x2="{x(0)}" y2="{height - MARGIN - ROW_HEIGHT / 2}" stroke="#888" '
           'stroke-dasharray="4 3"/>']
    for i, c in enumerate(rows):
        y = MARGIN + ROW_HEIGHT * i + ROW_HEIGHT / 2
        low, high = lows[i], highs[i]
        colour = "#1f6fb4" if low > 0 or high < 0 else "#555"
        out += [f'<text x="{LABEL_WIDTH}" y="{y + 4}" text-anchor="end" font-size="12" font-family="sans-serif">'
                f'{e(_short(c["arm"]))}</text>',
                f'<line x1="{x(low)}" y1="{y}" x2="{x(high)}" y2="{y}" stroke="{colour}" stroke-width="2"/>',
                f'<circle cx="{x(c["diff"])}" cy="{y}" r="4" fill="{colour}"><title>{e(c["arm"])}: '
                f'{_fmt(c["diff"])} ({_ci(c["ci95"])}), p {_p(c["p"])}</title></circle>']
    axis_y = height - MARGIN - ROW_HEIGHT / 2
    out += [f'<line x1="{x(lo)}" y1="{axis_y}" x2="{x(hi)}" y2="{axis_y}" stroke="#333"/>']
    for tick in _ticks(lo, hi):
        out += [f'<line x1="{x(tick)}" y1="{axis_y}" x2="{x(tick)}" y2="{axis_y + 4}" stroke="#333"/>',
                f'<text x="{x(tick)}" y="{axis_y + 16}" text-anchor="middle" font-size="11" '
                f'font-family="sans-serif">{_fmt(tick)}</text>']
    out.append("</svg>")
    return "".join(out)


def _short(name: str, limit: int = 28) -> str:
    return name if len(name) <= limit else name[:limit - 1] + "…"


def _ticks(lo: float, hi: float) -> list[float]:
    step = 10 ** math.floor(math.log10((hi - lo) / 4))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= 6:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return [round(first + i * step, 12) for i in range(int((hi - first) / step) + 1)]


# ----- CSV ---------------------------------------------------------------------------------------------

CSV_HEADER = ("arm", "metric", "mean", "ci95_low", "ci95_high", "n", "baseline", "diff", "diff_ci95_low",
              "diff_ci95_high", "p", "p_holm", "pairs", "min_p")


def to_csv(report: Mapping) -> str:
    """One row per arm and metric: its estimate, and its comparison with the baseline (exact values)."""
    comparisons = {(c["arm"], c["metric"]): c for c in report["comparisons"]}
    rows = []
    for arm in report["arms"]:
        for name, m in arm["metrics"].items():
            c = comparisons.get((arm["name"], name)) or {}
            rows.append([arm["name"], name, _cell(m["mean"]), _cell(m["ci95"][0]), _cell(m["ci95"][1]), m["n"],
                         c.get("baseline", ""), _cell(c.get("diff")), _cell((c.get("ci95") or [None, None])[0]),
                         _cell((c.get("ci95") or [None, None])[1]), _cell(c.get("p")), _cell(c.get("p_holm")),
                         c.get("pairs", ""), _cell(c.get("min_p"))])
    out = io.StringIO()
    write_csv(out, CSV_HEADER, rows)
    return out.getvalue()


def _cell(value: object) -> object:
    return "" if value is None else repr(value) if isinstance(value, float) else value
