"""A CONS question's voting matrix: agents × options, one row per agent and round, every ballot.

A cell shows the vote and its confidence with a shape (▲ accept, ▼ reject, ◇ abstain, ∅ invalid)
as well as a colour; its tooltip holds the rationale and the evidence. Ballots an agent replaced
in a later challenge round are kept, in the muted colour and marked "superseded".
"""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from workbench.ui import theme

VOTE_STYLE = {"accept": ("▲", "ok"), "reject": ("▼", "error"), "abstain": ("◇", "muted"), None: ("∅", "muted")}
INVALID = "(invalid)"
BALLOT_ROLE = Qt.ItemDataRole.UserRole + 1  # the ballot's id in the project


def cell_text(ballot) -> str:
    if ballot.status != "valid":
        return "∅ invalid"
    shape = VOTE_STYLE.get(ballot.vote, VOTE_STYLE[None])[0]
    confidence = "" if ballot.confidence is None else f" {ballot.confidence:.2f}"
    return f"{shape} {ballot.vote}{confidence}"


def cell_tooltip(ballot) -> str:
    lines = [f"<b>{html.escape(ballot.agent_id)}</b>, round {ballot.round}: {html.escape(cell_text(ballot))}"]
    if ballot.status != "valid":
        lines.append(f"Invalid: {html.escape(ballot.invalid_reason or 'unreadable reply')}")
    if ballot.rationale:
        lines.append(f"<i>Rationale:</i> {html.escape(ballot.rationale)}")
    for e in ballot.evidence:
        where = " · ".join(str(e[k]) for k in ("file", "section") if e.get(k))
        lines.append(f"<i>Evidence ({html.escape(str(e.get('type', '?')))}):</i> {html.escape(where)}")
    if not ballot.evidence and ballot.status == "valid" and ballot.vote != "abstain":
        lines.append("<i>No evidence cited.</i>")
    if not ballot.standing and ballot.status == "valid":
        lines.append("<i>Superseded by the agent's ballot in a later round.</i>")
    return "<qt>" + "<br>".join(lines) + "</qt>"


class ConsMatrix(QTableWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("consMatrix")
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setAlternatingRowColors(True)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.horizontalHeader().setMinimumSectionSize(90)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self._detail = None

    def show_detail(self, detail) -> None:
        """Lay out every ballot of ``detail`` (a cons_view.QuestionDetail; None empties it)."""
        self._detail = detail
        self.clearContents()
        if detail is None:
            self.setRowCount(0)
            self.setColumnCount(0)
            return
        columns = list(detail.columns())
        if any(b.status != "valid" or b.option is None for b in detail.ballots):
            columns.append(INVALID)
        keys = list(dict.fromkeys((b.agent_id, b.round) for b in detail.ballots))
        self.setColumnCount(len(columns))
        self.setHorizontalHeaderLabels(columns)
        self.setRowCount(len(keys))
        self.setVerticalHeaderLabels([f"{agent} · r{rnd}" for agent, rnd in keys])
        for b in detail.ballots:
            column = columns.index(b.option) if b.status == "valid" and b.option in columns else len(columns) - 1
            r = keys.index((b.agent_id, b.round))
            item = self.item(r, column)
            if item is not None:  # two ballots in one cell (a malformed round): keep both, readable
                item.setText(item.text() + " / " + cell_text(b))
                item.setToolTip(item.toolTip() + "<hr>" + cell_tooltip(b))
                ids = item.data(BALLOT_ROLE)
                item.setData(BALLOT_ROLE, [*ids, b.id])
                continue
            item = QTableWidgetItem(cell_text(b) + ("" if b.standing or b.status != "valid" else "  (superseded)"))
            item.setToolTip(cell_tooltip(b))
            item.setData(BALLOT_ROLE, [b.id])
            item.setData(Qt.ItemDataRole.UserRole, b)
            item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
            self.setItem(r, column, item)
        self._colour()

    def ballot_ids(self) -> list[int]:
        """Every ballot id shown, in the table's order."""
        out: list[int] = []
        for r in range(self.rowCount()):
            for c in range(self.columnCount()):
                item = self.item(r, c)
                if item is not None:
                    out.extend(item.data(BALLOT_ROLE))
        return out

    def _colour(self) -> None:
        for r in range(self.rowCount()):
            for c in range(self.columnCount()):
                item = self.item(r, c)
                ballot = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
                if ballot is None:
                    continue
                if ballot.status != "valid" or not ballot.standing:
                    key = "muted"
                else:
                    key = VOTE_STYLE.get(ballot.vote, VOTE_STYLE[None])[1]
                item.setForeground(theme.colour(key))

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self._detail is not None:
            self._colour()  # the new theme's colours
