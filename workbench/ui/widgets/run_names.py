"""How a run is named wherever it is listed or picked: by its label, protocol, status and start time
(UI.md), never by a bare id. One formatter for every list, combo box and menu of runs, fed by the
one core query (``core.project.runs.run_list`` and the reads built on it); the id, the batch and
the replicate go in the tooltip.

    run_title(row)  # "Downtown cars · RCP · ✓ completed · 27 Nov 14:02:11 · SIM" ("14:02:11" today)
"""

from __future__ import annotations

from datetime import date, datetime

NO_LABEL = "(no label)"
# A status's glyph (UI.md "Run status"): run_status.RUN_STATUS adds each one's colour.
STATUS_GLYPHS = {"completed": "✓", "degraded": "⚠", "stopped_at_cap": "⏸", "interrupted": "↻", "failed": "✖",
                 "running": "◐", "waiting": "⧗"}


def _get(run, key: str, default=None):
    return run.get(key, default) if isinstance(run, dict) else getattr(run, key, default)


def started_text(stamp: str | None, *, today: date | None = None) -> str:
    """A run's start in local time, to the second (two runs a minute apart read apart); the day
    too unless it is today (a narrow list keeps room for the label)."""
    if not stamp:
        return ""
    try:
        at = datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone()
    except ValueError:
        return stamp
    return at.strftime("%H:%M:%S" if at.date() == (today or date.today()) else "%d %b %H:%M:%S")


def status_text(status: str | None) -> str:
    glyph = STATUS_GLYPHS.get(status or "", "?")
    return f"{glyph} {(status or '').replace('_', ' ')}"


def run_title(run, *, status: bool = True, sim: bool = True) -> str:
    """``run`` (a RunListRow or a row dict of the runs table) as every list names it. ``status``
    False: the list shows the status in a column of its own."""
    parts = [str(_get(run, "label") or "").strip() or NO_LABEL, str(_get(run, "protocol") or "?").upper()]
    if status:
        parts.append(status_text(_get(run, "status")))
    parts.append(started_text(_get(run, "started_at")))
    if sim and _get(run, "simulated"):
        parts.append("SIM")
    return " · ".join(p for p in parts if p)


def run_titles(runs, **kwargs) -> list[str]:
    """:func:`run_title` of each run, told apart where two would read the same (two runs of one
    configuration started within a second): those end with the end of their id."""
    titles = [run_title(r, **kwargs) for r in runs]
    seen: dict[str, int] = {}
    for t in titles:
        seen[t] = seen.get(t, 0) + 1
    return [f"{t} · …{str(_get(r, 'id'))[-6:]}" if seen[t] > 1 else t for t, r in zip(titles, runs)]


def run_tooltip(run) -> str:
    """The run's id, and its batch and replicate when it has them: what the title leaves out."""
    lines = [f"Run {_get(run, 'id')}"]
    if _get(run, "batch_id"):
        replicate = _get(run, "replicate")
        lines.append(f"a run of batch {_get(run, 'batch_id')}"
                     + (f", replicate {replicate + 1}" if isinstance(replicate, int) else ""))
    if _get(run, "source") == "import":
        lines.append("imported from an ARM trace file")
    return "\n".join(lines)


__all__ = ["run_title", "run_titles", "run_tooltip", "started_text", "status_text"]
