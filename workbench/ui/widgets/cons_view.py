"""CONS in the Findings & Reports panel: the questions, each one's voting matrix, its verdict,
conflicts and escalations with the human's decision, and the threshold what-if.

Reads run off the GUI thread (a :class:`~workbench.services.reads.Reader` on the model's read
pool): the questions with every ballot in one read, the what-if in another (the CONS engine over
the ballots already read; no model is called). The host panel gives the read-only store
(:meth:`ConsView.set_reading`) and calls :meth:`ConsView.refresh` when CONS tables change.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QLabel, QSplitter, QTabWidget, QTextBrowser, QVBoxLayout, QWidget

from workbench.services.reads import Reader
from workbench.ui import theme
from workbench.ui.widgets.cons_matrix import ConsMatrix
from workbench.ui.widgets.cons_whatif import VERDICT_COLOUR, ConsWhatIf
from workbench.ui.widgets.record_table import RecordTable

QUESTION_COLUMNS = (("label", "Question (UTC)"), ("verdict_label", "Verdict"), ("escalations_label", "Escalations"),
                    ("question", "Asked"))
VERDICT_SHAPE = {"PROVEN": "✓", "REFUTED": "✖", "CONTESTED": "⚖", "INSUFFICIENT_EVIDENCE": "?", None: "…"}


def verdict_label(verdict: str | None) -> str:
    return f"{VERDICT_SHAPE.get(verdict, '…')} {verdict or 'no verdict yet'}"


class ConsView(QWidget):
    def __init__(self, model, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("consView")
        self._reading = None
        self._details: dict[str, object] = {}
        self._rows: dict[str, object] = {}
        self._selected: str | None = None
        self.loaded_count = 0  # reads applied (tests wait on it)
        self.whatif_count = 0
        self._reader = Reader(model.reads, self, name="read CONS questions")
        self._whatif_reader = Reader(model.reads, self, name="CONS what-if")

        self.questions = RecordTable(QUESTION_COLUMNS, "Filter questions…", self)
        self.questions.setObjectName("consQuestions")
        self.questions.model.decorate = _decorate_question
        self.questions.view.selectionModel().selectionChanged.connect(self._on_question_selected)
        self.questions.setMinimumWidth(300)

        self.heading = QLabel("No CONS question in this project yet.", self)
        self.heading.setObjectName("consHeading")
        self.heading.setWordWrap(True)
        self.heading.setTextFormat(Qt.TextFormat.RichText)
        self.matrix = ConsMatrix(self)
        self.verdict = QTextBrowser(self)
        self.verdict.setObjectName("consVerdict")
        self.verdict.setOpenLinks(False)
        self.whatif = ConsWhatIf(self)
        self.whatif.recompute_requested.connect(self._recompute)
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("consTabs")
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.matrix, "Ballots (agents × options)")
        self.tabs.addTab(self.verdict, "Verdict, conflicts, escalations")
        self.tabs.addTab(self.whatif, "Thresholds what-if")

        right = QWidget(self)
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.setSpacing(3)
        right_layout.addWidget(self.heading)
        right_layout.addWidget(self.tabs, 1)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.setChildrenCollapsible(False)
        split.addWidget(self.questions)
        split.addWidget(right)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 3)
        split.setSizes([330, 870])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split)

    # ----- reading -----------------------------------------------------------------------------
    def set_reading(self, store) -> None:
        self._reading = store
        if store is None:
            self._reader.cancel()
            self._whatif_reader.cancel()
            self._details, self._rows, self._selected = {}, {}, None
            self.questions.set_rows([])
            self.matrix.show_detail(None)
            self.verdict.clear()
            self.whatif.table.set_rows([])
            self.heading.setText("No CONS question in this project yet.")
        else:
            self.refresh()

    def refresh(self) -> None:
        reading = self._reading
        if reading is None:
            return

        def read(cancel):
            from workbench.core.project import cons_view

            rows = cons_view.questions(reading)
            details = {}
            for row in rows:
                if cancel.is_set():
                    break
                detail = cons_view.question_detail(reading, row.id)
                if detail is not None:
                    details[row.id] = detail
            return rows, details

        self._reader.load(read, self._apply, cleanup=reading.close_connection)

    def shutdown(self) -> None:
        self._reader.shutdown()
        self._whatif_reader.shutdown()

    def _apply(self, view) -> None:
        rows, details = view
        self._rows = {r.id: r for r in rows}
        self._details = details
        self.questions.set_rows([{
            "id": r.id, "label": f"{r.label} · {r.created_at.replace('T', ' ')[5:16]}", "question": r.question, "verdict": r.verdict,
            "verdict_label": verdict_label(r.verdict),
            "escalations_label": (f"{r.open_escalations} open" if r.open_escalations
                                  else f"{r.escalations} decided" if r.escalations else "—"),
            "open": r.open_escalations} for r in rows])
        if rows and (self._selected not in self._rows):
            self.select_question(rows[0].id)
        elif self._selected is not None:
            self._show(self._selected)
        if not rows:
            self.heading.setText("No CONS question in this project yet. Run a CONS configuration "
                                 "from Live Run; its ballots, verdict and escalations show here.")
        self.loaded_count += 1
        self._recompute()

    def select_question(self, question_id: str) -> bool:
        model, proxy = self.questions.model, self.questions.proxy
        for r in range(model.rowCount()):
            if model.row(r)["id"] == question_id:
                self.questions.view.selectRow(proxy.mapFromSource(model.index(r, 0)).row())
                return True
        return False

    def _on_question_selected(self, *_args) -> None:
        rows = self.questions.view.selectionModel().selectedRows()
        if not rows:
            return
        source = self.questions.proxy.mapToSource(rows[0])
        self._selected = self.questions.model.row(source.row())["id"]
        self._show(self._selected)

    def _show(self, question_id: str) -> None:
        detail = self._details.get(question_id)
        if detail is None:
            return
        t = detail.thresholds
        self.whatif.set_own(t.consensus, t.count, t.min_voters)
        self.heading.setText(
            f"<b>{html.escape(detail.label)}</b> {html.escape(detail.question)} · "
            f"<span style='color:{theme.css(VERDICT_COLOUR.get(detail.verdict or '', 'muted'))}'>"
            f"<b>{html.escape(verdict_label(detail.verdict))}</b></span> · {len(detail.ballots)} ballots, "
            f"{len(detail.agents())} agents")
        self.heading.setToolTip(detail.question)
        self.matrix.show_detail(detail)
        self.verdict.setHtml(verdict_html(detail))

    def detail(self):
        return self._details.get(self._selected) if self._selected else None

    # ----- the what-if ---------------------------------------------------------------------------
    def _recompute(self) -> None:
        details, rows = dict(self._details), dict(self._rows)
        consensus, count, voters = self.whatif.thresholds()

        def compute(_cancel):
            from workbench.core.project.cons_view import what_if_detail

            return [what_if_detail(d, rows[qid], consensus=consensus, count=count, min_voters=voters)
                    for qid, d in details.items() if qid in rows]

        self._whatif_reader.load(compute, self._apply_whatif)

    def _apply_whatif(self, changes) -> None:
        self.whatif.show_changes(changes)
        self.whatif_count += 1

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self._selected in self._details:
            self._show(self._selected)  # the rich text's colours are the theme's


def _decorate_question(row: dict, key: str, role: int) -> object:
    if role == Qt.ItemDataRole.ForegroundRole:
        if key == "verdict_label":
            return theme.colour(VERDICT_COLOUR.get(row["verdict"] or "", "muted"))
        if key == "escalations_label" and row["open"]:
            return theme.colour("warning")
    if role == Qt.ItemDataRole.ToolTipRole and key in ("question", "label"):
        return f"{row['id']}: {row['question']}"
    return None


def verdict_html(d) -> str:
    """The verdict, its reason and thresholds, the conflicts with both sides, and the escalations
    with the human's decision and its reason, in the current theme's colours."""
    e = html.escape
    colour = theme.css(VERDICT_COLOUR.get(d.verdict or "", "muted"))
    muted = theme.css("muted")
    t = d.thresholds
    consensus = "n/a" if d.actual_consensus is None else f"{d.actual_consensus:.3f}"
    parts = [f"<p><span style='font-size:large; color:{colour}'><b>{e(verdict_label(d.verdict))}</b></span>"
             f" &nbsp; leading option <b>{e(d.leading_option or '—')}</b>, actualConsensus <b>{consensus}</b>"
             f" after {d.challenge_rounds} challenge round{'s' * (d.challenge_rounds != 1)}</p>",
             f"<p>{e(d.verdict_reason or '')}</p>",
             f"<p style='color:{muted}'>Thresholds: consensus {t.consensus:.2f}, count {t.count:.2f}, "
             f"min voters {t.min_voters}, max challenge rounds {t.max_rounds}. Next action: "
             f"{e(d.next_action or '—')}.</p>"]
    parts.append(f"<h4>Conflicts ({len(d.conflicts)})</h4>")
    if not d.conflicts:
        parts.append(f"<p style='color:{muted}'>None: no agents held incompatible positions.</p>")
    for c in d.conflicts:
        sides: dict[str, list[str]] = {}
        for p in c.positions:
            conf = "" if p.confidence is None else f" {p.confidence:.2f}"
            sides.setdefault(p.position, []).append(f"{p.agent_id}{conf}")
        sev = theme.css("error" if c.severity in ("critical", "high") else "warning" if c.severity == "medium"
                        else "muted")
        rows = "".join(f"<tr><td><b>{e(pos)}</b></td><td>{e(', '.join(agents))}</td></tr>"
                       for pos, agents in sides.items())
        parts.append(f"<p><span style='color:{sev}'><b>{e(c.severity)}</b></span> {e(c.conflict_type)} "
                     f"<span style='color:{muted}'>{e(c.id)}</span></p><table cellpadding='2'>{rows}</table>")
    parts.append(f"<h4>Escalations to a human ({len(d.escalations)})</h4>")
    if not d.escalations:
        parts.append(f"<p style='color:{muted}'>None.</p>")
    for x in d.escalations:
        state = (f"<span style='color:{theme.css('warning')}'><b>⏳ open</b></span>" if x.status == "open"
                 else f"<span style='color:{theme.css('ok')}'><b>✓ decided</b></span>")
        parts.append(f"<p>{state} <b>{e(x.reason.replace('_', ' '))}</b>: {e(x.detail)}")
        if x.status != "open":
            by = f" by {e(x.decided_by)}" if x.decided_by else ""
            when = f" at {e((x.resolved_at or '').replace('T', ' ')[:19])}" if x.resolved_at else ""
            parts.append(f"<br>Decision{by}{when}: <b>{e(x.decision or '—')}</b>"
                         f"<br>Reason: {e(x.decision_note or 'none given')}")
        parts.append("</p>")
    if d.human_decision:
        parts.append(f"<p>The conductor answered during the run: <i>{e(d.human_decision)}</i></p>")
    return "".join(parts)
