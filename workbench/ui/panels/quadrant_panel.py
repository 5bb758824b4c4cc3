"""Quadrant: a Resonant Consensus run's artifacts placed by their cluster approval rates, with a
live what-if over the stored votes.

- n = 2: the paper's 2x2 quadrant (x: the reference cluster's rate, y: the other's), the theta
  lines, and each region labelled with the tier the engine gives there and its count;
- n > 2: the resonance-ratio chart with its tau bands (see :mod:`workbench.ui.plots.ratio_plot`);
- what-if: theta per cluster, tau and the cluster weights re-classify every artifact from the
  votes read once per run (the engine's vectorised core; no model is called); the side list
  says which artifacts change tier, from which to which; "Save as new classification" stores a
  labelled variant (``classification_variants``) and leaves the run untouched;
- artifacts with no vote cast are listed apart with why, never drawn (SPEC §1);
- hover shows an artifact; a click opens it in the Trace Inspector; accelerators and mitigators
  have their own markers; refinement rounds' movers get an arrow from round k to round k + 1;
- a run whose question has a known answer (SPEC §8): each point marked correct, incorrect or
  unscorable (a shape, never a colour), and an "Accuracy" tab beside the chart with each tier's
  accuracy under the classification shown (the what-if's too) and the AUROC of the resonance score
  against correctness; a run with no known answer shows neither.

pyqtgraph is imported when a plot is first shown, never at start-up.
"""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSlider,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.core.project import quadrant
from workbench.core.project.changes import Changes
from workbench.core.project.refs import RecordRef
from workbench.core.project.store import Store
from workbench.core.protocols.shared.tiers import TIERS as TIER_NAMES
from workbench.core.protocols.shared.tiers import label as tier_label
from workbench.services.project_model import ProjectModel
from workbench.ui.panels.base import Panel
from workbench.ui.panels.dock_room import RoomWatch, room, unwrap_summary, wrapped
from workbench.ui.widgets.record_table import RecordTable

KEEP = object()  # a read that left the run's arrays as they were
THROTTLE_MS = 30  # slider moves re-classify at most this often
CHANGE_COLUMNS = (("key", "Artifact"), ("round", "Round"), ("author", "Author"), ("from", "From"), ("to", "To"))
UNCLASSIFIED_COLUMNS = (("key", "Artifact"), ("round", "Round"), ("author", "Author"), ("why", "Why"))
VARIANT_COLUMNS = (("label", "Label"), ("round", "Round"), ("settings", "Settings"), ("artifacts", "Artifacts"),
                   ("created_at", "Saved"))
ACCURACY_COLUMNS = (("tier", "Tier"), ("scored", "Scored"), ("correct", "Correct"), ("accuracy", "Accuracy"))
MAX_LISTED = 2000
SIDE_MAX_PX = 460  # the what-if's width beside the chart (at the normal type size)
SIDE_MARGIN_PX = 60  # the splitter's handle and the panel's margins
SHORT_PX = 520  # a dock shorter than this hides the summary line, and (narrow) folds the what-if away
LEGEND_PX = 400  # a dock shorter than this folds the legend away (the "Legend" button unfolds it)
# A new theme (palette) or zoom (application font) makes the charts again in its colours and sizes.
RESTYLE_EVENTS = (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange, QEvent.Type.FontChange,
                  QEvent.Type.ApplicationFontChange)


def _tier_text(tier: str, short: bool = False) -> str:
    return tier_label(tier, short)


