"""A run's timeline: its rounds and phases as a strip of chips, and every call as a row that
appears when the call starts and changes when it ends (agent, status as a glyph and a word,
latency, tokens, cost, attempts, and why a grey call is grey).

The rows come from two places: the calls stored in the project file (a finished run, or the
calls of a running run already recorded), and the run's live call events (a call in flight
has no record yet). A live row gives way to the stored one as soon as the stored one is read.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, QItemSelectionModel, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QPalette
from PySide6.QtWidgets import QHBoxLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from workbench.ui.widgets.contained import Contained
from workbench.ui.widgets.manual_prompt import escape_html
from workbench.ui.widgets.record_table import RecordTable

# The round is last: the phase strip above the table names the rounds.
# "#" is the call's number in its run, from 1 (the record's id, counted across the project, is
# in the row's "id" and in the Trace Inspector).
# "Template" is the step and hash of the template that made the call (✎: not the default; the
# call's detail says which prompt set), once the call is stored.
CALL_COLUMNS = (("n", "#"), ("purpose", "Purpose"), ("agent_id", "Agent"), ("status_text", "Status"),
                ("latency", "Latency (ms)"), ("tokens", "Tokens"), ("cost", "Cost"), ("attempts", "Attempts"),
                ("round", "Round"), ("template", "Template"), ("reason", "Reason"))
# A glyph with every status, so a status reads without colour too.
CALL_STATUS = {"ok": "✔", "invalid": "⚠", "error": "✖", "rate_limited": "⧗", "cancelled": "■", "running": "◌",
               "waiting": "⧗"}
GREY = "#8a8a8a"  # invalid or failed: shown, never hidden
RED = "#b3261e"
AMBER = "#b26a00"
BLUE = "#1f5fa8"
_KEYS = {RED: "error", AMBER: "warning", BLUE: "info"}
REFRESH_MS = 100  # live call events are shown at most this often


def tone(colour: str) -> str:
    """``colour`` as the current theme draws that meaning (red is lighter on the dark theme)."""
    key = _KEYS.get(colour)
    if key is None:
        return colour
    try:
        from workbench.ui import theme

        return theme.css(key)
    except Exception:  # no theme module (yet), or no such key: the light colours
        return colour


def cost_text(cost: float | None, source: str | None, model: str | None = None) -> str:
    """A call's cost: "unknown" when the price is not known, never "$0"."""
    if model == "manual" and cost is None:
        return "— (a person)"
    if cost is None:
        return "" if source == "running" else "unknown"
    if source == "simulated":
        return "$0 sim"
    if source == "cache" or (source or "").startswith("replay"):
        return f"${cost:.4f} ({'cached' if source == 'cache' else 'replay'})"
    return f"${cost:.4f}"


def call_row(c) -> dict:
    """A stored call (calls.LoggedCall) as a timeline row."""
    rnd = c.round_kind or (f"batch {c.round_idx}" if c.round_idx is not None else "")
    latency = round(c.latency_ms) if c.latency_ms is not None else None
    return {"id": c.id, "n": getattr(c, "n", None), "step_key": c.step_key, "agent_id": c.agent_id,
            "purpose": c.purpose, "status": c.status,
            "attempts": c.attempts, "simulated": c.simulated, "round": rnd, "round_idx": c.round_idx,
            "latency": latency, "tokens": c.tokens, "cost": cost_text(c.cost_usd, c.cost_source, c.model),
            "status_text": f"{CALL_STATUS.get(c.status, '?')} {c.status}", "reason": c.reason or ""}


