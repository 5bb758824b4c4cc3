"""A quiet mark that says a panel's data is being re-read, or could not be.

While a writer holds the project's lock a panel keeps showing its last data; this small grey
"updating…" tells the user that newer data is on its way, without a spinner or a dialog. It
follows a ``Reader``'s ``busy_changed``, which fires only after a delay, so fast reads never
flicker it. When a read fails the mark turns into "⚠ not updated" (the reason in its tooltip)
until the next read ends well: the data shown stays, and so does the hint that it may be old.
"""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWidget

from workbench.services.reads import Reader

UPDATING = "updating…"
NOT_UPDATED = "⚠ not updated"


class UpdatingMark(QLabel):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(UPDATING, parent)
        self.setObjectName("updatingMark")
        self.setStyleSheet("color: palette(placeholder-text);")
        self._failure = ""
        self.hide()

    def watch(self, reader: Reader) -> None:
        reader.busy_changed.connect(self._on_busy_changed)

    @property
    def failure(self) -> str:
        return self._failure

    def show_failure(self, message: str) -> None:
        self._failure = message
        self.setText(NOT_UPDATED)
        self.setToolTip(f"The last read failed, so this may be out of date:\n{message}")
        self.show()

    def clear_failure(self) -> None:
        """The newest read ended well: forget any earlier failure."""
        if self._failure:
            self._failure = ""
            self.setText(UPDATING)
            self.setToolTip("")
            self.hide()

    def _on_busy_changed(self, busy: bool) -> None:
        if busy:
            self.setText(UPDATING)
            self.setToolTip("Reading newer data; what you see stays until it arrives.")
            self.show()
        elif self._failure:
            self.show_failure(self._failure)
        else:
            self.hide()
