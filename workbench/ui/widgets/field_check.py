"""Inline checks next to a field: a coloured border on the field and a one-line message under it.

Every form of the Clusters & Agents panel (and the provider dialog) shows what is wrong where
it is wrong, as PersonaEditor does: an error (a run would refuse it) in red with ✖, a warning
(legal but doubtful, SPEC §1) in amber with ▲. A glyph always goes with the colour.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget

FALLBACK = {"error": "#b3261e", "warning": "#8a5300", "ok": "#1b6e20"}
GLYPH = {"error": "✖", "warning": "▲", "ok": "✔"}


def css(level: str) -> str:
    """The theme's colour for ``level`` ("error", "warning", "ok")."""
    try:
        from workbench.ui import theme

        return theme.css(level)
    except Exception:  # no theme module, or no application yet
        return FALLBACK[level]


def mark(widget: QWidget, level: str | None) -> None:
    """A 2 px border in the level's colour around ``widget``; None clears it."""
    widget.setStyleSheet(f"border: 2px solid {css(level)};" if level in ("error", "warning") else "")


class FieldMessage(QLabel):
    """One line (wrapped when long) under a field: its error or warning, or nothing."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWordWrap(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.level: str | None = None
        self.hide()

    def show_message(self, level: str | None, text: str = "") -> None:
        self.level = level if text else None
        if not text or level is None:
            self.setText("")
            self.hide()
            return
        self.setText(f"{GLYPH.get(level, '')} {text}")
        self.setStyleSheet(f"color: {css(level)};" + (" font-weight: bold;" if level == "error" else ""))
        self.setToolTip(text)
        self.show()


def worst(levels: list[str]) -> str | None:
    return "error" if "error" in levels else "warning" if "warning" in levels else None
