"""Studies (SPEC §9, issue 29): the project's studies and, for the one chosen, its arms with what
each ran and reused, one metric's estimate per arm with its 95% CI, each arm against the baseline
(the paired difference, its CI, p and Holm's p) drawn as a forest plot, and the design's warnings.

The numbers are the report's: :func:`workbench.services.runs.studies.report_of`, the function
``rwb study report --format json`` prints, read off the GUI thread through the panel's Reader, so
the window and the CLI can never disagree. The view is read again only when ``studies`` or
``study_results`` change (a study being run adds a result at a time). An arm's runs are listed
below it; a run chosen there opens in the Trace Inspector (the link every panel uses) or in the
Quadrant (``quadrant_requested``: the window shows it).

A second page, Design (``ui.widgets.study_design``), builds a study and runs it through the
window's :class:`~workbench.services.runs.study_service.StudyService` (``attach``): the results
page follows the study it started, and Resume finishes a study whose results are missing.
"""

from __future__ import annotations

import math
import threading
from typing import Any

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.core.project.changes import Changes
from workbench.core.project.refs import RecordRef
from workbench.core.project.store import Store
from workbench.services.project_model import ProjectModel
from workbench.ui.panels.base import Panel
from workbench.ui.widgets.record_table import RecordTable

ARM_COLUMNS = (("arm", "Arm"), ("runs", "Runs"), ("calls", "Calls"), ("reused", "Reused"), ("status", "Status"),
               ("mean", "Mean"), ("ci", "95% CI"), ("n", "n"), ("diff", "Diff vs baseline"), ("diff_ci", "Diff 95% CI"),
               ("p", "p"), ("p_holm", "p (Holm)"), ("pairs", "Pairs"), ("changes", "Changes"))
RUN_COLUMNS = (("item", "Item"), ("replicate", "Replicate"), ("run", "Run"), ("status", "Status"), ("source", "Result"))
FIGURE_POLICY = (QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Ignored)
RESTYLE_EVENTS = (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange, QEvent.Type.FontChange,
                  QEvent.Type.ApplicationFontChange)


def number(value: float | None) -> str:
    """A report number as the view shows it: four significant digits (the JSON keeps them all)."""
    return "—" if value is None or not math.isfinite(value) else f"{value:.4g}"


def interval(ci: list | None) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return "—"
    return f"[{number(ci[0])}, {number(ci[1])}]"


def load_study_view(store: Store, want: str | None) -> dict:
    """The view of the studies (worker thread): the list, and the chosen study's summary, report
    and results (the newest study when ``want`` is not one of them)."""
    from workbench.core.project import studies as rows
    from workbench.services.runs.studies import report_of, study_summary

    names = rows.study_names(store)
    ids = [s.id for s in names]
    chosen = want if want in ids else (ids[0] if ids else None)
    if chosen is None:
        return {"studies": names, "study": None}
    return {"studies": names, "study": chosen, "summary": study_summary(store, chosen),
            "report": report_of(store, chosen), "results": rows.result_runs(store, chosen)}


