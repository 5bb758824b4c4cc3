"""Live Run: protocol rounds as they happen, call by call."""

from workbench.ui.panels.base import SummaryPanel


class LiveRunPanel(SummaryPanel):
    TITLE = "Live Run"
    OBJECT_NAME = "liveRunPanel"
    SUMMARY = "Protocol runs, round by round and call by call, as they happen."
    TABLES = ("runs", "rounds", "llm_calls")
    COUNTS = (("runs", "runs", None),
              ("runs in progress", "runs", "status = 'running'"),
              ("interrupted runs (resumable)", "runs", "status = 'interrupted'"),
              ("LLM calls recorded", "llm_calls", None),
              ("failed calls", "llm_calls", "status != 'ok'"))
