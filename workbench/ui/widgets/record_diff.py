"""Comparisons in the Trace Inspector: R1 against R2 for the same agent, and two runs side by side.

R1 → R2 (ARM): the changes in the claim (a word-level diff), the confidence and the verdict come
first (UI.md), then the reasoning (the critical path, word by word), then the lists (assumptions,
challenge surface, flags: items dropped and added), then what only round 2 has. Words only in R1
are struck through, words only in R2 are underlined: the shape says it, not only the colour.

Two runs: each agent's contribution per round, aligned (see ``record_detail.align``); where both
runs have one, run B's text shows its word-level differences from run A's.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QTabWidget, QTextBrowser, QVBoxLayout, QWidget

from workbench.core.text_diff import DELETE, INSERT, list_diff, word_diff
from workbench.ui import theme
from workbench.ui.widgets.trace_detail import chip, esc, flag_chips, number, text_html

LIST_FIELDS = (("assumptions", "Assumptions"), ("challenge_surface", "Challenge surface"), ("flags", "Flags"),
               ("values_in_conflict", "Values in conflict"))
R2_ONLY = (("influenced_by", "Influenced by"), ("challenged", "Challenged"), ("drift_note", "Drift note"),
           ("drift_score", "Drift score"))


def diff_html(old: str | None, new: str | None) -> str:
    """One text with the changes marked: struck = only in the old, underlined = only in the new."""
    out = []
    previous = None
    for op, text in word_diff(old, new):
        piece = text_html(text)
        if op == INSERT and previous == DELETE:
            out.append(" ")  # "deploy deploying", not "deploydeploying"
        previous = op
        if op == DELETE:
            out.append(f"<span style='color:{theme.css('error')}; text-decoration:line-through'>{piece}</span>")
        elif op == INSERT:
            out.append(f"<span style='color:{theme.css('ok')}; text-decoration:underline'><b>{piece}</b></span>")
        else:
            out.append(piece)
    return "".join(out) or "<i>empty</i>"


def _steps(value: object) -> str:
    if isinstance(value, list):
        return "\n".join(f"{i}. {s if isinstance(s, str) else s}" for i, s in enumerate(value, 1))
    return "" if value is None else str(value)


def _conf(value: object) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _mark(changed: bool) -> str:
    return chip("changed", "warning") if changed else chip("same", "muted", outline=True)


def r1_r2_html(r1: dict, r2: dict, v1: str, v2: str, role: str) -> str:
    """The R1 → R2 comparison of one agent's traces (ARM JSON), claim, confidence, verdict first."""
    c1, c2 = _conf(r1.get("confidence")), _conf(r2.get("confidence"))
    delta = f" (Δ {c2 - c1:+.2f})" if c1 is not None and c2 is not None else ""
    claim_changed = (r1.get("claim") or "") != (r2.get("claim") or "")
    conf_changed = c1 != c2
    verdict_changed = v1 != v2
    if v1 in ("yes", "no") and v2 in ("yes", "no") and verdict_changed:
        transition = " — a firm reversal (flip)"
    elif verdict_changed and "unknown" not in (v1, v2):
        transition = " — a shift (involves conditional)"
    else:
        transition = ""
    cell = "style='padding:3px 10px 3px 0; vertical-align:top'"
    parts = [f"<p style='color:{theme.css('muted')}'>R1 → R2 for <b>{esc(role)}</b>. "
             "<s>Struck</s>: only in R1 · <u>underlined</u>: only in R2.</p>",
             "<table cellspacing='0' width='100%'>",
             f"<tr><td {cell}><b>Claim</b><br>{_mark(claim_changed)}</td>"
             f"<td {cell}><span style='font-size:large'>{diff_html(r1.get('claim'), r2.get('claim'))}</span></td></tr>",
             f"<tr><td {cell}><b>Confidence</b><br>{_mark(conf_changed)}</td><td {cell}><span style='font-size:large'>"
             f"{number(r1.get('confidence'))} → <b>{number(r2.get('confidence'))}</b>{esc(delta)}</span></td></tr>",
             f"<tr><td {cell}><b>Verdict</b><br>{_mark(verdict_changed)}</td><td {cell}><span style='font-size:large'>"
             f"{esc(v1.upper())} → <b>{esc(v2.upper())}</b></span>{esc(transition)}</td></tr>"]
    if r1.get("critical_path") is not None or r2.get("critical_path") is not None:
        parts.append(f"<tr><td {cell}><b>Reasoning</b><br>critical path</td><td {cell}>"
                     f"{diff_html(_steps(r1.get('critical_path')), _steps(r2.get('critical_path')))}</td></tr>")
    for key, title in (("reasoning_frame", "Reasoning frame"), ("decision_basis", "Decision basis")):
        a, b = r1.get(key), r2.get(key)
        if a is not None or b is not None:
            parts.append(f"<tr><td {cell}><b>{title}</b></td><td {cell}>{esc(a or '—')} → <b>{esc(b or '—')}</b>"
                         f"{'' if a == b else ' ' + chip('changed', 'warning')}</td></tr>")
    for key, title in LIST_FIELDS:
        a, b = r1.get(key), r2.get(key)
        if a is None and b is None:
            continue
        d = list_diff(a if isinstance(a, list) else [], b if isinstance(b, list) else [])
        if key == "flags":
            body = (f"R1 {flag_chips(a)}<br>R2 {flag_chips(b)}" if d.changed else flag_chips(b))
        else:
            body = "".join(f"<div style='color:{theme.css('error')}'>− <s>{text_html(x)}</s></div>" for x in d.removed)
            body += "".join(f"<div style='color:{theme.css('ok')}'>+ <u>{text_html(x)}</u></div>" for x in d.added)
            body += (f"<div style='color:{theme.css('muted')}'>{len(d.kept)} kept</div>" if d.kept else "")
        parts.append(f"<tr><td {cell}><b>{title}</b><br>{_mark(d.changed)}</td><td {cell}>{body}</td></tr>")
    s1 = (r1.get("self_check") or {}).get("status") if isinstance(r1.get("self_check"), dict) else None
    s2 = (r2.get("self_check") or {}).get("status") if isinstance(r2.get("self_check"), dict) else None
    if s1 or s2:
        parts.append(f"<tr><td {cell}><b>Self-check</b></td><td {cell}>{esc(s1 or '—')} → <b>{esc(s2 or '—')}</b></td></tr>")
    for key, title in R2_ONLY:
        if r2.get(key) is not None:
            value = r2[key]
            shown = (", ".join(f"{k}: {number(v) if not isinstance(v, str) else v}" for k, v in value.items())
                     if isinstance(value, dict) else "; ".join(map(str, value)) if isinstance(value, list) else value)
            parts.append(f"<tr><td {cell}><b>{title}</b><br>R2 only</td><td {cell}>{text_html(shown)}</td></tr>")
    parts.append("</table>")
    return "".join(parts)


