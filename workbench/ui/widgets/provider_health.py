"""Provider health, below the providers list of Clusters & Agents ▸ Providers (issue 19).

One row per provider and model of the stored calls: calls, the valid-reply rate, p50 and p95
latency, tokens, cost (unknown where any call's cost is unknown, never $0) and the reply quality
flags (``core.project.provider_stats``, the same figures as ``rwb providers stats``). Read off the
GUI thread through its own :class:`Reader`, and again only when calls or votes change.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from workbench.core.project.changes import Changes
from workbench.services.project_model import ProjectModel
from workbench.services.reads import Reader
from workbench.ui import theme
from workbench.ui.widgets.record_table import RecordTable

# What tells providers apart first (a narrow dock shows these), then the totals.
COLUMNS = (("provider", "Provider"), ("valid", "Valid"), ("p50", "p50"), ("p95", "p95"), ("flags", "Flags"),
           ("cost", "Cost"), ("calls", "Calls"), ("model", "Model"), ("tokens", "Tokens (prompt / completion)"))
# What makes it re-read: its calls, and the votes its rubber stamps are read from.
TABLES = ("llm_calls", "votes", "finding_votes", "cons_ballots")
FLAG_LABELS = {"template_echo": "template echo", "cut_at_cap": "cut at cap", "rubber_stamp": "rubber stamp"}
SHORT = {"template_echo": "echo", "cut_at_cap": "cut", "rubber_stamp": "stamp"}
LOW_VALID = 0.9  # a valid-reply rate below this is shown in the warning colour


def ms(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def display_row(s) -> dict:
    """A ``provider_stats.ProviderStats`` as the table shows it (numbers kept for sorting)."""
    rate = s.valid_rate
    tokens = f"{s.prompt_tokens:,} / {s.completion_tokens:,}" + (
        f" (+{s.tokens_unknown} unknown)" if s.tokens_unknown else "")
    if s.cost_usd is None:
        cost = f"unknown ({s.cost_unknown_calls} call{'s' if s.cost_unknown_calls != 1 else ''})"
    else:
        cost = "$0 (sim)" if s.simulated and s.cost_usd == 0 else f"${s.cost_usd:.4f}"
    flags = "⚑ " + ", ".join(f"{SHORT.get(k, k)} {n}" for k, n in s.flags.items()) if s.flags else ""
    return {"provider": s.provider, "model": s.model, "calls": s.calls,
            "valid": "—" if rate is None else f"{rate * 100:.0f}% ({s.ok}/{s.calls})",
            "p50": ms(s.latency_p50_ms), "p95": ms(s.latency_p95_ms), "tokens": tokens, "cost": cost,
            "flags": flags or "—", "_rate": rate, "_model_tip": f"{s.provider}: {s.model}",
            "_flagged": bool(s.flags), "_flag_counts": dict(s.flags),
            "_tip": (f"{s.ok} ok, {s.invalid} invalid (unreadable reply), {s.failed} failed (no reply)"
                     + (f"; known cost ${s.cost_known_usd:.4f}" if s.cost_usd is None else ""))}


class ProviderHealth(QWidget):
    """The health table; it follows the open project on its own (the panel only places it)."""

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("providerHealth")
        self.model = model
        self.refresh_count = 0  # views applied (tests read it)
        self._reading = None
        self.reader = Reader(model.reads, self, name="read provider health")
        self.heading = QLabel("<b>Provider health</b> · every call stored in this project", self)
        self.heading.setTextFormat(Qt.TextFormat.RichText)
        self.table = RecordTable(COLUMNS, "Filter providers and models…", self)
        self.table.setObjectName("providerHealthTable")
        self.table.model.decorate = self._decorate
        self.heading.setToolTip("Valid: calls whose reply the protocol could read. p50/p95: latency of the calls "
                                "sent (cache hits left out). Cost is unknown when any call's cost is unknown. A "
                                "flag is a note for the reader, never a change to a vote.")
        self.note = QLabel("The same figures: rwb providers stats --project FILE", self)
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color: palette(placeholder-text);")
        self.empty = QLabel("No calls yet: run a protocol to see how each provider does.", self)
        self.empty.setStyleSheet("color: palette(placeholder-text); font-style: italic;")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.heading)
        layout.addWidget(self.empty)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.note)
        self.table.hide()
        model.opened.connect(self._on_opened)
        model.closed.connect(self._on_closed)
        model.changed.connect(self._on_changed)
        if model.store is not None:
            self._on_opened(model.store)

    def rows(self) -> list[dict]:
        return [self.table.model.row(i) for i in range(self.table.model.rowCount())]

    # ----- the read cycle --------------------------------------------------------------------
    def _on_opened(self, store) -> None:
        self._reading = store.reader()
        self.request()

    def _on_closed(self) -> None:
        self.reader.cancel()
        self._reading = None
        self.table.set_rows([])
        self.table.hide()
        self.empty.show()

    def _on_changed(self, changes: Changes) -> None:
        if self._reading is not None and changes.touches(*TABLES):
            self.request(paced=True)

    def request(self, *, paced: bool = False) -> None:
        reading = self._reading
        if reading is None:
            return

        def read(_cancel):
            from workbench.core.project.provider_stats import provider_stats

            return [display_row(s) for s in provider_stats(reading)]

        self.reader.load(read, self._apply, cleanup=reading.close_connection, paced=paced)

    def _apply(self, rows: list[dict]) -> None:
        self.refresh_count += 1
        self.table.set_rows(rows)
        self.table.setVisible(bool(rows))
        self.empty.setVisible(not rows)

    def _decorate(self, row: dict, key: str, role: int) -> object:
        if role == Qt.ItemDataRole.ForegroundRole:
            if key == "valid" and row["_rate"] is not None and row["_rate"] < LOW_VALID:
                return theme.colour("warning")
            if key == "flags" and row["_flagged"]:
                return theme.colour("warning")
            if key == "cost" and row["cost"].startswith("unknown"):
                return theme.colour("muted")
        if role == Qt.ItemDataRole.ToolTipRole and key in ("provider", "model"):
            return row["_model_tip"]
        if role == Qt.ItemDataRole.ToolTipRole and key in ("valid", "cost"):
            return row["_tip"]
        if role == Qt.ItemDataRole.ToolTipRole and key == "flags" and row["_flagged"]:
            return ("; ".join(f"{FLAG_LABELS.get(k, k)}: {n}" for k, n in row["_flag_counts"].items())
                    + " (calls; rubber stamps count voters). The Trace Inspector's Quality filter lists them.")
        return None
