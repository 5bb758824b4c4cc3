"""Findings & Reports: Consensus Server findings with their votes, live, and the MCP server box;
CONS questions; and the slot of the reports view.

The findings table shows each finding's score and status (colour *and* shape, so colour-blind
readers can tell them apart: confirmed ● green, challenged ✖ red, pending ○ grey); the queue
buttons narrow it to the challenged or pending findings. Selecting a finding shows every vote on
it: which agent, through which client, when, and whether it is the agent's standing vote.

Votes that agents send through the MCP server are written by another process; the project
model notices them through ``data_version`` and this panel refreshes, so they appear as they
arrive without reopening the file. The "MCP server" box starts and stops an HTTP server for the
open project and shows the client configuration to paste into an MCP client, and the clients seen.

The challenged queue is the human review: a reviewer confirms a finding, or rejects it with a
reason (an audit note on the finding, see :mod:`workbench.core.project.finding_review`), or
sends it for re-research (a new simulated findings run on it, through the window's RunService).
A resolved finding leaves the queue; a vote after the decision brings it back.

The tabs: "Findings", "CONS" (:mod:`workbench.ui.widgets.cons_view`) and "Reports", an empty
slot (:attr:`FindingsPanel.reports_slot`) for the reports view.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QButtonGroup,
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.services.mcp.process import McpServerProcess, client_config_text
from workbench.services.project_model import ProjectModel
from workbench.services.reads import Reader
from workbench.ui import theme
from workbench.ui.panels.base import Panel
from workbench.ui.widgets.cons_view import ConsView
from workbench.ui.widgets.findings_review import FindingReviewBar
from workbench.ui.widgets.paged_table import PagedTable
from workbench.ui.widgets.record_table import RecordTable
from workbench.ui.widgets.run_status import ElidedRichLabel

# Shape and colour for each status: the colour is a key of theme.COLOURS, read when drawn, so it
# is the current theme's (>= 4.5:1 on the window and the tables in both themes).
STATUS_STYLE = {"confirmed": ("●", "ok"), "challenged": ("✖", "error"), "pending": ("○", "muted")}
VOTE_STYLE = {"confirm": ("▲", "ok"), "challenge": ("▼", "error"), "uncertain": ("◇", "muted"), None: ("∅", "muted")}
QUEUES = (("all", "All"), ("challenged", "✖ To review"), ("pending", "○ Pending"), ("confirmed", "● Confirmed"),
          ("resolved", "✔ Resolved"))

FINDING_COLUMNS = (("status_label", "Status"), ("id", "Finding"), ("claim", "Claim"), ("score", "Score"),
                   ("k", "k"), ("votes_total", "Votes"), ("review_label", "Review"), ("last_vote", "Last vote (UTC)"))
VOTE_COLUMNS = (("id", "#"), ("agent", "Agent"), ("client", "Client"), ("vote_label", "Vote"),
                ("confidence", "Confidence"), ("counted_label", "Counts"), ("reason", "Reason"),
                ("time", "Time (UTC)"))


def status_label(status: str) -> str:
    return f"{STATUS_STYLE[status][0]} {status}"


class FindingsPanel(Panel):
    TITLE = "Findings & Reports"
    OBJECT_NAME = "findingsPanel"
    SUMMARY = ("Consensus Server findings and every vote on them, live as agents vote over MCP; "
               "the challenged and pending queues; CONS questions.")
    TABLES = ("findings", "finding_votes", "audit_notes", "cons_questions", "cons_ballots", "cons_conflicts",
              "cons_escalations")

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(model, parent)
        self.queue = "all"
        self._selected: str | None = None
        self._history = Reader(model.reads, self, name="read finding history")
        self._prepare = Reader(model.reads, self, name="prepare re-research")
        self._review_row = None
        self._runs = None  # the window's RunService (attach_runs), for re-research
        self._reresearch_pending: str | None = None  # the finding whose re-research run is starting
        self.reresearch_run_id: str | None = None

        content = QWidget(self)
        layout = QVBoxLayout(content)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(3)
        bar = self._build_queue_bar()
        layout.addLayout(bar)

        # A list that pages: 5,000 findings cost one window of rows, sorted and filtered in SQL.
        self.findings = PagedTable(FINDING_COLUMNS, model.reads, row_key=lambda row: row["id"],
                                   placeholder="Filter findings…", parent=self)
        self.findings.setObjectName("findingsList")  # (the tour points at it)
        self.findings.model.decorate = _decorate_finding
        self.findings.view.selectionModel().selectionChanged.connect(self._on_finding_selected)
        self.history_label = QLabel("Select a finding to see its votes.", self)
        self.history_label.setObjectName("historyLabel")
        self.history_label.setTextFormat(Qt.TextFormat.RichText)
        self.history_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.history = RecordTable(VOTE_COLUMNS, "Filter votes…", self)
        self.history.model.decorate = _decorate_vote
        history_box = QWidget(self)
        history_layout = QVBoxLayout(history_box)
        history_layout.setContentsMargins(0, 0, 0, 0)
        history_layout.setSpacing(3)
        # "Open in Trace Inspector": the selected finding (or a double-clicked one) opens there.
        self.open_button = QPushButton("Open in Trace Inspector", self)
        self.open_button.setEnabled(False)
        self.open_button.clicked.connect(lambda: self._open_in_inspector(self._selected))
        self.findings.view.doubleClicked.connect(
            lambda index: self._open_in_inspector(self.findings.model.row(index.row())["id"]))
        label_row = QHBoxLayout()
        label_row.addWidget(self.history_label, 1)
        label_row.addWidget(self.open_button)
        history_layout.addLayout(label_row)
        history_layout.addWidget(self.history)
        self.review = FindingReviewBar(self)
        self.review.decided.connect(self._on_decided)
        self.review.reresearch_requested.connect(self.reresearch)
        history_layout.addWidget(self.review)

        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(self.findings)
        split.addWidget(history_box)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout.addWidget(split, 1)
        # Beside the queue buttons (the dock is short); "…" and a tooltip when it does not fit.
        self.cons_label = ElidedRichLabel("", self)
        self.cons_label.setObjectName("consSummary")
        self.cons_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        bar.addWidget(self.cons_label, 1)
        # The findings and the server box share a splitter, side by side (the dock is wide and
        # short), and the box scrolls: neither forces the dock (and so the whole window) to grow
        # taller than the user wants.
        self._split = _FitSplitter(Qt.Orientation.Horizontal, self)
        self._split.setChildrenCollapsible(False)
        self._split.addWidget(content)
        self._layout.addWidget(self._split, 1)
        self._content = content
        content.hide()

        self.server = McpServerProcess(self)
        self.server.started.connect(self._on_server_started)
        self.server.stopped.connect(self._on_server_stopped)
        self.server.failed.connect(self._on_server_failed)
        self.server.client_seen.connect(self._on_client_seen)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(self._build_server_box())
        scroll.setMinimumHeight(60)
        scroll.setMinimumWidth(220)
        self._split.addWidget(scroll)
        self._split.setStretchFactor(0, 3)
        self._split.setStretchFactor(1, 1)
        self._split.setSizes([640, 300])

        # Findings, CONS and the reports' slot, as tabs (the dock is wide and short).
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("findingsTabs")
        self.tabs.setDocumentMode(True)
        self._layout.removeWidget(self._split)
        self.tabs.addTab(self._split, "Findings")
        self.cons = ConsView(model, self)
        self.tabs.addTab(self.cons, "CONS")
        # Reports: an empty slot; the reports view (workbench/ui/widgets/report_view.py) goes in
        # reports_layout when it is plugged in.
        self.reports_slot = QWidget(self)
        self.reports_slot.setObjectName("reportsSlot")
        self.reports_layout = QVBoxLayout(self.reports_slot)
        self.reports_layout.setContentsMargins(0, 0, 0, 0)
        from workbench.ui.widgets.run_reports import RunReports

        self.reports = RunReports(model, self.reports_slot)
        self.reports_layout.addWidget(self.reports)
        self.tabs.addTab(self.reports_slot, "Reports")
        self._layout.addWidget(self.tabs, 1)
        self.tabs.hide()
        model.closed.connect(self._on_project_closing)
        self._update_server_box()

    # ----- building ------------------------------------------------------------------------
    def _build_queue_bar(self) -> QHBoxLayout:
        bar = QHBoxLayout()
        self.queue_buttons: dict[str, QToolButton] = {}
        group = QButtonGroup(self)
        group.setExclusive(True)
        for key, text in QUEUES:
            button = QToolButton(self)
            button.setCheckable(True)
            button.setObjectName(f"queue_{key}")
            button.setProperty("label", text)
            button.setText(text)
            button.setChecked(key == "all")
            button.clicked.connect(lambda _checked=False, k=key: self.show_queue(k))
            group.addButton(button)
            self.queue_buttons[key] = button
            bar.addWidget(button)
        bar.addSpacing(12)  # then the CONS line, which takes the rest of the row
        return bar

    def _build_server_box(self) -> QGroupBox:
        box = QGroupBox("MCP server", self)
        box.setObjectName("mcpServerBox")
        grid = QGridLayout(box)
        self.server_status = QLabel(box)
        self.server_status.setObjectName("mcpStatus")
        self.server_status.setTextFormat(Qt.TextFormat.PlainText)
        self.server_status.setWordWrap(True)
        self.start_button = QPushButton("Start", box)
        self.start_button.setToolTip("Serve this project's findings to MCP clients over HTTP on 127.0.0.1")
        self.start_button.clicked.connect(self.start_server)
        self.stop_button = QPushButton("Stop", box)
        self.stop_button.clicked.connect(self.stop_server)
        fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.url_field = QLineEdit(box)
        self.url_field.setReadOnly(True)
        self.url_field.setPlaceholderText("not running")
        self.token_field = QLineEdit(box)
        self.token_field.setReadOnly(True)
        self.token_field.setFont(fixed)
        self.token_field.setToolTip("A new token is made at each start; clients send it as "
                                    "'Authorization: Bearer <token>'")
        self.snippet = QPlainTextEdit(box)
        self.snippet.setObjectName("mcpSnippet")
        self.snippet.setReadOnly(True)
        self.snippet.setFont(fixed)
        self.snippet.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.snippet.setMaximumHeight(fixed.pointSize() * 22 if fixed.pointSize() > 0 else 220)
        self.copy_button = QPushButton("Copy", box)
        self.copy_button.setToolTip("Copy the client configuration")
        self.copy_button.clicked.connect(self.copy_snippet)
        buttons = QHBoxLayout()
        buttons.addWidget(self.start_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.server_status, 1)
        grid.addLayout(buttons, 0, 0, 1, 3)
        grid.addWidget(QLabel("URL", box), 1, 0)
        grid.addWidget(self.url_field, 1, 1, 1, 2)
        grid.addWidget(QLabel("Token", box), 2, 0)
        grid.addWidget(self.token_field, 2, 1, 1, 2)
        grid.addWidget(QLabel("Client config", box), 3, 0, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(self.snippet, 3, 1)
        grid.addWidget(self.copy_button, 3, 2, Qt.AlignmentFlag.AlignTop)
        self.clients_label = QLabel(box)
        self.clients_label.setObjectName("mcpClients")
        self.clients_label.setTextFormat(Qt.TextFormat.RichText)
        self.clients_label.setWordWrap(True)
        grid.addWidget(QLabel("Clients", box), 4, 0, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(self.clients_label, 4, 1, 1, 2)
        self._clients_voted: list = []
        return box

    # ----- findings ------------------------------------------------------------------------
    def load(self, store, changes, cancel) -> tuple[dict[str, int], tuple[int, int], list]:
        """The queue counts, the CONS line and the MCP clients that voted (the list pages itself;
        the history and the CONS view are read apart)."""
        from workbench.core.project import finding_list, finding_review

        return (finding_review.queue_counts(store), finding_list.cons_overview(store),
                finding_review.clients_seen(store))

    def apply(self, view) -> None:
        counts, (cons, escalations), clients = view
        self._clients_voted = clients
        self.tabs.setTabText(1, f"CONS ({cons:,})" if cons else "CONS")
        for key, button in self.queue_buttons.items():
            button.setText(f"{button.property('label')}  {counts[key]}")
        self.cons_label.setText(f"CONS: {cons:,} question{'s' * (cons != 1)} · "
                                f"{escalations:,} open escalation{'s' * (escalations != 1)} to a human")
        self._content.show()
        self.tabs.show()
        self._update_server_box()

    def _on_opened(self, store) -> None:
        super()._on_opened(store)
        self._show_findings()
        self.cons.set_reading(self._reading)

    def _on_changed(self, changes) -> None:
        super()._on_changed(changes)
        if self._reading is None:
            return
        if changes.touches("findings", "finding_votes", "audit_notes"):
            self.findings.refresh()  # the rows loaded so far, re-read in place
            if self._selected is not None:
                self._show_history(self._selected)
        if changes.touches("cons_questions", "cons_ballots", "cons_conflicts", "cons_escalations"):
            self.cons.refresh()

    def show_queue(self, queue: str) -> None:
        """Show ``all`` findings or one queue: ``challenged``, ``pending`` or ``confirmed``."""
        self.queue = queue
        self.queue_buttons[queue].setChecked(True)
        if self._reading is not None:
            self._show_findings()

    def visible_finding_ids(self) -> list[str]:
        model = self.findings.model
        return [model.row(r)["id"] for r in range(model.rowCount())]

    def select_finding(self, finding_id: str) -> bool:
        model = self.findings.model
        for r in range(model.rowCount()):
            if model.row(r)["id"] == finding_id:
                self.findings.view.selectRow(r)
                return True
        return False

    def _show_findings(self) -> None:
        reading = self._reading
        self.findings.set_source(_FindingSource(reading, self.queue) if reading is not None else None,
                                 cleanup=reading.close_connection if reading is not None else None)

    def _on_finding_selected(self, *_args: object) -> None:
        rows = self.findings.view.selectionModel().selectedRows()
        if not rows:
            return
        self._selected = self.findings.model.row(rows[0].row())["id"]
        self.open_button.setEnabled(True)
        self._show_history(self._selected)

    def _open_in_inspector(self, finding_id: str | None) -> None:
        if finding_id is not None:
            from workbench.core.project.refs import RecordRef

            self.model.reveal(RecordRef("finding", finding_id))

    def _show_history(self, finding_id: str | None) -> None:
        reading = self._reading
        if finding_id is None or reading is None:
            self._history.cancel()
            self.history_label.setText("Select a finding to see its votes.")
            self.history.set_rows([])
            return

        def read(_cancel):
            from workbench.core.project import finding_review
            from workbench.core.project.findings import FindingsStore

            return FindingsStore(reading).history(finding_id, limit=500), finding_review.row(reading, finding_id)

        self._history.load(read, self._apply_history, on_failed=self._on_history_failed,
                           cleanup=reading.close_connection)

    def _on_history_failed(self, error) -> None:
        self.history_label.setText(html.escape(f"Could not read the votes: {error.message}"))
        self.history.set_rows([])

    def _apply_history(self, view) -> None:
        history, review = view
        if history.finding.id != self._selected:
            return
        self._review_row = review
        self._show_review()
        f = history.finding
        shown = (f"the latest {len(history.votes):,} of {history.votes_in_history:,}" if history.truncated
                 else f"{history.votes_in_history:,}")
        self.history_label.setText(
            f"<b>{html.escape(f.id)}</b> {status_label(f.status.value)} · score {_score(f.consensus_score)} "
            f"(threshold {f.threshold:g}, k = {f.k}) · {shown} vote{'s' * (history.votes_in_history != 1)}")
        self.history_label.setToolTip(f"{f.id}: {f.claim}")
        self.history.set_rows([{
            **v.model_dump(mode="json"),
            "vote_label": _vote_label(v.vote_type.value if v.vote_type else None, v.status),
            "confidence": "—" if v.confidence is None else v.confidence,
            "counted_label": "✓" if v.counted else "", "time": _time(v.created_at),
            "reason": v.reason or (v.invalid_reason or ""),
        } for v in history.votes])
        self.history.view.scrollToBottom()

    def clear(self) -> None:
        self._content.hide()
        self._selected = None
        self.open_button.setEnabled(False)
        self._history.cancel()
        self.findings.set_source(None)
        self.history.set_rows([])
        self._review_row = None
        self._show_review()
        self.cons.set_reading(None)
        self.tabs.hide()
        self._clients_voted = []
        self._update_server_box()

    # ----- review ------------------------------------------------------------------------
    def attach_runs(self, service) -> None:
        """The window's RunService, which re-research runs go through (one run at a time)."""
        if self._runs is service:
            return
        self._runs = service
        service.started.connect(self._on_run_started)
        service.failed.connect(self._on_run_failed)
        service.running_changed.connect(lambda _running: self._show_review())

    def _service(self):
        if self._runs is None:  # not attached by the window: its RunService, when it has one
            service = getattr(self.window(), "runs", None)
            if service is not None and hasattr(service, "start_document"):
                self.attach_runs(service)
        return self._runs

    def _show_review(self) -> None:
        store = self.store
        service = self._runs
        self.review.show_row(self._review_row, writable=store is not None and not store.read_only,
                             running=self._reresearch_pending is not None
                             or (service is not None and service.running))

    def decide(self, finding_id: str, decision: str, reason: str = "") -> None:
        """A reviewer's decision on a finding (written off the GUI thread)."""
        from workbench.core.project import finding_review

        self.model.write(f"review {finding_id}",
                         lambda store: finding_review.decide(store, finding_id, decision, reason))

    def _on_decided(self, finding_id: str, decision: str, reason: str) -> None:
        self.decide(finding_id, decision, reason)

    def reresearch(self, finding_id: str) -> None:
        """Open a new simulated findings run on the finding (its document is read off the GUI thread)."""
        reading, service = self._reading, self._service()
        if reading is None or service is None or service.running or self._reresearch_pending:
            if service is None:
                self.review.state.setText("Re-research needs the window's run service.")
            return
        self._reresearch_pending = finding_id
        self._show_review()
        seed = (self._review_row.votes_valid + 1) if self._review_row is not None else 1

        def read(_cancel):
            from workbench.core.project.finding_review import reresearch_document

            return reresearch_document(reading, finding_id, seed=seed)

        def start(document: dict) -> None:
            if self._runs is None or not self._runs.start_document(document, label=document["label"]):
                self._reresearch_pending = None
                self._show_review()

        def failed(error) -> None:
            self._reresearch_pending = None
            self.review.state.setText(html.escape(f"Could not prepare the run: {error.message}"))

        self._prepare.load(read, start, on_failed=failed, cleanup=reading.close_connection)

    def _on_run_started(self, run_id: str) -> None:
        if self._reresearch_pending is None:
            return
        finding_id, self._reresearch_pending = self._reresearch_pending, None
        self.reresearch_run_id = run_id
        self.review.state.setText(html.escape(f"Re-research of {finding_id}: run {run_id} started."))
        from workbench.core.project.refs import RecordRef

        self.model.reveal(RecordRef("run", run_id))

    def _on_run_failed(self, message: str, _details: str) -> None:
        if self._reresearch_pending is not None:
            self._reresearch_pending = None
            self._show_review()
            self.review.state.setText(html.escape(message))

    # ----- the MCP server ------------------------------------------------------------------
    def start_server(self) -> None:
        if self.store is None or self.server.running:
            return
        self.server.start(self.store.path)
        self.server_status.setText("Starting…")
        self._update_server_box()

    def stop_server(self) -> None:
        if self.server.running:
            self.server_status.setText("Stopping…")
            self.server.stop()
            self._update_server_box()

    def shutdown(self) -> None:
        """Stop the server and wait for it (bounded): the project or the window is closing."""
        self.server.shutdown()

    def snippet_text(self) -> str:
        return self.snippet.toPlainText()

    def copy_snippet(self) -> None:
        QGuiApplication.clipboard().setText(self.snippet_text())
        self.server_status.setText(self.server_status.text().split(" · ")[0] + " · configuration copied")

    def _on_server_started(self, url: str, token: str) -> None:
        self.server_status.setText("Running on 127.0.0.1: clients send the token below as a bearer "
                                   "header (a new token at each start).")
        self._update_server_box()

    def _on_server_stopped(self) -> None:
        if not self.server_status.text().startswith("Failed"):
            self.server_status.setText("Not running.")
        self._update_server_box()

    def _on_server_failed(self, message: str) -> None:
        self.server_status.setText(f"Failed: {message}")

    def _on_client_seen(self, _name: str, _version: str) -> None:
        self._update_clients()

    def _update_clients(self) -> None:
        parts = []
        if self.server.running:
            live = [f"{html.escape(n)}{' ' + html.escape(v) if v else ''}" for n, v in self.server.clients.items()]
            parts.append("<b>This server:</b> " + (", ".join(live) if live else "no client has called a tool yet"))
        voted = [f"{html.escape(c.client)} ({c.votes:,} vote{'s' * (c.votes != 1)}, last {_time(c.last_vote_at)[11:]})"
                 for c in self._clients_voted[:6]]
        more = len(self._clients_voted) - 6
        parts.append("<b>Voted in this project:</b> " + (", ".join(voted) if voted else "none yet")
                     + (f", and {more} more" if more > 0 else ""))
        self.clients_label.setText("<br>".join(parts))

    def _on_project_closing(self) -> None:
        # The server serves the open project only: closing (or switching) the project stops it.
        self.server.shutdown()

    def _update_server_box(self) -> None:
        has_project = self.store is not None
        running = self.server.running
        self.start_button.setEnabled(has_project and not running)
        self.stop_button.setEnabled(running)
        self.url_field.setText(self.server.url or "")
        self.token_field.setText(self.server.token or "")
        text = (client_config_text(self.store.path, self.server.url, self.server.token) if has_project
                else "Open a project to serve it to MCP clients.")
        if text != self.snippet.toPlainText():  # a refresh leaves a selection in the snippet alone
            self.snippet.setPlainText(text)
        self.copy_button.setEnabled(has_project)
        self._update_clients()
        if not running and not self.server_status.text().startswith("Failed"):
            self.server_status.setText("Not running." if has_project else "No project is open.")