class WhatIf(QGroupBox):
    """theta per cluster, tau and weights; ``changed`` fires on every move (the panel throttles)."""

    def __init__(self, on_changed, parent: QWidget | None = None):
        super().__init__("What-if (from the stored votes; no model is called)", parent)
        self._on_changed = on_changed
        self._clusters: tuple[str, ...] = ()
        self.theta_sliders: dict[str, QSlider] = {}
        self.theta_labels: dict[str, QLabel] = {}
        self.weight_boxes: dict[str, QDoubleSpinBox] = {}
        layout = QVBoxLayout(self)
        self.form = QFormLayout()
        layout.addLayout(self.form)
        self.tau_slider = self._slider(51, 100)
        self.tau_label = QLabel(self)
        row = QHBoxLayout()
        row.addWidget(self.tau_slider, 1)
        row.addWidget(self.tau_label)
        layout.addWidget(QLabel("τ (consensus threshold)", self))
        layout.addLayout(row)
        self.weighted = QCheckBox("Weighted clusters (ρ = Σ w(S) / Σ w)", self)
        self.weighted.toggled.connect(self._changed)
        layout.addWidget(self.weighted)
        self.weights_form = QFormLayout()
        layout.addLayout(self.weights_form)
        buttons = QHBoxLayout()
        self.reset_button = QPushButton("Reset to the run's", self)
        self.save_button = QPushButton("Save as new classification…", self)
        buttons.addWidget(self.reset_button)
        buttons.addWidget(self.save_button)
        layout.addLayout(buttons)
        self._quiet = False

    def _slider(self, low: int, high: int) -> QSlider:
        slider = QSlider(Qt.Orientation.Horizontal, self)
        slider.setRange(low, high)
        slider.setPageStep(5)
        slider.valueChanged.connect(self._changed)
        return slider

    def set_clusters(self, clusters: tuple[str, ...], reference: int) -> None:
        if clusters == self._clusters:
            return
        self._clusters = clusters
        for form in (self.form, self.weights_form):
            while form.rowCount():
                form.removeRow(0)
        self.theta_sliders, self.theta_labels, self.weight_boxes = {}, {}, {}
        for i, name in enumerate(clusters):
            slider = self._slider(1, 100)
            label = QLabel(self)
            row = QHBoxLayout()
            row.addWidget(slider, 1)
            row.addWidget(label)
            holder = QWidget(self)
            holder.setLayout(row)
            row.setContentsMargins(0, 0, 0, 0)
            self.form.addRow(f"θ({name}){' (reference)' if i == reference else ''}", holder)
            self.theta_sliders[name], self.theta_labels[name] = slider, label
            box = QDoubleSpinBox(self)
            box.setRange(0.1, 20.0)
            box.setSingleStep(0.5)
            box.setDecimals(2)
            box.valueChanged.connect(self._changed)
            self.weights_form.addRow(f"weight of {name}", box)
            self.weight_boxes[name] = box

    def show_settings(self, s: quadrant.Settings, config_weights: tuple[float, ...] | None) -> None:
        self._quiet = True
        try:
            for name, theta in zip(self._clusters, s.thetas):
                self.theta_sliders[name].setValue(round(theta * 100))
            self.tau_slider.setValue(round(s.tau * 100))
            weights = s.weights or config_weights or tuple(1.0 for _ in self._clusters)
            for name, w in zip(self._clusters, weights):
                self.weight_boxes[name].setValue(w)
            self.weighted.setChecked(s.weights is not None)
        finally:
            self._quiet = False
        self._labels()

    def settings(self, reference: int) -> quadrant.Settings:
        thetas = tuple(self.theta_sliders[n].value() / 100 for n in self._clusters)
        weights = tuple(self.weight_boxes[n].value() for n in self._clusters) if self.weighted.isChecked() else None
        return quadrant.Settings(thetas, self.tau_slider.value() / 100, weights, reference)

    def _labels(self) -> None:
        for name in self._clusters:
            self.theta_labels[name].setText(f"{self.theta_sliders[name].value() / 100:.2f}")
        self.tau_label.setText(f"{self.tau_slider.value() / 100:.2f}")
        for box in self.weight_boxes.values():
            box.setEnabled(self.weighted.isChecked())

    def _changed(self, *_args) -> None:
        self._labels()
        if not self._quiet:
            self._on_changed()