class StudyPanel(Panel):
    TITLE = "Studies"
    OBJECT_NAME = "studyPanel"
    SUMMARY = ("Studies: each arm's runs and metric with its 95% CI, each arm against the baseline "
               "(paired difference, CI, p, Holm) as a forest plot, and the design's warnings.")
    TABLES = ("studies", "study_results")
    quadrant_requested = Signal(str)  # a run to show in the Quadrant (the window shows it)

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(model, parent)
        self.view: dict[str, Any] | None = None
        self.service = None  # the window's StudyService (attach)
        self.forest = None  # the forest plot, made when first shown
        self._want_study: str | None = None
        self._metric: str | None = None
        self._arm: str | None = None
        self._restyle_due = False

        # Two pages: the results of the study chosen, and the design of a new one (run from there).
        self.pages = QTabWidget(self)
        self.pages.setObjectName("studyPages")
        results = QWidget(self.pages)
        page = QVBoxLayout(results)
        page.setContentsMargins(0, 0, 0, 0)
        self.pages.addTab(results, "Results")
        self._layout.addWidget(self.pages, 1)
        bar = QHBoxLayout()
        self.study_combo = QComboBox(self)
        self.study_combo.setObjectName("studyCombo")
        self.study_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.study_combo.setMinimumContentsLength(16)
        self.study_combo.setToolTip("The study shown (rwb study run FILE --project P makes one)")
        self.study_combo.activated.connect(self._on_study_chosen)
        bar.addWidget(self.study_combo, 2)
        self.metric_combo = QComboBox(self)
        self.metric_combo.setObjectName("metricCombo")
        self.metric_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.metric_combo.setMinimumContentsLength(12)
        self.metric_combo.setToolTip("The metric in the table and the forest plot")
        self.metric_combo.activated.connect(self._on_metric_chosen)
        bar.addWidget(self.metric_combo, 1)
        from workbench.ui.plots.export import export_button

        self.export_button = export_button(self, self._chart, self._export_name, self._on_exported,
                                           self._on_export_failed)
        bar.addWidget(self.export_button)
        self.open_button = QPushButton("Open in Inspector", self)
        self.open_button.setToolTip("Open the run chosen below (or the arm's first run) in the Trace Inspector")
        self.open_button.clicked.connect(self._on_open_run)
        bar.addWidget(self.open_button)
        self.quadrant_button = QPushButton("Open in Quadrant", self)
        self.quadrant_button.setToolTip("Show the run chosen below (or the arm's first run) in the Quadrant")
        self.quadrant_button.clicked.connect(self._on_quadrant_run)
        bar.addWidget(self.quadrant_button)
        self.resume_button = QPushButton("Resume", self)
        self.resume_button.setToolTip("Finish this study where a Cancel (or a kill) stopped it")
        self.resume_button.clicked.connect(self._on_resume)
        self.resume_button.setEnabled(False)
        bar.addWidget(self.resume_button)
        page.addLayout(bar)
        self.status = QLabel(self)
        self.status.setObjectName("studyStatus")
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.TextFormat.RichText)
        page.addWidget(self.status)

        self.placeholder = QLabel("No study in this project yet: design one in the Design tab, run "
                                  "rwb study run FILE --project P (docs/studies.md), or open the sample "
                                  "project studies.rwb.", self)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)
        page.addWidget(self.placeholder, 1)
        self.split = QSplitter(Qt.Orientation.Vertical, self)
        self.arms_table = RecordTable(ARM_COLUMNS, "Filter arms…", self.split)
        self.arms_table.setObjectName("studyArms")
        self.arms_table.view.selectionModel().selectionChanged.connect(self._on_arm_selected)
        self.arms_table.model.decorate = _arm_tooltip
        self.split.addWidget(self.arms_table)
        self.lower = QSplitter(Qt.Orientation.Horizontal, self.split)
        self.figure_box = QWidget(self.lower)
        QVBoxLayout(self.figure_box).setContentsMargins(0, 0, 0, 0)
        self.lower.addWidget(self.figure_box)
        self.tabs = QTabWidget(self.lower)
        self.runs_table = RecordTable(RUN_COLUMNS, "Filter runs…", self.tabs)
        self.runs_table.setObjectName("studyRuns")
        self.runs_table.view.doubleClicked.connect(lambda _index: self._on_open_run())
        self.tabs.addTab(self.runs_table, "Runs")
        self.warnings = QLabel(self.tabs)
        self.warnings.setObjectName("studyWarnings")
        self.warnings.setWordWrap(True)
        self.warnings.setTextFormat(Qt.TextFormat.RichText)
        self.warnings.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.warnings.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        from PySide6.QtWidgets import QScrollArea

        scroll = QScrollArea(self.tabs)
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.warnings)
        self.tabs.addTab(scroll, "Warnings")
        self.lower.addWidget(self.tabs)
        self.lower.setStretchFactor(0, 3)
        self.lower.setStretchFactor(1, 2)
        self.split.addWidget(self.lower)
        self.split.setStretchFactor(0, 2)
        self.split.setStretchFactor(1, 3)
        page.addWidget(self.split, 1)
        self.split.hide()
        from workbench.ui.widgets.study_design import StudyDesign

        self.design = StudyDesign(model, self.pages)
        self.design.setObjectName("studyDesign")
        self.design.run_requested.connect(self._on_run_requested)
        self.design.cancel_requested.connect(self._on_cancel)
        self.pages.addTab(self.design, "Design")

    # ----- reading (worker thread) -----------------------------------------------------------
    def load(self, store: Store, changes: Changes | None, cancel: threading.Event) -> dict:
        return load_study_view(store, self._want_study)

    # ----- applying (GUI thread) -------------------------------------------------------------
    def apply(self, view: dict) -> None:
        self.view = view
        self.study_combo.blockSignals(True)
        self.study_combo.clear()
        for s in view["studies"]:
            self.study_combo.addItem(f"{s.name or s.id} · {s.arms} arms · {s.results:,} results", s.id)
            self.study_combo.setItemData(self.study_combo.count() - 1, f"{s.id}, started {s.created_at[:19]}",
                                         Qt.ItemDataRole.ToolTipRole)
        self.study_combo.setCurrentIndex(max(self.study_combo.findData(view["study"]), 0))
        self.study_combo.blockSignals(False)
        if view["study"] is None:
            self.status.clear()
            self.split.hide()
            self.placeholder.show()
            return
        self.placeholder.hide()
        self.split.show()
        self._fill_metrics()
        self._draw()

    def _fill_metrics(self) -> None:
        report = self.view["report"]
        names: list[str] = []
        for arm in report["arms"]:
            names += [m for m in arm["metrics"] if m not in names]
        compared = [c["metric"] for c in report["comparisons"]]
        if self._metric not in names:
            self._metric = compared[0] if compared else (names[0] if names else None)
        self.metric_combo.blockSignals(True)
        self.metric_combo.clear()
        for name in names:
            self.metric_combo.addItem(name, name)
        self.metric_combo.setCurrentIndex(max(self.metric_combo.findData(self._metric), 0))
        self.metric_combo.blockSignals(False)

    def _draw(self) -> None:
        view, metric = self.view, self._metric
        summary, report = view["summary"], view["report"]
        from workbench.ui import theme

        warnings = report["warnings"]
        parts = [f"<b>{_escape(summary['study'] or summary['study_id'])}</b>", summary["status"],
                 f"{summary['runs']:,} of {summary['planned']:,} results", f"{summary['calls']:,} calls",
                 f"{summary['calls_reused']:,} reused", f"baseline “{_escape(summary['baseline'])}”"]
        if warnings:
            parts.append(f"<span style='color:{theme.css('warning')}'>⚠ {len(warnings)} warning"
                         f"{'s' if len(warnings) != 1 else ''} (see Warnings)</span>")
        self.status.setText(" · ".join(parts))
        self.warnings.setText("<br>".join(f"⚠ {_escape(w)}" for w in warnings) or "No warnings.")
        self.tabs.setTabText(1, f"Warnings ({len(warnings)})")
        estimates = {a["name"]: a["metrics"].get(metric) for a in report["arms"]}
        compared = {c["arm"]: c for c in report["comparisons"] if c["metric"] == metric}
        rows = []
        for arm in summary["arms"]:
            e, c = estimates.get(arm["name"]), compared.get(arm["name"])
            rows.append({"arm": arm["name"], "runs": arm["runs"], "calls": arm["calls"], "reused": arm["calls_reused"],
                         "status": arm["status"] + (", re-classified" if arm.get("rule_only_of") else ""),
                         "tip": (f"Re-classifies the stored calls of “{arm['rule_only_of']}” with this arm's "
                                 "settings: no call of its own" if arm.get("rule_only_of") else None),
                         "mean": number(e["mean"]) if e else "—", "ci": interval(e["ci95"]) if e else "—",
                         "n": e["n"] if e else None,
                         "diff": number(c["diff"]) if c else _no_diff(arm["name"], summary["baseline"]),
                         "diff_ci": interval(c["ci95"]) if c else "—", "p": number(c["p"]) if c else "—",
                         "p_holm": number(c["p_holm"]) if c else "—", "pairs": c["pairs"] if c else None,
                         "changes": ", ".join(arm.get("changes") or []) or "(the base)"})
        self.arms_table.set_rows(rows)
        if self.service is not None and self.service.study_id == summary["study_id"]:
            arms = summary["arms"]
            self.design.show_progress({a["name"]: a["runs"] for a in arms}, summary["planned"] // max(len(arms), 1))
        self._update_resume()
        if self._arm not in {a["name"] for a in summary["arms"]}:
            self._arm = summary["arms"][0]["name"] if summary["arms"] else None
        self._fill_runs()
        self._draw_forest()

    def _forest_rows(self) -> list:
        from workbench.ui.plots.forest_plot import ForestRow

        compared = {c["arm"]: c for c in self.view["report"]["comparisons"] if c["metric"] == self._metric}
        return [ForestRow(a["name"], c["diff"], c["ci95"][0], c["ci95"][1], c["p_holm"])
                for a in self.view["summary"]["arms"] if (c := compared.get(a["name"])) and c["diff"] is not None]

    def _draw_forest(self) -> None:
        if self.view is None or self.view["study"] is None:
            return
        if self.forest is None:
            if not self.isVisible():
                return  # made when first shown: pyqtgraph is not imported for a hidden panel
            from workbench.ui.plots.forest_plot import ForestPlot
            from workbench.ui.plots.style import plot_min

            self.forest = ForestPlot(self.figure_box)
            self.forest.setObjectName("studyForest")
            self.forest.setSizePolicy(*FIGURE_POLICY)
            self.forest.setMinimumSize(*plot_min())
            self.figure_box.layout().addWidget(self.forest)
            # The plot takes most of the width: the runs' list and the warnings read well narrower.
            width = max(self.lower.width(), 800)
            self.lower.setSizes([int(width * 0.62), int(width * 0.38)])
        self.forest.set_rows(self._forest_rows(), self._metric or "", self.view["summary"]["baseline"] or "")

    def _fill_runs(self) -> None:
        arm = self._arm
        results = [r for r in self.view["results"] if r[0] == arm]
        self.runs_table.set_rows([{"item": item, "replicate": rep, "run": run_id, "status": status,
                                   "source": "re-classified (no call)" if variant is not None else "run"}
                                  for _a, item, rep, run_id, variant, status in results])
        self.tabs.setTabText(0, f"Runs of “{arm}” ({len(results)})" if arm else "Runs")

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self.forest is None:
            self._draw_forest()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() in RESTYLE_EVENTS and self.forest is not None and not self._restyle_due:
            self._restyle_due = True
            QTimer.singleShot(0, self._restyle)

    def _restyle(self) -> None:
        """A new theme or zoom: the plot is made again in its colours and sizes (rare)."""
        self._restyle_due = False
        if self.forest is not None:
            self.forest.setParent(None)
            self.forest.deleteLater()
            self.forest = None
        self._draw_forest()

    # ----- choices ---------------------------------------------------------------------------
    def _on_study_chosen(self, index: int) -> None:
        self._want_study = self.study_combo.itemData(index)
        self.request(None)

    def _on_metric_chosen(self, index: int) -> None:
        self._metric = self.metric_combo.itemData(index)
        if self.view is not None and self.view["study"] is not None:
            self._draw()

    def _on_arm_selected(self, *_args) -> None:
        rows = self.arms_table.view.selectionModel().selectedRows()
        if not rows or self.view is None or self.view["study"] is None:
            return
        source = self.arms_table.proxy.mapToSource(rows[0]).row()
        self._arm = self.arms_table.model.row(source)["arm"]
        self._fill_runs()

    def select_arm(self, name: str) -> None:
        """Choose the arm ``name`` (as a click on its row does)."""
        for i in range(self.arms_table.proxy.rowCount()):
            if self.arms_table.proxy.index(i, 0).data() == name:
                self.arms_table.view.selectRow(i)
                return

    def _chosen_run(self) -> str | None:
        """The run chosen in the arm's runs, or its first."""
        table = self.runs_table
        if not table.proxy.rowCount():
            return None
        rows = table.view.selectionModel().selectedRows()
        index = rows[0] if rows else table.proxy.index(0, 0)
        return table.model.row(table.proxy.mapToSource(index).row())["run"]

    def _on_open_run(self) -> None:
        """The run chosen in the arm's runs (or its first) in the Trace Inspector."""
        run_id = self._chosen_run()
        if run_id is not None:
            self.model.reveal(RecordRef("run", run_id))

    def _on_quadrant_run(self) -> None:
        """The same run in the Quadrant (the window shows it; a re-classified result shows the run
        whose votes it re-classified)."""
        run_id = self._chosen_run()
        if run_id is not None:
            self.quadrant_requested.emit(run_id)

    # ----- running (the window's StudyService) -------------------------------------------------
    def attach(self, service) -> None:
        self.service = service
        service.started.connect(self._on_study_started)
        service.progressed.connect(self._on_study_progressed)
        service.running_changed.connect(self._on_running_changed)
        service.finished.connect(self._on_study_finished)
        service.failed.connect(self._on_study_failed)

    def _on_run_requested(self, document: dict) -> None:
        if self.service is not None:
            self.service.start(document)

    def _on_cancel(self) -> None:
        if self.service is not None:
            self.service.cancel()

    def _on_resume(self) -> None:
        if self.service is not None and self.view and self.view.get("study"):
            self.service.resume(self.view["study"])

    def _on_study_started(self, study_id: str, done: dict) -> None:
        """The study exists: the results page follows it as its results land."""
        self._want_study = study_id
        self.design.show_progress(done, self._planned_per_arm())
        self.request(None)

    def _on_study_progressed(self, progress) -> None:
        self.design.message.setText(f"Running: {progress.done:,} of {progress.total:,} results · arm “{progress.arm}”,"
                                    f" {progress.item}, replicate {progress.replicate + 1}: {progress.message}")
        self.design.message.setStyleSheet("")

    def _on_running_changed(self, running: bool) -> None:
        self.design.set_running(running)
        self._update_resume()

    def _on_study_finished(self, summary: dict) -> None:
        if summary.get("study_id"):
            self.design.show_progress({a["name"]: a["runs"] for a in summary.get("arms", [])},
                                      summary["planned"] // max(len(summary.get("arms") or [1]), 1))
            left = summary["planned"] - summary["runs"]
            self.design.message.setText(f"Study {summary['study_id']}: {summary['status']}, {summary['runs']:,} of "
                                        f"{summary['planned']:,} results, {summary['calls']:,} calls, "
                                        f"{summary['calls_reused']:,} reused"
                                        + (f"; {left:,} missing: Resume (Results) finishes it" if left else ""))
        self.request(None)

    def _on_study_failed(self, message: str) -> None:
        from workbench.ui import theme

        self.design.message.setText(message)
        self.design.message.setStyleSheet(f"color: {theme.css('error')}")

    def _planned_per_arm(self) -> int:
        check = self.design.check or {}
        arms = check.get("arms") or []
        return check.get("runs", 0) // len(arms) if arms else 0

    def _update_resume(self) -> None:
        summary = (self.view or {}).get("summary") or {}
        running = self.service is not None and self.service.running
        self.resume_button.setEnabled(bool(summary) and not running and summary.get("runs", 0) < summary.get("planned", 0))

    # ----- export ----------------------------------------------------------------------------
    def _chart(self):
        return None if self.forest is None or self.view is None else _StudyChart(self)

    def _export_name(self) -> str:
        study = self.view["study"] if self.view else None
        return f"study-{study}-{self._metric}" if study else "study"

    def _on_exported(self, path) -> None:
        self.status.setText(self.status.text() + f"<br>Exported {path}")

    def _on_export_failed(self, message: str) -> None:
        self.status.setText(self.status.text() + f"<br>{_escape(message)}")

    def clear(self) -> None:
        self.view = None
        self.study_combo.clear()
        self.metric_combo.clear()
        self.status.clear()
        self.split.hide()
        self.placeholder.hide()


class _StudyChart:
    """The forest plot for export, and every comparison of the study as its table."""

    def __init__(self, panel: StudyPanel):
        self.panel = panel

    def export_item(self):
        return self.panel.forest.export_item()

    def csv_table(self) -> tuple[list[str], list[list[object]]]:
        header = ["arm", "baseline", "metric", "diff", "ci95_low", "ci95_high", "p", "p_holm", "pairs", "min_p"]
        return header, [[c["arm"], c["baseline"], c["metric"], c["diff"], c["ci95"][0], c["ci95"][1], c["p"],
                         c["p_holm"], c["pairs"], c["min_p"]] for c in self.panel.view["report"]["comparisons"]]


def _arm_tooltip(row: dict, key: str, role: int) -> str | None:
    """A rule-only arm's status says whose calls it re-classifies; its changes are listed whole."""
    if role != Qt.ItemDataRole.ToolTipRole:
        return None
    return row.get("tip") if key == "status" else (row.get("changes") if key == "changes" else None)


def _no_diff(arm: str, baseline: str) -> str:
    return "baseline" if arm == baseline else "—"


def _escape(text: object) -> str:
    import html

    return html.escape(str(text))