class _FitSplitter(QSplitter):
    """A splitter that prefers its minimum height. The window's scroll area sizes a panel by its
    height for its width, which counts each part at its preferred height (the server box whole,
    tables of many rows: 868 px in a 406 px dock, the votes and the box off-screen); this way the
    panel asks for what its parts need at least, and the splitter shares the dock it gets."""

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(super().sizeHint().width(), self.minimumSizeHint().height())


def _time(stamp: str | None) -> str:
    """``2026-11-22T12:47:39.676Z`` -> ``2026-11-22 12:47:39`` (sorts the same way)."""
    return "" if not stamp else stamp.replace("T", " ")[:19]


def _score(score: float | None) -> str:
    return "—" if score is None else f"{score:+.3f}"


class _FindingSource:
    """The findings of one queue, a window at a time (runs on the list's read worker)."""

    SORT_KEYS = {"status_label": "status", "id": "id", "claim": "claim", "score": "score", "k": "k",
                 "votes_total": "votes_total", "last_vote": "last_vote"}

    def __init__(self, store, queue: str):
        self.store, self.queue = store, queue

    def count(self, query) -> int:
        from workbench.core.project import finding_review

        return finding_review.count(self.store, queue=self.queue, text=query.filter_text)

    def fetch(self, query, offset: int, limit: int) -> list[dict]:
        from workbench.core.project import finding_review

        rows = finding_review.window(self.store, offset=offset, limit=limit, queue=self.queue,
                                     text=query.filter_text, sort=self.SORT_KEYS.get(query.sort_key, "created"),
                                     descending=query.descending)
        return [_finding_row(r) for r in rows]


