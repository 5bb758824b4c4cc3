"""Live Run: start, watch, cancel and resume protocol runs, call by call; answer the calls a
person plays (the CONS conductor's decision, or an agent whose provider model is "manual").

The panel is a shell over the window's RunService and QtManualAgents: it never runs anything
itself. What it shows comes from the project file (runs, llm_calls), re-read when the shared
model reports a change; the run's thread writes there, and the model's poll notices.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QProgressBar, QPushButton, QSplitter, QVBoxLayout, QWidget

from workbench.core.protocols.shared.steps import AgentCall
from workbench.services.runs.manual_agents import QtManualAgents
from workbench.services.project_model import ProjectModel
from workbench.services.reads import Reader
from workbench.services.runs.service import RunService
from workbench.ui.panels.base import Panel
from workbench.ui.widgets.manual_prompt import ACCENT, ManualPromptBox, escape_html
from workbench.ui.widgets.record_table import RecordTable

RUN_COLUMNS = (("id", "Run"), ("sim", "SIM"), ("status_text", "Status"), ("protocol", "Protocol"),
               ("label", "Label"), ("started", "Started"), ("calls", "Calls"), ("failed", "Failed"),
               ("invalid", "Invalid"))
CALL_COLUMNS = (("id", "#"), ("round", "Round"), ("agent_id", "Agent"), ("purpose", "Purpose"),
                ("status_text", "Status"), ("latency", "Latency (ms)"), ("attempts", "Attempts"), ("reason", "Reason"))

# A glyph with every colour, so a status reads without colour too.
RUN_STATUS = {"completed": ("✔", "#2e7d32"), "running": ("▶", "#1f5fa8"),
              "interrupted": ("⏸", "#b26a00"), "failed": ("✖", "#b3261e")}
CALL_STATUS = {"ok": "✔", "invalid": "⚠", "error": "✖", "rate_limited": "⧗", "cancelled": "■"}
GREY = "#8a8a8a"  # invalid or failed: shown, never hidden
SIM_BADGE = "#6b4fbb"
SIM_NOTE = "SIM: simulated panel, no model was called"

class LiveRunPanel(Panel):
    TITLE = "Live Run"
    OBJECT_NAME = "liveRunPanel"
    SUMMARY = "Start, watch, cancel and resume protocol runs call by call, and answer the calls you play."
    TABLES = ("runs", "rounds", "llm_calls", "votes", "cons_ballots", "finding_votes", "traces",
              "protocol_configs")

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(model, parent)
        self.service: RunService | None = None
        self.manual: QtManualAgents | None = None
        self._shown_run: str | None = None  # whose calls the call log shows
        self._run_rows: list[dict] = []
        self._call_rows: list[dict] = []
        self._configs: list[tuple[int, str]] = []
        self._counts: dict = {}  # run id -> CallCounts, re-read only for the runs that changed
        self._asking = Reader(model.reads, self, name="read ballots")
        self._build()

    # ----- construction ----------------------------------------------------------------------
    def _build(self) -> None:
        self.content = QWidget(self)
        layout = QVBoxLayout(self.content)
        layout.setContentsMargins(0, 0, 0, 0)

        controls = QHBoxLayout()
        controls.addWidget(QLabel("Configuration:", self))
        self.config_combo = QComboBox(self)
        self.config_combo.setMinimumContentsLength(24)
        self.config_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.config_combo.setMaximumWidth(420)
        self.config_combo.currentIndexChanged.connect(self._update_buttons)
        controls.addWidget(self.config_combo)
        self.start_button = self._button("▶ Start", "Start a new run of the chosen configuration", self._on_start_clicked)
        self.resume_button = self._button("⟳ Resume", "Finish the selected interrupted run: only the missing "
                                          "calls are issued", self._on_resume_clicked)
        self.cancel_button = self._button("■ Cancel", "Stop the run; it stays resumable", self._on_cancel_clicked)
        for b in (self.start_button, self.resume_button, self.cancel_button):
            controls.addWidget(b)
        controls.addSpacing(12)
        self.progress_label = QLabel("", self)  # one row with the controls: the dock is short
        self.progress_label.setObjectName("runProgress")
        controls.addWidget(self.progress_label, 1)
        self.progress_bar = QProgressBar(self)
        self.progress_bar.setMaximumWidth(200)
        self.progress_bar.hide()
        controls.addWidget(self.progress_bar)
        layout.addLayout(controls)

        self.runs_table = RecordTable(RUN_COLUMNS, "Filter runs…", self)
        self.runs_table.model.decorate = _decorate_run
        self.runs_table.view.selectionModel().selectionChanged.connect(self._on_run_selected)
        calls_box = QWidget(self)
        calls_layout = QVBoxLayout(calls_box)
        calls_layout.setContentsMargins(0, 0, 0, 0)
        heading = QHBoxLayout()
        self.sim_note = QLabel(SIM_NOTE, self)
        self.sim_note.setObjectName("simNote")
        self.sim_note.setStyleSheet(f"QLabel {{ background: {SIM_BADGE}; color: white; font-weight: bold;"
                                    " border-radius: 3px; padding: 1px 8px; }")
        self.sim_note.hide()
        heading.addWidget(self.sim_note)
        self.calls_heading = QLabel("Select a run to see its calls.", self)
        self.calls_heading.setTextFormat(Qt.TextFormat.RichText)
        heading.addWidget(self.calls_heading, 1)
        calls_layout.addLayout(heading)
        self.calls_table = RecordTable(CALL_COLUMNS, "Filter calls…", self)
        self.calls_table.model.decorate = _decorate_call
        calls_layout.addWidget(self.calls_table, 1)
        self.prompt_box = ManualPromptBox(self)
        self.prompt_box.sent.connect(self._on_prompt_sent)
        self.prompt_box.hide()

        self.split = QSplitter(Qt.Orientation.Horizontal, self)
        self.split.addWidget(self.runs_table)
        self.split.addWidget(calls_box)
        self.split.setStretchFactor(0, 2)
        self.split.setStretchFactor(1, 3)
        # The prompt spans the dock's width above the tables (the dock is wide and short). A
        # layout, not a splitter: a splitter may give a widget it shows again no height at all.
        layout.addWidget(self.prompt_box, 3)
        layout.addWidget(self.split, 2)
        self._layout.addWidget(self.content, 1)
        self.content.hide()
        self._update_buttons()

    def _button(self, text: str, tip: str, slot) -> QPushButton:
        button = QPushButton(text, self)
        button.setToolTip(tip)
        button.clicked.connect(slot)
        return button

    def attach(self, service: RunService, manual: QtManualAgents | None = None) -> None:
        """Drive runs through the window's service and answer its manual calls here."""
        self.service, self.manual = service, manual
        service.started.connect(self._on_run_started)
        service.progressed.connect(self._on_run_progressed)
        service.finished.connect(self._on_run_finished)
        service.running_changed.connect(self._on_running_changed)
        if manual is not None:
            manual.asked.connect(self._on_asked)
            manual.answered.connect(self.prompt_box.remove)
            manual.withdrawn.connect(self.prompt_box.remove)

    # ----- reading the project ---------------------------------------------------------------
    def load(self, store, changes, cancel) -> _LiveView:
        """Runs with their call counts, the saved configurations, and the shown run's calls.
        A run that has ended has its counts in its summary; the others are counted, and only
        when a change touched them (or on a full read)."""
        from workbench.core.project import calls, panel, runs

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
        rows = [_run_row(r, counts.get(r.id)) for r in listed]
        shown = self._shown_run
        log = [_call_row(c) for c in calls.run_log(store, shown)] if any(r.id == shown for r in listed) else []
        return _LiveView(panel.saved_configs(store), rows, counts, shown, log)

    def apply(self, view: _LiveView) -> None:
        self._counts = view.counts
        configs = [(c.id, f"{c.name} ({c.protocol.upper()})") for c in view.configs]
        if configs != self._configs:
            self._fill_configs(configs)
        rows = view.runs
        if rows != self._run_rows:
            self._run_rows = rows
            keep = self._shown_run
            self.runs_table.set_rows(rows)
            if keep:
                self.select_run(keep)
        if view.shown_run == self._shown_run:
            self._show_calls(view.calls)
        else:
            self.request()  # the selection moved while this was read
        self.content.show()
        self._update_buttons()

    def clear(self) -> None:
        self.content.hide()
        self._configs, self._run_rows, self._call_rows, self._shown_run = [], [], [], None
        self._counts = {}
        self._asking.cancel()
        self.config_combo.clear()
        self.runs_table.set_rows([])
        self.calls_table.set_rows([])
        self.prompt_box.clear_all()

    def _fill_configs(self, configs: list[tuple[int, str]]) -> None:
        current = self.config_combo.currentData()
        self._configs = configs
        self.config_combo.blockSignals(True)
        self.config_combo.clear()
        for config_id, text in configs:
            self.config_combo.addItem(text, config_id)
        if not configs:
            self.config_combo.addItem("(no saved protocol configurations)", None)
        index = self.config_combo.findData(current)
        self.config_combo.setCurrentIndex(max(index, 0))
        self.config_combo.blockSignals(False)

    def _show_calls(self, logged: list) -> None:
        run_id = self._shown_run
        run = next((r for r in self._run_rows if r["id"] == run_id), None)
        rows = logged if run else []
        if rows != self._call_rows:
            self._call_rows = rows
            self.calls_table.set_rows(rows)
            if self.service is not None and self.service.run_id == run_id:
                self.calls_table.view.scrollToBottom()  # follow the run as it goes
        if run is None:
            self.calls_heading.setText("Select a run to see its calls.")
            self.sim_note.hide()
            return
        grey = sum(r["status"] != "ok" for r in rows)
        self.calls_heading.setText(
            f"<b>{escape_html(run_id)}</b> — {run['status_text']} — {len(rows)} call(s)"
            + (f", <span style='color:{GREY}'>{grey} invalid or failed (grey)</span>" if grey else "")
            + (f"<br><span style='color:{RUN_STATUS['failed'][1]}'>{escape_html(run['error'])}</span>"
               if run["error"] and run["status"] != "completed" else ""))
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
        if run is not None and run["id"] != self._shown_run:
            self._shown_run = run["id"]
            self.calls_heading.setText(f"<b>{escape_html(run['id'])}</b> — reading its calls…")
            self.request()
        self._update_buttons()

    # ----- commands --------------------------------------------------------------------------
    def _on_start_clicked(self) -> None:
        config_id = self.config_combo.currentData()
        if self.service is not None and config_id is not None:
            self.service.start(int(config_id))

    def _on_resume_clicked(self) -> None:
        run = self.selected_run()
        if self.service is not None and run is not None:
            self.service.resume(run["id"])

    def _on_cancel_clicked(self) -> None:
        if self.service is not None:
            self.service.cancel()
            self.progress_label.setText("Cancelling… the run stops after the calls in flight.")

    def _on_prompt_sent(self, key: str, text: str) -> None:
        if self.manual is not None and not self.manual.answer(key, text):
            self.prompt_box.remove(key)  # its run was cancelled meanwhile

    def _update_buttons(self, *_args) -> None:
        running = self.service is not None and self.service.running
        store = self.store
        writable = store is not None and not store.read_only and self.service is not None
        run = self.selected_run()
        self.start_button.setEnabled(writable and not running and self.config_combo.currentData() is not None)
        self.resume_button.setEnabled(writable and not running and run is not None and run["status"] == "interrupted")
        self.cancel_button.setEnabled(running)

    # ----- the run service -------------------------------------------------------------------
    def _on_running_changed(self, running: bool) -> None:
        self.progress_bar.setVisible(running)
        if running:
            self.progress_bar.setRange(0, 0)
            self.progress_label.setText("Starting…")
        self._update_buttons()

    def _on_run_started(self, run_id: str) -> None:
        self._shown_run = run_id
        self.request()
        self.select_run(run_id)

    def _on_run_progressed(self, p) -> None:
        self.progress_bar.setRange(0, max(p.total, 1))
        self.progress_bar.setValue(p.done)
        waiting = " — <b>waiting for you</b>" if self.prompt_box.calls else ""
        self.progress_label.setText(f"<b>{escape_html(p.phase or 'Running')}</b>: "
                                    f"{progress_text(p, eta=not waiting)}{waiting}")

    def _on_run_finished(self, summary: dict) -> None:
        status = summary.get("status", "")
        glyph = RUN_STATUS.get(status, ("", ""))[0]
        text = f"{glyph} Run {status}: {summary.get('calls', 0)} calls, " \
               f"{summary.get('failed_calls', 0)} failed, {summary.get('invalid_calls', 0)} invalid"
        if status == "interrupted":
            text += " — select it and Resume to finish"
        self.progress_label.setText(text)
        self.request()

    def _on_asked(self, call: AgentCall) -> None:
        run = self.service.run_id if self.service is not None else None
        reading = self._reading
        if call.purpose == "hitl_decision" and reading is not None and run is not None:
            # What the conductor decides on is read first (off this thread), then the prompt shows.
            def read(_cancel):
                from workbench.core.project.ballots import last_round_ballots

                return last_round_ballots(reading, run)

            self._asking.load(read, lambda ballots: self._ask(call, run, _ballots_html(ballots)),
                              on_failed=lambda _e: self._ask(call, run, ""), cleanup=reading.close_connection)
        else:
            self._ask(call, run, "")

    def _ask(self, call: AgentCall, run: str | None, context: str) -> None:
        self.prompt_box.add(call, run, context)
        self.request()  # the log shows every call before this one while the person reads
        if self.service is not None and self.service.last_progress is not None:
            self._on_run_progressed(self.service.last_progress)


