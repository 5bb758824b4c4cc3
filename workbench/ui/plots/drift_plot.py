"""ARM drift: a slope chart of each agent's confidence from round 1 to round 2, and the drift
itself against FORMAT.md's bands; composed with the convergence chart into one figure per run,
and with the distribution and ROC charts into one figure per batch (each exports whole).

- Slope chart: alpha and beta go from their round-1 to their round-2 confidence; gamma's drift is
  measured against the silent baseline (SPEC §4), so the baseline is a star at round 1 and a
  dashed line joins it to gamma's round 2. Each agent's +0.04 band, [reference, reference + 0.04],
  is shaded in its colour across the chart (named under it, with a swatch): ending within it a
  rise is a "minor shift", above it an "upward shift". Every agent's round-2 label is shown,
  spread apart so that none overlaps another (and kept inside the chart). FAP re-runs are hollow markers at round 2; gate firings are flagged beside
  the agent (⚑ polarity gate on gamma; FAP on an agent whose self-reported delta exceeds 0.04).
- Drift chart: each agent's harness delta as a bar over the bands (-0.15, 0, +0.04), with the
  self-reported delta as a hollow diamond (a gap over 0.02 is a delta_mismatch). The bands'
  names sit inside their bands, with room kept for them (in pixels) above +0.04 and below -0.15.

The bands are descriptive: ARM's author withdrew drift as a contamination detector (SPEC §4).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QCursor, QPen
from PySide6.QtWidgets import QToolTip

from workbench.ui import theme
from workbench.ui.plots.convergence_plot import ConvergenceChart, DistributionChart
from workbench.ui.plots.roc_plot import RocChart
from workbench.ui.plots.style import (
    ROLE_SYMBOLS,
    background,
    foreground,
    html,
    muted,
    pen,
    pg,
    plot_min,
    role_colour,
    style_plot,
    text_item,
    with_alpha,
)

pyqtgraph = pg()

ROLES = ("alpha", "beta", "gamma")
GREEK = {"alpha": "α", "beta": "β", "gamma": "γ", "silent": "silent"}
OFFSET = {"alpha": -0.035, "beta": 0.0, "gamma": 0.035}  # keeps lines apart at equal confidences
UP, DOWN = 0.04, -0.15
LINE_PX = 13.0  # one 8pt line of a label, in pixels
BAND_TEXT_PX = 14.0  # one 7pt band name, with a little air
BAND_SPAN = (-0.06, 1.05)  # the slope chart's +0.04 bands reach across both rounds and their labels' start
STACK_BELOW_PX = 900  # a run's figure narrower than this puts its slope chart above the other two
HIT_PX = 10.0  # how close (in pixels) the pointer must be to a slope chart's point


class SlopeChart:
    def __init__(self, plot: Any):
        self.plot = plot
        style_plot(plot, left="self-reported confidence")
        plot.setMouseEnabled(x=False, y=False)
        plot.setXRange(-0.75, 2.2, padding=0)
        plot.getAxis("bottom").setTicks([[(0, "round 1"), (1, "round 2")]])
        # Each agent's +0.04 band: a shaded strip across the chart in its colour (not a box at
        # round 2 alone, which read as a stray square), named under the chart with a swatch.
        self.bands = pyqtgraph.BarGraphItem(x=[0.5], y0=[0], height=[0], width=1.0,
                                            brush=QBrush(with_alpha(muted(), 40)), pen=QPen(Qt.PenStyle.NoPen))
        self.bands.setZValue(-5)
        plot.addItem(self.bands)
        swatch = with_alpha(muted(), 110).name(QColor.NameFormat.HexArgb)
        plot.setLabel("bottom", f"<span style='background-color:{swatch}'>&nbsp;&nbsp;&nbsp;&nbsp;</span>"
                                f" each agent's +0.04 band (from its reference): ending within it is a minor shift",
                      color=foreground().name())
        self.lines: dict[str, Any] = {}
        self.labels: dict[str, Any] = {}
        for role in ROLES:
            c = role_colour(role)
            line = pyqtgraph.PlotDataItem([], [], pen=pen(c, 2.4), symbol=ROLE_SYMBOLS[role], symbolSize=11,
                                          symbolPen=pen(c.darker(140), 1), symbolBrush=c)
            plot.addItem(line)
            self.lines[role] = line
            label = pyqtgraph.TextItem(anchor=(0, 0))
            plot.addItem(label)
            self.labels[role] = label
        sc = role_colour("silent")
        self.silent = pyqtgraph.ScatterPlotItem(pxMode=True, symbol="star", size=17, pen=pen(sc.darker(150), 1),
                                                brush=QBrush(sc))
        self.silent.setZValue(6)
        plot.addItem(self.silent)
        self.silent_link = pyqtgraph.PlotDataItem([], [], pen=pen(sc, 1.6, Qt.PenStyle.DashLine))
        plot.addItem(self.silent_link)
        self.silent_label = pyqtgraph.TextItem(anchor=(1, 0.5))
        plot.addItem(self.silent_label)
        self.retries = pyqtgraph.ScatterPlotItem(pxMode=True, symbol="o", size=9, pen=pen(foreground(), 1.4),
                                                 brush=QBrush(Qt.BrushStyle.NoBrush))
        plot.addItem(self.retries)
        self.data: dict[str, tuple[float | None, float | None]] = {}
        # Where each trace is drawn: (x, y, trace id, what it is), for hover and click.
        self.points: list[tuple[float, float, int, str]] = []
        self._placed: list[tuple[float, int, Any]] = []
        self._span = 1.0
        plot.getViewBox().sigResized.connect(lambda *_: self._place_labels())

    def _place_labels(self) -> None:
        """Every agent's label beside its round-2 end: spread apart so that none overlaps the
        next, and the whole stack moved up if it would run out of the chart's bottom (a label
        below the chart was not drawn at all). One 8pt line is about LINE_PX pixels: in data
        units, from the chart's height now."""
        vb = self.plot.getViewBox()
        height = vb.height()
        (_x0, _x1), (lo, hi) = vb.viewRange()
        line_h = (hi - lo) * (LINE_PX / height if height > 60 else 0.042)
        stack = sorted(self._placed, key=lambda p: -p[0])
        tops, floor = [], None
        for y, lines, _label in stack:
            top = y + line_h * 0.8 if floor is None else min(y + line_h * 0.8, floor)
            tops.append(top)
            floor = top - lines * line_h
        if stack:
            below = lo + line_h * 0.2 - floor  # how far the last label runs out of the chart
            if below > 0:
                lift = min(below, max(hi - tops[0], 0.0))  # never out of the top instead
                tops = [t + lift for t in tops]
        for (_y, _lines, label), top in zip(stack, tops):
            label.setPos(1.08, top)
        self.label_tops = {label: top for (_y, _lines, label), top in zip(stack, tops)}

    def trace_at(self, scene_pos, max_px: float = HIT_PX) -> tuple[int, str] | None:
        """The trace drawn nearest ``scene_pos`` (within ``max_px``): (its id, what it is)."""
        vb = self.plot.getViewBox()
        if not self.points or not vb.sceneBoundingRect().contains(scene_pos):
            return None
        best, best_d = None, max_px * max_px
        for x, y, trace, words in self.points:
            p = vb.mapViewToScene(pyqtgraph.Point(x, y))
            d = (p.x() - scene_pos.x()) ** 2 + (p.y() - scene_pos.y()) ** 2
            if d <= best_d:
                best, best_d = (trace, words), d
        return best

    def set_run(self, run: Any) -> None:
        """``run``: a :class:`workbench.core.project.drift.RunDrift`."""
        ys: list[float] = []
        self.points = []
        placed: list[tuple[float, int, Any]] = []  # (y, lines, label): spread apart once the range is known
        band_x, band_y0, band_h, band_brushes = [], [], [], []
        retry_x, retry_y = [], []
        self.data = {}
        for role in ROLES:
            agent = run.agents.get(role)
            line, label = self.lines[role], self.labels[role]
            if agent is None:
                line.setData([], [])
                label.hide()
                continue
            self.data[role] = (agent.cr1, agent.cr2)
            x0, x1 = 0 + OFFSET[role], 1 + OFFSET[role]
            pts = [(x, y) for x, y in ((x0, agent.cr1), (x1, agent.cr2)) if y is not None]
            line.setData([p[0] for p in pts], [p[1] for p in pts])
            for n, (x, y) in enumerate(((x0, agent.cr1), (x1, agent.cr2)), start=1):
                if y is not None and agent.traces[n - 1] is not None:
                    self.points.append((x, y, agent.traces[n - 1], f"{GREEK[role]} round {n}: confidence {y:.2f}"))
            ys += [p[1] for p in pts]
            ref = agent.baseline if role == "gamma" else agent.cr1
            if ref is not None:
                band_x.append((BAND_SPAN[0] + BAND_SPAN[1]) / 2)
                band_y0.append(ref)
                band_h.append(UP)
                band_brushes.append(QBrush(with_alpha(role_colour(role), 45)))
                ys += [ref, ref + UP]
            delta = "—" if agent.delta is None else f"{agent.delta:+.2f}"
            against = " vs baseline" if role == "gamma" else ""
            cr1 = "—" if agent.cr1 is None else f"{agent.cr1:.2f}"
            cr2 = "—" if agent.cr2 is None else f"{agent.cr2:.2f}"
            marks = []
            if role == "gamma" and run.polarity_gate:
                marks.append("⚑ polarity gate")
            if agent.fap:
                marks.append("FAP" if role != "gamma" else "γ drift > 0.04")
            if agent.mismatch:
                marks.append("Δ mismatch")
            text = html(f"{GREEK[role]} {cr1} → {cr2}<br>Δ {delta}{against}", role_colour(role), size="8pt")
            for mark in marks:
                text += "<br>" + html(mark, theme.colour("error"), bold=True, size="8pt")
            label.setHtml(text)
            placed.append((agent.cr2 if agent.cr2 is not None else (agent.cr1 or 0.5), 2 + len(marks), label))
            label.show()
            for value in agent.retries:
                if value is not None:
                    retry_x.append(x1 + 0.05)
                    retry_y.append(value)
                    ys.append(value)
        if band_x:
            self.bands.setOpts(x=band_x, y0=band_y0, height=band_h, brushes=band_brushes,
                               width=BAND_SPAN[1] - BAND_SPAN[0], pens=[QPen(Qt.PenStyle.NoPen)] * len(band_x))
            self.bands.show()
        else:
            self.bands.hide()
        self.retries.setData(x=retry_x, y=retry_y)
        gamma = run.agents.get("gamma")
        if run.silent is not None:
            self.silent.setData(x=[0], y=[run.silent])
            if run.silent_trace is not None:
                self.points.append((0.0, run.silent, run.silent_trace, f"silent baseline: confidence {run.silent:.2f}"))
            ys.append(run.silent)
            who = f" ({run.silent_agent} draw)" if run.silent_agent and run.silent_agent != "gamma" else ""
            self.silent_label.setHtml(html(f"silent baseline{who}<br>{run.silent:.2f}", role_colour("silent"),
                                           size="8pt"))
            self.silent_label.setPos(-0.07, run.silent)
            self.silent_label.show()
            if gamma is not None and gamma.cr2 is not None:
                self.silent_link.setData([0, 1 + OFFSET["gamma"]], [run.silent, gamma.cr2])
            else:
                self.silent_link.setData([], [])
        else:
            self.silent.setData(x=[], y=[])
            self.silent_link.setData([], [])
            self.silent_label.hide()
        if ys:
            lo, hi = min(ys), max(ys)
            pad = max((hi - lo) * 0.15, 0.04)
            # Room under the lowest end for the labels stacked down from it (two lines each).
            lines = sum(n for _y, n, _l in placed)
            low_end = min((y for y, _n, _l in placed), default=lo)
            lo = min(lo - pad, low_end - 0.012 * lines)
            lo, hi = max(lo, -0.02), min(hi + pad, 1.02)
            self.plot.setYRange(lo, hi, padding=0)
            self._placed, self._span = placed, hi - lo
            self._place_labels()
        title = "Confidence, round 1 → round 2"
        if run.fap_abort:
            title += " · FAP: γ round 2 aborted (silent baseline failed)"
        self.plot.setTitle(html(title, size="9pt"))