def runs_html(run_a: str, run_b: str, rows: list) -> str:
    """Two runs' contributions aligned by round and agent (rows of ``(Side | None, Side | None)``)."""
    if not rows:
        return "<i>Neither run has any contribution to compare.</i>"
    cell = f"style='padding:3px 8px 3px 0; vertical-align:top; border-bottom:1px solid {theme.css('muted')}'"
    head = (f"<tr><th align='left' {cell}>Round</th><th align='left' {cell}>Agent</th>"
            f"<th align='left' {cell}>A: {esc(run_a)}</th><th align='left' {cell}>B: {esc(run_b)} "
            "(changes from A marked)</th></tr>")
    body = []
    differ = 0
    for a, b in rows:
        side = a or b
        agent = side.agent + (f" · {side.sub}" if side.sub else "")
        text_a = f"{text_html(a.text)}<br><b>{esc(a.value)}</b>" if a else "<i>—</i>"
        if a and b:
            changed = a.text != b.text or a.value != b.value
            text_b = f"{diff_html(a.text, b.text)}<br><b>{esc(b.value)}</b>"
        else:
            changed = True
            text_b = f"{text_html(b.text)}<br><b>{esc(b.value)}</b>" if b else "<i>—</i>"
        differ += changed
        mark = "≠ " if changed else ""
        body.append(f"<tr><td {cell}>{mark}{'' if side.round is None else side.round}</td><td {cell}>{esc(agent)}</td>"
                    f"<td {cell}>{text_a}</td><td {cell}>{text_b}</td></tr>")
    summary = f"<p>{len(rows)} contributions aligned by round and agent; {differ} differ (≠).</p>"
    return summary + f"<table cellspacing='0' width='100%'>{head}{''.join(body)}</table>"


