"""The reviewer's bar under a selected finding: confirm it, reject it with a reason, or send it
back for re-research (a new simulated findings run on it). The host panel does the writing."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QSizePolicy, QWidget

from workbench.ui import theme


class FindingReviewBar(QWidget):
    decided = Signal(str, str, str)  # finding id, "confirm" | "reject", reason
    reresearch_requested = Signal(str)  # finding id

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("findingReview")
        self.finding_id: str | None = None
        self._row = None
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.state = QLabel("", self)
        self.state.setObjectName("reviewState")
        self.state.setTextFormat(Qt.TextFormat.RichText)
        self.state.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.confirm_button = QPushButton("✓ Confirm", self)
        self.confirm_button.setToolTip("A reviewer confirms the finding despite the challenge")
        self.confirm_button.clicked.connect(lambda: self._decide("confirm"))
        self.reason = QLineEdit(self)
        self.reason.setObjectName("rejectReason")
        self.reason.setPlaceholderText("Reason to reject…")
        self.reason.setClearButtonEnabled(True)
        self.reason.textChanged.connect(self._update_buttons)
        self.reason.returnPressed.connect(lambda: self._decide("reject"))
        self.reject_button = QPushButton("✖ Reject", self)
        self.reject_button.setToolTip("Reject the finding; a reason is required")
        self.reject_button.clicked.connect(lambda: self._decide("reject"))
        self.reresearch_button = QPushButton("↻ Re-research", self)
        self.reresearch_button.setToolTip("Open a new findings run on this finding (simulated agents, no cost); "
                                          "its votes join the finding's history")
        self.reresearch_button.clicked.connect(self._on_reresearch)
        layout.addWidget(self.state, 1)
        layout.addWidget(self.confirm_button)
        layout.addWidget(self.reason, 2)
        layout.addWidget(self.reject_button)
        layout.addWidget(self.reresearch_button)
        self.show_row(None)

    def show_row(self, row, *, writable: bool = True, running: bool = False) -> None:
        """``row``: a finding_review.ReviewRow (None: nothing selected)."""
        self._row = row
        self.finding_id = row.id if row is not None else None
        self._writable, self._running = writable, running
        if row is None:
            self.state.setText("Select a finding to review it.")
        elif row.resolved:
            colour = theme.css("ok" if row.decision == "confirm" else "error")
            shape = "✓ confirmed" if row.decision == "confirm" else "✖ rejected"
            self.state.setText(f"<span style='color:{colour}'><b>Resolved: {shape}</b></span> by "
                               f"{html.escape(row.decided_by)} · {html.escape(row.decision_note)}")
        elif row.status == "challenged":
            extra = " (a vote came after the last decision)" if row.decision else ""
            self.state.setText(f"<span style='color:{theme.css('error')}'><b>✖ Challenged: to review</b></span>{extra}")
        else:
            self.state.setText(f"Status {html.escape(row.status)}: no review needed.")
        self.state.setToolTip(self.state.text())
        self._update_buttons()

    def _update_buttons(self) -> None:
        can = self._row is not None and self._writable
        self.confirm_button.setEnabled(can)
        self.reason.setEnabled(can)
        self.reject_button.setEnabled(can and bool(self.reason.text().strip()))
        self.reresearch_button.setEnabled(can and not self._running)

    def _decide(self, decision: str) -> None:
        if self.finding_id is None or not self.confirm_button.isEnabled():
            return
        reason = self.reason.text().strip()
        if decision == "reject" and not reason:
            self.reason.setFocus()
            return
        self.decided.emit(self.finding_id, decision, reason)
        self.reason.clear()

    def _on_reresearch(self) -> None:
        if self.finding_id is not None:
            self.reresearch_requested.emit(self.finding_id)