@dataclass(frozen=True)
class _LiveView:
    configs: list  # SavedConfig
    runs: list  # table rows (dicts), newest first
    counts: dict  # run id -> CallCounts, for the runs still going
    shown_run: str | None
    calls: list  # table rows (dicts) of the shown run's calls


def _ballots_html(ballots: list) -> str:
    """What the conductor decides on: the last round's ballots of the run (CONS)."""
    if not ballots:
        return ""
    items = []
    for b in ballots:
        if b.status != "valid":
            items.append(f"<li style='color:{GREY}'><b>{escape_html(b.agent_id)}</b>: invalid ballot "
                         f"({escape_html(b.invalid_reason or '')})</li>")
        else:
            items.append(f"<li><b>{escape_html(b.agent_id)}</b>: {escape_html(b.vote or '')} "
                         f"“{escape_html(b.option or '')}” ({b.confidence}) — {escape_html(b.rationale or '')}</li>")
    return f"<p style='margin:8px 0 2px 0; color:{ACCENT}'><b>The ballots</b></p><ul style='margin:0'>" \
           + "".join(items) + "</ul>"


# ----- rows and their look ---------------------------------------------------------------------
def progress_text(p, *, eta: bool = True) -> str:
    """ "3/16 calls, 0 failed, ETA 4 s" """
    left = ""
    if eta and p.eta_s is not None and p.done < p.total:
        left = ", ETA <1 s" if p.eta_s < 1 else f", ETA {p.eta_s:.0f} s"
    return f"{p.done}/{p.total} calls, {p.failed} failed{left}"


