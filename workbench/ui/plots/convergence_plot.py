"""Convergence and distributions: ARM's round-1 convergence against the shared-prior line, and a
batch's values grouped (points, the group mean and its 95% bootstrap interval).

Both charts own a PlotItem (placed in a figure's GraphicsLayout), create their items once and
update them with ``setData`` / ``setOpts``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush

from workbench.ui import theme
from workbench.ui.plots.style import foreground, html, muted, pen, pg, style_plot, text_item, with_alpha

pyqtgraph = pg()

SHARED_PRIOR = 0.40  # SPEC §4: Jaccard >= 0.40 is the shared-prior warning
METRICS = (("jaccard", "Jaccard"), ("tfidf", "TF-IDF"), ("embedding", "embedding"))


class ConvergenceChart:
    """Jaccard, TF-IDF and (where the file stores it) embedding convergence as bars, with the
    0.40 shared-prior line; each bar says whether its value is stored or recomputed."""

    def __init__(self, plot: Any):
        self.plot = plot
        style_plot(plot, left="round-1 convergence (α, β, γ claims)")
        plot.setMouseEnabled(x=False, y=False)
        plot.setXRange(-0.6, len(METRICS) - 0.4, padding=0)
        plot.setYRange(0, 1.05, padding=0)
        plot.getAxis("bottom").setTicks([[(i, text) for i, (_k, text) in enumerate(METRICS)]])
        self.bars = pyqtgraph.BarGraphItem(x=[0], height=[0], width=0.6, brush=QBrush(muted()))
        plot.addItem(self.bars)
        line = pyqtgraph.InfiniteLine(pos=SHARED_PRIOR, angle=0, pen=pen(theme.colour("warning"), 1.6,
                                                                         Qt.PenStyle.DashLine))
        plot.addItem(line)
        self.line_label = text_item(f"shared prior ({SHARED_PRIOR:.2f})", theme.colour("warning"), size="8pt",
                                    anchor=(1, 1))
        self.line_label.setPos(len(METRICS) - 0.45, SHARED_PRIOR)
        plot.addItem(self.line_label)
        self.labels = [pyqtgraph.TextItem(anchor=(0.5, 1)) for _ in METRICS]
        for label in self.labels:
            plot.addItem(label)
        self.values: dict[str, float | None] = {}

    def set_values(self, convergence: dict[str, Any]) -> None:
        """``convergence``: name -> object with ``value`` and ``source`` (see core.project.drift)."""
        xs, heights, brushes = [], [], []
        self.values = {}
        for i, (key, _text) in enumerate(METRICS):
            conv = convergence.get(key)
            value = conv.value if conv is not None else None
            self.values[key] = value
            label = self.labels[i]
            if value is None:
                label.setHtml(html("not stored" if key == "embedding" else "—", muted(), size="8pt"))
                label.setPos(i, 0.08)
                continue
            xs.append(i)
            heights.append(value)
            over = value >= SHARED_PRIOR
            brushes.append(QBrush(with_alpha(theme.colour("warning") if over else theme.colour("info"), 200)))
            source = "" if conv.source == "stored" else f"<br>({conv.source})"
            label.setHtml(html(f"{value:.3f}{source}", foreground(), size="8pt"))
            label.setPos(i, min(value, 1.0) + (0.1 if source else 0.06))
        if xs:
            self.bars.setOpts(x=xs, height=heights, brushes=brushes, width=0.6)
            self.bars.show()
        else:
            self.bars.hide()


class DistributionChart:
    """Values per group as points (jittered sideways), with each group's mean and 95% interval."""

    def __init__(self, plot: Any):
        self.plot = plot
        style_plot(plot)
        plot.setMouseEnabled(x=False, y=True)
        self.points = pyqtgraph.ScatterPlotItem(pxMode=True, size=7, symbol="o",
                                                pen=pen(theme.colour("info"), 1),
                                                brush=QBrush(with_alpha(theme.colour("info"), 110)))
        plot.addItem(self.points)
        self.means = pyqtgraph.ScatterPlotItem(pxMode=True, size=13, symbol="d", pen=pen(foreground(), 1.4),
                                               brush=QBrush(foreground()))
        self.means.setZValue(5)
        plot.addItem(self.means)
        self.errors = pyqtgraph.ErrorBarItem(x=np.zeros(0), y=np.zeros(0), pen=pen(foreground(), 2), beam=0.18)
        self.errors.setZValue(4)
        plot.addItem(self.errors)
        self.guides = [pyqtgraph.InfiniteLine(angle=0, pen=pen(muted(), 1, Qt.PenStyle.DashLine)) for _ in range(3)]
        self.guide_labels = [pyqtgraph.TextItem(anchor=(0, 1)) for _ in range(3)]
        for line, label in zip(self.guides, self.guide_labels):
            plot.addItem(line, ignoreBounds=True)
            plot.addItem(label, ignoreBounds=True)
        self.band = pyqtgraph.LinearRegionItem(values=(0, 0.04), orientation="horizontal", movable=False,
                                               brush=QBrush(with_alpha(theme.colour("warning"), 40)),
                                               pen=pen(with_alpha(theme.colour("warning"), 0), 0))
        self.band.setZValue(-10)
        plot.addItem(self.band, ignoreBounds=True)
        self.x = np.zeros(0)
        self.y = np.zeros(0)

    def set_groups(self, names: list[str], values: list[list[float]], stats: list[Any], *, label: str,
                   guides: list[tuple[float, str]], band: tuple[float, float] | None) -> None:
        """``stats``: per group an object with ``mean``, ``low`` and ``high`` (core.stats.GroupStat)."""
        xs, ys = [], []
        for g, vals in enumerate(values):
            n = len(vals)
            for k, v in enumerate(vals):  # a deterministic spread, narrower than the group's slot
                xs.append(g + (((k * 0.618034) % 1.0) - 0.5) * 0.36 if n > 1 else g)
                ys.append(v)
        self.x, self.y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
        self.points.setData(x=self.x, y=self.y)
        ok = [g for g, s in enumerate(stats) if s.mean is not None]
        mx = np.array([g for g in ok], dtype=float)
        my = np.array([stats[g].mean for g in ok], dtype=float)
        low = np.array([stats[g].mean - (stats[g].low if stats[g].low is not None else stats[g].mean) for g in ok])
        high = np.array([(stats[g].high if stats[g].high is not None else stats[g].mean) - stats[g].mean for g in ok])
        self.means.setData(x=mx + 0.28, y=my)
        self.errors.setData(x=mx + 0.28, y=my, top=high, bottom=low, beam=0.12)
        self.plot.getAxis("bottom").setTicks([[(g, _short(name)) for g, name in enumerate(names)]])
        self.plot.setLabel("left", label, color=foreground().name())
        self.plot.setXRange(-0.6, max(len(names), 1) - 0.4, padding=0)
        for i, line in enumerate(self.guides):
            text = self.guide_labels[i]
            if i < len(guides):
                value, words = guides[i]
                line.setValue(value)
                line.show()
                text.setHtml(html(words, muted(), size="8pt"))
                text.setPos(-0.55, value)
                text.show()
            else:
                line.hide()
                text.hide()
        if band is None:
            self.band.hide()
        else:
            self.band.setRegion(band)
            self.band.show()
        finite = [v for v in ys if math.isfinite(v)] + [v for v, _w in guides]
        if finite:
            lo, hi = min(finite), max(finite)
            pad = max((hi - lo) * 0.12, 0.02)
            self.plot.setYRange(lo - pad, hi + pad, padding=0)


def _short(name: str, limit: int = 22) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"