def event_row(e, started: float) -> dict:
    """A live call event (runner.CallEvent) as a timeline row; ``started`` is when it began
    (time.monotonic), for the seconds a call in flight has been waiting. A call that waits
    before a retry (a 429 and its Retry-After) is "waiting" until ``_until``, then in flight again."""
    status = e.status if e.kind == "finished" else "waiting" if e.kind == "waiting" else "running"
    latency = round(e.latency_ms) if e.latency_ms is not None else None
    return {"id": e.call_id, "n": getattr(e, "ordinal", None), "step_key": e.key, "agent_id": e.agent,
            "purpose": e.purpose, "status": status,
            "attempts": e.attempts, "simulated": None, "round": e.phase or f"batch {e.round_idx}",
            "round_idx": e.round_idx, "latency": latency, "tokens": e.tokens,
            "cost": cost_text(e.cost_usd, "running" if status == "running" else e.cost_source, e.model),
            "status_text": f"{CALL_STATUS.get(status, '?')} {status}",
            "reason": e.error or "", "_started": started,
            "_until": time.monotonic() + (e.wait_s or 0) if e.kind == "waiting" else None}


class RunTimeline(QWidget):
    """The phase strip over the call table; ``call_selected(row)`` when a call is chosen."""

    call_selected = Signal(object)  # the row (dict), or None
    rows_changed = Signal()  # the rows shown changed (a call started or ended, a read landed)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("runTimeline")  # (the tour points at it)
        self._stored: list[dict] = []
        self._live: dict[str, dict] = {}  # step_key -> row, for the run in progress
        self._live_run: str | None = None
        self._rows: list[dict] = []
        self._follow = True
        self._updating = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)

        self.phases = QLabel(self)
        self.phases.setObjectName("runPhases")
        self.phases.setTextFormat(Qt.TextFormat.RichText)
        self.phases.setToolTip("The run's rounds and phases, in order: click one to show only its calls")
        self.phases.linkActivated.connect(self._on_phase_clicked)
        strip = QScrollArea(self)
        strip.setWidget(self.phases)
        strip.setWidgetResizable(True)
        strip.setFrameShape(QScrollArea.Shape.NoFrame)
        strip.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.strip = strip
        self._fit_strip()
        self.table = RecordTable(CALL_COLUMNS, "Filter calls…", self, grows=True)
        self.table.model.decorate = decorate_call
        self.table.view.selectionModel().selectionChanged.connect(self._on_selection)
        self.table.view.verticalScrollBar().valueChanged.connect(self._on_scrolled)
        self.strip_row = QHBoxLayout()  # the phases, then whatever the caller adds at the right
        self.strip_row.setSpacing(4)
        self.strip_row.addWidget(Contained(strip, self), 1)  # the chips change with every call
        layout.addLayout(self.strip_row)
        layout.addWidget(self.table, 1)

        self._tick = QTimer(self)  # calls in flight show how long they have waited
        self._tick.setInterval(1000)
        self._tick.timeout.connect(self._refresh)
        # Call events arrive as fast as the run makes calls (hundreds a second): the rows are
        # rebuilt at most every REFRESH_MS, so the window keeps up with any run. What the person
        # does (start, stop, a read landing) still shows at once.
        self._pending = QTimer(self)
        self._pending.setSingleShot(True)
        self._pending.setInterval(REFRESH_MS)
        self._pending.timeout.connect(self._refresh)

    # ----- what is shown ---------------------------------------------------------------------
    @property
    def rows(self) -> list[dict]:
        return list(self._rows)

    def set_stored(self, rows: list[dict]) -> None:
        """The run's calls as read from the project file."""
        self._stored = rows
        self._refresh()

    def start_live(self, run_id: str, *, fresh: bool = False) -> None:
        """Follow ``run_id``'s call events from now on (its earlier live rows are dropped);
        ``fresh``: another run's stored calls are dropped too (a new run starts from none)."""
        if fresh:
            self._stored = []
        if run_id != self._live_run:
            self._live, self._live_run = {}, run_id
        self._follow = True
        self._refresh()

    def stop_live(self) -> None:
        """The run ended: only what it stored remains (a cancelled call was never recorded)."""
        self._live, self._live_run = {}, None
        self._tick.stop()
        self._refresh()

    def add_events(self, events: list) -> None:
        """Live call events (runner.CallEvent) of the followed run."""
        now = time.monotonic()
        for e in events:
            if e.run_id != self._live_run:
                continue
            before = self._live.get(e.key)
            began = before["_started"] if before is not None and e.kind != "started" else now
            self._live[e.key] = event_row(e, began)
        if not self._pending.isActive():
            self._pending.start()

    def clear(self) -> None:
        self._stored, self._live, self._live_run = [], {}, None
        self._tick.stop()
        self._refresh()

    def _merged(self) -> list[dict]:
        ids = {r["id"] for r in self._stored}
        rows = list(self._stored)
        now = time.monotonic()
        for row in self._live.values():
            if row["id"] is not None and row["id"] in ids:
                continue  # recorded, and read back: the stored row shows it
            if row["status"] == "waiting" and now >= row["_until"]:  # its retry has been sent
                row = {**row, "status": "running"}
            if row["status"] == "waiting":
                left = row["_until"] - now
                row = {**row, "status_text": f"⧗ retry in {left:.0f} s" if left >= 1 else "⧗ retrying"}
            elif row["status"] == "running":
                waited = now - row["_started"]
                row = {**row, "status_text": f"◌ running {waited:.0f} s" if waited >= 1 else "◌ running"}
            rows.append({k: v for k, v in row.items() if k not in ("_started", "_until")})
        # One stable order, whatever order the calls end and are read back in: recorded calls by
        # their id (the order the run recorded them), then the calls in flight (no id yet) in
        # the order they started.
        flying = {id(r): n for n, r in enumerate(rows) if r["id"] is None}
        rows.sort(key=lambda r: (0, r["id"], 0) if r["id"] is not None else (1, 0, flying[id(r)]))
        return rows

    def _refresh(self) -> None:
        self._pending.stop()  # whatever was pending is shown now
        rows = self._merged()
        if any(r["status"] in ("running", "waiting") for r in rows):
            if not self._tick.isActive():
                self._tick.start()
        else:
            self._tick.stop()
        if rows == self._rows:
            return
        keep, follow = self.selected(), self._follow
        self._rows = rows
        self._updating = True  # a reset moves the scroll bar: that is not the user scrolling
        try:
            self.table.set_rows(rows)
            self._fit_status()
            if keep is not None:
                self.select(keep.get("id"), keep.get("step_key"), emit=False)
            if follow and self._live_run is not None:
                self.table.view.scrollToBottom()
        finally:
            self._updating = False
        self._follow = follow
        self._show_phases(rows)
        self.rows_changed.emit()

    def _fit_status(self) -> None:
        """The status column fits a call in flight's words ("◌ running 12 s"), never cut to "◌ runni…"."""
        column = [k for k, _ in CALL_COLUMNS].index("status_text")
        view = self.table.view
        need = max(view.fontMetrics().horizontalAdvance(t) for t in ("◌ running 99 s", "⧗ retry in 99 s",
                                                                     "⧗ rate_limited")) + 16
        if view.columnWidth(column) < need:
            view.setColumnWidth(column, need)

    def _show_phases(self, rows: list[dict]) -> None:
        phases: dict[tuple, dict[str, int]] = {}
        for r in rows:
            counts = phases.setdefault((r.get("round_idx") or 0, r["round"]), {})
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        chips = []
        text = self.palette().color(QPalette.ColorRole.WindowText).name()  # rich text has no palette()
        for (idx, label), counts in sorted(phases.items(), key=lambda kv: kv[0][0]):
            marks = []
            for status, colour in (("running", tone(BLUE)), ("waiting", tone(AMBER)), ("ok", ""), ("invalid", GREY),
                                   ("error", tone(RED)), ("rate_limited", tone(AMBER)), ("cancelled", GREY)):
                if counts.get(status):
                    style = f" style='color:{colour}'" if colour else ""
                    marks.append(f"<span{style}>{CALL_STATUS[status]}{counts[status]}</span>")
            going = "running" in counts or "waiting" in counts
            name = escape_html(label or f"batch {idx}")
            chips.append(f"<a href='round:{escape_html(label)}' style='text-decoration:none; color:{text}'>"
                         f"{'<b>' if going else ''}{idx}·{name}{'</b>' if going else ''}</a> {' '.join(marks)}")
        muted = self.palette().color(QPalette.ColorRole.PlaceholderText).name()
        self.phases.setText("&nbsp;&nbsp;›&nbsp;&nbsp;".join(chips) if chips else
                            f"<span style='color:{muted}'>No calls yet.</span>")
        self._fit_strip()
        if self._live_run is not None:  # the phase under way is the last: keep it in view
            QTimer.singleShot(0, self, self._show_last_phase)  # self: never after this widget is gone

    def _show_last_phase(self) -> None:
        bar = self.strip.horizontalScrollBar()
        bar.setValue(bar.maximum())

    def _fit_strip(self) -> None:
        """One line of phases; room for its scroll bar only when the phases do not fit."""
        line = self.fontMetrics().height() + 8
        overflow = self.phases.sizeHint().width() > self.strip.viewport().width()
        self.strip.setFixedHeight(line + (self.strip.horizontalScrollBar().sizeHint().height() if overflow else 0))

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self._fit_strip()

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # a new theme: its colours in the strip
            self._show_phases(self._rows)

    # ----- selection -------------------------------------------------------------------------
    def selected(self) -> dict | None:
        rows = self.table.view.selectionModel().selectedRows()
        if not rows:
            return None
        return self.table.model.row(self.table.proxy.mapToSource(rows[0]).row())

    def select(self, call_id: int | None = None, step_key: str | None = None, *, emit: bool = True) -> bool:
        """Select the row of ``call_id`` (or, for a call in flight, of ``step_key``)."""
        table = self.table
        for r in range(table.proxy.rowCount()):
            row = table.model.row(table.proxy.mapToSource(table.proxy.index(r, 0)).row())
            if (call_id is not None and row["id"] == call_id) or (call_id is None and row["step_key"] == step_key):
                selection = table.view.selectionModel()
                if not emit:
                    selection.blockSignals(True)
                flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
                selection.select(table.proxy.index(r, 0), flags)
                selection.blockSignals(False)
                if emit:
                    table.view.scrollTo(table.proxy.index(r, 0))
                return True
        return False

    def _on_selection(self, *_args) -> None:
        if not self._updating:
            self._follow = False  # the person looks at a call: the view stays on it
        self.call_selected.emit(self.selected())

    def _on_scrolled(self, value: int) -> None:
        if self._updating:
            return
        bar = self.table.view.verticalScrollBar()
        self._follow = value >= bar.maximum() - 2  # the user scrolled up: stop following

    def _on_phase_clicked(self, link: str) -> None:
        label = link.removeprefix("round:")
        current = self.table.filter.text()
        self.table.filter.setText("" if current == label else label)


def decorate_call(row: dict, key: str, role: int):
    status = row["status"]
    bad = status not in ("ok", "running", "waiting")
    if role == Qt.ItemDataRole.ForegroundRole:
        if key == "status_text" and status in ("error", "rate_limited", "waiting"):
            return QBrush(QColor(tone(RED if status == "error" else AMBER)))
        if key == "status_text" and status == "running":
            return QBrush(QColor(tone(BLUE)))
        if bad:
            return QBrush(QColor(GREY))
    if bad and role == Qt.ItemDataRole.FontRole:
        font = QFont()
        font.setItalic(True)
        return font
    if role == Qt.ItemDataRole.ToolTipRole:
        if key == "cost" and row["cost"] == "unknown":
            return "The provider's price for this model is not known: the cost is unknown, not $0."
        if row["reason"]:
            return row["reason"]
    return None