def _local_time(stamp: str | None) -> str:
    if not stamp:
        return ""
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return stamp


def _run_row(r, counts) -> dict:  # r: a RunListRow; counts: CallCounts while it is going
    glyph = RUN_STATUS.get(r.status, ("?", ""))[0]
    calls, failed, invalid = (r.calls, r.failed, r.invalid) if counts is None else \
        (counts.calls, counts.failed, counts.invalid)
    return {"id": r.id, "protocol": r.protocol, "label": r.label, "status": r.status, "simulated": r.simulated,
            "started_at": r.started_at, "error": r.error, "calls": calls or 0, "failed": failed or 0,
            "invalid": invalid or 0, "status_text": f"{glyph} {r.status}", "sim": "SIM" if r.simulated else "",
            "started": _local_time(r.started_at)}


def _call_row(c) -> dict:
    rnd = c.round_kind or (f"batch {c.round_idx}" if c.round_idx is not None else "")
    latency = round(c.latency_ms) if c.latency_ms is not None else None
    return {"id": c.id, "step_key": c.step_key, "agent_id": c.agent_id, "purpose": c.purpose, "status": c.status,
            "attempts": c.attempts, "simulated": c.simulated, "round": rnd, "latency": latency,
            "status_text": f"{CALL_STATUS.get(c.status, '?')} {c.status}", "reason": c.reason or ""}


def _decorate_run(row: dict, key: str, role: int):
    if key == "sim" and row["simulated"]:
        if role == Qt.ItemDataRole.BackgroundRole:
            return QBrush(QColor(SIM_BADGE))
        if role == Qt.ItemDataRole.ForegroundRole:
            return QBrush(QColor("white"))
        if role == Qt.ItemDataRole.FontRole:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return Qt.AlignmentFlag.AlignCenter
        if role == Qt.ItemDataRole.ToolTipRole:
            return SIM_NOTE
    if key == "status_text":
        if role == Qt.ItemDataRole.ForegroundRole and row["status"] in RUN_STATUS:
            return QBrush(QColor(RUN_STATUS[row["status"]][1]))
        if role == Qt.ItemDataRole.ToolTipRole and row.get("error"):
            return row["error"]
    return None


def _decorate_call(row: dict, key: str, role: int):
    bad = row["status"] != "ok"
    if bad and role == Qt.ItemDataRole.ForegroundRole:
        return QBrush(QColor(GREY))
    if bad and role == Qt.ItemDataRole.FontRole:
        font = QFont()
        font.setItalic(True)
        return font
    if role == Qt.ItemDataRole.ToolTipRole and row["reason"]:
        return row["reason"]
    return None
