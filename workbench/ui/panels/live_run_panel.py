"""Live Run: configure, start, watch, cancel and resume protocol runs and batches, call by call;
answer the calls a person plays (the CONS conductor's decision, or any agent whose provider
model is "manual"); inspect any call's fenced request and raw reply; decide CONS escalations.

The panel is a shell over the window's RunService and QtManualAgents: it never runs anything
itself. Two tabs share the dock (it is wide and short): "Runs" (the runs | the selected run's
timeline | the selected call, or the run's CONS escalation) and "Configure" (the run
configuration form). What it shows comes from the project file, read off the GUI thread, and,
for the run in progress, from the service's live call events. What a person answers (a manual
call, the conductor's decision, an escalation) is in :mod:`.live_run_people`.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field

from PySide6.QtCore import QEvent, QItemSelectionModel, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.services.project_model import ProjectModel
from workbench.services.reads import Reader
from workbench.services.runs.manual_agents import QtManualAgents
from workbench.services.runs.service import RunService
from workbench.ui.panels.base import Panel
from workbench.ui.panels.live_run_people import LiveRunPeople
from workbench.ui.plots.limit_plot import LimitPlot
from workbench.ui.widgets.call_detail import CallDetailView
from workbench.ui.widgets.config_source import ConfigSource
from workbench.ui.widgets.contained import Contained
from workbench.ui.widgets.escalation_form import EscalationForm
from workbench.ui.widgets.manual_prompt import ManualPromptBox, escape_html
from workbench.ui.widgets.record_table import RecordTable
from workbench.ui.widgets.run_config_editor import RunConfigEditor
from workbench.ui.widgets.run_names import run_titles
from workbench.ui.widgets.run_status import (
    RUN_STATUS,
    SIM_BADGE,
    SIM_NOTE,
    ElidedRichLabel,
    RunBadge,
    decorate_run,
    live_row,
    progress_text,
    run_row,
)
from workbench.ui.widgets.run_timeline import AMBER, GREY, RED, RunTimeline, call_row, tone
from workbench.ui.widgets.status import QuietProgressBar

__all__ = ["LiveRunPanel", "GREY", "SIM_NOTE", "progress_text"]

UNSAVED = -1  # the combo's item for a configuration not saved in the project (or edited since)
QUIET_WIDTH = 260  # px: the reason Start is disabled, elided beside it (whole in its tooltip)
# A run by its label, protocol and start time (run_names.run_title), then its status: never a bare
# id, which is last (and whole in every cell's tooltip).
RUN_COLUMNS = (("name", "Run"), ("sim", "SIM"), ("status_text", "Status"), ("protocol", "Protocol"),
               ("started", "Started"), ("calls", "Calls"), ("failed", "Failed"), ("invalid", "Invalid"),
               ("label", "Label"), ("id", "Id"))


class LiveRunPanel(LiveRunPeople, Panel):
    TITLE = "Live Run"
    OBJECT_NAME = "liveRunPanel"
    SUMMARY = "Configure, start, watch, cancel and resume protocol runs call by call, and answer the calls you play."
    TABLES = ("runs", "rounds", "llm_calls", "votes", "cons_ballots", "finding_votes", "traces",
              "protocol_configs", "cons_questions", "cons_escalations", "cons_conflicts", "batches",
              "settings",  # the project's tau, theta and weighting, which its configurations follow
              "prompt_sets")  # the sets a configuration may pick (Configure ▸ Prompts)

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(model, parent)
        self.service: RunService | None = None
        self.manual: QtManualAgents | None = None
        self.history = None  # the window's QUndoStack (runs themselves are not undoable)
        self._shown_run: str | None = None  # whose calls the timeline shows
        self._made_with: tuple[str | None, str] = (None, "")  # (run, its prompt set), if it named one
        self._run_rows: list[dict] = []
        self._configs: list[tuple[int, str]] = []
        self._counts: dict = {}  # run id -> CallCounts, re-read only for the runs that changed
        self._decisions: dict[str, tuple[str, str, str]] = {}  # run id -> a form's decision to record at its end
        self._answer_when_asked: dict[str, str] = {}  # run id -> the conductor's answer, for a resumed run
        self._escalation_view = None
        self._asking = Reader(model.reads, self, name="read ballots")
        self._detail = Reader(model.reads, self, name="read call detail")
        self._escalation = Reader(model.reads, self, name="read escalation")
        self._estimating = Reader(model.reads, self, name="estimate the run")  # beside Start
        self._quiet_reason = False  # the estimate's place says why Start is disabled
        self.source = ConfigSource(self)
        self._build()

    # ----- construction ----------------------------------------------------------------------
    def _build(self) -> None:
        self._layout.setContentsMargins(4, 2, 4, 2)
        summary = self.findChild(QLabel, "panelSummary")
        if summary is not None:  # the dock is short: the summary is the panel's tooltip instead
            summary.hide()
            self.setToolTip(self.SUMMARY)
        self.content = _Content(self)
        layout = QVBoxLayout(self.content)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(3)
        layout.addLayout(self._build_controls())

        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("liveRunTabs")
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self._build_runs(), "Runs")
        self.editor = RunConfigEditor(self.model.reads, self)
        self.editor.changed.connect(self._update_buttons)
        self.editor.changed.connect(self._sync_combo)
        self.editor.validated.connect(self._update_buttons)
        self.editor.validated.connect(self._on_validated)
        self.tabs.addTab(self.editor, "Configure")
        # A call a person plays takes the dock's whole width and height (the dock is short), in
        # a tab of its own that shows only while a call waits, and is brought forward then.
        self.waiting_page = QWidget(self)
        waiting = QVBoxLayout(self.waiting_page)
        waiting.setContentsMargins(0, 2, 0, 0)
        self.prompt_box = ManualPromptBox(self.waiting_page)
        self.prompt_box.sent.connect(self._on_prompt_sent)
        self.prompt_box.waiting_changed.connect(self._on_waiting_changed)
        self.decision_form = EscalationForm(self, show_context=False)
        self.decision_form.decided.connect(self._on_live_decision)
        self.prompt_box.set_form("hitl_decision", self.decision_form)
        self.prompt_box.hide()
        waiting.addWidget(self.prompt_box, 1)
        self.tabs.addTab(self.waiting_page, "Waiting for you")
        self.tabs.setTabVisible(2, False)
        self._tab_before_waiting = 0
        layout.addWidget(self.tabs, 1)
        self._layout.addWidget(self.content, 1)
        self.content.hide()
        self._update_buttons()

    def _build_controls(self) -> QHBoxLayout:
        controls = QHBoxLayout()
        controls.setSpacing(4)
        self.config_combo = QComboBox(self)
        self.config_combo.setObjectName("configCombo")
        self.config_combo.setToolTip("The configurations saved in the project: choose one to edit or start it")
        self.config_combo.setMinimumContentsLength(18)
        self.config_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.config_combo.setMaximumWidth(320)
        self.config_combo.activated.connect(self._on_config_chosen)
        controls.addWidget(self.config_combo)
        self.new_button = QToolButton(self)
        self.new_button.setText("New")
        self.new_button.setToolTip("A new run configuration: from a template, or from the project's clusters")
        self.new_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.new_menu = QMenu(self)
        self.new_menu.aboutToShow.connect(self._fill_new_menu)
        self.new_button.setMenu(self.new_menu)
        controls.addWidget(self.new_button)
        self.file_button = QToolButton(self)
        self.file_button.setText("Save")
        self.file_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self)
        self.action_save = menu.addAction("Save in the project", self.save_in_project)
        self.action_save_file = menu.addAction("Save as a JSON file…", self.save_to_file)
        self.action_open_file = menu.addAction("Open a JSON or YAML file…", self.open_file)
        self.file_button.setMenu(menu)
        controls.addWidget(self.file_button)
        self.start_button = self._button("▶ Start", "Start the configuration being edited (a run, or a batch)",
                                         self._on_start_clicked)
        self.resume_button = self._button("⟳ Resume", "Finish the selected run (or its batch): only the missing "
                                          "and the failed calls are issued", self._on_resume_clicked)
        self.cancel_button = self._button("■ Cancel", "Stop the run; it stays resumable", self._on_cancel_clicked)
        controls.addWidget(self.start_button)
        # What Start would spend: calls, tokens and cost, worked out off the GUI thread from the
        # configuration being edited (services.runs.estimate), whenever it validates.
        self.estimate_label = QLabel("", self)
        self.estimate_label.setObjectName("runEstimate")
        self.estimate_label.setTextFormat(Qt.TextFormat.PlainText)
        controls.addWidget(self.estimate_label)
        for b in (self.resume_button, self.cancel_button):
            controls.addWidget(b)
        controls.addWidget(self._build_pace())
        self.progress_bar = QuietProgressBar(self)
        self.progress_bar.setObjectName("liveRunProgress")
        self.progress_bar.setTextVisible(False)  # the words go beside it, never clipped inside it
        self.progress_bar.setFixedWidth(120)
        self.progress_bar.hide()
        controls.addWidget(self.progress_bar)
        # One row with the controls (the dock is short): what does not fit ends in "…", the
        # whole text in its tooltip, and the buttons keep their room.
        self.progress_label = ElidedRichLabel("", self)
        self.progress_label.setObjectName("runProgress")
        self.progress_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        controls.addWidget(Contained(self.progress_label, self), 1)  # it changes with every call
        return controls

    def _build_pace(self) -> QWidget:
        """A room's pace for a simulated run (widgets/pace_control.py, over the service's pacer)."""
        from workbench.ui.widgets.pace_control import PaceControl

        self.pace_control = PaceControl(self)
        self.pace_combo, self.next_button = self.pace_control.combo, self.pace_control.next_button
        self.pace_combo.activated.connect(lambda _i: self._update_pace())
        return self.pace_control

    def _update_pace(self) -> None:
        """The control applies to a simulated run: the one going, else the configuration edited."""
        running = self.service is not None and self.service.running
        pacer = self.service.pacer if self.service is not None else None
        check = self.editor.check
        applies = pacer is not None and (pacer.active if running else bool(check and check.ok and check.simulated))
        self.pace_control.update_state(running=running, applies=applies)

    def _build_runs(self) -> QWidget:
        self.runs_table = RecordTable(RUN_COLUMNS, "Filter runs…", self)
        self.runs_table.model.decorate = decorate_run
        # Elided in the middle: the label's beginning, and its protocol and start time at the end, stay.
        self.runs_table.view.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.runs_table.view.selectionModel().selectionChanged.connect(self._on_run_selected)
        self.runs_table.view.viewport().installEventFilter(self)  # its columns fit its width

        calls_box = QWidget(self)
        calls_layout = QVBoxLayout(calls_box)
        calls_layout.setContentsMargins(0, 0, 0, 0)
        calls_layout.setSpacing(2)
        heading = QHBoxLayout()
        self.sim_note = QLabel(SIM_NOTE, self)
        self.sim_note.setObjectName("simNote")
        self.sim_note.setStyleSheet(f"QLabel {{ background: {SIM_BADGE}; color: white; font-weight: bold;"
                                    " border-radius: 3px; padding: 0px 6px; }")
        self.sim_note.setWordWrap(True)  # two lines rather than the run list or the call cut short
        self.sim_note.hide()
        self.badge = RunBadge(self)
        self.calls_heading = QLabel("Select a run to see its calls.", self)
        self.calls_heading.setObjectName("callsHeading")
        self.calls_heading.setTextFormat(Qt.TextFormat.RichText)
        self.calls_heading.setWordWrap(True)
        self.calls_heading.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        heading.addWidget(self.badge, 0, Qt.AlignmentFlag.AlignTop)
        heading.addWidget(self.sim_note, 0, Qt.AlignmentFlag.AlignTop)
        heading.addWidget(Contained(self.calls_heading, self), 1)  # it changes with every call
        calls_layout.addLayout(heading)
        self.timeline = RunTimeline(self)
        self.timeline.call_selected.connect(self._on_call_selected)
        self.timeline.rows_changed.connect(self._show_heading)
        self.calls_table = self.timeline.table
        calls_layout.addWidget(self.timeline, 1)

        self.detail_tabs = QTabWidget(self)
        self.detail_tabs.setDocumentMode(True)
        self.call_view = CallDetailView(self)
        self.escalation_form = EscalationForm(self)
        self.escalation_form.decided.connect(self._on_record_decision)
        self.detail_tabs.addTab(self.call_view, "Call")
        self.detail_tabs.addTab(self.escalation_form, "Escalation")
        self.limit_plot = LimitPlot(self)  # each deployment's concurrency limit, for a run that has one
        self.limit_plot.attach(self.detail_tabs)
        self.inspect_button = QToolButton(self)
        self.inspect_button.setText("Open in Trace Inspector")
        self.inspect_button.setToolTip("Show the selected call (or, with none, the run) in the Trace Inspector, "
                                       "with every field. Double-clicking a call does the same.")
        self.inspect_button.setEnabled(False)
        self.inspect_button.clicked.connect(self._open_in_inspector)
        self.detail_tabs.setCornerWidget(self.inspect_button, Qt.Corner.TopRightCorner)
        self.calls_table.view.doubleClicked.connect(lambda _index: self._open_in_inspector())

        self.split = QSplitter(Qt.Orientation.Horizontal, self)
        self.split.setChildrenCollapsible(False)
        for widget, stretch in ((self.runs_table, 3), (calls_box, 4), (self.detail_tabs, 4)):
            self.split.addWidget(widget)
            self.split.setStretchFactor(self.split.count() - 1, stretch)
        # In proportion (the dock's width is shared so): the runs get room for an id, SIM and a
        # status ("✓ completed") side by side, about 260 px of a 1280 px window's dock.
        self.split.setSizes([330, 400, 370])
        return self.split

    def _fit_run_columns(self) -> None:
        """The status and SIM columns whole; the run's name takes what the table's width leaves,
        elided down to a readable minimum (the whole name and the id are in its tooltip)."""
        view = self.runs_table.view
        metrics, pad = view.fontMetrics(), 18
        statuses = [r["status_text"] for r in self._run_rows] or ["✓ completed"]
        status = max(metrics.horizontalAdvance(t) for t in (*statuses, "✓ completed", "Status")) + pad
        sim = max(metrics.horizontalAdvance("SIM"), view.horizontalHeader().fontMetrics().horizontalAdvance("SIM")) + pad
        names = [r["name"] for r in self._run_rows]
        longest = max((metrics.horizontalAdvance(i) for i in names), default=0) + pad
        least = metrics.horizontalAdvance("Downtown c… · RCP") + pad
        # The splitter never makes the table narrower than an elided id, SIM and the status.
        frame = view.verticalScrollBar().sizeHint().width() + 2 * view.frameWidth()
        self.runs_table.setMinimumWidth(least + sim + status + frame)
        room = view.viewport().width() - sim - status
        view.setColumnWidth(0, max(least, min(longest, room)))
        view.setColumnWidth(1, sim)
        view.setColumnWidth(2, status)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.Resize and watched is self.runs_table.view.viewport():
            self._fit_run_columns()
        return super().eventFilter(watched, event)

    def _button(self, text: str, tip: str, slot) -> QPushButton:
        button = QPushButton(text, self)
        button.setToolTip(tip)
        button.clicked.connect(slot)
        return button

    def attach(self, service: RunService, manual: QtManualAgents | None = None) -> None:
        """Drive runs through the window's service and answer its manual calls here."""
        self.service, self.manual = service, manual
        self.pace_control.attach(lambda: service.pacer)
        service.started.connect(self._on_run_started)
        service.progressed.connect(self._on_run_progressed)
        service.calls_changed.connect(self._on_calls_changed)
        service.finished.connect(self._on_run_finished)
        service.running_changed.connect(self._on_running_changed)
        service.failed.connect(self._on_run_refused)
        if manual is not None:
            manual.asked.connect(self._on_asked)
            manual.answered.connect(self.prompt_box.remove)
            manual.withdrawn.connect(self.prompt_box.remove)

    # ----- reading the project ---------------------------------------------------------------
    def load(self, store, changes, cancel) -> _LiveView:
        """Runs with their call counts and batches, the saved configurations, and the shown
        run's calls. A run that has ended has its counts in its summary; the others are
        counted, and only when a change touched them (or on a full read)."""
        from workbench.core.project import calls, limit_history, panel, prompt_sets, run_configs, runs
        from workbench.core.project.panel_edits import panel_settings
        from workbench.ui.widgets.run_config_editor import protocol_choices  # the registry, read off the GUI thread

        listed = runs.run_list(store)
        going = [r.id for r in listed if r.calls is None]
        known = dict(self._counts)
        if changes is None or (changes.touches("llm_calls") and not changes.runs):
            stale = going
        else:
            stale = [i for i in going if i in changes.runs or i not in known]
        fresh = calls.counts_by_run(store, stale) if stale else {}
        counts = {i: fresh.get(i) or (known.get(i) if i not in stale else None) or calls.CallCounts()
                  for i in going}
        batches = run_configs.batch_ids(store, [r.id for r in listed])
        rows = [run_row(r, counts.get(r.id), batches.get(r.id)) for r in listed]
        for row, name in zip(rows, run_titles(listed, status=False, sim=False)):  # two alike told apart
            row["name"] = name
        shown = self._shown_run
        log, made_with, limits = [], "", None
        if any(r.id == shown for r in listed):
            templates = prompt_sets.run_templates(store, shown, with_calls=True)
            log = [{**call_row(c), "template": _template_cell(templates.call_origin(c.id))}
                   for c in calls.run_log(store, shown)]
            made_with = templates.set_text()
            limits = limit_history.chart(store, shown)
        return _LiveView(panel.saved_configs(store), rows, counts, shown, log, panel_settings(store),
                         prompt_sets.all_sets(store), made_with, protocol_choices(), limits)

    def apply(self, view: _LiveView) -> None:
        self._counts = view.counts
        self._made_with = (view.shown_run, view.made_with)
        self.editor.set_protocols(view.protocols)
        self.editor.set_project_settings(view.settings)
        self.editor.set_prompt_sets(view.prompt_sets)
        configs = [(c.id, f"{c.name} ({c.protocol.upper()})") for c in view.configs]
        if configs != self._configs:
            self._fill_configs(configs)
        live = self.service.run_id if self.service is not None and self.service.running else None
        # The run in progress is running, even in the moment between its creation and its claim.
        rows = [live_row(r) if r["id"] == live else r for r in view.runs]
        if rows != self._run_rows:
            self._run_rows = rows
            keep = self._shown_run
            self.runs_table.set_rows(rows)
            self._fit_run_columns()
            if keep:
                self.select_run(keep)
        if view.shown_run == self._shown_run:
            self._show_calls(view.calls)
            self.limit_plot.set_chart(view.shown_run, view.limits)
        else:
            self.request()  # the selection moved while this was read
        self.content.show()
        self._update_buttons()

    def clear(self) -> None:
        """No project: nothing of the last one stays (its runs, its configuration, its estimate,
        the last run's progress line)."""
        self.content.hide()
        self._configs, self._run_rows, self._shown_run = [], [], None
        self._counts, self._decisions, self._answer_when_asked = {}, {}, {}
        for reader in (self._asking, self._detail, self._escalation, self._estimating):
            reader.cancel()
        self.source.clear()
        self.editor.set_project_settings(None)
        self.config_combo.clear()
        self.runs_table.set_rows([])
        self.timeline.clear()
        self.limit_plot.set_chart(None, None)
        self.call_view.show_detail(None)
        self.escalation_form.set_view(None)
        self.prompt_box.clear_all()
        for label in (self.estimate_label, self.progress_label):
            label.setText("")
            label.setToolTip("")
        self.progress_bar.hide()
        self.badge.set_status(None)
        self.sim_note.hide()
        self.calls_heading.setText("Select a run to see its calls.")
        self._update_buttons()

    def _on_opened(self, store) -> None:
        super()._on_opened(store)
        self.source.opened()

    def _fill_configs(self, configs: list[tuple[int, str]]) -> None:
        current = self.config_combo.currentData()
        first = not self._configs
        self._configs = configs
        self.config_combo.blockSignals(True)
        self.config_combo.clear()
        for config_id, text in configs:
            self.config_combo.addItem(text, config_id)
        if not configs:
            self.config_combo.addItem("(no saved configurations)", None)
        index = self.config_combo.findData(self.source.config_id if self.source.config_id is not None else current)
        self.config_combo.setCurrentIndex(max(index, 0))
        self.config_combo.blockSignals(False)
        self._sync_combo()
        if first and configs and self.source.config_id is None and not self.source.busy:
            self.source.load_saved(self.config_combo.currentData())  # the editor starts with the first

    def _show_calls(self, logged: list) -> None:
        run_id = self._shown_run
        run = next((r for r in self._run_rows if r["id"] == run_id), None)
        self.timeline.set_stored(logged if run else [])
        self._show_heading()
        if run is not None:
            self._read_escalation(run)

    def _show_heading(self) -> None:
        run_id = self._shown_run
        run = next((r for r in self._run_rows if r["id"] == run_id), None)
        if run is None and run_id is not None and self.service is not None and self.service.run_id == run_id:
            # The run just started: not read from the file yet, but its calls are already coming.
            run = {"id": run_id, "status": "running", "error": None, "simulated": False, "batch_id": None}
        if run is None:
            self.calls_heading.setText("Select a run to see its calls.")
            self.sim_note.hide()
            self.badge.set_status(None)
            return
        rows = self.timeline.rows
        grey = sum(r["status"] not in ("ok", "running", "waiting") for r in rows)
        flying = sum(r["status"] == "running" for r in rows)
        held = sum(r["status"] == "waiting" for r in rows)
        self.badge.set_status(run["status"])
        batch = "batch" if run.get("batch_id") else ""
        reason = run["error"] if run["error"] and run["status"] != "completed" else ""
        made_run, made_with = self._made_with
        made_with = f" · ✎ {escape_html(made_with)}" if made_with and made_run == run_id else ""
        self.calls_heading.setText(
            f"{len(rows)} call(s)" + made_with + (f", {flying} in flight" if flying else "")
            + (f", <span style='color:{tone(AMBER)}'>⧗ {held} waiting to retry</span>" if held else "")
            + (f", <span style='color:{GREY}'>{grey} invalid or failed (grey)</span>" if grey else "")
            + (f"<br><span style='color:{tone(RED)}'>{escape_html(reason)}</span>" if reason else ""))
        from workbench.ui.widgets.run_names import run_title, run_tooltip

        self.calls_heading.setToolTip(f"{run_title(run)}\n{run_tooltip(run)}" if run.get("name") else
                                      f"{run_id}{batch and ', a run of batch ' + run['batch_id']}")
        self.sim_note.setVisible(bool(run["simulated"]))

    # ----- selection -------------------------------------------------------------------------
    def select_run(self, run_id: str) -> None:
        table = self.runs_table
        for row in range(table.proxy.rowCount()):
            source = table.proxy.mapToSource(table.proxy.index(row, 0))
            if table.model.row(source.row())["id"] == run_id:
                flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
                table.view.selectionModel().select(table.proxy.index(row, 0), flags)
                table.view.scrollTo(table.proxy.index(row, 0))
                return

    def selected_run(self) -> dict | None:
        rows = self.runs_table.view.selectionModel().selectedRows()
        if not rows:
            return None
        return self.runs_table.model.row(self.runs_table.proxy.mapToSource(rows[0]).row())

    def _on_run_selected(self, *_args) -> None:
        run = self.selected_run()
        self.inspect_button.setEnabled(run is not None)
        if run is not None and run["id"] != self._shown_run:
            self._shown_run = run["id"]
            self.calls_heading.setText(f"<b>{escape_html(run.get('name') or run['id'])}</b> — reading its calls…")
            self.timeline.set_stored([])
            self.call_view.show_detail(None)
            self.request()
        self._update_buttons()

    def _open_in_inspector(self) -> None:
        """The selected call, once it has a record; else the selected run."""
        from workbench.core.project.refs import RecordRef

        row = self.timeline.selected()
        run = self.selected_run()
        run_id = run["id"] if run is not None else None
        if row is not None and row.get("id") is not None:
            self.model.reveal(RecordRef("call", row["id"], run_id))
        elif run_id is not None:
            self.model.reveal(RecordRef("run", run_id, run_id))

    def _on_call_selected(self, row: dict | None) -> None:
        self.inspect_button.setEnabled(self.selected_run() is not None)
        reading = self._reading
        if row is None or reading is None:
            self.call_view.show_detail(None)
            return
        self.detail_tabs.setCurrentWidget(self.call_view)
        if row.get("id") is None:
            self._detail.cancel()
            self.call_view.show_detail(None, f"{row['agent_id']} · {row['purpose']}: {row['status_text']}. "
                                             "It has no record yet: its request and reply show once it ends.")
            return
        call_id = row["id"]

        def read(_cancel):
            from workbench.core.project.calls import call_detail
            from workbench.core.project.prompt_sets import call_origin

            return call_detail(reading, call_id), call_origin(reading, call_id)

        self._detail.load(read, lambda got: self.call_view.show_detail(got[0], origin=got[1]),
                          cleanup=reading.close_connection,
                          on_failed=lambda e: self.call_view.show_detail(None, f"Could not read the call: {e.message}"))

    # ----- configurations --------------------------------------------------------------------
    def _on_config_chosen(self, _index: int) -> None:
        config_id = self.config_combo.currentData()
        if config_id is not None and config_id != UNSAVED:
            self.source.load_saved(int(config_id))

    def _sync_combo(self) -> None:
        """The combo names what the editor holds: a saved configuration, or "(unsaved) …"."""
        combo = self.config_combo
        doc = self.editor.document()
        combo.blockSignals(True)
        try:
            unsaved = combo.findData(UNSAVED)
            if doc and not self.source.unchanged(doc):
                text = f"(unsaved) {self.editor.name or 'new configuration'}"
                if unsaved < 0:
                    combo.insertItem(0, text, UNSAVED)
                else:
                    combo.setItemText(unsaved, text)
                combo.setCurrentIndex(combo.findData(UNSAVED))
            else:
                if unsaved >= 0:
                    combo.removeItem(unsaved)
                index = combo.findData(self.source.config_id)
                if index >= 0:
                    combo.setCurrentIndex(index)
            combo.setToolTip(combo.currentText())
        finally:
            combo.blockSignals(False)

    def _fill_new_menu(self) -> None:
        self.source.fill_new_menu(self.new_menu)

    def save_in_project(self) -> None:
        self.source.save_in_project()

    def save_to_file(self) -> None:
        self.source.save_to_file()

    def open_file(self) -> None:
        self.source.open_file()

    # ----- commands --------------------------------------------------------------------------
    def _on_start_clicked(self) -> None:
        if self.service is None or not self.editor.valid:
            return
        doc = self.editor.document()
        config_id = self.source.config_id if self.source.unchanged(doc) else None
        self.tabs.setCurrentIndex(0)
        self._leave_shown_run()
        self.service.start_document(doc, config_id=config_id, label=str(doc.get("label") or ""),
                                    follow_project=self.editor.follows_project)

    def _leave_shown_run(self) -> None:
        """Start: the run shown until now goes (its calls, its selected call); the new run's
        ``started`` brings its own."""
        self._shown_run = None
        self.runs_table.view.selectionModel().clearSelection()
        self._detail.cancel()
        self.timeline.clear()
        self.call_view.show_detail(None)
        self._escalation_view = None
        self.escalation_form.set_view(None)
        self._show_heading()

    def _on_resume_clicked(self) -> None:
        run = self.selected_run()
        if self.service is None or run is None:
            return
        if run.get("batch_id"):
            self.service.resume_batch(run["batch_id"])
        else:
            self.service.resume(run["id"])

    def _on_validated(self, check) -> None:
        """The configuration being edited validated: its estimate, read off the GUI thread."""
        if not getattr(check, "ok", False):
            self._estimating.cancel()
            self._update_buttons()  # the reason, in the estimate's place
            return
        doc = self.editor.document()

        def read(_cancel):
            from workbench.services.runs.estimate import estimate_document

            return estimate_document(doc)

        self._estimating.load(read, self._show_estimate,
                              on_failed=lambda e: self._show_estimate({"error": e.message}))

    def _show_estimate(self, est: dict) -> None:
        from workbench.services.runs.estimate import estimate_line

        if est.get("error"):
            self.estimate_label.setText("")
            self.estimate_label.setToolTip(f"No estimate: {est['error']}")
            return
        line = estimate_line(est)
        self.estimate_label.setStyleSheet("")
        self._quiet_reason = False
        self.estimate_label.setText(line.split(" (")[0])  # plain text; the models without a price in the tooltip
        rows = []
        for name, p in est.get("providers", {}).items():
            cost = "cost unknown" if p["cost_usd"] is None else f"${p['cost_usd']:.4f}"
            rows.append(f"<br>{escape_html(name)} ({escape_html(p['model'])}): {p['calls']:,} calls, "
                        f"{p['prompt_tokens'] + p['completion_tokens']:,} tokens, {cost}")
        self.estimate_label.setToolTip(f"<b>Estimate before Start</b>: {escape_html(line)}{''.join(rows)}"
                                       f"<br><i>{escape_html(est.get('method', ''))}</i>")

    def _on_cancel_clicked(self) -> None:
        if self.service is not None:
            self.service.cancel()
            self.progress_label.setText("Cancelling… the run stops after the calls in flight.")

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "badge"):  # a new theme
            self.badge.set_status(self.badge.status, restyle=True)
            self._show_heading()

    def start_blocker(self) -> str | None:
        """Why Start cannot start anything now, in words; None when it can."""
        store = self.store
        if store is None:
            return "No project is open: use File ▸ New or File ▸ Open."
        if store.read_only:
            return "This project is open read-only, so it cannot record a run."
        if self.service is None:
            return "Runs start from the main window."
        if self.service.running:
            return "A run is in progress: wait for it to end, or Cancel it."
        if not self.editor.document():
            return "No configuration yet: use New ▸ to start from a template or from the project's clusters."
        check = self.editor.check
        if self.editor.pending or check is None:
            return "Checking the configuration…"
        if not check.ok:
            return f"The configuration is not valid yet ({check.message}): see the Configure tab."
        return None

    def _update_buttons(self, *_args) -> None:
        running = self.service is not None and self.service.running
        store = self.store
        writable = store is not None and not store.read_only and self.service is not None
        run = self.selected_run()
        blocker = self.start_blocker()
        self.start_button.setEnabled(writable and blocker is None)
        self.start_button.setToolTip(blocker or "Start the configuration being edited (a run, or a batch)")
        # Why Start cannot go, in a quiet line where the estimate goes once the configuration is valid.
        if blocker is not None and not running:
            self._estimating.cancel()
            metrics = self.estimate_label.fontMetrics()
            self.estimate_label.setText(metrics.elidedText(blocker, Qt.TextElideMode.ElideRight, QUIET_WIDTH))
            self.estimate_label.setToolTip(blocker)
            self.estimate_label.setStyleSheet("color: palette(placeholder-text);")
            self._quiet_reason = True
        elif self._quiet_reason:
            self.estimate_label.setText("")
            self.estimate_label.setToolTip("")
            self.estimate_label.setStyleSheet("")
            self._quiet_reason = False
        resumable = run is not None and run["status"] in ("interrupted", "failed", "stopped_at_cap", "degraded")
        self.resume_button.setEnabled(writable and not running and resumable)
        self.resume_button.setText("⟳ Resume batch" if run is not None and run.get("batch_id") else "⟳ Resume")
        self.cancel_button.setEnabled(running)
        self.action_save.setEnabled(writable and self.editor.valid)
        self.new_button.setEnabled(store is not None)
        self._update_pace()

    # ----- the run service -------------------------------------------------------------------
    def _on_running_changed(self, running: bool) -> None:
        self.progress_bar.setVisible(running)
        if running:
            self.progress_bar.setRange(0, 0)
            self.progress_label.setText("Starting…")
        self._update_buttons()

    def _on_run_started(self, run_id: str) -> None:
        other = run_id != self._shown_run
        self._shown_run = run_id
        # A new run: the timeline and the call detail leave the run shown before at once (its
        # calls must never pass for the new run's), then fill with the new run's calls.
        self.timeline.start_live(run_id, fresh=other)
        if other:
            self._detail.cancel()
            self.call_view.show_detail(None)
            self._show_heading()
        if self.tabs.currentWidget() is self.editor:
            self.tabs.setCurrentIndex(0)  # watch it (a call waiting for you keeps its tab)
        self.request()
        self.select_run(run_id)

    def _on_calls_changed(self, events: list) -> None:
        self.timeline.add_events(events)

    def _on_run_progressed(self, p) -> None:
        from workbench.services.runs.runner import PAUSE_MARK, WAIT_MARK  # loaded by the run already

        self.progress_bar.setRange(0, max(p.total, 1))
        self.progress_bar.setValue(p.done)
        waiting = " — <b>waiting for you</b>" if self.prompt_box.calls else ""
        batch = ""
        if self.service is not None and self.service.batch_id is not None:
            batch = f"{escape_html(self.service.batch_id)} · "
        # The counts first: the dock is narrow, and the phase strip names the phase too.
        text = f"{escape_html(progress_text(p, eta=not waiting))}"
        if getattr(p, "cache_calls", None):  # the reply cache's hits in this session
            text += f", cache {p.cache_hits}/{p.cache_calls} hits"
        # A call waits for its retry, a phase for Next, or for its provider batch (with the provider's counts).
        if p.message.startswith((WAIT_MARK, PAUSE_MARK)) or p.phase == "batch":
            text += f" — <span style='color:{tone(AMBER)}'>{escape_html(p.message)}</span>"
        text += f"{waiting} · {batch}<b>{escape_html(p.phase or 'Running')}</b>"
        self.progress_label.setText(text)
        self.progress_label.setToolTip(p.message or "")
        self._update_pace()

    def _on_run_refused(self, message: str, _details: str) -> None:
        """The run did not start (a provider that cannot be called, a bad document) or stopped
        on an error: said here in red, where "Starting…" was, as well as in the message area."""
        self.progress_label.setText(f"<span style='color:{tone(RED)}'>✖ {escape_html(message)}</span>")
        self.progress_label.setToolTip(message)
        self.timeline.stop_live()
        self.request()

    def _on_run_finished(self, summary: dict) -> None:
        status = summary.get("status", "")
        glyph = RUN_STATUS.get(status, ("", ""))[0]
        what = f"Batch {summary['batch_id']}" if summary.get("batch_id") else "Run"
        runs = f"{len(summary.get('runs', []))} of {summary.get('planned_runs')} runs, " if summary.get("batch_id") else ""
        text = f"{glyph} {what} {status}: {runs}{summary.get('calls', 0)} calls, " \
               f"{summary.get('failed_calls', 0)} failed, {summary.get('invalid_calls', 0)} invalid"
        if summary.get("cache_hit_rate") is not None:
            text += f", cache hit rate {summary['cache_hit_rate']:.0%}"
        if status == "interrupted":
            text += " — select it and Resume to finish"
        elif status == "stopped_at_cap":
            text += " — select it and Resume once its budget is raised"
        elif status == "degraded" and summary.get("failed_calls"):
            text += " — select it and Resume to issue its failed calls again"
        reason = summary.get("error") if status != "completed" else None
        colour = tone(RUN_STATUS.get(status, ("", ""))[1])
        body = escape_html(text) + (f" — {escape_html(reason)}" if reason else "")
        self.progress_label.setText(f"<span style='color:{colour}'>{body}</span>" if colour else body)
        self.progress_label.setToolTip(reason or "")
        self.timeline.stop_live()
        self._record_decisions(summary)
        self.request()


