"""Live Run's concurrency chart (SPEC §10): each deployment's adaptive limit over the run, as steps,
beside the requests really in flight, with a mark at every cut (a 429).

The data is :func:`workbench.core.project.limit_history.chart`, read off the GUI thread with the
panel's other data. The chart is a tab of the panel's detail pane (beside the calls), shown only
for a run that has a limit history (one that called a real provider), and brought forward when the
run shown is cut by a 429; its items are
made once (when the first history arrives: pyqtgraph loads then) and updated with ``setData``.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QBrush
from PySide6.QtWidgets import QLabel, QTabWidget, QVBoxLayout, QWidget

from workbench.ui import theme
from workbench.ui.plots.style import foreground, muted, pen, pg, plot_min, style_plot, with_alpha

TAB = "Limit"  # short: the detail pane's tab bar shares its width with "Open in Trace Inspector"
KEY_COLOURS = ("info", "sim", "ok", "warning")  # one per deployment, in turn (a cut is "error")
RESTYLE_EVENTS = (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange)


def steps_xy(steps: list[tuple[float, int]], end_s: float) -> tuple[list[float], list[float]]:
    """A limit's points as a line of horizontal steps: each value held until the next change (the
    last one until ``end_s``)."""
    xs: list[float] = []
    ys: list[float] = []
    for i, (at, value) in enumerate(steps):
        until = steps[i + 1][0] if i + 1 < len(steps) else max(end_s, at)
        xs += [at, until]
        ys += [value, value]
    return xs, ys


def caption(chart) -> str:
    """One line over the chart: each deployment's ceiling and lowest limit, the cuts and the steps up."""
    parts = []
    for key, steps in chart.steps.items():
        values = [v for _t, v in steps]
        parts.append(f"{key} {max(values)}→{min(values)}, now {values[-1]}")
    cut = len(chart.cuts)
    return (f"{'; '.join(parts)} · {cut} cut{'s' * (cut != 1)} on 429s, {chart.grew} step"
            f"{'s' * (chart.grew != 1)} up")


