"""The ROC curve: how well a stored value (drift, convergence) separates contaminated runs from
clean ones in a batch whose contamination is known (SPEC §4's AUC study).

One curve per score, created once; the legend gives each curve's AUC (the rank-based
Mann-Whitney statistic, :func:`workbench.core.stats.auc`). The diagonal is chance (AUC 0.5).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from workbench.ui import theme
from workbench.ui.plots.style import background, foreground, html, muted, pen, pg, style_plot, with_alpha

pyqtgraph = pg()

SCORES = (("drift", "mean drift Δ (α, β)"), ("gamma", "γ drift vs silent baseline"),
          ("jaccard", "Jaccard convergence"), ("tfidf", "TF-IDF convergence"))
COLOURS = {"drift": "error", "gamma": "warning", "jaccard": "info", "tfidf": "sim"}
STYLES = {"drift": Qt.PenStyle.SolidLine, "gamma": Qt.PenStyle.DashLine, "jaccard": Qt.PenStyle.DotLine,
          "tfidf": Qt.PenStyle.DashDotLine}


def background_brush():
    from PySide6.QtGui import QBrush

    return QBrush(with_alpha(background(), 220))


class RocChart:
    def __init__(self, plot: Any):
        self.plot = plot
        style_plot(plot, left="true positive rate (contaminated runs flagged)",
                   bottom="false positive rate (clean runs flagged)")
        plot.setMouseEnabled(x=False, y=False)
        plot.setXRange(0, 1, padding=0.02)
        plot.setYRange(0, 1, padding=0.02)
        plot.setAspectLocked(False)
        chance = pyqtgraph.PlotDataItem([0, 1], [0, 1], pen=pen(muted(), 1, Qt.PenStyle.DotLine))
        plot.addItem(chance)
        self.legend = plot.addLegend(offset=(-8, -8), labelTextColor=foreground(), brush=background_brush())
        self.curves = {}
        for key, name in SCORES:
            curve = pyqtgraph.PlotDataItem([], [], pen=pen(theme.colour(COLOURS[key]), 2.2, STYLES[key]),
                                           symbol="o", symbolSize=5, symbolPen=pen(theme.colour(COLOURS[key]), 1),
                                           symbolBrush=theme.colour(COLOURS[key]), name=name)
            plot.addItem(curve)
            self.curves[key] = curve
        self.note = pyqtgraph.TextItem(anchor=(0.5, 0.5))
        self.note.setPos(0.5, 0.5)
        plot.addItem(self.note, ignoreBounds=True)
        self.aucs: dict[str, float | None] = {}

    def set_curves(self, rocs: dict[str, Any], counts: tuple[int, int]) -> None:
        """``rocs``: score key -> :class:`workbench.core.stats.Roc`; ``counts``: (contaminated, clean)."""
        self.aucs = {}
        for key, name in SCORES:
            curve = self.curves[key]
            roc = rocs.get(key)
            label = self.legend.getLabel(curve) if hasattr(self.legend, "getLabel") else None
            if roc is None or roc.auc is None:
                curve.setData([], [])
                self.aucs[key] = None
                text = f"{name}: —"
            else:
                curve.setData(roc.fpr, roc.tpr)
                self.aucs[key] = roc.auc
                text = f"{name}: AUC {roc.auc:.3f}"
            if label is not None:
                label.setText(text)
        pos, neg = counts
        if pos and neg:
            self.note.setHtml("")
            self.plot.setTitle(html(f"ROC: {pos} contaminated vs {neg} clean runs", size="9pt"))
        else:
            self.note.setHtml(html("No ROC: these runs do not mix contaminated and clean ones<br>"
                                   "(ground truth: params.contaminated of a simulated agent)", muted(), size="9pt"))
            self.plot.setTitle(html("ROC", size="9pt"))
