"""One call, whole: what was sent (the stored messages, the fence lines around untrusted text
shown as they were sent), what came back (the reply, and the provider's raw body), and what it
cost: tokens, cost ("unknown" when the price is not known, never $0), latency, attempts, error.

The panel reads the call off the GUI thread (``calls.call_detail``) and hands it here.
"""

from __future__ import annotations

import re

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontDatabase
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QTabWidget, QTextBrowser, QVBoxLayout, QWidget

from workbench.ui.widgets.manual_prompt import ACCENT, escape_html
from workbench.ui.widgets.run_timeline import AMBER, CALL_STATUS, GREY, RED, cost_text

FENCE_LINE = re.compile(r"^\s*<<<(?:END-)?(?:FENCE-[0-9A-F]{32}|ARTIFACT-[0-9A-F]{16})>>>\s*$")
FENCE_STYLE = "background:#fff1c2; color:#5c4300; font-weight:bold"
PLACEHOLDER = "Select a call in the timeline to see what was sent and what came back."


def _mono() -> QFont:
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


def request_html(messages: list[dict], fence: dict | None) -> str:
    """The messages as sent, each under its role; fence lines (and the call's own delimiter)
    stand out, so an auditor sees exactly where untrusted text began and ended."""
    own = (fence or {}).get("delimiter")
    parts = []
    if fence:
        parts.append(f"<p style='margin:2px 0 6px 0'><span style='{FENCE_STYLE}'>&nbsp;fence&nbsp;</span> "
                     f"<code>{escape_html(str(own))}</code>, fresh for this call; "
                     f"{int(fence.get('escapes') or 0)} forged fence line(s) escaped in the quoted text</p>")
    for m in messages:
        role = escape_html(str(m.get("role", "")).capitalize())
        lines = []
        for line in str(m.get("content", "")).split("\n"):
            text = escape_html(line) or "&nbsp;"
            if FENCE_LINE.match(line) or (own and line.strip() in (f"<<<{own}>>>", f"<<<END-{own}>>>")):
                text = f"<span style='{FENCE_STYLE}'>{text}</span>"
            lines.append(text)
        parts.append(f"<p style='margin:6px 0 2px 0; color:{ACCENT}'><b>{role}</b></p>"
                     f"<pre style='margin:0; white-space:pre-wrap'>{'<br>'.join(lines)}</pre>")
    return "".join(parts) or "<i>No messages were stored with this call.</i>"


def origin_html(origin) -> str:
    """Which template made the call (``prompt_sets.TemplateOrigin``): the step, the template's
    hash, and the prompt set it came from (or "default", or "edited in the config")."""
    if origin is None:
        return ""
    where = {"default": "default template", "config": "✎ edited in the run's config",
             "prompt set": f"✎ prompt set <b>{escape_html(str((origin.prompt_set or {}).get('name', '')))}</b> "
                           f"@{escape_html(str((origin.prompt_set or {}).get('sha256', ''))[:8])}"}
    return (f"template <b>{escape_html(origin.step or '?')}</b> @{escape_html(origin.sha256[:12])} · "
            f"{where.get(origin.source, 'not in the run provenance')}")


def summary_html(d, origin=None) -> str:
    """One line: who, what, how it ended, how long, how many tokens, what it cost, attempts; and
    which template (and prompt set) made it."""
    glyph = CALL_STATUS.get(d.status, "?")
    colour = {"error": RED, "rate_limited": AMBER, "invalid": GREY, "cancelled": GREY}.get(d.status)
    status = f"<span style='color:{colour}'>{glyph} {escape_html(d.status)}</span>" if colour else f"{glyph} {d.status}"
    tokens = d.total_tokens if d.total_tokens is not None else (
        (d.prompt_tokens or 0) + (d.completion_tokens or 0) if d.prompt_tokens is not None
        or d.completion_tokens is not None else None)
    split = (f" ({d.prompt_tokens} in, {d.completion_tokens} out)"
             if d.prompt_tokens is not None and d.completion_tokens is not None else "")
    bits = [f"<b>{escape_html(d.agent_id or '?')}</b>", escape_html(d.purpose), status,
            f"{d.latency_ms:.0f} ms" if d.latency_ms is not None else "latency unknown",
            f"{tokens} tokens{split}" if tokens is not None else "tokens unknown",
            f"cost {escape_html(cost_text(d.cost_usd, d.cost_source, d.model))}",
            f"{d.attempts} attempt{'s' if d.attempts != 1 else ''}"]
    if d.cached:
        bits.append("cached")
    where = " · ".join(x for x in (d.provider, d.model) if x)
    made = origin_html(origin)
    return " · ".join(bits) + (f"<br><span style='color:{GREY}'>record {d.id} · {escape_html(d.step_key)}"
                                f"{' · ' + escape_html(where) if where else ''}"
                                f"{' · ' + escape_html(d.round_kind) if d.round_kind else ''}</span>"
                                f"{'<br>' + made if made else ''}")


class CallDetailView(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.call_id: int | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.summary = QLabel(PLACEHOLDER, self)
        self.summary.setObjectName("callSummary")
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary.setMinimumHeight(self.summary.fontMetrics().lineSpacing() * 3 + 4)  # wrapped: 3 lines or more
        self.summary.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.summary)
        self.error = QLabel(self)
        self.error.setObjectName("callError")
        self.error.setWordWrap(True)
        self.error.setTextFormat(Qt.TextFormat.PlainText)
        self.error.setStyleSheet(f"color: {RED};")
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.hide()
        layout.addWidget(self.error)
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        self.request = QTextBrowser(self)
        self.request.setObjectName("callRequest")
        self.request.setOpenLinks(False)
        self.reply = QPlainTextEdit(self)
        self.reply.setObjectName("callReply")
        self.raw = QPlainTextEdit(self)
        self.raw.setObjectName("callRaw")
        for box in (self.reply, self.raw):
            box.setReadOnly(True)
            box.setFont(_mono())
        self.tabs.addTab(self.request, "Request (fenced)")
        self.tabs.addTab(self.reply, "Reply")
        self.tabs.addTab(self.raw, "Raw body")
        layout.addWidget(self.tabs, 1)
        self.show_detail(None)

    def show_detail(self, detail, note: str = "", origin=None) -> None:
        """``detail`` is a calls.CallDetail, or None (``note`` says why: in flight, nothing
        selected); ``origin`` the template that made it (``prompt_sets.TemplateOrigin``)."""
        self.call_id = detail.id if detail is not None else None
        self.origin = origin
        if detail is None:
            self.summary.setText(escape_html(note or PLACEHOLDER))
            self.error.hide()
            self.request.clear()
            self.reply.clear()
            self.raw.clear()
            self.tabs.setEnabled(False)
            return
        self.tabs.setEnabled(True)
        self.summary.setText(summary_html(detail, origin))
        problem = detail.error or (detail.reason if detail.status == "invalid" else None)
        if problem:
            kind = f" ({detail.error_kind})" if detail.error_kind else ""
            self.error.setText(("Error" + kind if detail.error else "Could not be read") + f": {problem}")
            self.error.show()
        else:
            self.error.hide()
        self.request.setHtml(request_html(detail.messages, detail.fence))
        self.reply.setPlainText(detail.reply_text if detail.reply_text is not None else "(no reply)")
        if detail.response_raw:
            self.raw.setPlainText(detail.response_raw)
        elif detail.simulated:
            self.raw.setPlainText("(the simulated panel answered: there is no provider body)")
        else:
            self.raw.setPlainText("(no raw body was recorded)")
