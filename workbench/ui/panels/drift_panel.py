"""Drift & Convergence: ARM's per-agent confidence drift and round-1 convergence, per run and per
batch, from the stored traces.

- **One run**: the slope chart (round 1 -> round 2 per agent, the silent baseline, the +0.04
  band, gate firings), the drift bands, and Jaccard / TF-IDF / stored embedding convergence
  against the 0.40 shared-prior line (:mod:`workbench.ui.plots.drift_plot`).
- **Batch**: a value's distribution grouped by provider mix, question, role or contamination,
  a table of grouped means with 95% bootstrap intervals (seeded: the same every time), the
  replicate-to-replicate spread (how large a difference noise alone makes), and, where the
  runs' contamination is known (a simulated agent's ``params.contaminated``; see
  :mod:`workbench.core.project.drift`), the ROC curve of drift and convergence and its AUC.

Reads run off the GUI thread; the plots update with ``setData`` as traces arrive during a run.
pyqtgraph is imported when a chart is first shown.
"""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.core.project import drift
from workbench.core.project.changes import Changes
from workbench.core.project.refs import RecordRef
from workbench.core.project.store import Store
from workbench.services.project_model import ProjectModel
from workbench.ui.panels.base import Panel
from workbench.ui.widgets.record_table import RecordTable

GROUPINGS = (("mix", "provider mix"), ("question", "question"), ("role", "role"), ("contamination", "contamination"))
METRICS = (("delta", "drift Δ per agent"), ("drift", "mean drift Δ of α, β (per run)"),
           ("gamma", "γ drift vs silent baseline"), ("jaccard", "Jaccard convergence"),
           ("tfidf", "TF-IDF convergence"), ("embedding", "embedding convergence (stored)"))
MEAN_COLUMNS = (("group", "Group"), ("n", "n"), ("mean", "Mean"), ("ci", "95% CI (bootstrap)"), ("sd", "SD"))
BOOT_SEED = 20240601  # the bootstrap's seed: the same table every time
ROC_SCORES = ("drift", "gamma", "jaccard", "tfidf")
# Charts and tables take the room they are given: their size hints never make a dock scroll.
FIGURE_POLICY = (QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Ignored)
# A new theme (palette) or zoom (application font) makes the charts again in its colours and sizes.
RESTYLE_EVENTS = (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange, QEvent.Type.FontChange,
                  QEvent.Type.ApplicationFontChange)