class QuadrantPanel(Panel):
    TITLE = "Quadrant"
    OBJECT_NAME = "quadrantPanel"
    SUMMARY = ("Each artifact placed by its cluster approval rates, the regions labelled with the engine's "
               "tier; move the thresholds to see what changes.")
    TABLES = quadrant.TABLES

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(model, parent)
        self.data: quadrant.VoteData | None = None
        self.baseline = None  # RcpArrays under the run's own settings
        self.result = None  # RcpArrays under the what-if settings
        self.settings: quadrant.Settings | None = None
        self.points_rows: list[int] = []  # the data rows drawn, in PointSet order
        self._want_run: str | None = None
        self._loaded_run: str | None = None
        self._touched = False
        self._round_chosen = False
        self._new_run = False  # the data just set is a new run's (it opens on its accuracy)
        self._runs: list[quadrant.RcpRunRow] = []
        self.quadrant_plot = None  # created when first shown (pyqtgraph is imported then)
        self.ratio_plot = None
        self._restyle_due = False

        bar = QHBoxLayout()
        self.run_label = QLabel("Run", self)
        bar.addWidget(self.run_label)
        self.run_combo = QComboBox(self)
        self.run_combo.setMinimumContentsLength(8)
        self.run_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.run_combo.activated.connect(self._on_run_chosen)
        bar.addWidget(self.run_combo, 1)
        self.round_label = QLabel("Round", self)
        bar.addWidget(self.round_label)
        self.round_combo = QComboBox(self)
        self.round_combo.setMinimumContentsLength(5)
        self.round_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.round_combo.activated.connect(self._on_round_chosen)
        bar.addWidget(self.round_combo)
        # The what-if and its lists: beside the chart (wide), under it (tall), folded away in a
        # dock both narrow and short so that the chart keeps the room (this button unfolds them).
        self.whatif_toggle = QToolButton(self)
        self.whatif_toggle.setObjectName("whatifToggle")
        self.whatif_toggle.setText("What-if")
        self.whatif_toggle.setCheckable(True)
        self.whatif_toggle.setChecked(True)
        self.whatif_toggle.setToolTip("Show or hide the what-if (thresholds, τ, weights) and the lists of changes")
        self.whatif_toggle.toggled.connect(self._on_whatif_toggled)
        self.whatif_toggle.clicked.connect(self._on_whatif_clicked)
        self._whatif_chosen = False
        bar.addWidget(self.whatif_toggle)
        from workbench.ui.plots.export import export_button

        self.export_button = export_button(self, self._chart, self._export_name, self._on_exported,
                                           self._on_export_failed)
        bar.addWidget(self.export_button)
        self._layout.addLayout(bar)

        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        left = QWidget(self.splitter)
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        self.stack = QStackedWidget(left)
        self.placeholder = QLabel("No Resonant Consensus run in this project yet.", self.stack)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)
        self.stack.addWidget(self.placeholder)
        left_layout.addWidget(self.stack, 1)
        self.legend = QLabel(left)
        self.legend.setObjectName("quadrantLegend")
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self._legend_box = wrapped(self.legend, left)
        left_layout.addWidget(self._legend_box)
        self.info = QLabel(left)
        self.info.setObjectName("quadrantInfo")
        self.info.setWordWrap(True)
        self.info.setTextFormat(Qt.TextFormat.RichText)
        info_row = QHBoxLayout()
        # The legend folds away in a short dock (this button, on the info line, unfolds it).
        self.legend_toggle = QToolButton(left)
        self.legend_toggle.setObjectName("legendToggle")
        self.legend_toggle.setText("Legend")
        self.legend_toggle.setCheckable(True)
        self.legend_toggle.setChecked(True)
        self.legend_toggle.setAutoRaise(True)
        self.legend_toggle.setToolTip("Show or hide the markers' legend")
        self.legend_toggle.toggled.connect(self._on_legend_toggled)
        self.legend_toggle.clicked.connect(self._on_legend_clicked)
        self._legend_chosen = False
        info_row.addWidget(self.legend_toggle, 0, Qt.AlignmentFlag.AlignTop)
        info_row.addWidget(wrapped(self.info, left), 1)
        left_layout.addLayout(info_row)

        side = self.side = QWidget(self.splitter)
        side.setMaximumWidth(SIDE_MAX_PX)
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        self.whatif = WhatIf(self._on_whatif_moved, side)
        self.whatif.reset_button.clicked.connect(self._on_reset)
        self.whatif.save_button.clicked.connect(self._on_save)
        scroll = QScrollArea(side)
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.whatif)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        side_layout.addWidget(scroll, 2)
        self.tabs = QTabWidget(side)
        self.changes_table = RecordTable(CHANGE_COLUMNS, "Filter changes…", self.tabs)
        self.unclassified_table = RecordTable(UNCLASSIFIED_COLUMNS, "Filter…", self.tabs)
        self.variants_table = RecordTable(VARIANT_COLUMNS, "Filter saved classifications…", self.tabs)
        self.tabs.addTab(self.changes_table, "Tier changes")
        self.tabs.addTab(self.unclassified_table, "Unclassified")
        self.tabs.addTab(self.variants_table, "Saved")
        # Against a known answer only: a tab after the others, there while the run has one.
        self.accuracy_table = RecordTable(ACCURACY_COLUMNS, "Filter tiers…", self.tabs)
        self.accuracy_table.setObjectName("quadrantAccuracy")
        self.accuracy_table.hide()
        self.accuracy = None  # shared.truth.TierAccuracy of the points shown, None without a known answer
        side_layout.addWidget(self.tabs, 3)
        self.splitter.addWidget(left)
        self.splitter.addWidget(side)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self._layout.addWidget(self.splitter, 1)
        self.splitter.hide()
        self.whatif.setEnabled(False)

        # (The chart holds its own least size, plots.style.plot_min: a shorter dock scrolls.)
        self.legend.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._summary = unwrap_summary(self)  # (its height-for-width made the dock scroll)
        self.short = False
        self._room_watch = RoomWatch(self, self._fit_room)

        self._throttle = QTimer(self)
        self._throttle.setSingleShot(True)
        self._throttle.setInterval(THROTTLE_MS)
        self._throttle.timeout.connect(self._reclassify)

    # ----- reading (worker thread) -----------------------------------------------------------
    def load(self, store: Store, changes: Changes | None, cancel: threading.Event) -> dict:
        runs = quadrant.rcp_runs(store)
        ids = {r.id for r in runs}
        want = self._want_run if self._want_run in ids else (runs[0].id if runs else None)
        need = (changes is None or want != self._loaded_run
                or (changes.touches("artifacts", "votes", "runs") and (not changes.runs or want in changes.runs)))
        data: Any = KEEP
        baseline = None
        if want is not None and need and not cancel.is_set():
            data = quadrant.load_run(store, want)
            if data.n:  # classified here, not on the GUI thread as each live result lands
                baseline = quadrant.classify(data)
        elif want is None:
            data = None
        return {"runs": runs, "run": want, "data": data, "baseline": baseline,
                "variants": quadrant.variants(store, want) if want else []}

    # ----- applying (GUI thread) -------------------------------------------------------------
    def apply(self, view: dict) -> None:
        self._runs = view["runs"]
        self.run_combo.blockSignals(True)
        self.run_combo.clear()
        from workbench.ui.widgets.run_names import run_titles, run_tooltip

        # By label, protocol, status and start time, as every list names a run.
        for r, title in zip(self._runs, run_titles(self._runs)):
            self.run_combo.addItem(f"{title} · {r.artifacts:,} artifacts", r.id)
            self.run_combo.setItemData(self.run_combo.count() - 1, run_tooltip(r), Qt.ItemDataRole.ToolTipRole)
        index = self.run_combo.findData(view["run"])
        self.run_combo.setCurrentIndex(max(index, 0))
        self.run_combo.blockSignals(False)
        self.splitter.setVisible(True)
        if view["data"] is not KEEP:
            self._set_data(view["data"], view.get("baseline"))
        self.variants_table.set_rows([
            {"label": v.label, "round": v.round, "artifacts": v.artifacts, "created_at": v.created_at[:19],
             "settings": _settings_text(v.settings)} for v in view["variants"]])
        self.tabs.setTabText(2, f"Saved ({len(view['variants'])})")

    def _set_data(self, data: quadrant.VoteData | None, baseline=None) -> None:
        """Show ``data``; ``baseline`` is its classification under the run's own settings when
        the reader made it (otherwise it is made here)."""
        new_run = data is None or self.data is None or data.run_id != self.data.run_id or data.clusters != self.data.clusters
        self.data = data
        self._loaded_run = data.run_id if data is not None else None
        if data is None or data.n == 0:
            self.baseline = self.result = None
            self.whatif.set_clusters((), 0)  # no slider names a cluster of the run (or project) before
            self.whatif.setEnabled(False)
            self.placeholder.setText("No Resonant Consensus run in this project yet." if data is None
                                     else "This run's configuration names no clusters.")
            self.stack.setCurrentWidget(self.placeholder)
            for table in (self.changes_table, self.unclassified_table):
                table.set_rows([])
            self._show_accuracy(None, False)
            self.info.setText("")
            return
        self.baseline = baseline if baseline is not None else quadrant.classify(data)
        if new_run:
            self._touched = False
            self.whatif.set_clusters(data.clusters, data.settings.reference)
        if new_run or not self._touched:
            self.settings = data.settings
            config_weights = data.settings.weights
            self.whatif.show_settings(data.settings, config_weights)
        self.whatif.setEnabled(True)
        self._fill_rounds(data, new_run)
        self._new_run = new_run  # a new run with a known answer opens on its accuracy
        self._reclassify()

    def _fill_rounds(self, data: quadrant.VoteData, new_run: bool) -> None:
        current = self.round_combo.currentData()
        self.round_combo.blockSignals(True)
        self.round_combo.clear()
        rounds = data.round_numbers or [1]
        if len(rounds) > 1:
            self.round_combo.addItem("All rounds", 0)
        for r in rounds:
            self.round_combo.addItem(f"Round {r}", r)
        index = self.round_combo.findData(current)
        # The default (every round, or the only one) follows a run as its rounds arrive; a round
        # the user picked stays picked.
        self.round_combo.setCurrentIndex(index if self._round_chosen and not new_run and index >= 0 else 0)
        self.round_combo.blockSignals(False)
        if new_run:
            self._round_chosen = False

    def _on_round_chosen(self, _index: int) -> None:
        self._round_chosen = True
        self._draw()

    # ----- what-if ---------------------------------------------------------------------------
    def _on_whatif_moved(self) -> None:
        self._touched = True
        if not self._throttle.isActive():
            self._throttle.start()

    def _on_reset(self) -> None:
        if self.data is None:
            return
        self._touched = False
        self.whatif.show_settings(self.data.settings, self.data.settings.weights)
        self._reclassify()

    def _reclassify(self) -> None:
        """Re-classify every artifact under the what-if settings (the engine, on the arrays
        read once: milliseconds for 10,000 artifacts), then redraw."""
        if self.data is None or self.data.n == 0:
            return
        self._throttle.stop()
        self.settings = self.whatif.settings(self.data.settings.reference) if self._touched else self.data.settings
        # Untouched, the what-if is the run's own settings: the baseline already is that result.
        self.result = quadrant.classify(self.data, self.settings) if self._touched else self.baseline
        self._draw()

    def set_whatif(self, *, thetas: tuple[float, ...] | None = None, tau: float | None = None,
                   weights: tuple[float, ...] | None = None) -> None:
        """Move the what-if controls (as a user would) and re-classify now (tests, scripting)."""
        w = self.whatif
        if thetas is not None:
            for name, theta in zip(self.data.clusters, thetas):
                w.theta_sliders[name].setValue(round(theta * 100))
        if tau is not None:
            w.tau_slider.setValue(round(tau * 100))
        if weights is not None:
            w.weighted.setChecked(True)
            for name, value in zip(self.data.clusters, weights):
                w.weight_boxes[name].setValue(value)
        self._reclassify()

    # ----- drawing ---------------------------------------------------------------------------
    def _fit_room(self) -> None:
        """From the room the dock gives (never the panel's own size, which its minimum may hold
        larger): a wide dock puts the what-if beside the chart, a narrow one under it; a narrow
        and short one folds it away (unless the user chose), so the whole chart stays in view."""
        size = room(self)
        width, height = size.width(), size.height()
        if width <= 0 or height <= 0:
            return
        from workbench.ui import theme

        scale = theme.type_scale()  # larger type (zoom, presenter mode) needs more room for the same
        from workbench.ui.plots.style import plot_min

        # Beside the chart when both fit: the what-if at its width (growing with its type) and
        # the chart at its least width.
        wide = width >= SIDE_MAX_PX * scale + plot_min()[0] + SIDE_MARGIN_PX
        short = height < SHORT_PX * scale
        if short != self.short:
            self.short = short
            if self._summary is not None:
                self._summary.setVisible(not short)
        if not self._whatif_chosen:
            self.whatif_toggle.setChecked(wide or not short)
        if not self._legend_chosen:
            self.legend_toggle.setChecked(height >= LEGEND_PX * scale)
        for label in (self.run_label, self.round_label):  # the drop-downs' items say what they are
            label.setVisible(width >= 600)
        orientation = Qt.Orientation.Horizontal if wide else Qt.Orientation.Vertical
        if self.splitter.orientation() != orientation:
            self.splitter.setOrientation(orientation)
        self.side.setMaximumWidth(int(SIDE_MAX_PX * scale) if wide else 16_777_215)
        self.side.setMaximumHeight(16_777_215 if wide else max(height // 2, 200))

    def _on_whatif_toggled(self, shown: bool) -> None:
        self.side.setVisible(shown)

    def _on_whatif_clicked(self, _checked: bool) -> None:
        self._whatif_chosen = True

    def _on_legend_toggled(self, shown: bool) -> None:
        self._legend_box.setVisible(shown)

    def _on_legend_clicked(self, _checked: bool) -> None:
        self._legend_chosen = True

    def showEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        # Not drawn yet, or its chart made again while hidden (a new theme or type size; the
        # warm-up makes it ahead of its points): drawn now.
        plot = self._plot() if self.data is not None and self.result is not None else False
        if plot is not False and (plot is None or self.stack.currentWidget() is not plot):
            self._draw()

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() in RESTYLE_EVENTS and not self._restyle_due and (self.quadrant_plot or self.ratio_plot):
            self._restyle_due = True
            QTimer.singleShot(0, self, self._restyle)  # self: never after the panel is gone

    def _restyle(self) -> None:
        """A new theme or zoom: the charts are made again in its colours and sizes (rare)."""
        self._restyle_due = False
        for plot in (self.quadrant_plot, self.ratio_plot):
            if plot is not None:
                self.stack.removeWidget(plot)
                plot.deleteLater()
        self.quadrant_plot = self.ratio_plot = None
        self.legend.setText("")
        self._draw()
        QTimer.singleShot(0, self, self.warm_up)  # the other chart, made again ahead of its data

    def _plot(self):
        if self.data is None or self.data.n == 0:
            return None
        return self.quadrant_plot if self.data.n == 2 else self.ratio_plot

    def _ensure_plot(self):
        self._make_plot(two_clusters=self.data.n == 2)
        return self._plot()

    def _make_plot(self, *, two_clusters: bool) -> None:
        """The quadrant chart (two clusters) or the ratio chart (any other number), once."""
        if two_clusters and self.quadrant_plot is None:
            from workbench.ui.plots.quadrant_plot import QuadrantPlot

            self.quadrant_plot = self._adopt_plot(QuadrantPlot(self.stack))
        elif not two_clusters and self.ratio_plot is None:
            from workbench.ui.plots.ratio_plot import RatioPlot

            self.ratio_plot = self._adopt_plot(RatioPlot(self.stack))

    def warm_up(self) -> None:
        """Make the charts ahead of their first data, one per turn of the event loop, while the
        window is idle (the window calls this once the plot modules are imported)."""
        if self.ratio_plot is None:
            self._make_plot(two_clusters=False)
            QTimer.singleShot(0, self, self.warm_up)
        else:
            self._make_plot(two_clusters=True)

    def is_warm(self) -> bool:
        return self.ratio_plot is not None and self.quadrant_plot is not None

    def _adopt_plot(self, plot):
        plot.describe = self._describe
        plot.clicked.connect(self._on_point_clicked)
        plot.hovered.connect(self._on_point_hovered)
        self.stack.addWidget(plot)
        return plot

    def selected_rows(self):
        """The data rows in the chosen round(s)."""
        import numpy as np

        r = self.round_combo.currentData()
        if not r:
            return np.arange(self.data.m)
        return np.nonzero(self.data.rounds == r)[0]

    def _draw(self) -> None:
        if self.data is None or self.result is None:
            return
        import numpy as np

        rows = self.selected_rows()
        res, base = self.result, self.baseline
        cast = res.votes_cast[rows] > 0
        drawn, unclassified = rows[cast], rows[~cast]
        self._fill_lists(rows, unclassified)
        self._show_accuracy(quadrant.tier_accuracy(self.data, res, self.round_combo.currentData() or None),
                            self._new_run)
        self._new_run = False
        if not self.isVisible() and self._plot() is None:
            return  # drawn when first shown
        plot = self._ensure_plot()
        self.stack.setCurrentWidget(plot)
        from workbench.ui.plots.quadrant_plot import MARK_LEGEND, MARKS, PointSet
        from workbench.ui.plots.style import legend_html

        legend = legend_html("ring: tier changed by the what-if · arrow: round k → k + 1"
                             + (f"<br>{MARK_LEGEND}" if self.data.scored else ""))
        if self.legend.text() != legend:
            self.legend.setText(legend)
        self.points_rows = drawn.tolist()

        s = self.settings
        vmax = max(int(res.votes_cast.max()) if self.data.m else 1, 1)
        from workbench.ui.plots.style import zoom

        size = (7.0 + 9.0 * np.sqrt(res.votes_cast[drawn] / vmax)) * zoom()
        changed = res.tier[drawn] != base.tier[drawn]
        if self.data.n == 2:
            ref, other = s.reference, 1 - s.reference
            x, y = res.rates[drawn, ref], res.rates[drawn, other]
            sides = (((s.thetas[ref], True),), ((s.thetas[other], True),))
        else:
            from workbench.ui.plots.ratio_plot import lane_y

            x = res.rho[drawn]
            y = lane_y(res.approve[drawn, s.reference], res.score[drawn])
            sides = (((1.0 - s.tau, False), (s.tau, True)), ())
        position = {row: k for k, row in enumerate(self.points_rows)}
        arrows = []
        for src, dst in quadrant.movers(self.data):
            if dst in position and res.votes_cast[src] > 0:
                if self.data.n == 2:
                    arrows.append((float(res.rates[src, ref]), float(res.rates[src, other]), position[dst]))
                else:
                    arrows.append((float(res.rho[src]), float(lane_y(res.approve[src, s.reference], res.score[src])),
                                   position[dst]))
        marks = None
        if self.data.scored:  # each drawn artifact's verdict against the known answer (an index into MARKS)
            verdicts = self.data.scores
            marks = np.array([MARKS.index(verdicts[row]) if verdicts[row] in MARKS else 0 for row in self.points_rows],
                             dtype=np.int8)
        plot.set_points(PointSet(drawn, x, y, res.tier[drawn], res.persuasion_kind[drawn], size, changed,
                                 sides, arrows, marks))
        if self.data.n == 2:
            self._label_quadrant(plot, drawn)
        else:
            self._label_bands(plot, drawn)
        self._show_info(len(drawn), int(changed.sum()), len(unclassified))

    def _label_quadrant(self, plot, drawn) -> None:
        s, res, d = self.settings, self.result, self.data
        ref, other = s.reference, 1 - s.reference
        tiers, counts = {}, {}
        for ax in (True, False):
            for ay in (True, False):
                approving = [False, False]
                approving[ref], approving[other] = ax, ay
                tiers[(ax, ay)] = quadrant.region_tier(s, tuple(approving))
                counts[(ax, ay)] = int(((res.approve[drawn, ref] == ax) & (res.approve[drawn, other] == ay)).sum())
        plot.set_axes(d.clusters[ref], d.clusters[other])
        plot.set_thresholds(s.thetas[ref], s.thetas[other], tiers, counts)

    def _label_bands(self, plot, drawn) -> None:
        import numpy as np

        from workbench.core.protocols.rcp.config import tier_for

        s, res, d = self.settings, self.result, self.data
        # Each point's band is the engine's tier for it (the consensus tiers at either end, the
        # polar ones between): the panel keeps no copy of the tier rule's thresholds.
        tier = res.tier[drawn]
        col = np.where(tier == TIER_NAMES.index("positive_consensus"), 2,
                       np.where(tier == TIER_NAMES.index("negative_consensus"), 0, 1))
        ref_in = res.approve[drawn, s.reference]
        reps = (1.0 - s.tau, 0.5, s.tau)
        tiers = {(c, r): tier_for(reps[c], r, s.tau) for c in range(3) for r in (True, False)}
        counts = {(c, r): int(((col == c) & (ref_in == r)).sum()) for c in range(3) for r in (True, False)}
        weights = dict(zip(d.clusters, s.weights)) if s.weights is not None else None
        plot.set_bands(s.tau, d.clusters[s.reference], weights, tiers, counts, _achievable(s, d.n))

    def _fill_lists(self, rows, unclassified) -> None:
        d, res, base = self.data, self.result, self.baseline
        names = TIER_NAMES
        moved = [int(k) for k in rows if res.votes_cast[k] > 0 and res.tier[k] != base.tier[k]]
        self.changes_table.set_rows([
            {"key": d.keys[k], "round": int(d.rounds[k]), "author": d.authors[k] or "—",
             "from": _tier_text(names[base.tier[k]], True), "to": _tier_text(names[res.tier[k]], True)}
            for k in moved[:MAX_LISTED]])
        self.unclassified_table.set_rows([
            {"key": d.keys[k], "round": int(d.rounds[k]), "author": d.authors[k] or "—", "why": d.why_unclassified(int(k))}
            for k in unclassified[:MAX_LISTED].tolist()])
        self.tabs.setTabText(0, f"Tier changes ({len(moved):,})")
        self.tabs.setTabText(1, f"Unclassified ({len(unclassified):,})")
        self.changed_rows = moved

    def _show_accuracy(self, accuracy, new_run: bool) -> None:
        """The Accuracy tab (each tier's, and all), there only while the run has a known answer."""
        self.accuracy = accuracy
        index = self.tabs.indexOf(self.accuracy_table)
        if accuracy is None:
            if index >= 0:
                self.tabs.removeTab(index)
            self.accuracy_table.set_rows([])
            return
        rows = [{"tier": _tier_text(t, True) if t in TIER_NAMES else t.replace("_", " "), "scored": v.scored,
                 "correct": v.correct, "accuracy": _percent(v.accuracy)} for t, v in accuracy.by_tier.items()]
        o = accuracy.overall
        rows.append({"tier": "all", "scored": o.scored, "correct": o.correct, "accuracy": _percent(o.accuracy)})
        self.accuracy_table.set_rows(rows)
        if index < 0:
            index = self.tabs.addTab(self.accuracy_table, "")
            self.tabs.setTabToolTip(index, "Each tier's artifacts against the question's known answer, under the "
                                           "classification shown (the what-if's when it is moved); an unscorable "
                                           "answer counts as not correct")
        self.tabs.setTabText(index, f"Accuracy ({_percent(o.accuracy)})")
        if new_run:
            self.tabs.setCurrentIndex(index)

    def _show_info(self, drawn: int, changed: int, unclassified: int) -> None:
        from workbench.core.protocols.rcp.config import config_warnings
        from workbench.ui import theme

        d, s = self.data, self.settings
        parts = [f"{drawn:,} artifacts drawn", f"{unclassified:,} unclassified (listed apart)"]
        if self._touched:
            parts.append(f"<b>{changed:,} change tier under the what-if</b>")
        if self.accuracy is not None:
            o, area = self.accuracy.overall, self.accuracy.auroc
            parts.append(f"{o.correct:,} of {o.scored:,} correct · AUROC of the score "
                         + (f"{area:.2f}" if area is not None else "not defined (needs correct and other artifacts)"))
        text = " · ".join(parts)
        try:
            warnings = config_warnings({"clusters": [{"name": n, "agents": [a for a, c in zip(d.agents, d.cluster_of)
                                                                            if c == i] or [f"_{i}"],
                                                      "theta": s.thetas[i],
                                                      **({"weight": s.weights[i]} if s.weights else {})}
                                                     for i, n in enumerate(d.clusters)],
                                        "reference": d.clusters[s.reference], "tau": s.tau,
                                        "weighted": s.weights is not None})
        except Exception:  # a what-if outside the engine's ranges cannot happen with the sliders
            warnings = []
        warnings = [w for w in warnings if "polar tiers empty" in w] + d.warnings
        if warnings:
            text += "<br><span style='color:%s'>⚠ %s</span>" % (theme.css("warning"), "<br>⚠ ".join(warnings))
        self.info.setText(text)

    # ----- interaction -----------------------------------------------------------------------
    def _describe(self, row: int) -> str:
        d, res = self.data, self.result
        rates = " · ".join(f"{name} {_rate(res.rates[row, i])}" for i, name in enumerate(d.clusters))
        tier = TIER_NAMES[res.tier[row]]
        kind = (None, "accelerator", "mitigator")[int(res.persuasion_kind[row])]
        author = d.authors[row] or "outside the panel"
        cluster = d.clusters[res.author_cluster[row]] if res.author_cluster[row] >= 0 else "—"
        missing = int(res.votes_missing[row])
        lines = [f"{d.keys[row]} (round {int(d.rounds[row])}, by {author}, {cluster})" + (" · SIM" if d.simulated else ""),
                 f"rates: {rates}",
                 f"{_tier_text(tier)} · score {_rate(res.score[row])} · ρ {res.rho[row]:.2f} · "
                 f"{int(res.votes_cast[row])} votes" + (f", {missing} missing" if missing else "")
                 + (f" · {kind}" if kind else "")]
        if self.baseline is not None and self.baseline.tier[row] != res.tier[row]:
            lines.append(f"the run's tier: {_tier_text(TIER_NAMES[self.baseline.tier[row]])}")
        verdict = d.scores[row] if row < len(d.scores) else None
        if verdict is not None:
            lines.append(f"{verdict} against the known answer · read: {d.extracted[row] or '—'}")
        excerpt = d.excerpts[row] if row < len(d.excerpts) else ""
        if excerpt:
            lines.append(excerpt[:160] + ("…" if len(excerpt) > 160 else ""))
        return "\n".join(lines)

    def _on_point_hovered(self, row: int) -> None:
        if row >= 0:
            self.info.setToolTip(self._describe(row))

    def _on_point_clicked(self, row: int) -> None:
        if self.data is not None and 0 <= row < self.data.m:
            self.model.reveal(RecordRef("artifact", int(self.data.artifact_ids[row]), self.data.run_id))

    def _on_run_chosen(self, index: int) -> None:
        self._want_run = self.run_combo.itemData(index)
        self.request(None)

    def show_run(self, run_id: str) -> None:
        """Show ``run_id`` (a link from another panel: the Studies panel's arm runs)."""
        self._want_run = run_id
        self.request(None)

    def _on_save(self) -> None:
        from workbench.ui import prompts

        if self.data is None or self.settings is None:
            return
        s = self.settings
        label = prompts.variant_label(self, f"what-if τ={s.tau:.2f} θ={'/'.join(f'{t:.2f}' for t in s.thetas)}"
                                            + (" weighted" if s.weights else ""))
        if not label:
            return
        data, r = self.data, self.round_combo.currentData()
        rounds = [r] if r else (data.round_numbers or [1])
        settings_json = s.to_json(data.clusters)

        def job(store: Store) -> Changes:
            states = {round_no: quadrant.variant_states(data, s, round_no) for round_no in rounds}
            return quadrant.save_variant(store, data.run_id, label, settings_json, states)

        self.model.write("save a what-if classification", job,
                         lambda _c: self.info.setText(f"Saved “{label}” ({len(rounds)} round(s)); the run is unchanged."))

    # ----- export ----------------------------------------------------------------------------
    def _chart(self):
        plot = self._plot()
        return None if plot is None else _QuadrantChart(self, plot)

    def _export_name(self) -> str:
        return f"quadrant-{self.data.run_id}" if self.data else "quadrant"

    def _on_exported(self, path) -> None:
        self.info.setText(f"Exported {path}")

    def _on_export_failed(self, message: str) -> None:
        self.info.setText(message)

    def clear(self) -> None:
        self.data = self.result = self.baseline = None
        self._loaded_run = None
        self.splitter.hide()
        self.run_combo.clear()
        self.round_combo.clear()


class _QuadrantChart:
    """The chart on screen for export: its plot item, and its points as a table."""

    def __init__(self, panel: QuadrantPanel, plot):
        self.panel, self.plot = panel, plot

    def export_item(self):
        return self.plot.export_item()

    def csv_table(self) -> tuple[list[str], list[list[object]]]:
        p = self.panel
        d, res = p.data, p.result
        header = ["artifact_id", "key", "round", "author", "author_cluster",
                  *[f"rate_{c}" for c in d.clusters], "votes_cast", "rho", "tier", "run_tier", "score",
                  "persuasion_kind", "x_drawn", "y_drawn", "verdict", "extracted"]
        rows = []
        for k, row in enumerate(p.points_rows):
            ac = int(res.author_cluster[row])
            rows.append([int(d.artifact_ids[row]), d.keys[row], int(d.rounds[row]), d.authors[row],
                         d.clusters[ac] if ac >= 0 else None,
                         *[_num(res.rates[row, i]) for i in range(d.n)], int(res.votes_cast[row]),
                         float(res.rho[row]), TIER_NAMES[res.tier[row]], TIER_NAMES[p.baseline.tier[row]],
                         _num(res.score[row]), (None, "accelerator", "mitigator")[int(res.persuasion_kind[row])],
                         float(self.plot.drawn_x[k]), float(self.plot.drawn_y[k]),
                         d.scores[row] if row < len(d.scores) else None,
                         d.extracted[row] if row < len(d.extracted) else None])
        return header, rows


def _num(value: float) -> float | None:
    return None if value != value else float(value)


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _rate(value: float) -> str:
    return "—" if value != value else f"{value:.2f}"


def _settings_text(settings: dict) -> str:
    theta = settings.get("theta") or {}
    text = f"τ {settings.get('tau')} · θ " + ", ".join(f"{k} {v:g}" for k, v in theta.items())
    if settings.get("weighted") and settings.get("weights"):
        text += " · weights " + ", ".join(f"{k} {v:g}" for k, v in settings["weights"].items())
    return text


def _achievable(s: quadrant.Settings, n: int) -> list[float]:
    """Every resonance ratio an approval set can reach (for the ratio chart's ticks)."""
    if s.weights is None:
        return [k / n for k in range(n + 1)]
    if n > 12:
        return []
    total = sum(s.weights)
    sums = {0.0}
    for w in s.weights:
        sums |= {v + w for v in sums}
    return sorted({round(v / total, 9) for v in sums})