def _finding_row(f) -> dict:  # f: a finding_review.ReviewRow
    return {"status": f.status, "status_label": status_label(f.status), "id": f.id, "claim": f.claim,
            "score": _score(f.score), "k": f.k, "votes_total": f.votes_valid, "last_vote": _time(f.last_vote_at),
            "review": f.decision if f.resolved else None, "review_label": _review_label(f),
            "review_note": f.decision_note}


def _review_label(f) -> str:
    if f.resolved:
        return "✓ confirmed by reviewer" if f.decision == "confirm" else f"✖ rejected: {f.decision_note}"
    return "reopened by a vote" if f.decision else ""


def _vote_label(vote_type: str | None, status: str) -> str:
    if status == "invalid":
        return "∅ invalid"
    return f"{VOTE_STYLE[vote_type][0]} {vote_type}"


def _decorate_finding(row: dict, key: str, role: int) -> object:
    if role == Qt.ItemDataRole.ForegroundRole and key in ("status_label", "score"):
        return theme.colour(STATUS_STYLE[row["status"]][1])
    if role == Qt.ItemDataRole.ForegroundRole and key == "review_label" and row["review"]:
        return theme.colour("ok" if row["review"] == "confirm" else "error")
    if role == Qt.ItemDataRole.ToolTipRole and key == "claim":
        return row["claim"]
    if role == Qt.ItemDataRole.ToolTipRole and key == "review_label" and row["review_label"]:
        return row["review_label"]
    return None


def _decorate_vote(row: dict, key: str, role: int) -> object:
    if role == Qt.ItemDataRole.ForegroundRole:
        if row["status"] == "invalid":
            return theme.colour(VOTE_STYLE[None][1])
        if key == "vote_label":
            return theme.colour(VOTE_STYLE[row["vote_type"]][1])
    if role == Qt.ItemDataRole.ToolTipRole and key == "reason":
        return row["reason"]
    return None
