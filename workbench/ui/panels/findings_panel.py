"""Findings & Reports: Consensus Server findings and CONS questions with their verdicts."""

from workbench.ui.panels.base import SummaryPanel


class FindingsPanel(SummaryPanel):
    TITLE = "Findings & Reports"
    OBJECT_NAME = "findingsPanel"
    SUMMARY = "Findings and their confirm/challenge votes, CONS verdicts, conflicts and escalations."
    TABLES = ("findings", "finding_votes", "cons_questions", "cons_ballots", "cons_conflicts", "cons_escalations")
    COUNTS = (("findings", "findings", None),
              ("finding votes", "finding_votes", None),
              ("CONS questions", "cons_questions", None),
              ("open escalations to a human", "cons_escalations", "status = 'open'"))
