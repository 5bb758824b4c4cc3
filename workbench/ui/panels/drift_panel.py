"""Drift & Convergence: ARM's convergence and per-agent confidence drift."""

from workbench.ui.panels.base import SummaryPanel


class DriftPanel(SummaryPanel):
    TITLE = "Drift & Convergence"
    OBJECT_NAME = "driftPanel"
    SUMMARY = "Round-1 convergence (Jaccard, TF-IDF) and each agent's confidence drift into round 2."
    TABLES = ("runs", "traces")
    COUNTS = (("ARM runs", "runs", "protocol = 'arm'"),
              ("imported ARM traces", "runs", "protocol = 'arm' AND source = 'import'"),
              ("round-2 traces", "traces", "round_no = 2"))
