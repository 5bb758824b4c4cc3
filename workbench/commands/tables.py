"""Plain-text tables for the terminal (``rwb runs``): aligned columns, long cells cut with "…".

A cell may hold text from outside (a run's label, a provider's error): any control character in
it is shown as an escape (``\x1b``), so a cell never recolours the terminal or starts a line."""

from __future__ import annotations

from collections.abc import Sequence

from workbench.core.limits import printable

STATUS_WORDS = {"stopped_at_cap": "stopped at cap"}


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, max_width: dict[int, int] | None = None) -> str:
    limits = max_width or {}

    def fit(i: int, value: str) -> str:
        value = printable(" ".join(str(value).split()))
        cap = limits.get(i)
        return value if cap is None or len(value) <= cap else value[:cap - 1] + "…"

    cells = [[fit(i, v) for i, v in enumerate(r)] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]

    def line(r: list[str]) -> str:
        return "  ".join(v.ljust(widths[i]) for i, v in enumerate(r)).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, cells)]) + "\n"


def _when(stamp: str | None) -> str:
    """``2026-11-25T04:53:53.678Z`` → ``2026-11-25 04:53`` (UTC)."""
    return (stamp or "")[:16].replace("T", " ") or "—"


def runs_table(rows: Sequence[dict]) -> str:
    """``rwb runs`` for people: one line per run, newest last; ``--json`` has every field."""
    if not rows:
        return "No runs in this project yet. Start one with: rwb run CONFIG --project FILE\n"
    body = []
    for r in rows:
        kind = "sim" if r.get("simulated") else ("import" if r.get("source") == "import" else "real")
        status = STATUS_WORDS.get(r.get("status"), r.get("status") or "—")
        note = r.get("error") or ""
        group = r.get("study_id") or r.get("batch_id") or "—"  # a run is in a batch or a study, not both
        replicate = r.get("replicate")
        body.append([r["run_id"], r.get("protocol") or "—", status, kind, _when(r.get("started_at")),
                     r.get("label") or "—", group, r.get("arm") or "—", r.get("item") or "—",
                     "—" if replicate is None else str(replicate), note])
    text = text_table(["RUN", "PROTOCOL", "STATUS", "KIND", "STARTED (UTC)", "LABEL", "BATCH/STUDY", "ARM", "ITEM",
                       "REP", "NOTE"], body, max_width={5: 40, 6: 32, 7: 24, 8: 16, 10: 50})
    return text + f"{len(rows)} run{'s' if len(rows) != 1 else ''}. Full details as JSON: rwb runs --json\n"