class LimitPlot(QWidget):
    """The chart and its caption; ``attach(tabs)`` makes it a tab of ``tabs``, hidden until a run
    with a limit history is shown."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("limitPlot")
        self.chart = None  # the LimitChart shown (None: none)
        self.run_id: str | None = None
        self.plot = None  # the pyqtgraph PlotWidget, made with the first history
        self._lines: dict[str, object] = {}  # deployment key -> its step line
        self._tabs: QTabWidget | None = None
        self._restyle_due = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 0)
        layout.setSpacing(2)
        self.caption = QLabel(self)
        self.caption.setObjectName("limitCaption")
        self.caption.setWordWrap(True)
        self.caption.setToolTip("Each deployment's concurrency limit: cut on a 429 (▼, with the pause it "
                                "asked for), grown back a step at a time by clean calls, never above "
                                "max_concurrency (dashed). Grey: requests in flight.")
        layout.addWidget(self.caption)
        self._layout = layout

    # ----- in a tab --------------------------------------------------------------------------
    def attach(self, tabs: QTabWidget) -> None:
        self._tabs = tabs
        tabs.addTab(self, TAB)
        tabs.setTabVisible(tabs.indexOf(self), False)

    def set_chart(self, run_id: str | None, chart) -> None:
        """The shown run's limit history (None: it has none, or no run is shown)."""
        # Brought forward when the shown run's first cut arrives (or a run with cuts is shown); a
        # limit that never moved is there to look at, not to take the place of the call.
        cut = chart is not None and bool(chart.cuts)
        appeared = cut and (run_id != self.run_id or self.chart is None or not self.chart.cuts)
        self.run_id, self.chart = run_id, chart
        if self._tabs is not None:
            index = self._tabs.indexOf(self)
            self._tabs.setTabVisible(index, chart is not None)
            if chart is not None:
                self._tabs.setTabText(index, f"{TAB} ▼{len(chart.cuts)}" if chart.cuts else TAB)
        if chart is None:
            return
        self._draw(chart)
        if appeared and self._tabs is not None:  # a 429 happened (or the run was opened): show it
            self._tabs.setCurrentWidget(self)

    # ----- drawing ---------------------------------------------------------------------------
    def _ensure_plot(self) -> None:
        if self.plot is not None:
            return
        pyqtgraph = pg()
        self.plot = pyqtgraph.PlotWidget(self)
        self.plot.setObjectName("limitChart")
        # Its height as every chart's (UI.md); its width is the detail pane's, which the panel shares
        # out: a wider minimum would push the panel past the window at 150 %.
        self.plot.setMinimumHeight(plot_min()[1])
        item = self.plot.getPlotItem()
        item.showGrid(x=False, y=True, alpha=0.25)
        self.plot.setMouseEnabled(x=True, y=False)
        self._flight = pyqtgraph.PlotDataItem(fillLevel=0)
        self._flight.setZValue(-5)
        item.addItem(self._flight)
        self._ceiling = pyqtgraph.InfiniteLine(angle=0, movable=False)
        item.addItem(self._ceiling)
        self._cuts = pyqtgraph.ScatterPlotItem(symbol="t", size=11)
        self._cuts.setZValue(10)
        item.addItem(self._cuts)
        self._legend = item.addLegend(offset=(-8, 8), labelTextSize="8pt")
        self._layout.addWidget(self.plot, 1)
        self._style()

    def _style(self) -> None:
        if self.plot is None:
            return
        style_plot(self.plot, left="concurrency", bottom="seconds since the run's first request")
        self._flight.setPen(None)  # a fill only: a line at every request would hatch the chart
        self._flight.setBrush(QBrush(with_alpha(muted(), 60)))
        self._ceiling.setPen(pen(foreground(), 1.2, Qt.PenStyle.DashLine))
        self._cuts.setPen(pen(theme.colour("error"), 1))
        self._cuts.setBrush(QBrush(theme.colour("error")))
        self._legend.setLabelTextColor(foreground())
        for i, line in enumerate(self._lines.values()):
            line.setPen(pen(theme.colour(KEY_COLOURS[i % len(KEY_COLOURS)]), 2.2))

    def _draw(self, chart) -> None:
        self._ensure_plot()
        pyqtgraph = pg()
        for key in [k for k in self._lines if k not in chart.steps]:  # another run: its deployments go
            self.plot.getPlotItem().removeItem(self._lines.pop(key))
            self._legend.removeItem(key)
        for key, steps in chart.steps.items():
            line = self._lines.get(key)
            if line is None:
                colour = theme.colour(KEY_COLOURS[len(self._lines) % len(KEY_COLOURS)])
                line = pyqtgraph.PlotDataItem(pen=pen(colour, 2.2), name=key)
                self.plot.getPlotItem().addItem(line)
                self._lines[key] = line
            line.setData(*steps_xy(steps, chart.end_s))
        xs, ys = steps_xy(chart.in_flight, chart.end_s) if chart.in_flight else ([], [])
        self._flight.setData(xs, ys)
        self._ceiling.setValue(chart.ceiling)
        self._cuts.setData([c[0] for c in chart.cuts], [c[1] for c in chart.cuts],
                           data=[c[2] for c in chart.cuts])
        self._cuts.setToolTip("\n".join(f"{at:.1f} s: {key} cut to {limit}"
                                        + (f", paused {pause:g} s" if pause else "")
                                        for at, limit, key, pause in chart.cuts[-12:]) or None)
        self.plot.setXRange(0, max(chart.end_s, 1.0), padding=0.02)
        self.plot.setYRange(0, chart.ceiling + max(1, chart.ceiling // 10), padding=0)
        self.caption.setText(caption(chart))

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() in RESTYLE_EVENTS and self.plot is not None and not self._restyle_due:
            self._restyle_due = True
            QTimer.singleShot(0, self, self._restyled)

    def _restyled(self) -> None:
        self._restyle_due = False
        self._style()
