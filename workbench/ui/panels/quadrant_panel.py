"""Quadrant: the 2×2 resonance quadrant of the Resonant Consensus Protocol."""

from workbench.core.project import overview
from workbench.ui.panels.base import SummaryPanel


class QuadrantPanel(SummaryPanel):
    TITLE = "Quadrant"
    OBJECT_NAME = "quadrantPanel"
    SUMMARY = "The 2×2 quadrant: each artifact placed by its reference- and opposing-cluster approval."
    TOPIC = "quadrant"
    TABLES = overview.tables(TOPIC)
