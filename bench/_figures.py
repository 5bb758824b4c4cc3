"""The figures a benchmark reports, and the one line ``bench/run_all.py`` reads (standard library only).

A script that supports ``--json`` prints, as the last line of its stdout::

    BENCH_JSON {"figures": [{"group": ..., "name": ..., "value": ..., "unit": ..., "target": ..., ...}]}

``target`` is ``None`` when issue 17 gives no target (the table shows "—"), else a pair
``["<", 0.8]`` / ``["<=", 1.15]`` / ``["==", 0]``; ``passed`` is computed from it here, so every
script judges its figures the same way. ``note`` says how the figure was taken (sizes, medians).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from typing import Any

MARK = "BENCH_JSON "


@dataclass
class Figure:
    group: str
    name: str
    value: float | int | str | None
    unit: str = ""
    target: tuple[str, float] | None = None
    note: str = ""

    @property
    def passed(self) -> bool | None:
        if self.target is None:
            return None
        if not isinstance(self.value, (int, float)):
            return False  # a figure with a target that could not be measured fails
        op, limit = self.target
        return {"<": self.value < limit, "<=": self.value <= limit, "==": self.value == limit,
                ">=": self.value >= limit, ">": self.value > limit}[op]

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["target"] = list(self.target) if self.target else None
        d["passed"] = self.passed
        return d


def fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def target_text(target: tuple[str, float] | list | None, unit: str = "") -> str:
    if not target:
        return "—"
    op, limit = target
    return f"{op} {fmt(limit)}{(' ' + unit) if unit else ''}"


def print_table(figures: list[Figure], out=sys.stdout) -> None:
    """The human table: figure | measured | target | PASS/FAIL, one block per group."""
    rows = [(f.group, f.name, f"{fmt(f.value)} {f.unit}".strip(), target_text(f.target, f.unit),
             {True: "PASS", False: "FAIL", None: "—"}[f.passed], f.note) for f in figures]
    widths = [max([len(r[i]) for r in rows] + [len(h)]) for i, h in
              enumerate(("group", "figure", "measured", "target", "mark"))]
    group = None
    for g, name, measured, target, mark, note in rows:
        if g != group:
            group = g
            print(f"\n== {g} ==", file=out)
            print(f"{'figure':<{widths[1]}}  {'measured':>{widths[2]}}  {'target':<{widths[3]}}  mark", file=out)
        line = f"{name:<{widths[1]}}  {measured:>{widths[2]}}  {target:<{widths[3]}}  {mark:<4}"
        print(line + (f"  ({note})" if note else ""), file=out)


def emit(figures: list[Figure], as_json: bool) -> int:
    """Print the table (or, with ``--json``, the table on stderr and the BENCH_JSON line on stdout).
    Returns the exit code: 1 when a figure with a target failed."""
    print_table(figures, sys.stderr if as_json else sys.stdout)
    if as_json:
        print(MARK + json.dumps({"figures": [f.as_dict() for f in figures]}), flush=True)
    return 1 if any(f.passed is False for f in figures) else 0


def load(line: str) -> list[Figure]:
    data = json.loads(line[len(MARK):])
    out = []
    for d in data["figures"]:
        d.pop("passed", None)
        d["target"] = tuple(d["target"]) if d.get("target") else None
        out.append(Figure(**d))
    return out
