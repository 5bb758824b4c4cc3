"""The four resonance tiers of the Resonant Consensus Protocol, named once: their names in result
order (SPEC §1 "Order of results"), how they are written, and their glyphs and plot symbols.

RCP classifies into them (its rule lives in ``rcp.classify`` only); the findings protocol can take
its findings from an RCP run's tiers; the GUI draws them. Everyone reads them from here. Their
colours are the theme's (``ui.theme``, UI.md), by these names.
"""

from __future__ import annotations

TIERS = ("positive_consensus", "positive_polar", "negative_polar", "negative_consensus")
UNCLASSIFIED = "unclassified"  # an artifact nobody could vote on: no tier (SPEC §1)
LABELS = {"positive_consensus": "positive consensus", "positive_polar": "positive polar",
          "negative_polar": "negative polar", "negative_consensus": "negative consensus",
          UNCLASSIFIED: "unclassified"}
SHORT_LABELS = {"positive_consensus": "pos. consensus", "positive_polar": "pos. polar",
                "negative_polar": "neg. polar", "negative_consensus": "neg. consensus", UNCLASSIFIED: "unclassified"}
GLYPHS = {"positive_consensus": "●", "positive_polar": "▲", "negative_polar": "▽", "negative_consensus": "■",
          UNCLASSIFIED: "○"}
SYMBOLS = {"positive_consensus": "o", "positive_polar": "t1", "negative_polar": "t", "negative_consensus": "s"}
# An artifact that persuaded the other cluster (SPEC §1 "persuasion"): its kind's glyph and symbol.
KINDS = ("accelerator", "mitigator")
KIND_GLYPHS = {"accelerator": "★", "mitigator": "◆"}
KIND_SYMBOLS = {"accelerator": "star", "mitigator": "d"}


def label(tier: str | None, short: bool = False) -> str:
    """``"● positive consensus"``: a tier's glyph and name, as lists and legends show it."""
    if not tier:
        return ""
    names = SHORT_LABELS if short else LABELS
    return f"{GLYPHS.get(tier, '')} {names.get(tier, tier.replace('_', ' '))}".strip()