class DeltaChart:
    def __init__(self, plot: Any):
        self.plot = plot
        style_plot(plot, left="drift Δ (γ: against the silent baseline)")
        plot.setMouseEnabled(x=False, y=False)
        plot.setXRange(-0.6, 2.6, padding=0)
        plot.getAxis("bottom").setTicks([[(i, GREEK[r]) for i, r in enumerate(ROLES)]])
        warn = theme.colour("warning")
        self.up = pyqtgraph.LinearRegionItem(values=(UP, 1), orientation="horizontal", movable=False,
                                             brush=QBrush(with_alpha(warn, 45)), pen=pen(warn, 0))
        self.minor = pyqtgraph.LinearRegionItem(values=(0, UP), orientation="horizontal", movable=False,
                                                brush=QBrush(with_alpha(warn, 22)), pen=pen(warn, 0))
        self.down = pyqtgraph.LinearRegionItem(values=(-1, DOWN), orientation="horizontal", movable=False,
                                               brush=QBrush(with_alpha(theme.colour("info"), 30)), pen=pen(muted(), 0))
        for region in (self.up, self.minor, self.down):
            region.setZValue(-10)
            plot.addItem(region, ignoreBounds=True)
        # The bands' names inside their bands: above the +0.04 line, below the -0.15 one (the
        # range keeps room for them, in pixels); the 0 line is the axis's own tick.
        self.band_labels = []
        for value, words, anchor in ((UP, "+0.04: upward shift above", (0, 1)), (0.0, None, None),
                                     (DOWN, "−0.15: large downward shift below", (0, 0))):
            line = pyqtgraph.InfiniteLine(pos=value, angle=0, pen=pen(muted(), 1, Qt.PenStyle.DashLine))
            plot.addItem(line, ignoreBounds=True)
            if words is None:
                continue
            text = text_item(words, foreground(), size="7pt", anchor=anchor)
            text.fill = QBrush(with_alpha(background(), 170))
            text.setPos(-0.58, value)
            text.setZValue(10)
            plot.addItem(text, ignoreBounds=True)
            self.band_labels.append(text)
        self._data_range = (DOWN, UP)
        plot.getViewBox().sigResized.connect(lambda *_: self._fit_range())
        self.bars = pyqtgraph.BarGraphItem(x=[0], height=[0], width=0.5, brush=QBrush(muted()))
        plot.addItem(self.bars)
        self.reported = pyqtgraph.ScatterPlotItem(pxMode=True, symbol="d", size=11, pen=pen(foreground(), 1.5),
                                                  brush=QBrush(Qt.BrushStyle.NoBrush))
        self.reported.setZValue(5)
        plot.addItem(self.reported)
        self.deltas: dict[str, float | None] = {}

    def set_run(self, run: Any) -> None:
        xs, heights, brushes, rx, ry, ys = [], [], [], [], [], [UP, DOWN, 0.0]
        self.deltas = {}
        for i, role in enumerate(ROLES):
            agent = run.agents.get(role)
            delta = agent.delta if agent else None
            self.deltas[role] = delta
            if delta is not None:
                xs.append(i)
                heights.append(delta)
                brushes.append(QBrush(role_colour(role)))
                ys.append(delta)
            if agent is not None and agent.reported is not None:
                rx.append(i)
                ry.append(agent.reported)
                ys.append(agent.reported)
        if xs:
            self.bars.setOpts(x=xs, height=heights, brushes=brushes, width=0.5)
            self.bars.show()
        else:
            self.bars.hide()
        self.reported.setData(x=rx, y=ry)
        lo, hi = min(ys), max(ys)
        pad = max((hi - lo) * 0.15, 0.02)
        self._data_range = (lo - pad, hi + pad)
        self._fit_range()
        self.plot.setTitle(html("Drift and its bands (◇ self-reported)", size="9pt"))


    def _fit_range(self) -> None:
        """The data's range, widened so that the bands' names fit above +0.04 and below -0.15."""
        lo, hi = self._data_range
        height = self.plot.getViewBox().height()
        if height > 2 * BAND_TEXT_PX + 10:
            per_px = (hi - lo) / (height - 2 * BAND_TEXT_PX)
            hi = max(hi, UP + BAND_TEXT_PX * per_px)
            lo = min(lo, DOWN - BAND_TEXT_PX * per_px)
        self.plot.setYRange(lo, hi, padding=0)


