"""The conductor's decision on a CONS escalation: what is in conflict (type, severity, who holds
which position), every side's rationales (the ballots), and the decision: accept the verdict
(its leading option) or override it with another option, with a reason.

The form never writes anything: ``decided(choice, option, reason)`` tells the panel, which
answers the running conductor's call, or records the decision (core.project.escalations).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QGridLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QSizePolicy,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from workbench.ui.widgets.manual_prompt import ACCENT, escape_html
from workbench.ui.widgets.run_timeline import AMBER, GREY, RED

ACCEPT, OVERRIDE = "accept", "override"  # as core.project.escalations
NONE_OF_THEM = "(none of the options)"
SEVERITY_COLOUR = {"critical": RED, "high": RED, "medium": AMBER, "low": GREY}


def context_html(view, *, sides: bool = True) -> str:
    """The escalation, the conflicts and (``sides``) each side's rationales, from an
    escalations.EscalationView."""
    if view is None:
        return ""
    consensus = f", actualConsensus {view.actual_consensus:.2f}" if view.actual_consensus is not None else ""
    parts = [f"<p style='margin:6px 0 2px 0; color:{ACCENT}'><b>Verdict: {escape_html(view.verdict or 'none yet')}"
             f"</b>{escape_html(consensus)}"
             + (f", leading option “{escape_html(view.leading_option)}”" if view.leading_option else "") + "</p>"]
    if view.verdict_reason:
        parts.append(f"<div>{escape_html(view.verdict_reason)}</div>")
    for e in view.escalations:
        detail = f" — {escape_html(e.detail)}" if e.detail and e.detail != view.verdict_reason else ""
        parts.append(f"<div>Escalated: <b>{escape_html(e.reason)}</b>{detail}</div>")
    for c in view.conflicts:
        colour = SEVERITY_COLOUR.get(c.severity, GREY)
        parts.append(f"<p style='margin:6px 0 2px 0; color:{ACCENT}'><b>Conflict</b> "
                     f"<span style='color:{colour}'><b>{escape_html(c.severity)}</b></span> · "
                     f"{escape_html(c.conflict_type)} · <code>{escape_html(c.id)}</code></p>")
        by_side: dict[str, list] = {}
        for p in c.positions:
            by_side.setdefault(p.position, []).append(p)
        for position, holders in by_side.items():
            who = ", ".join(f"{escape_html(p.agent_id)} ({p.confidence:.2f})" if p.confidence is not None
                            else escape_html(p.agent_id) for p in holders)
            parts.append(f"<div>• <b>{escape_html(position)}</b>: {who}</div>")
    if not sides:
        return "".join(parts)
    parts.append(f"<p style='margin:6px 0 2px 0; color:{ACCENT}'><b>Each side's rationales</b></p>")
    for side, ballots in view.sides().items():
        colour = f" style='color:{GREY}'" if side == "invalid" else ""
        items = "".join(
            f"<li{colour}><b>{escape_html(b.agent_id)}</b> ({b.confidence if b.confidence is not None else '?'}): "
            f"{escape_html(b.rationale or b.invalid_reason or '')}</li>" for b in ballots)
        parts.append(f"<div{colour}><b>{escape_html(side)}</b> ({len(ballots)})</div><ul style='margin:0'>{items}</ul>")
    return "".join(parts)


class EscalationForm(QWidget):
    """Accept or override, with a reason. ``set_view`` shows an escalation; ``show_context``
    False leaves the conflict text to the caller (the prompt box shows it with the call)."""

    decided = Signal(str, str, str)  # choice ("accept" | "override"), option ("" for none), reason

    def __init__(self, parent: QWidget | None = None, *, show_context: bool = True):
        super().__init__(parent)
        self.setObjectName("escalationForm")
        self.view = None
        self._live = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(3)
        self.heading = QLabel(self)
        self.heading.setObjectName("escalationHeading")
        self.heading.setWordWrap(True)
        self.heading.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.heading)
        self.context = QTextBrowser(self)
        self.context.setObjectName("escalationContext")
        self.context.setOpenLinks(False)
        self.context.setVisible(show_context)
        self.context.setMinimumHeight(60)
        layout.addWidget(self.context, 1)
        self._show_context = show_context
        self.heading.setVisible(show_context)  # beside a call, the call's own heading says it

        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(6)
        grid.setVerticalSpacing(2)
        self.accept_radio = QRadioButton("Accept", self)
        self.accept_radio.setObjectName("acceptRadio")
        self.override_radio = QRadioButton("Override with", self)
        self.override_radio.setObjectName("overrideRadio")
        self.choice = QButtonGroup(self)
        self.choice.addButton(self.accept_radio)
        self.choice.addButton(self.override_radio)
        self.accept_radio.setChecked(True)
        self.accepted_label = QLabel(self)
        self.accepted_label.setWordWrap(True)
        self.option_combo = QComboBox(self)
        self.option_combo.setObjectName("overrideOption")
        self.option_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.option_combo.setMinimumContentsLength(12)
        self.option_combo.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.reason = QLineEdit(self)
        self.reason.setObjectName("decisionReason")
        self.reason.setPlaceholderText("Reason (required to override)")
        self.decide_button = QPushButton("Decide", self)
        self.decide_button.setObjectName("decideButton")
        grid.addWidget(self.accept_radio, 0, 0)
        grid.addWidget(self.accepted_label, 0, 1, 1, 2)
        grid.addWidget(self.override_radio, 1, 0)
        grid.addWidget(self.option_combo, 1, 1, 1, 2)
        grid.addWidget(QLabel("Reason", self), 2, 0)
        grid.addWidget(self.reason, 2, 1)
        grid.addWidget(self.decide_button, 2, 2)
        grid.setColumnStretch(1, 1)
        layout.addLayout(grid)
        self.status = QLabel(self)
        self.status.setObjectName("decisionStatus")
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.status)

        for signal in (self.accept_radio.toggled, self.reason.textChanged, self.option_combo.currentIndexChanged):
            signal.connect(self._update)
        self.option_combo.activated.connect(lambda _i: self.override_radio.setChecked(True))
        self.reason.returnPressed.connect(self._on_decide)
        self.decide_button.clicked.connect(self._on_decide)
        self.set_view(None)

    # ----- what it shows ---------------------------------------------------------------------
    def set_view(self, view, *, live: bool = False, action: str = "Decide") -> None:
        """``view``: an escalations.EscalationView (None: nothing to decide). ``live``: a running
        run waits on this decision. ``action`` names what Decide does (e.g. "Resume and decide")."""
        self.view, self._live = view, live
        self.decide_button.setText(action)
        if view is None:
            self.heading.setText("<i>No CONS escalation for the selected run.</i>")
            self.context.clear()
            self._set_controls(False)
            self.status.clear()
            self.status.hide()
            return
        waiting = "The run waits for your decision." if live else (
            "Open: the run recorded no decision yet." if view.open else "")
        reasons = ", ".join(dict.fromkeys(e.reason for e in view.escalations)) or "no escalation"
        self.heading.setText(f"<b>{escape_html(view.question)}</b><br>"
                             f"<span style='color:{ACCENT}'>Escalated: {escape_html(reasons)}</span> "
                             f"{escape_html(waiting)}")
        if self._show_context:
            self.context.setHtml(context_html(view))
        leading = view.leading_option
        self.accepted_label.setText(f"the {view.verdict or 'verdict'} verdict"
                                    + (f", leading option “{leading}”" if leading else ""))
        current = self.option_combo.currentText()
        self.option_combo.blockSignals(True)
        self.option_combo.clear()
        others = [o for o in view.options if o != leading] + [o for o in view.options if o == leading]
        self.option_combo.addItems(others + [NONE_OF_THEM])
        if current in others:
            self.option_combo.setCurrentText(current)
        self.option_combo.blockSignals(False)
        decided = [e for e in view.escalations if e.status == "resolved"]
        if decided:
            e = decided[0]
            note = f" — {escape_html(e.decision_note)}" if e.decision_note else ""
            self.status.setText(f"Decided by {escape_html(e.decided_by or '?')}: <b>{escape_html(e.decision or '')}</b>"
                                f"{note}")
        else:
            self.status.clear()
        self.status.setVisible(bool(decided))
        self._set_controls(live or view.open or not view.stored)

    def _set_controls(self, enabled: bool) -> None:
        for w in (self.accept_radio, self.override_radio, self.option_combo, self.reason):
            w.setEnabled(enabled)
        self._enabled = enabled
        self._update()

    def decision(self) -> tuple[str, str, str]:
        """(choice, option, reason) as the form stands."""
        if self.accept_radio.isChecked():
            return ACCEPT, (self.view.leading_option or "") if self.view else "", self.reason.text().strip()
        option = self.option_combo.currentText()
        return OVERRIDE, "" if option == NONE_OF_THEM else option, self.reason.text().strip()

    def _update(self, *_args) -> None:
        choice, _option, reason = self.decision()
        ok = getattr(self, "_enabled", False) and self.view is not None and (choice == ACCEPT or bool(reason))
        self.decide_button.setEnabled(ok)
        self.decide_button.setToolTip("" if ok or choice == ACCEPT else "An override needs a reason.")

    def _on_decide(self) -> None:
        if not self.decide_button.isEnabled():
            return
        self.decided.emit(*self.decision())

    def reset(self) -> None:
        self.reason.clear()
        self.accept_radio.setChecked(True)
