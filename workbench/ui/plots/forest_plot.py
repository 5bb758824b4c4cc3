"""The forest plot of a study (SPEC §9): each arm's paired difference from the baseline on one
metric, a point at ``diff`` and a bar over its 95% CI, one row per arm, with the line of no
difference at 0.

Its items (the zero line, the bars, the points, the labels' axis) are created once; a new study,
metric or result changes their data only (``set_rows``). :attr:`rows` keeps what is drawn, so a
test reads the difference and its interval from the plot itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from PySide6.QtCore import Qt

from workbench.ui import theme
from workbench.ui.plots.style import html, muted, pen, pg, style_plot, title

pyqtgraph = pg()


@dataclass(frozen=True)
class ForestRow:
    arm: str
    diff: float
    low: float | None
    high: float | None
    p_holm: float | None


class ForestPlot(pyqtgraph.PlotWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        item = self.getPlotItem()
        style_plot(self, bottom="arm − baseline (■ mean paired difference, bar: 95% CI)")
        item.setMouseEnabled(x=False, y=False)
        item.showGrid(x=True, y=False, alpha=0.25)
        self.zero = pyqtgraph.InfiniteLine(pos=0.0, angle=90, pen=pen(muted(), 1.2, Qt.PenStyle.DashLine))
        item.addItem(self.zero, ignoreBounds=True)
        colour = theme.colour("info")
        self.bars = pyqtgraph.ErrorBarItem(x=[], y=[], pen=pen(colour, 2.0), beam=0.15)
        item.addItem(self.bars)
        self.points = pyqtgraph.ScatterPlotItem([], [], symbol="s", size=10, pen=pen(colour, 1), brush=colour)
        item.addItem(self.points)
        self.note = pyqtgraph.TextItem(anchor=(0.5, 0.5))
        item.addItem(self.note, ignoreBounds=True)
        self.rows: list[ForestRow] = []
        self.setToolTip("Each arm's mean paired difference from the baseline (■) with its 95% bootstrap "
                        "interval (bar); * marks an arm whose Holm-corrected p is below 0.05")

    def set_rows(self, rows: list[ForestRow], metric: str, baseline: str) -> None:
        """Draw ``rows`` (top to bottom in the given order) for ``metric`` against ``baseline``."""
        self.rows = list(rows)
        item = self.getPlotItem()
        n = len(self.rows)
        ys = [float(n - 1 - i) for i in range(n)]  # the first arm at the top
        xs = [r.diff for r in self.rows]
        with_ci = [(y, r) for y, r in zip(ys, self.rows) if r.low is not None and r.high is not None]
        import numpy as np  # ErrorBarItem does arithmetic on its data: arrays, not lists

        self.bars.setData(x=np.array([r.diff for _y, r in with_ci]), y=np.array([y for y, _r in with_ci]),
                          left=np.array([r.diff - r.low for _y, r in with_ci]),
                          right=np.array([r.high - r.diff for _y, r in with_ci]))  # no top/bottom: no beam across
        self.points.setData(xs, ys)
        item.getAxis("left").setTicks([[(y, _arm_tick(r)) for y, r in zip(ys, self.rows)]])
        if n:
            self.note.setHtml("")
            low = min([0.0, *(r.low for _y, r in with_ci), *xs])
            high = max([0.0, *(r.high for _y, r in with_ci), *xs])
            pad = (high - low) * 0.08 or 0.05
            item.setXRange(low - pad, high + pad, padding=0)
            item.setYRange(-0.7, n - 0.3, padding=0)
            # A title wider than the plot would widen its scene past the view (the plot clipped):
            # short, the names cut; they come from the study file, so escaped in the title's HTML.
            title(item, f"{escape(_cut(metric))} against “{escape(_cut(baseline))}”")
        else:
            item.setXRange(-1, 1, padding=0)
            item.setYRange(-1, 1, padding=0)
            self.note.setPos(0, 0)
            self.note.setHtml(html("No comparison yet: the arms need paired results on this metric.", muted(),
                                   size="9pt"))
            title(item, escape(_cut(metric or "")))

    def export_item(self) -> Any:
        return self.getPlotItem()


def _cut(text: str, most: int = 32) -> str:
    return text if len(text) <= most else text[:most - 1] + "…"


def _arm_tick(row: ForestRow) -> str:
    mark = "" if row.p_holm is None else (" *" if row.p_holm < 0.05 else "")
    return f"{_cut(row.arm, 24)}{mark}"
