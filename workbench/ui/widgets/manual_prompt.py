"""The "Waiting for you" box: a call that a person plays (the CONS conductor, or any agent whose
provider is "manual"), its messages, a reply box and Send. A form for a kind of call (the CONS
escalation's decision form, for the conductor) can sit above the reply box: ``set_form``."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from workbench.core.protocols.shared.steps import AgentCall

ACCENT = "#1f5fa8"  # a person is needed


def escape_html(text: str) -> str:
    return html.escape(text, quote=False)


class ManualPromptBox(QFrame):
    """"Waiting for you": the messages of a call a person plays, a reply box and Send."""

    sent = Signal(str, str)  # the call's key, the reply
    waiting_changed = Signal(int)  # how many calls wait for the person now

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("manualPrompt")
        self.setStyleSheet(f"QFrame#manualPrompt {{ border: 2px solid {ACCENT}; border-radius: 4px; }}")
        self.calls: list[AgentCall] = []
        self._context: dict[str, str] = {}
        self._run_id: str | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        top = QHBoxLayout()
        title = QLabel("Waiting for you", self)
        title.setStyleSheet(f"color: {ACCENT}; font-weight: bold; font-size: 11pt;")
        top.addWidget(title, 0, Qt.AlignmentFlag.AlignTop)
        self.heading = QLabel(self)
        self.heading.setWordWrap(True)
        self.heading.setTextFormat(Qt.TextFormat.RichText)
        top.addWidget(self.heading, 1)
        layout.addLayout(top)

        body = QHBoxLayout()
        self.messages = QTextBrowser(self)
        self.messages.setOpenLinks(False)
        self.messages.setMinimumHeight(70)
        body.addWidget(self.messages, 3)
        answer = QVBoxLayout()
        self._forms: dict[str, QWidget] = {}  # call purpose -> the form shown for such calls
        self._form_slot = QVBoxLayout()
        self._form_slot.setContentsMargins(0, 0, 0, 0)
        answer.addLayout(self._form_slot)
        self.own_words = QLabel("…or answer in your own words:", self)
        self.own_words.setStyleSheet("color: palette(placeholder-text);")
        self.own_words.hide()
        answer.addWidget(self.own_words)
        self.reply = QPlainTextEdit(self)
        self.reply.setPlaceholderText("Type your answer here…")
        self.reply.setMinimumHeight(50)
        self.reply.textChanged.connect(self._on_reply_changed)
        answer.addWidget(self.reply, 1)
        row = QHBoxLayout()
        hint = QLabel("Ctrl+Enter sends", self)
        hint.setStyleSheet("color: palette(placeholder-text);")
        row.addWidget(hint, 1)
        self.send_button = QPushButton("Send", self)
        self.send_button.setDefault(True)
        self.send_button.setEnabled(False)
        self.send_button.clicked.connect(self._on_send_clicked)
        row.addWidget(self.send_button)
        answer.addLayout(row)
        body.addLayout(answer, 2)
        layout.addLayout(body, 1)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            shortcut = QShortcut(QKeySequence(keys), self.reply)
            shortcut.setContext(Qt.ShortcutContext.WidgetShortcut)
            shortcut.activated.connect(self._on_send_clicked)

    @property
    def current(self) -> AgentCall | None:
        return self.calls[0] if self.calls else None

    def set_form(self, purpose: str, form: QWidget) -> None:
        """Show ``form`` above the reply box while the current call has this ``purpose``."""
        form.setParent(self)
        self._forms[purpose] = form
        self._form_slot.addWidget(form)
        form.hide()

    def current_form(self) -> QWidget | None:
        call = self.current
        return self._forms.get(call.purpose) if call is not None else None

    def add(self, call: AgentCall, run_id: str | None, context: str = "") -> None:
        """Queue ``call``; ``context`` (HTML) is shown under its messages (e.g. the ballots)."""
        self._run_id = run_id
        if all(c.key != call.key for c in self.calls):
            self.calls.append(call)
            self._context[call.key] = context
        self._show_current()

    def remove(self, key: str) -> None:
        was_current = self.current is not None and self.current.key == key
        self.calls = [c for c in self.calls if c.key != key]
        self._context.pop(key, None)
        if was_current:
            self.reply.clear()
        self._show_current()

    def clear_all(self) -> None:
        self.calls, self._context = [], {}
        self.reply.clear()
        self._show_current()

    def _show_current(self) -> None:
        call = self.current
        if call is None:
            for w in self._forms.values():
                w.hide()
            self.hide()
            self.waiting_changed.emit(0)
            return
        who = "the conductor's decision" if call.purpose == "hitl_decision" else f"agent {call.agent}"
        more = f" — {len(self.calls) - 1} more waiting" if len(self.calls) > 1 else ""
        reasons = call.meta.get("reasons")
        run = f"Run <code>{escape_html(self._run_id)}</code>" if self._run_id else "A run"
        self.heading.setText(f"{run} needs <b>{escape_html(who)}</b> ({escape_html(call.purpose)}, "
                             f"call <code>{escape_html(call.key)}</code>){more}."
                             + (f"<br>Escalated because: <b>{escape_html(', '.join(reasons))}</b>" if reasons else ""))
        parts = []
        for m in call.messages:
            role = escape_html(str(m.get("role", "")).capitalize())
            body = escape_html(str(m.get("content", "")))
            parts.append(f"<p style='margin:4px 0 2px 0; color:{ACCENT}'><b>{role}</b></p>"
                         f"<div style='white-space: pre-wrap'>{body}</div>")
        self.messages.setHtml("".join(parts) + self._context.get(call.key, ""))
        form = self.current_form()
        for w in self._forms.values():
            w.setVisible(w is form)
        self.own_words.setVisible(form is not None)
        self.show()
        self.waiting_changed.emit(len(self.calls))
        self._on_reply_changed()
        self.reply.setFocus()

    def _on_reply_changed(self) -> None:
        self.send_button.setEnabled(self.current is not None and bool(self.reply.toPlainText().strip()))

    def _on_send_clicked(self) -> None:
        call, text = self.current, self.reply.toPlainText().strip()
        if call is None or not text:
            return
        self.reply.clear()
        self.calls = [c for c in self.calls if c.key != call.key]
        self._context.pop(call.key, None)
        self._show_current()
        self.sent.emit(call.key, text)
