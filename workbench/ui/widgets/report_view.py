"""ReportView: one run's report, rendered, with Export .md / .html / .jsonl / .csv.

A thin shell over the core: the report is :func:`workbench.core.project.export.to_markdown`,
shown through :func:`workbench.core.report_md.body_html` in a QTextBrowser (every text escaped,
so model output never becomes markup, and links are not followed). Each Export button asks for a
path (:func:`workbench.ui.prompts.export_path`, which tests patch) and writes
:func:`~workbench.core.project.export.export_bytes`, the function ``rwb export`` calls, so a
file saved here equals the CLI's byte for byte.

Every read and write runs off the GUI thread through a :class:`Reader` on the model's read pool
(``ProjectModel.reads``), each with its own connection, closed after it. The view re-reads when
a change touches the shown run.
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QTextBrowser, QVBoxLayout, QWidget

from workbench.services.reads import Reader
from workbench.services.workers import JobError

FORMATS = ("md", "html", "jsonl", "csv")
# the tables a run's report reads: a change to one of them (for this run) re-reads it
TABLES = ("runs", "llm_calls", "artifacts", "votes", "finding_votes", "findings", "cons_questions", "cons_ballots",
          "cons_conflicts", "cons_escalations", "traces", "echo_anchors", "echo_verifications",
          "echo_restorations", "protocol_records", "audit_notes")  # protocol_records: a plugin's own records


class ReportView(QWidget):
    """Shows ``run_id``'s report; ``exported(path)`` after a file is written, ``failed(message)``."""

    exported = Signal(object)
    failed = Signal(str)
    shown = Signal(str)  # the run whose report is now on screen

    def __init__(self, model, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("ReportView")
        self.model = model
        self.run_id: str | None = None
        self.markdown = ""  # what is on screen, as Markdown
        self._stale = False  # the run changed while the view was hidden: read when it shows
        self._reader = Reader(model.reads, self, name="read report")
        self._writer = Reader(model.reads, self, name="export report")

        self.browser = QTextBrowser(self)
        self.browser.setObjectName("report_browser")
        self.browser.setOpenLinks(False)
        self.browser.setOpenExternalLinks(False)
        self.status = QLabel("", self)
        self.status.setObjectName("report_status")
        self.buttons: dict[str, QPushButton] = {}
        bar = QHBoxLayout()
        for fmt in FORMATS:
            button = QPushButton(f"Export .{fmt}", self)
            button.setObjectName(f"export_{fmt}")
            button.setToolTip({"md": "the report in Markdown", "html": "the report as a web page",
                               "jsonl": "every call, vote and trace, one JSON record a line, exact values",
                               "csv": "every call, vote and trace as a table, exact values"}[fmt])
            button.setEnabled(False)
            button.clicked.connect(lambda _checked=False, f=fmt: self._on_export_clicked(f))
            bar.addWidget(button)
            self.buttons[fmt] = button
        bar.addStretch(1)
        bar.addWidget(self.status)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.browser, 1)
        self._show_empty()

        model.changed.connect(self._on_changed)
        model.closed.connect(self._on_closed)

    # ----- commands ---------------------------------------------------------------------------
    def set_run(self, run_id: str | None) -> None:
        """Show ``run_id``'s report (read in the background); None clears the view."""
        self.run_id = run_id
        self._stale = False
        if run_id is None or self.model.store is None:
            self._reader.cancel()
            self._show_empty()
            return
        self._read()

    def export(self, fmt: str, path: Path | str) -> None:
        """Write the shown run's export as ``fmt`` to ``path`` (in the background)."""
        if self.run_id is None or self.model.store is None:
            return
        run_id, target = self.run_id, Path(path)
        reading = self.model.store.reader()

        def job(_cancel: threading.Event) -> Path:
            from workbench.core.project.export import export_bytes

            data = export_bytes(reading, run_id, fmt)
            part = target.with_name(target.name + ".part")
            part.write_bytes(data)
            part.replace(target)  # in one step: never half a file
            return target

        self.status.setText(f"Exporting .{fmt}…")
        self._writer.load(job, self._on_exported, on_failed=self._on_export_failed,
                          cleanup=reading.close_connection)

    def shutdown(self) -> None:
        self._reader.shutdown()
        self._writer.shutdown()

    # ----- reading ----------------------------------------------------------------------------
    def _read(self, *, paced: bool = False) -> None:
        run_id, reading, shown = self.run_id, self.model.store.reader(), self.markdown

        def load(_cancel: threading.Event) -> tuple[str, str, str | None]:
            from workbench.core.project.export import to_markdown
            from workbench.core.report_md import STYLE, body_html

            markdown = to_markdown(reading, run_id)
            # The page is built here, off the GUI thread (150 ms for a long report), and only
            # when the report changed.
            page = None if markdown == shown else \
                f"<html><head><style>{STYLE}</style></head><body>{body_html(markdown)}</body></html>"
            return run_id, markdown, page

        self._reader.load(load, self._on_loaded, on_failed=self._on_read_failed, cleanup=reading.close_connection,
                          paced=paced)

    def _on_loaded(self, result: tuple[str, str, str | None]) -> None:
        run_id, markdown, page = result
        if run_id != self.run_id:
            return
        if markdown != self.markdown:
            if page is None:  # the view was emptied since the read began: build it here, once
                from workbench.core.report_md import STYLE, body_html

                page = f"<html><head><style>{STYLE}</style></head><body>{body_html(markdown)}</body></html>"
            scroll = self.browser.verticalScrollBar().value()
            self.markdown = markdown
            self.browser.setHtml(page)
            self.browser.verticalScrollBar().setValue(scroll)
        for button in self.buttons.values():
            button.setEnabled(True)
        self.status.setText("")
        self.shown.emit(run_id)

    def _on_read_failed(self, error: JobError) -> None:
        if not self.markdown:  # nothing of this run on screen: say why instead of the placeholder
            self.browser.setPlainText(f"Could not read the report of {self.run_id}: {error.message}")
        self.status.setText("not updated")
        self.status.setToolTip(f"Could not read the report: {error.message}")

    def _on_changed(self, changes) -> None:
        if self.run_id is None or self.model.store is None or not changes.touches(*TABLES):
            return
        if changes.runs and self.run_id not in changes.runs:
            return
        if not self.isVisible():
            # A hidden report (another tab, a closed dock) is not rebuilt at every change of a
            # live run: laying out a long report costs the window 40 to 70 ms each time.
            self._stale = True
            return
        self._read(paced=True)

    def showEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        if self._stale and self.run_id is not None and self.model.store is not None:
            self._stale = False
            self._read()

    def _on_closed(self) -> None:
        self.run_id = None
        self._reader.cancel()
        self._show_empty()

    def _show_empty(self) -> None:
        self.markdown = ""
        self.browser.setPlainText("Choose a run to see its report.")
        for button in self.buttons.values():
            button.setEnabled(False)

    # ----- exporting --------------------------------------------------------------------------
    def _on_export_clicked(self, fmt: str) -> None:
        from workbench.ui import prompts

        path = prompts.export_path(self, fmt, "", self.run_id or "report")
        if path is not None:
            self.export(fmt, path)

    def _on_exported(self, path: Path) -> None:
        self.status.setText(f"Saved {path.name}")
        self.exported.emit(path)

    def _on_export_failed(self, error: JobError) -> None:
        message = f"Could not export: {error.message}"
        self.status.setText(message)
        self.failed.emit(message)

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt)
        self.shutdown()
        super().closeEvent(event)
