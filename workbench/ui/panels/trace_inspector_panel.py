"""Trace Inspector: every field of every agent trace, for auditors."""

from workbench.ui.panels.base import SummaryPanel


class TraceInspectorPanel(SummaryPanel):
    TITLE = "Trace Inspector"
    OBJECT_NAME = "traceInspectorPanel"
    SUMMARY = "Every field of every agent trace, with the exact request and raw reply behind it."
    TABLES = ("traces", "llm_calls", "artifacts", "votes")
    COUNTS = (("agent traces", "traces", None),
              ("traces that failed to parse", "traces", "ok = 0"),
              ("artifacts", "artifacts", None),
              ("votes", "votes", None),
              ("invalid or missing votes", "votes", "status != 'valid'"))
