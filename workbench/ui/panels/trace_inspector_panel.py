"""Trace Inspector: every model call in the project, in one list that pages.

The list holds only the windows of rows it has shown, read off the GUI thread and sorted and
filtered in SQL, so a project of 200,000 calls opens as fast as one of 20. The detail view of a
call (every trace field, the fenced request and the raw reply) builds on this list.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QLabel, QWidget

from workbench.core.project import overview
from workbench.services.project_model import ProjectModel
from workbench.ui.panels.base import Panel
from workbench.ui.widgets.paged_table import PagedTable

CALL_COLUMNS = (("id", "#"), ("run_id", "Run"), ("agent_id", "Agent"), ("purpose", "Purpose"),
                ("status", "Status"), ("model", "Model"), ("latency_ms", "Latency (ms)"),
                ("total_tokens", "Tokens"), ("sim", "SIM"), ("reply", "Reply"))
GREY = QColor("#8a8a8a")  # invalid or failed: shown, never hidden


class TraceInspectorPanel(Panel):
    TITLE = "Trace Inspector"
    OBJECT_NAME = "traceInspectorPanel"
    SUMMARY = "Every field of every agent trace, with the exact request and raw reply behind it."
    TABLES = ("llm_calls", *overview.tables("traces"))

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(model, parent)
        self.summary = QLabel(self)
        self.summary.setObjectName("panelCounts")
        self.summary.setWordWrap(True)
        self._layout.addWidget(self.summary)
        self.calls = PagedTable(CALL_COLUMNS, model.reads, row_key=lambda row: row["id"],
                                placeholder="Filter calls by run, agent, purpose, status or model…", parent=self)
        self.calls.model.decorate = _decorate_call
        self._layout.addWidget(self.calls, 1)
        self.summary.hide()
        self.calls.hide()

    def load(self, store, changes, cancel) -> dict[str, int]:
        return overview.counts(store, "traces")

    def apply(self, counts: dict[str, int]) -> None:
        self.summary.setText(" · ".join(f"{n:,} {label}" for label, n in counts.items()))
        self.summary.show()
        self.calls.show()

    def _on_opened(self, store) -> None:
        super()._on_opened(store)
        reading = self._reading
        self.calls.set_source(_CallSource(reading), cleanup=reading.close_connection)

    def _on_changed(self, changes) -> None:
        super()._on_changed(changes)
        if self._reading is not None and changes.touches("llm_calls"):
            self.calls.refresh()

    def clear(self) -> None:
        self.calls.set_source(None)
        self.summary.hide()
        self.calls.hide()


class _CallSource:
    """Every call of the project, a window at a time (runs on the list's read worker)."""

    def __init__(self, store):
        self.store = store

    def count(self, query) -> int:
        from workbench.core.project import calls

        return calls.count_calls(self.store, query.filter_text)

    def fetch(self, query, offset: int, limit: int) -> list[dict]:
        from workbench.core.project import calls

        sort = {"sim": "simulated"}.get(query.sort_key or "id", query.sort_key or "id")
        rows = calls.call_window(self.store, offset=offset, limit=limit, sort=sort,
                                 descending=query.descending, text=query.filter_text)
        return [{"id": i, "run_id": run, "step_key": key, "agent_id": agent, "purpose": purpose,
                 "status": status, "provider": provider, "model": model,
                 "latency_ms": None if latency is None else round(latency), "total_tokens": tokens,
                 "sim": "SIM" if sim else "", "started_at": started, "reply": (reply or "").replace("\n", " ")}
                for i, run, key, agent, purpose, status, provider, model, latency, tokens, sim, started, reply
                in rows]


def _decorate_call(row: dict, key: str, role: int) -> object:
    if role == Qt.ItemDataRole.ForegroundRole and row["status"] not in ("ok",):
        return GREY
    if role == Qt.ItemDataRole.ToolTipRole and key in ("reply", "run_id"):
        return row[key]
    return None