class _Content(QWidget):
    """The panel's body. It reports no height-for-width: the window's scroll area would size it
    to its preferred height (every word-wrapped label at full length) instead of fitting the
    short dock, which it can (its parts scroll within themselves)."""

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt API)
        return False


@dataclass(frozen=True)
class _LiveView:
    configs: list  # SavedConfig
    runs: list  # table rows (dicts), newest first
    counts: dict  # run id -> CallCounts, for the runs still going
    shown_run: str | None
    calls: list  # timeline rows (dicts) of the shown run's stored calls
    settings: dict | None = None  # the project's tau, theta and weighting (panel_edits.panel_settings)
    prompt_sets: list = dc_field(default_factory=list)  # the project's (prompt_sets.all_sets), for the picker
    made_with: str = ""  # the shown run's prompt set ("prompt set strict @9f8e7d6c"), if it named one
    protocols: list = dc_field(default_factory=list)  # (name, label) of every runnable protocol
    limits: object = None  # the shown run's limit_history.chart (None: it has no limit history)


def _template_cell(origin) -> str:
    """A call's template in the call list: its step and hash, ✎ when it is not the default."""
    if origin is None:
        return ""
    return f"{origin.step or '?'} @{origin.sha256[:8]}" + ("" if origin.source == "default" else " ✎")

