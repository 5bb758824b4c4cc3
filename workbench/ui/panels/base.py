"""What every panel shares: a title, the shared ProjectModel, and reads off the GUI thread.

A panel never calls another panel, and never reads SQLite on the GUI thread. It listens to
the model and, when a change touches a table it shows (``TABLES``), asks its :class:`Reader` for
a new view: :meth:`Panel.load` runs on a worker thread with a read-only connection and returns a
plain view model; :meth:`Panel.apply` puts it on screen. A stale view (a newer one was asked
for meanwhile) is dropped. While a read waits on a writer's lock, the panel keeps its last view
and shows a quiet "updating…" mark.

``load`` is told what changed since the view on screen was read (``changes``; None means
everything, as on opening), so a panel can re-read only what concerns it. Changes that arrive
while a read is in flight are merged into the next read, never lost.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from workbench.core.project.changes import Changes
from workbench.core.project.store import Store
from workbench.services.project_model import ProjectModel
from workbench.services.reads import Reader
from workbench.services.workers import JobError


class _PanelLayout(QVBoxLayout):
    """A panel's layout, whose height for a width is its *least* height for that width.

    The dock holds the panel in a resizable scroll area, which asks a layout with wrapped text
    in it (any word-wrapped label) for its height for the viewport's width and never shows the
    panel shorter. Qt's answer is the *preferred* height (every chart and list at full size), so
    the dock scrolled at any size; the least height (the lists' rows, the charts' least size,
    the wrapped text at that width) lets the panel fill the dock, and scroll only below it."""

    _asking = False  # QBoxLayout.minimumHeightForWidth fills its cache through heightForWidth

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt API)
        if self._asking:
            return super().heightForWidth(width)
        self._asking = True
        try:
            return super().minimumHeightForWidth(width)
        finally:
            self._asking = False


class Panel(QWidget):
    TITLE = "Panel"
    OBJECT_NAME = "panel"
    SUMMARY = ""  # one line: what this panel is for
    TABLES: tuple[str, ...] = ()  # the tables whose changes make this panel re-read
    # The window's undo stack (a QUndoStack) for configuration edits, set by MainWindow after it
    # creates the panels and cleared by it when the project changes; None outside a window. (A
    # panel that already uses the name for something of its own keeps it.)
    history = None

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName(self.OBJECT_NAME)
        self.model = model
        self.refresh_count = 0  # how often a new view was applied: tests read it
        self._floors_held = False  # the lists' and panes' least sizes, held from the first show
        self._reading: Store | None = None  # the open project, read-only, for the read worker
        self._due_all = False  # a full read is due (the project was just opened)
        self._due = Changes()  # changes not yet covered by the view on screen
        self.reader = Reader(model.reads, self, name=f"read {self.OBJECT_NAME}")
        self.reader.busy_changed.connect(self._on_busy_changed)

        self._layout = _PanelLayout(self)
        self._layout.setContentsMargins(8, 8, 8, 8)
        header = QHBoxLayout()
        heading = QLabel(self.SUMMARY, self)
        heading.setWordWrap(True)
        heading.setObjectName("panelSummary")
        heading.setStyleSheet("color: palette(placeholder-text);")
        header.addWidget(heading, 1)
        self.updating_mark = QLabel("updating…", self)
        self.updating_mark.setObjectName("updatingMark")
        self.updating_mark.setStyleSheet("color: palette(placeholder-text); font-style: italic; "
                                         "background: palette(window); padding: 0 4px;")
        self.updating_mark.setToolTip("The project is busy (another program is writing to it); "
                                      "what you see is the last view read.")
        self.updating_mark.hide()
        header.addWidget(self.updating_mark, 0, Qt.AlignmentFlag.AlignTop)
        self._layout.addLayout(header)
        self._header = header
        self.empty_label = QLabel("No project is open. Use File ▸ New or File ▸ Open.", self)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        self._layout.addWidget(self.empty_label)

        model.opened.connect(self._on_opened)
        model.closed.connect(self._on_closed)
        model.changed.connect(self._on_changed)

    def showEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        if not self._floors_held:  # every list keeps its rows, every splitter pane its text (dock_room)
            self._floors_held = True
            from workbench.ui.panels.dock_room import hold_rows

            hold_rows(self)

    @property
    def store(self) -> Store | None:
        """The open project (for its path and read-only state; reads go through ``load``)."""
        return self.model.store

    # ----- the read cycle ------------------------------------------------------------------
    def request(self, changes: Changes | None = None, *, paced: bool = False) -> None:
        """Ask for a new view: of everything (``None``) or after ``changes``. ``paced``: asked
        for by a change in the project, so it may wait for the reader's rest (services.reads)."""
        reading = self._reading
        if reading is None:
            return
        if changes is None:
            self._due_all = True
        else:
            self._due = self._due | changes
        due = None if self._due_all else self._due
        self.reader.load(lambda cancel: self.load(reading, due, cancel), self._on_loaded,
                         on_failed=self._on_load_failed, cleanup=reading.close_connection, paced=paced)

    def _on_opened(self, store: Store) -> None:
        self.empty_label.hide()
        self._reading = store.reader()
        self.request(None)

    def _on_closed(self) -> None:
        self.reader.cancel()
        self._reading = None
        self._due_all, self._due = False, Changes()
        self.updating_mark.hide()
        self.empty_label.show()
        self.clear()

    def _on_changed(self, changes: Changes) -> None:
        if self._reading is not None and changes.touches(*self.TABLES):
            self.request(changes, paced=True)

    def _on_loaded(self, view: object) -> None:
        # The newest read covered every change asked for so far: nothing is due any more.
        self._due_all, self._due = False, Changes()
        self.refresh_count += 1
        self.apply(view)

    def _on_load_failed(self, error: JobError) -> None:
        # The view on screen stays; say why it did not change (a lock held too long, say).
        self.updating_mark.setText("not updated")
        self.updating_mark.setToolTip(f"Could not read the project: {error.message}")
        self._show_mark(True)

    def _on_busy_changed(self, busy: bool) -> None:
        if busy:
            self.updating_mark.setText("updating…")
        self._show_mark(busy)

    def _show_mark(self, shown: bool) -> None:
        """The mark sits at the end of the summary line; a panel showing no summary line has no
        row for it, so it lies over the panel's top right corner instead: showing it never
        pushes the panel's content down (a layout that never creeps)."""
        mark, header = self.updating_mark, self._header
        summary = header.itemAt(0).widget() if header.count() else None
        in_row = header.indexOf(mark) >= 0
        floating = summary is None or not summary.isVisibleTo(self)
        if floating and in_row:
            header.removeWidget(mark)
        elif not floating and not in_row:
            header.addWidget(mark, 0, Qt.AlignmentFlag.AlignTop)
        if floating and shown:
            mark.adjustSize()
            mark.move(max(self.width() - mark.width() - 8, 0), 2)
            mark.raise_()
        mark.setVisible(shown)

    def refresh(self) -> None:
        """Re-read everything this panel shows (in the background)."""
        self.request(None)

    # ----- what subclasses fill in ---------------------------------------------------------
    def load(self, store: Store, changes: Changes | None, cancel: threading.Event) -> object:
        """Read this panel's view (on a worker thread; ``store`` is read-only). ``changes`` is
        None for a full read. Must not touch any widget."""
        return None

    def apply(self, view: object) -> None:
        """Show ``view`` (on the GUI thread)."""

    def clear(self) -> None:
        """Show the no-project state."""


class SummaryPanel(Panel):
    """A panel that, until its full view lands, shows what the project holds for it."""

    TOPIC = ""  # which counts (workbench.core.project.overview)

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(model, parent)
        self.summary = QLabel(self)
        self.summary.setObjectName("panelCounts")
        self.summary.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self._layout.addWidget(self.summary, 1)
        self.summary.hide()

    def load(self, store: Store, changes: Changes | None, cancel: threading.Event) -> dict[str, int]:
        from workbench.core.project import overview

        return overview.counts(store, self.TOPIC)

    def apply(self, counts: dict[str, int]) -> None:
        lines = "".join(f"<tr><td align='right'><b>{n:,}</b></td><td>&nbsp;{label}</td></tr>"
                        for label, n in counts.items())
        self.summary.setText(f"<table>{lines}</table>")
        self.summary.show()

    def clear(self) -> None:
        self.summary.hide()
