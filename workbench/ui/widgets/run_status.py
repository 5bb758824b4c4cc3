"""How a run's status reads (UI.md "Run status"): a glyph and a word, never a bare colour, so a
status is never mistaken for a tier chip. The badge, the runs table's rows, the progress text.
"""

from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import QEvent, QSize, Qt, QTimer
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QBrush,
    QColor,
    QFont,
    QPainter,
    QPalette,
    QTextCursor,
    QTextDocument,
)
from PySide6.QtWidgets import QLabel, QToolTip, QWidget

from workbench.ui.widgets.manual_prompt import ACCENT, escape_html
from workbench.ui.widgets.run_names import STATUS_GLYPHS, run_title, run_tooltip
from workbench.ui.widgets.run_timeline import AMBER, BLUE, GREY, RED, tone

# status -> (glyph, colour; "" for neutral). UI.md: completed ✓ neutral; degraded ⚠ amber;
# stopped_at_cap ⏸ amber; interrupted ↻ grey; failed ✖ red outline; running: a spinner.
_COLOURS = {"completed": "", "degraded": AMBER, "stopped_at_cap": AMBER, "interrupted": GREY, "failed": RED,
            "running": BLUE}
RUN_STATUS = {status: (STATUS_GLYPHS[status], colour) for status, colour in _COLOURS.items()}
SPINNER = "◐◓◑◒"
QWIDGETSIZE_MAX = (1 << 24) - 1  # Qt's QWIDGETSIZE_MAX: no maximum
SIM_BADGE = "#6b4fbb"
SIM_NOTE = "SIM: simulated panel, no model was called"
WAITING = "waiting for a human decision"  # the runner's reason for a run stopped for its conductor
# ... and for a run that waits for a provider's batch (SPEC §10: stored "interrupted", resumable; its
# reason carries the provider's counts as last polled): listed as waiting, as `rwb runs` lists it.
WAITING_FOR_BATCH = "waiting for the provider's batch"


def progress_text(p, *, eta: bool = True) -> str:
    """ "3/16 calls, 0 failed, ETA 4 s" (plain text: escape it before it goes into rich text)."""
    left = ""
    if eta and p.eta_s is not None and p.done < p.total:
        left = ", ETA <1 s" if p.eta_s < 1 else f", ETA {p.eta_s:.0f} s"
    return f"{p.done}/{p.total} calls, {p.failed} failed{left}"