class DriftPanel(Panel):
    TITLE = "Drift & Convergence"
    OBJECT_NAME = "driftPanel"
    SUMMARY = ("ARM: each agent's confidence from round 1 to round 2 against the bands, and round-1 "
               "convergence; per batch, grouped with 95% intervals and, where contamination is known, its ROC.")
    TABLES = drift.TABLES

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(model, parent)
        self.mode = "run"
        self.run: drift.RunDrift | None = None
        self.batch: drift.BatchDrift | None = None
        self.run_figure = None  # created when first shown
        self.batch_figure = None
        self.group_stats: list = []
        self.rocs: dict[str, Any] = {}
        self._want_run: str | None = None
        self._want_batch: str | None = None
        self._restyle_due = False

        bar = QHBoxLayout()
        self.mode_combo = QComboBox(self)
        self.mode_combo.addItem("One run", "run")
        self.mode_combo.addItem("Batch", "batch")
        self.mode_combo.activated.connect(self._on_mode_chosen)
        bar.addWidget(self.mode_combo)
        self.pickers = QStackedWidget(self)
        self.run_combo = QComboBox(self.pickers)
        self.run_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.run_combo.setMinimumContentsLength(16)
        self.run_combo.activated.connect(self._on_run_chosen)
        self.batch_combo = QComboBox(self.pickers)
        self.batch_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.batch_combo.setMinimumContentsLength(16)
        self.batch_combo.activated.connect(self._on_batch_chosen)
        self.pickers.addWidget(self.run_combo)
        self.pickers.addWidget(self.batch_combo)
        bar.addWidget(self.pickers, 1)
        self.group_label = QLabel("Group by", self)
        self.group_combo = QComboBox(self)
        for key, text in GROUPINGS:
            self.group_combo.addItem(text, key)
        self.group_combo.activated.connect(lambda _i: self._draw_batch())
        self.metric_combo = QComboBox(self)
        for key, text in METRICS:
            self.metric_combo.addItem(text, key)
        self.metric_combo.activated.connect(lambda _i: self._draw_batch())
        for widget in (self.group_label, self.group_combo, self.metric_combo):
            bar.addWidget(widget)
        from workbench.ui.plots.export import export_button

        self.export_button = export_button(self, self._chart, self._export_name, self._on_exported,
                                           self._on_export_failed)
        bar.addWidget(self.export_button)
        self.open_button = QPushButton("Open in Inspector", self)
        self.open_button.setToolTip("Open in Trace Inspector: this run's traces (or click a point of the "
                                    "slope chart to open that trace).")
        self.open_button.clicked.connect(self._on_open_run)
        bar.addWidget(self.open_button)
        self._layout.addLayout(bar)
        # What the project holds for this panel, on one line (as the placeholder showed it).
        self.summary = QLabel(self)
        self.summary.setObjectName("panelCounts")
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self._layout.addWidget(self.summary)

        self.pages = QStackedWidget(self)
        self.placeholder = QLabel("No ARM run in this project yet: import ARM traces (File ▸ Import) or run ARM.",
                                  self.pages)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)
        self.pages.addWidget(self.placeholder)
        self.run_page = QWidget(self.pages)
        run_layout = QVBoxLayout(self.run_page)
        run_layout.setContentsMargins(0, 0, 0, 0)
        self.run_info = QLabel(self.run_page)
        self.run_info.setObjectName("driftRunInfo")
        self.run_info.setWordWrap(True)
        self.run_info.setTextFormat(Qt.TextFormat.RichText)
        run_layout.addWidget(self.run_info)
        self.pages.addWidget(self.run_page)
        self.batch_page = QSplitter(Qt.Orientation.Vertical, self.pages)
        self.batch_table_box = QWidget(self.batch_page)
        table_layout = QVBoxLayout(self.batch_table_box)
        table_layout.setContentsMargins(0, 0, 0, 0)
        self.spread_label = QLabel(self.batch_table_box)
        self.spread_label.setObjectName("driftSpread")
        self.spread_label.setWordWrap(True)
        self.spread_label.setTextFormat(Qt.TextFormat.RichText)
        table_layout.addWidget(self.spread_label)
        self.means_table = RecordTable(MEAN_COLUMNS, "Filter groups…", self.batch_table_box)
        self.means_table.setSizePolicy(*FIGURE_POLICY)
        table_layout.addWidget(self.means_table)
        self.batch_page.addWidget(self.batch_table_box)
        self.pages.addWidget(self.batch_page)
        self._layout.addWidget(self.pages, 1)
        self._show_controls()

    # ----- reading (worker thread) -----------------------------------------------------------
    def load(self, store: Store, changes: Changes | None, cancel: threading.Event) -> dict:
        from workbench.core.project import overview

        runs = drift.arm_runs(store)
        batches = drift.arm_batches(store)
        view: dict[str, Any] = {"runs": runs, "batches": batches, "mode": self.mode, "run": None, "batch": None,
                                "counts": overview.counts(store, "drift")}
        if self.mode == "run":
            ids = {r.id for r in runs}
            want = self._want_run if self._want_run in ids else (runs[0].id if runs else None)
            view["run"] = drift.run_drift(store, want) if want else None
        else:
            ids = {b.id for b in batches} | {drift.ALL_RUNS}
            want = self._want_batch if self._want_batch in ids else (batches[0].id if batches else drift.ALL_RUNS)
            view["batch"] = drift.batch_drift(store, want, cancel) if runs else None
        return view

    # ----- applying (GUI thread) -------------------------------------------------------------
    def apply(self, view: dict) -> None:
        if view["mode"] != self.mode:
            return  # a read started before the mode changed; the next one is due
        cells = "<td>&nbsp;·&nbsp;</td>".join(f"<td><b>{n:,}</b></td><td>&nbsp;{label}</td>"
                                              for label, n in view["counts"].items())
        self.summary.setText(f"<table><tr>{cells}</tr></table>")
        self._fill_pickers(view)
        if not view["runs"]:
            self.run = self.batch = None
            self.pages.setCurrentWidget(self.placeholder)
            return
        if self.mode == "run":
            self.run = view["run"]
            self._draw_run()
        else:
            self.batch = view["batch"]
            self._draw_batch()

    def _fill_pickers(self, view: dict) -> None:
        self.run_combo.blockSignals(True)
        self.run_combo.clear()
        from workbench.ui.widgets.run_names import run_titles, run_tooltip

        # By label, protocol, status and start time, as every list names a run.
        for r, title in zip(view["runs"], run_titles(view["runs"])):
            tag = " · imported" if r.source == "import" else ""
            self.run_combo.addItem(f"{title}{tag}", r.id)
            self.run_combo.setItemData(self.run_combo.count() - 1, run_tooltip(r), Qt.ItemDataRole.ToolTipRole)
        if view["run"] is not None:
            self.run_combo.setCurrentIndex(max(self.run_combo.findData(view["run"].run_id), 0))
        self.run_combo.blockSignals(False)
        self.batch_combo.blockSignals(True)
        self.batch_combo.clear()
        for b in view["batches"]:
            self.batch_combo.addItem(f"{b.name or b.id} · {b.runs} ARM runs", b.id)
        self.batch_combo.addItem(f"every ARM run in the project ({len(view['runs'])})", drift.ALL_RUNS)
        if view["batch"] is not None:
            self.batch_combo.setCurrentIndex(max(self.batch_combo.findData(view["batch"].batch_id), 0))
        self.batch_combo.blockSignals(False)

    def showEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        if self.mode == "run" and self.run is not None and self.run_figure is None:
            self._draw_run()
        elif self.mode == "batch" and self.batch is not None and self.batch_figure is None:
            self._draw_batch()

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() in RESTYLE_EVENTS and not self._restyle_due and (self.run_figure or self.batch_figure):
            self._restyle_due = True
            QTimer.singleShot(0, self._restyle)

    def _restyle(self) -> None:
        """A new theme or zoom: the figures are made again in its colours and sizes (rare)."""
        self._restyle_due = False
        for figure in (self.run_figure, self.batch_figure):
            if figure is not None:
                figure.setParent(None)
                figure.deleteLater()
        self.run_figure = self.batch_figure = None
        if self.mode == "run":
            self._draw_run()
        else:
            self._draw_batch()

    # ----- one run ---------------------------------------------------------------------------
    def _draw_run(self) -> None:
        run = self.run
        if run is None:
            self.pages.setCurrentWidget(self.placeholder)
            return
        self.run_info.setText(_run_summary(run))
        if not self.isVisible() and self.run_figure is None:
            return
        if self.run_figure is None:
            from workbench.ui.plots.drift_plot import RunDriftFigure

            self.run_figure = RunDriftFigure(self.run_page)
            self.run_figure.setSizePolicy(*FIGURE_POLICY)
            self.run_figure.trace_clicked.connect(self._on_trace_clicked)
            self.run_page.layout().insertWidget(0, self.run_figure, 1)
        self.run_figure.set_run(run)
        self.pages.setCurrentWidget(self.run_page)

    # ----- a batch ---------------------------------------------------------------------------
    def _draw_batch(self) -> None:
        from workbench.core import stats

        batch = self.batch
        if batch is None or self.mode != "batch":
            return
        by, metric = self.group_combo.currentData(), self.metric_combo.currentData()
        groups, cells = drift.grouped_values(batch, metric, by)
        self.group_stats = stats.grouped_means(groups, seed=BOOT_SEED)
        spread = stats.replicate_spread(cells)
        labels = [r.contaminated for r in batch.runs]
        self.rocs = {key: stats.roc_curve([r.value(key) for r in batch.runs], labels) for key in ROC_SCORES}
        counts = (sum(1 for v in labels if v is True), sum(1 for v in labels if v is False))
        self.means_table.set_rows([
            {"group": s.group, "n": s.n, "mean": _fmt(s.mean), "sd": _fmt(s.sd),
             "ci": "—" if s.low is None else f"[{s.low:+.4f}, {s.high:+.4f}]"} for s in self.group_stats])
        self.spread_label.setText(_spread_text(batch, spread, metric, by))
        if not self.isVisible() and self.batch_figure is None:
            return
        if self.batch_figure is None:
            from workbench.ui.plots.drift_plot import BatchFigure

            self.batch_figure = BatchFigure(self.batch_page)
            self.batch_figure.setSizePolicy(*FIGURE_POLICY)
            self.batch_page.insertWidget(0, self.batch_figure)
            self.batch_page.setStretchFactor(0, 3)
            self.batch_page.setStretchFactor(1, 1)
            total = max(self.pages.height(), 300)
            self.batch_page.setSizes([int(total * 0.7), int(total * 0.3)])
        names = [s.group for s in self.group_stats]
        drift_like = metric in ("delta", "drift", "gamma")
        guides = [(0.04, "+0.04"), (0.0, "0"), (-0.15, "−0.15")] if drift_like else [(0.40, "shared prior 0.40")]
        self.batch_figure.distribution.set_groups(
            names, [groups[n] for n in names], self.group_stats, label=self.metric_combo.currentText(),
            guides=guides, band=(0.0, 0.04) if drift_like else None)
        from workbench.ui.plots.style import title

        title(self.batch_figure.distribution.plot,
              f"{self.metric_combo.currentText()} by {self.group_combo.currentText()} (◆ mean, bars: 95% CI)")
        self.batch_figure.roc.set_curves(self.rocs, counts)
        self.pages.setCurrentWidget(self.batch_page)

    # ----- controls --------------------------------------------------------------------------
    def _show_controls(self) -> None:
        batch = self.mode == "batch"
        self.pickers.setCurrentWidget(self.batch_combo if batch else self.run_combo)
        for widget in (self.group_label, self.group_combo, self.metric_combo):
            widget.setVisible(batch)
        self.open_button.setVisible(not batch)

    # ----- "Open in Trace Inspector" ---------------------------------------------------------
    def _on_trace_clicked(self, trace_id: int) -> None:
        if self.run is not None:
            self.model.reveal(RecordRef("trace", trace_id, self.run.run_id))

    def _on_open_run(self) -> None:
        if self.run is not None:
            self.model.reveal(RecordRef("run", self.run.run_id))

    def set_mode(self, mode: str) -> None:
        self.mode = mode
        self.mode_combo.setCurrentIndex(self.mode_combo.findData(mode))
        self._show_controls()
        self.request(None)

    def _on_mode_chosen(self, index: int) -> None:
        self.set_mode(self.mode_combo.itemData(index))

    def _on_run_chosen(self, index: int) -> None:
        self._want_run = self.run_combo.itemData(index)
        self.request(None)

    def _on_batch_chosen(self, index: int) -> None:
        self._want_batch = self.batch_combo.itemData(index)
        self.request(None)

    # ----- export ----------------------------------------------------------------------------
    def _chart(self):
        figure = self.run_figure if self.mode == "run" else self.batch_figure
        return None if figure is None else _DriftChart(self, figure)

    def _export_name(self) -> str:
        if self.mode == "run" and self.run is not None:
            return f"drift-{self.run.run_id}"
        return f"drift-batch-{self.batch.batch_id}" if self.batch is not None else "drift"

    def _on_exported(self, path) -> None:
        target = self.run_info if self.mode == "run" else self.spread_label
        target.setText(target.text() + f"<br>Exported {path}")

    def _on_export_failed(self, message: str) -> None:
        target = self.run_info if self.mode == "run" else self.spread_label
        target.setText(target.text() + f"<br>{message}")

    def clear(self) -> None:
        self.run = self.batch = None
        self.run_combo.clear()
        self.batch_combo.clear()
        self.pages.setCurrentWidget(self.placeholder)