Html = str | Callable[[], str]  # rich text, or what writes it (again after a theme change)


class CompareView(QTabWidget):
    """R1 → R2 for the trace shown, and its run beside another run of the same protocol.

    The comparisons are given as what writes them (a callable), so a theme change writes them
    again in the new theme's colours: rich text keeps the colours it was written with."""

    runs_requested = Signal(str, str)  # run A, run B: the panel reads both off the GUI thread

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setDocumentMode(True)
        self.rounds = QTextBrowser(self)
        self.rounds.setObjectName("roundDiff")
        self.rounds.setOpenLinks(False)
        runs = QWidget(self)
        layout = QVBoxLayout(runs)
        layout.setContentsMargins(0, 4, 0, 0)
        self.run_a = QLabel(self)
        self.run_a.setObjectName("compareRunA")
        self.run_a.setWordWrap(True)
        layout.addWidget(self.run_a)
        row = QHBoxLayout()
        self.other = QComboBox(self)
        self.other.setObjectName("compareRunB")
        self.other.setMinimumContentsLength(10)
        self.other.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.other.activated.connect(self._on_other_chosen)
        row.addWidget(QLabel("B:", self))
        row.addWidget(self.other, 1)
        layout.addLayout(row)
        self.runs = QTextBrowser(self)
        self.runs.setObjectName("runDiff")
        self.runs.setOpenLinks(False)
        layout.addWidget(self.runs, 1)
        self.tab_rounds = self.addTab(self.rounds, "R1 → R2")
        self.tab_runs = self.addTab(runs, "Two runs")
        self._run: str | None = None
        self._rounds: Callable[[], str] | None = None
        self._runs: Callable[[], str] | None = None
        self.clear()

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self.recolour()

    def recolour(self) -> None:
        """Write the comparisons shown again in the current theme's colours (scroll kept)."""
        for view, render in ((self.rounds, self._rounds), (self.runs, self._runs)):
            if render is not None:
                bar = view.verticalScrollBar()
                at = bar.value()
                view.setHtml(render())
                bar.setValue(at)

    def clear(self) -> None:
        self._run = None
        self._rounds = self._runs = None
        self.rounds.setHtml("<i>R1 → R2 compares an ARM agent's two rounds: select a trace.</i>")
        self.run_a.setText("")
        self.other.clear()
        self.runs.setHtml("<i>Select a record of a run to compare it with another run.</i>")

    def show_rounds(self, html: Html | None, why: str = "") -> None:
        self.setTabVisible(self.tab_rounds, html is not None)
        self._rounds = _renderer(html)
        self.rounds.setHtml(self._rounds() if self._rounds is not None else f"<i>{esc(why)}</i>")

    def set_runs(self, run_id: str | None, candidates: list[tuple[str, str]]) -> None:
        """The run of the record shown, and the runs it may be compared with: ``(id, label)``."""
        if run_id == self._run and self.other.count() == len(candidates) + 1:
            return
        self._run = run_id
        self.run_a.setText(f"A: <b>{esc(run_id)}</b>" if run_id else "")
        self.other.clear()
        self.other.addItem("Choose run B…", None)
        for rid, label in candidates:
            self.other.addItem(label or rid, rid)
            self.other.setItemData(self.other.count() - 1, rid, Qt.ItemDataRole.ToolTipRole)
        self._runs = None
        self.runs.setHtml("<i>Choose a run to set beside this one.</i>" if candidates and run_id
                          else "<i>No other run of this protocol to compare with.</i>")

    def show_runs(self, html: Html) -> None:
        self._runs = _renderer(html)
        self.runs.setHtml(self._runs())

    def choose_other(self, run_id: str) -> bool:
        index = self.other.findData(run_id)
        if index < 0:
            return False
        self.other.setCurrentIndex(index)
        self._on_other_chosen(index)
        return True

    def _on_other_chosen(self, index: int) -> None:
        other = self.other.itemData(index)
        if self._run and other:
            self._runs = None
            self.runs.setHtml("<i>Reading both runs…</i>")
            self.runs_requested.emit(self._run, other)


def _renderer(html: Html | None) -> Callable[[], str] | None:
    if html is None or callable(html):
        return html
    return lambda: html