class RunBadge(QLabel):
    """A run's status as a badge: glyph and word, outlined in the status's colour; a spinner
    while the run goes."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("runBadge")
        self.status: str | None = None
        self._frame = 0
        self._spin = QTimer(self)
        self._spin.setInterval(250)
        self._spin.timeout.connect(self._on_spin)
        self.hide()

    def set_status(self, status: str | None, *, restyle: bool = False) -> None:
        """Show ``status``; the same status again changes nothing (the live heading calls this
        for every call, and a new style sheet re-lays out the window), unless ``restyle`` (a new
        theme)."""
        if status == self.status and status is not None and not restyle and not self.isHidden():
            return
        self.status = status
        if status is None:
            self._spin.stop()
            self.hide()
            return
        glyph, colour = RUN_STATUS.get(status, ("?", ""))
        colour = tone(colour) if colour else ""
        border = colour or "palette(mid)"
        weight = "bold" if status == "failed" else "normal"
        self.setStyleSheet(f"QLabel#runBadge {{ border: {2 if status == 'failed' else 1}px solid {border}; "
                           f"border-radius: 3px; padding: 0px 5px; font-weight: {weight};"
                           + (f" color: {colour};" if colour else "") + " }")
        self.setText(f"{glyph} {status.replace('_', ' ')}")
        self.setToolTip(f"Run status: {status}")
        self.setMinimumSize(0, 0)
        self.setMaximumSize(QWIDGETSIZE_MAX, QWIDGETSIZE_MAX)
        if status == "running":
            self._spin.start()
            # A fixed size while the spinner turns: a widget of fixed size changing its text
            # does not make the window lay itself out again four times a second.
            self.setFixedSize(self.sizeHint())
        else:
            self._spin.stop()
        self.show()

    def _on_spin(self) -> None:
        self._frame = (self._frame + 1) % len(SPINNER)
        self.setText(f"{SPINNER[self._frame]} running")


class ElidedRichLabel(QLabel):
    """One line of rich text that ends in "…" when it does not fit (its colours kept), never
    asking for the width of its text; the whole text shows in its tooltip then. ``text()`` is
    the whole text."""

    def __init__(self, text: str = "", parent: QWidget | None = None):
        super().__init__(text, parent)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setWordWrap(False)
        self._fitted: tuple[tuple, QTextDocument | None] | None = None

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(0, super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(0, super().sizeHint().height())

    def _document(self, html: str) -> QTextDocument:
        doc = QTextDocument(self)
        doc.setDocumentMargin(0)
        doc.setDefaultFont(self.font())
        doc.setHtml(html)
        return doc

    def elided(self) -> QTextDocument | None:
        """The text cut to fit, with "…"; None when it fits whole."""
        width = self.contentsRect().width()
        key = (self.text(), width, self.font().toString())
        if self._fitted is not None and self._fitted[0] == key:
            return self._fitted[1]
        doc = self._document(self.text())
        if doc.idealWidth() <= width:
            doc = None
        else:
            cursor = QTextCursor(doc)
            cursor.movePosition(QTextCursor.MoveOperation.End)
            cursor.insertText("…")
            cursor.movePosition(QTextCursor.MoveOperation.Left)
            while doc.idealWidth() > width and cursor.position() > 0:
                cursor.deletePreviousChar()
        self._fitted = (key, doc)
        return doc

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt API)
        doc = self.elided()
        if doc is None:
            super().paintEvent(event)
            return
        painter = QPainter(self)
        rect = self.contentsRect()
        painter.setClipRect(rect)
        painter.translate(rect.x(), rect.y() + (rect.height() - doc.size().height()) / 2)
        context = QAbstractTextDocumentLayout.PaintContext()
        context.palette = QPalette(self.palette())
        context.palette.setColor(QPalette.ColorRole.Text, self.palette().color(self.foregroundRole()))
        doc.documentLayout().draw(painter, context)

    def event(self, event) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.ToolTip and self.elided() is not None:
            whole = self._document(self.text()).toPlainText()
            QToolTip.showText(event.globalPos(), whole + (f"\n\n{self.toolTip()}" if self.toolTip() else ""), self)
            return True
        return super().event(event)


def local_time(stamp: str | None) -> str:
    if not stamp:
        return ""
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return stamp


def run_row(r, counts, batch_id: str | None = None) -> dict:  # r: a RunListRow; counts: CallCounts while going
    glyph = RUN_STATUS.get(r.status, ("?", ""))[0]
    calls, failed, invalid = (r.calls, r.failed, r.invalid) if counts is None else \
        (counts.calls, counts.failed, counts.invalid)
    status_text = f"{glyph} {r.status}"
    if r.status == "interrupted" and (r.error or "").startswith(WAITING_FOR_BATCH):
        status_text = "⧗ waiting for batch"  # the counts: in its tooltip (the error) and the calls' heading
    return {"id": r.id, "name": run_title(r, status=False, sim=False), "protocol": r.protocol, "label": r.label,
            "status": r.status, "simulated": r.simulated, "replicate": getattr(r, "replicate", None),
            "started_at": r.started_at, "error": r.error, "calls": calls or 0, "failed": failed or 0,
            "invalid": invalid or 0, "status_text": status_text, "sim": "SIM" if r.simulated else "",
            "started": local_time(r.started_at), "batch_id": batch_id}


def live_row(row: dict) -> dict:
    """``row`` of the run this window is running: "running", whatever the file said a moment ago."""
    if row["status"] == "running":
        return row
    return {**row, "status": "running", "error": None, "status_text": f"{RUN_STATUS['running'][0]} running"}


def decorate_run(row: dict, key: str, role: int):
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
        colour = RUN_STATUS.get(row["status"], ("", ""))[1]
        if role == Qt.ItemDataRole.ForegroundRole and colour:
            return QBrush(QColor(tone(colour)))
        if role == Qt.ItemDataRole.FontRole and row["status"] == "failed":
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.ToolTipRole and row.get("error"):
            return row["error"]
    if key in ("id", "name") and role == Qt.ItemDataRole.ToolTipRole:  # the cell elides; the id, batch in full
        return f"{run_title(row)}\n{run_tooltip(row)}"
    return None


def ballots_html(ballots: list) -> str:
    """What the conductor decides on: the last round's ballots of the run (CONS), by side."""
    if not ballots:
        return ""
    sides: dict[str, list] = {}
    for b in ballots:
        side = "invalid" if b.status != "valid" else ("abstain" if b.vote == "abstain" else f"{b.vote} “{b.option}”")
        sides.setdefault(side, []).append(b)
    parts = [f"<p style='margin:8px 0 2px 0; color:{ACCENT}'><b>The ballots</b>, each side with its rationales</p>"]
    for side, group in sorted(sides.items(), key=lambda kv: (kv[0] == "invalid", -len(kv[1]))):
        items = []
        for b in group:
            if b.status != "valid":
                items.append(f"<li style='color:{GREY}'><b>{escape_html(b.agent_id)}</b>: invalid ballot "
                             f"({escape_html(b.invalid_reason or '')})</li>")
            else:
                items.append(f"<li><b>{escape_html(b.agent_id)}</b>: {escape_html(b.vote or '')} "
                             f"“{escape_html(b.option or '')}” ({b.confidence}) — {escape_html(b.rationale or '')}</li>")
        parts.append(f"<div><b>{escape_html(side)}</b> ({len(group)})</div><ul style='margin:0'>{''.join(items)}</ul>")
    return "".join(parts)
