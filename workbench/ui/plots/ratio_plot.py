"""The resonance-ratio chart (n > 2): each artifact at its resonance ratio rho, in one of two lanes.

x is rho (|S| / n, or the weighted ratio with weighted clusters, said on the axis with the
weights). Vertical lines at 1 - tau and tau cut the tau bands: rho >= tau positive consensus,
rho <= 1 - tau negative consensus, between them polar. The polar band is split by whether the
reference cluster approved: the upper lane holds the artifacts the reference cluster approved,
the lower lane the others (so the middle of the upper lane is positive polar, of the lower
negative polar; a positive consensus in the lower lane is a reference dissent). Within a lane,
y is the artifact's score (approvals / votes cast). Faint ticks mark every ratio the panel can
reach. Each of the six cells is labelled with the tier the engine gives there, and its count.
"""

from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.core.protocols.shared.tiers import LABELS
from workbench.ui.plots.quadrant_plot import TierScatterPlot, pyqtgraph
from workbench.ui.plots.style import foreground, html, muted, pen, with_alpha

LANES = {True: (0.6, 1.0), False: (0.0, 0.4)}  # reference approves -> y range of its lane
MAX_TICKS = 64


def lane_y(ref_approves, score):
    """y of a point: its lane's bottom plus 0.4 x score (numpy arrays or floats)."""
    import numpy as np

    low = np.where(ref_approves, LANES[True][0], LANES[False][0])
    return low + 0.4 * np.nan_to_num(score, nan=0.0)


class RatioPlot(TierScatterPlot):
    X_RANGE = (-0.12, 1.12)
    Y_RANGE = (-0.2, 1.2)

    def __init__(self, parent=None):
        super().__init__(parent)
        item = self.getPlotItem()
        dash = pen(foreground(), 1.4, Qt.PenStyle.DashLine)
        self.low_line = pyqtgraph.InfiniteLine(pos=0.4, angle=90, pen=dash, movable=False)
        self.high_line = pyqtgraph.InfiniteLine(pos=0.6, angle=90, pen=dash, movable=False)
        for line in (self.low_line, self.high_line):
            line.setZValue(8)
            item.addItem(line, ignoreBounds=True)
        self._tick_lines = pyqtgraph.PlotDataItem(connect="pairs", pen=pen(with_alpha(muted(), 110), 1,
                                                                            Qt.PenStyle.DotLine))
        self._tick_lines.setZValue(-5)
        item.addItem(self._tick_lines, ignoreBounds=True)
        self._lane_labels = {}
        for ref in (True, False):
            label = pyqtgraph.TextItem(anchor=(0, 0.5), angle=90)
            label.setZValue(30)
            item.addItem(label, ignoreBounds=True)
            self._lane_labels[ref] = label
        self._band_labels = [pyqtgraph.TextItem(anchor=(0.5, 1)) for _ in range(2)]
        for label in self._band_labels:
            label.setZValue(30)
            item.addItem(label, ignoreBounds=True)
        item.getAxis("left").setTicks([[(0.0, "0"), (0.2, "0.5"), (0.4, "1"), (0.6, "0"), (0.8, "0.5"), (1.0, "1")]])
        item.getAxis("bottom").setTicks([[(v / 10, f"{v / 10:g}") for v in range(0, 11, 2)]])
        item.setLabel("left", "score within each lane (approvals / votes cast)", color=foreground().name())

    def set_bands(self, tau: float, reference: str, weights: dict[str, float] | None,
                  cell_tiers: dict[tuple[int, bool], str], counts: dict[tuple[int, bool], int],
                  achievable: list[float]) -> None:
        """The tau bands, the lanes, the cells' tiers and counts, the ratios the panel can reach.

        ``cell_tiers`` / ``counts`` are keyed by (column, reference approves) with column 0 for
        rho <= 1 - tau, 1 between, 2 for rho >= tau."""
        low, high = 1.0 - tau, tau
        self.low_line.setValue(low)
        self.high_line.setValue(high)
        fg = foreground().name()
        if weights is None:
            self.getPlotItem().setLabel("bottom", "resonance ratio ρ = |S| / n", color=fg)
        else:
            shown = ", ".join(f"{name} {w:g}" for name, w in weights.items())
            self.getPlotItem().setLabel("bottom", f"weighted resonance ratio ρ = Σ w(S) / Σ w  (weights: {shown})",
                                        color=fg)
        x0, x1 = self.X_RANGE
        y0, y1 = self.Y_RANGE
        bounds = [(x0, low), (low, high), (high, x1)]
        m = 0.012
        regions = []
        for col, (a, b) in enumerate(bounds):
            for ref in (True, False):
                tier = cell_tiers[(col, ref)]
                ly = (0.5, y1) if ref else (y0, 0.5)
                at_x = (a + m, (a + b) / 2, b - m)[col]
                anchor_x = (0, 0.5, 1)[col]
                regions.append({"rect": (a, ly[0], b, ly[1]), "tier": tier,
                                "text": f"{LABELS[tier]} · {counts.get((col, ref), 0):,}",
                                "at": (at_x, y1 - m if ref else y0 + m), "anchor": (anchor_x, 0 if ref else 1)})
        self.set_regions(regions)
        self._lane_labels[True].setHtml(html(f"{reference} approves", size="8pt"))
        self._lane_labels[True].setPos(x0 + 0.01, 0.8)
        self._lane_labels[False].setHtml(html(f"{reference} does not", size="8pt"))
        self._lane_labels[False].setPos(x0 + 0.01, 0.2)
        for label, value, text in ((self._band_labels[0], low, f"1 − τ = {low:.2f}"),
                                   (self._band_labels[1], high, f"τ = {high:.2f}")):
            label.setHtml(html(text, size="8pt"))
            label.setPos(value, 0.56)
        xs, ys = [], []
        for v in achievable[:MAX_TICKS]:
            xs += [v, v]
            ys += [y0 + 0.06, y1 - 0.06]
        self._tick_lines.setData(x=xs, y=ys)
