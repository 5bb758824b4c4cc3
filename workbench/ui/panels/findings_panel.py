"""Findings & Reports: Consensus Server findings with their votes, live, and the MCP server box.

The findings table shows each finding's score and status (colour *and* shape, so colour-blind
readers can tell them apart: confirmed ● green, challenged ✖ red, pending ○ grey); the queue
buttons narrow it to the challenged or pending findings. Selecting a finding shows every vote on
it: which agent, through which client, when, and whether it is the agent's standing vote.

Votes that agents send through the MCP server are written by another process; the project
model notices them through ``data_version`` and this panel refreshes, so they appear as they
arrive without reopening the file. The "MCP server" box starts and stops an HTTP server for the
open project and shows the client configuration to paste into an MCP client.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontDatabase, QGuiApplication
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
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.core.errors import WorkbenchError
from workbench.services.mcp.process import McpServerProcess, client_config_text
from workbench.services.project_model import ProjectModel
from workbench.ui.panels.base import Panel
from workbench.ui.widgets.record_table import RecordTable

# Colour and shape for each status, readable on light and dark themes.
STATUS_STYLE = {
    "confirmed": ("●", QColor("#2e7d32")),
    "challenged": ("✖", QColor("#c62828")),
    "pending": ("○", QColor("#757575")),
}
VOTE_STYLE = {"confirm": ("▲", QColor("#2e7d32")), "challenge": ("▼", QColor("#c62828")),
              "uncertain": ("◇", QColor("#757575")), None: ("∅", QColor("#757575"))}
QUEUES = (("all", "All"), ("challenged", "✖ Challenged"), ("pending", "○ Pending"), ("confirmed", "● Confirmed"))

FINDING_COLUMNS = (("status_label", "Status"), ("id", "Finding"), ("claim", "Claim"), ("score", "Score"),
                   ("k", "k"), ("votes_total", "Votes"), ("last_vote", "Last vote (UTC)"))
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
    TABLES = ("findings", "finding_votes", "cons_questions", "cons_escalations")

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(model, parent)
        self.queue = "all"
        self._summaries: list = []  # FindingSummary rows
        self._selected: str | None = None

        content = QWidget(self)
        layout = QVBoxLayout(content)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self._build_queue_bar())

        self.findings = RecordTable(FINDING_COLUMNS, "Filter findings…", self)
        self.findings.model.decorate = _decorate_finding
        self.findings.view.selectionModel().selectionChanged.connect(self._on_finding_selected)
        self.history_label = QLabel("Select a finding to see its votes.", self)
        self.history_label.setObjectName("historyLabel")
        self.history_label.setTextFormat(Qt.TextFormat.RichText)
        self.history = RecordTable(VOTE_COLUMNS, "Filter votes…", self)
        self.history.model.decorate = _decorate_vote
        history_box = QWidget(self)
        history_layout = QVBoxLayout(history_box)
        history_layout.setContentsMargins(0, 0, 0, 0)
        history_layout.addWidget(self.history_label)
        history_layout.addWidget(self.history)

        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(self.findings)
        split.addWidget(history_box)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout.addWidget(split, 1)
        self.cons_label = QLabel(self)
        self.cons_label.setObjectName("consSummary")
        self.cons_label.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(self.cons_label)
        # The findings and the server box share a splitter, and the box scrolls: neither forces the
        # dock (and so the whole window) to grow taller than the user wants.
        self._split = QSplitter(Qt.Orientation.Vertical, self)
        self._split.setChildrenCollapsible(False)
        self._split.addWidget(content)
        self._layout.addWidget(self._split, 1)
        self._content = content
        content.hide()

        self.server = McpServerProcess(self)
        self.server.started.connect(self._on_server_started)
        self.server.stopped.connect(self._on_server_stopped)
        self.server.failed.connect(self._on_server_failed)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(self._build_server_box())
        scroll.setMinimumHeight(60)
        self._split.addWidget(scroll)
        self._split.setStretchFactor(0, 3)
        self._split.setStretchFactor(1, 1)
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
        bar.addStretch(1)
        self._queue_group = group
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
        return box

    # ----- findings ------------------------------------------------------------------------
    def refresh(self) -> None:
        store = self.store
        assert store is not None
        try:
            from workbench.core.project.findings import FindingsStore  # pydantic: not at start-up

            self._summaries = FindingsStore(store).list_findings()
            cons = store.count("cons_questions")
            escalations = store.count("cons_escalations", "status = 'open'")
        except WorkbenchError as exc:  # e.g. the file stayed locked: keep what is shown, say why
            self.history_label.setText(html.escape(f"Could not read the findings: {exc}"))
            return
        counts = {key: sum(1 for s in self._summaries if key == "all" or s.status.value == key)
                  for key, _ in QUEUES}
        for key, button in self.queue_buttons.items():
            button.setText(f"{button.property('label')}  {counts[key]}")
        self.cons_label.setText(f"CONS: {cons:,} question{'s' * (cons != 1)} · "
                                f"{escalations:,} open escalation{'s' * (escalations != 1)} to a human")
        self._show_findings()
        self._content.show()
        self._update_server_box()

    def show_queue(self, queue: str) -> None:
        """Show ``all`` findings or one queue: ``challenged``, ``pending`` or ``confirmed``."""
        self.queue = queue
        self.queue_buttons[queue].setChecked(True)
        if self.store is not None:
            self._show_findings()

    def visible_finding_ids(self) -> list[str]:
        proxy = self.findings.proxy
        return [proxy.index(r, 1).data() for r in range(proxy.rowCount())]

    def select_finding(self, finding_id: str) -> bool:
        proxy = self.findings.proxy
        for r in range(proxy.rowCount()):
            if proxy.index(r, 1).data() == finding_id:
                self.findings.view.selectRow(r)
                return True
        return False

    def _show_findings(self) -> None:
        rows = [_finding_row(s) for s in self._summaries if self.queue == "all" or s.status.value == self.queue]
        keep = self._selected
        self.findings.set_rows(rows)
        self.findings.view.setColumnWidth(2, min(self.findings.view.columnWidth(2), 360))
        if keep is None or not self.select_finding(keep):
            self._selected = None
            self._show_history(None)

    def _on_finding_selected(self, *_args: object) -> None:
        rows = self.findings.view.selectionModel().selectedRows()
        if not rows:
            return
        self._selected = self.findings.proxy.index(rows[0].row(), 1).data()
        self._show_history(self._selected)

    def _show_history(self, finding_id: str | None) -> None:
        store = self.store
        if finding_id is None or store is None:
            self.history_label.setText("Select a finding to see its votes.")
            self.history.set_rows([])
            return
        try:
            from workbench.core.project.findings import FindingsStore

            history = FindingsStore(store).history(finding_id, limit=500)
        except WorkbenchError as exc:
            self.history_label.setText(html.escape(str(exc)))
            self.history.set_rows([])
            return
        f = history.finding
        shown = (f"the latest {len(history.votes):,} of {history.votes_in_history:,}" if history.truncated
                 else f"{history.votes_in_history:,}")
        self.history_label.setText(
            f"<b>{html.escape(f.id)}</b> {status_label(f.status.value)} · score {_score(f.consensus_score)} "
            f"(threshold {f.threshold:g}, k = {f.k}) · {shown} vote{'s' * (history.votes_in_history != 1)}")
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
        self._summaries = []
        self._selected = None
        self.findings.set_rows([])
        self.history.set_rows([])
        self._update_server_box()

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
        if not running and not self.server_status.text().startswith("Failed"):
            self.server_status.setText("Not running." if has_project else "No project is open.")


def _time(stamp: str | None) -> str:
    """``2026-11-22T12:47:39.676Z`` -> ``2026-11-22 12:47:39`` (sorts the same way)."""
    return "" if not stamp else stamp.replace("T", " ")[:19]


def _score(score: float | None) -> str:
    return "—" if score is None else f"{score:+.3f}"


def _finding_row(s) -> dict:  # s: a FindingSummary
    return {"status": s.status.value, "status_label": status_label(s.status.value), "id": s.id,
            "claim": s.claim, "score": _score(s.consensus_score), "k": s.k, "votes_total": s.votes_total,
            "last_vote": _time(s.last_vote_at)}


def _vote_label(vote_type: str | None, status: str) -> str:
    if status == "invalid":
        return "∅ invalid"
    return f"{VOTE_STYLE[vote_type][0]} {vote_type}"


def _decorate_finding(row: dict, key: str, role: int) -> object:
    if role == Qt.ItemDataRole.ForegroundRole and key in ("status_label", "score"):
        return STATUS_STYLE[row["status"]][1]
    if role == Qt.ItemDataRole.ToolTipRole and key == "claim":
        return row["claim"]
    return None


def _decorate_vote(row: dict, key: str, role: int) -> object:
    if role == Qt.ItemDataRole.ForegroundRole:
        if row["status"] == "invalid":
            return VOTE_STYLE[None][1]
        if key == "vote_label":
            return VOTE_STYLE[row["vote_type"]][1]
    if role == Qt.ItemDataRole.ToolTipRole and key == "reason":
        return row["reason"]
    return None
