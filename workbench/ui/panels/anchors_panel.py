"""Anchors & Restoration: Resonance Echo markers, verifications and restorations."""

from workbench.core.project import overview
from workbench.ui.panels.base import SummaryPanel


class AnchorsPanel(SummaryPanel):
    TITLE = "Anchors & Restoration"
    OBJECT_NAME = "anchorsPanel"
    SUMMARY = "Resonance markers per agent, every verification, and each restoration step by step."
    TOPIC = "anchors"
    # The markers and seeds it will show per agent, besides the tables its counts read.
    TABLES = (*overview.tables(TOPIC), "echo_markers", "echo_session_seeds")
