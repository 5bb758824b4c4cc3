"""What every panel shares: a title, the shared ProjectModel, and refresh-on-change.

A panel never calls another panel. It listens to the model and refreshes when a change touches
one of the tables it shows (``TABLES``). Connections are to bound methods and are dropped when
the panel is destroyed, so no callback reaches a deleted widget.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from workbench.core.project.changes import Changes
from workbench.core.project.store import Store
from workbench.services.project_model import ProjectModel


class Panel(QWidget):
    TITLE = "Panel"
    OBJECT_NAME = "panel"
    SUMMARY = ""  # one line: what this panel is for
    TABLES: tuple[str, ...] = ()  # the tables whose changes make this panel refresh

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName(self.OBJECT_NAME)
        self.model = model
        self.refresh_count = 0  # how often the panel refreshed: tests read it

        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(8, 8, 8, 8)
        heading = QLabel(self.SUMMARY, self)
        heading.setWordWrap(True)
        heading.setObjectName("panelSummary")
        heading.setStyleSheet("color: palette(placeholder-text);")
        self._layout.addWidget(heading)
        self.empty_label = QLabel("No project is open. Use File ▸ New or File ▸ Open.", self)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        self._layout.addWidget(self.empty_label)

        model.opened.connect(self._on_opened)
        model.closed.connect(self._on_closed)
        model.changed.connect(self._on_changed)

    @property
    def store(self) -> Store | None:
        return self.model.store

    def _on_opened(self, _store: object) -> None:
        self.empty_label.hide()
        self._refresh()

    def _on_closed(self) -> None:
        self.empty_label.show()
        self.clear()

    def _on_changed(self, changes: Changes) -> None:
        if self.store is not None and changes.touches(*self.TABLES):
            self._refresh()

    def _refresh(self) -> None:
        self.refresh_count += 1
        self.refresh()

    # Subclasses fill these in.
    def refresh(self) -> None:
        """Re-read what this panel shows from the store (cheap reads only)."""

    def clear(self) -> None:
        """Show the no-project state."""


class SummaryPanel(Panel):
    """A panel that, until its full view lands, shows what the project holds for it."""

    # (label, table, optional WHERE clause) for each line of the summary.
    COUNTS: tuple[tuple[str, str, str | None], ...] = ()

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(model, parent)
        self.summary = QLabel(self)
        self.summary.setObjectName("panelCounts")
        self.summary.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self._layout.addWidget(self.summary, 1)
        self.summary.hide()

    def counts(self) -> dict[str, int]:
        store = self.store
        assert store is not None
        return {label: store.count(table, where) for label, table, where in self.COUNTS}

    def refresh(self) -> None:
        lines = "".join(f"<tr><td align='right'><b>{n:,}</b></td><td>&nbsp;{label}</td></tr>"
                        for label, n in self.counts().items())
        self.summary.setText(f"<table>{lines}</table>")
        self.summary.show()

    def clear(self) -> None:
        self.summary.hide()
