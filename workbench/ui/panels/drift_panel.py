"""Drift & Convergence: ARM's convergence and per-agent confidence drift."""

from workbench.core.project import overview
from workbench.ui.panels.base import SummaryPanel


class DriftPanel(SummaryPanel):
    TITLE = "Drift & Convergence"
    OBJECT_NAME = "driftPanel"
    SUMMARY = "Round-1 convergence (Jaccard, TF-IDF) and each agent's confidence drift into round 2."
    TOPIC = "drift"
    TABLES = overview.tables(TOPIC)