class _DriftChart:
    """The figure on screen for export, and its values as a table (one row per run and agent)."""

    def __init__(self, panel: DriftPanel, figure):
        self.panel, self.figure = panel, figure

    def export_item(self):
        return self.figure.export_item()

    def csv_table(self) -> tuple[list[str], list[list[object]]]:
        p = self.panel
        runs = [p.run] if p.mode == "run" else (p.batch.runs if p.batch else [])
        header = ["run_id", "label", "question", "mix", "replicate", "contaminated", "role", "cr1", "cr2",
                  "baseline", "delta", "reported_delta", "band", "delta_mismatch", "fap", "polarity_gate",
                  "jaccard", "tfidf", "embedding"]
        rows = []
        for run in runs:
            if run is None:
                continue
            conv = [run.convergence[k].value if k in run.convergence else None for k in ("jaccard", "tfidf", "embedding")]
            for role, a in run.agents.items():
                rows.append([run.run_id, run.label, run.question, run.mix, run.replicate, run.contaminated, role,
                             a.cr1, a.cr2, a.baseline, a.delta, a.reported, a.band, a.mismatch, a.fap,
                             run.polarity_gate if role == "gamma" else None, *conv])
        return header, rows


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:+.4f}"


def _run_summary(run: drift.RunDrift) -> str:
    from workbench.ui import theme

    parts = [f"<b>{run.label or run.run_id}</b>" + (" · imported" if run.source == "import" else "")
             + (" · SIM" if run.simulated else "")]
    gate = (f"<span style='color:{theme.css('error')}'>⚑ polarity gate fired ({run.gate_transition})</span>"
            if run.polarity_gate else "polarity gate: not fired")
    fap = (f"<span style='color:{theme.css('error')}'>FAP fired</span>" if run.fap_triggered else "FAP: not fired")
    parts += [gate, fap]
    if run.fap_abort:
        parts.append("γ round 2 aborted (silent baseline failed)")
    conv = run.convergence.get("jaccard")
    if conv is not None and conv.value is not None and conv.value >= 0.40:
        parts.append(f"<span style='color:{theme.css('warning')}'>shared priors: Jaccard {conv.value:.3f} ≥ 0.40</span>")
    if run.contaminated is not None:
        parts.append("ground truth: " + (f"contaminated ({', '.join(run.contaminated_roles)})"
                                         if run.contaminated else "clean"))
    return " · ".join(parts) + ("<br><i>Drift bands are descriptive: ARM withdrew drift as a contamination "
                                "detector; the polarity gate is the flag.</i>")


def _spread_text(batch: drift.BatchDrift, spread, metric: str, by: str) -> str:
    n = len(batch.runs)
    text = f"<b>{batch.name}</b>: {n} ARM run{'s' if n != 1 else ''}. "
    if spread.cells:
        text += (f"Replicate-to-replicate spread (same question and mix{', same role' if metric == 'delta' else ''}, "
                 f"another seed): SD {spread.pooled_sd:.4f} over {spread.cells} cell(s); two replicates differ by "
                 f"{spread.mean_abs_diff:.4f} on average, so a difference between groups smaller than that is noise.")
    else:
        text += "No replicates (each question and mix ran once): the noise between replicates is unknown."
    if metric != "delta" and by == "role":
        text += " A run-level value has no role: every run is in one group."
    return text