class RunDriftFigure(pyqtgraph.GraphicsLayoutWidget):
    """One ARM run: slope chart, drift bands, convergence (exported together). Hovering a point of
    the slope chart names its trace; a click on it emits ``trace_clicked`` (the trace's id)."""

    trace_clicked = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("RunDriftFigure")
        self.setMinimumSize(*plot_min())  # (made again when the type size changes)
        self.setBackground(background())
        self._hover: int | None = None
        self.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.scene().sigMouseClicked.connect(self._on_mouse_clicked)
        self.slope = SlopeChart(self.addPlot(row=0, col=0))
        self.delta = DeltaChart(self.addPlot(row=0, col=1))
        self.convergence = ConvergenceChart(self.addPlot(row=0, col=2))
        self.convergence.plot.setTitle(html("Round-1 convergence", size="9pt"))
        self.stacked = False  # a narrow dock: the slope chart above, drift and convergence below
        self._lay_out(False)

    def _lay_out(self, stacked: bool) -> None:
        """One row of three charts, or (narrow) the slope chart over the other two, so that no
        chart is pushed out of view: the charts' titles and axes give the row a minimum width."""
        self.stacked = stacked
        # Stacked, two rows of charts: each row keeps a readable height.
        self.setMinimumHeight(int(plot_min()[1] * 1.6) if stacked else plot_min()[1])
        for plot in (self.slope.plot, self.delta.plot, self.convergence.plot):
            self.ci.removeItem(plot)
        layout = self.ci.layout
        if stacked:
            self.ci.addItem(self.slope.plot, row=0, col=0, colspan=2)
            self.ci.addItem(self.delta.plot, row=1, col=0)
            self.ci.addItem(self.convergence.plot, row=1, col=1)
            stretches = (3, 2, 0)
            layout.setRowStretchFactor(0, 3)
            layout.setRowStretchFactor(1, 2)
        else:
            self.ci.addItem(self.slope.plot, row=0, col=0)
            self.ci.addItem(self.delta.plot, row=0, col=1)
            self.ci.addItem(self.convergence.plot, row=0, col=2)
            stretches = (5, 3, 3)
            layout.setRowStretchFactor(0, 1)
            layout.setRowStretchFactor(1, 0)
        for col, stretch in enumerate(stretches):
            layout.setColumnStretchFactor(col, stretch)
        # The lower charts are short when stacked: their axis titles shorten to fit.
        fg = foreground().name()
        self.delta.plot.setLabel("left", "drift Δ" if stacked else "drift Δ (γ: against the silent baseline)",
                                 color=fg)
        self.convergence.plot.setLabel("left", "convergence" if stacked else "round-1 convergence (α, β, γ claims)",
                                       color=fg)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        # pyqtgraph calls this with None while it builds the view, before the charts exist.
        if event is not None and hasattr(self, "convergence"):
            stacked = event.size().width() < STACK_BELOW_PX * max(theme.type_scale(), 1.0)  # larger type, wider
            if stacked != self.stacked:
                self._lay_out(stacked)
        super().resizeEvent(event)

    def set_run(self, run: Any) -> None:
        self.slope.set_run(run)
        self.delta.set_run(run)
        self.convergence.set_values(run.convergence)

    def _on_mouse_moved(self, scene_pos) -> None:
        hit = self.slope.trace_at(scene_pos)
        trace = hit[0] if hit else None
        if trace == self._hover:
            return
        self._hover = trace
        if hit:
            QToolTip.showText(QCursor.pos(), f"{hit[1]} · trace #{trace}\nClick to open it in the Trace Inspector.",
                              self)
        else:
            QToolTip.hideText()

    def _on_mouse_clicked(self, event) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        hit = self.slope.trace_at(event.scenePos())
        if hit:
            event.accept()
            self.trace_clicked.emit(hit[0])

    def export_item(self) -> Any:
        return self.scene()


class BatchFigure(pyqtgraph.GraphicsLayoutWidget):
    """A batch: the chosen value's distribution per group, and the ROC against contamination."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("BatchFigure")
        self.setMinimumSize(*plot_min())  # (made again when the type size changes)
        self.setBackground(background())
        self.distribution = DistributionChart(self.addPlot(row=0, col=0))
        self.roc = RocChart(self.addPlot(row=0, col=1))
        layout = self.ci.layout
        layout.setColumnStretchFactor(0, 3)
        layout.setColumnStretchFactor(1, 2)

    def export_item(self) -> Any:
        return self.scene()
