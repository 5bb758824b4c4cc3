"""Anchors & Restoration: Resonance Echo markers, verifications and restorations."""

from workbench.ui.panels.base import SummaryPanel


class AnchorsPanel(SummaryPanel):
    TITLE = "Anchors & Restoration"
    OBJECT_NAME = "anchorsPanel"
    SUMMARY = "Resonance markers per agent, every verification, and each restoration step by step."
    TABLES = ("echo_markers", "echo_anchors", "echo_verifications", "echo_restorations", "echo_session_seeds")
    COUNTS = (("active anchors", "echo_anchors", "active = 1"),
              ("verifications", "echo_verifications", None),
              ("failed verifications", "echo_verifications", "success = 0"),
              ("restoration steps", "echo_restorations", None))
