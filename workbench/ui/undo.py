"""Undoable edits of the project: a panel's writes, one after another, each a QUndoCommand.

    queue = EditQueue(model, self)
    edit(self.history, queue, "Rename cluster", redo=lambda s: rename(s, 1, "b"),
         undo=lambda s: rename(s, 1, "a"))

:class:`EditCommand` is a QUndoCommand whose ``redo`` and ``undo`` are writes
(``fn(store) -> Changes``) run through ``ProjectModel.write``, off the GUI thread. Pushing it on a
QUndoStack applies it; with no stack (``history`` None, as in a panel outside the main window)
:func:`edit` just applies it. The panel's writes go through one :class:`EditQueue`, so they run
in the order given (an undo never overtakes the edit it undoes) even on a pool of several
threads.

A write that fails (an :class:`InputError`: the project changed meanwhile, a name was taken)
writes nothing; its command is taken off the stack (when it is the last one) so Undo never tries
to invert an edit that did not happen, and the queue reports the error through ``failed``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from workbench.core.errors import WorkbenchError
from workbench.core.project.changes import Changes
from workbench.core.project.store import Store
from workbench.services.project_model import ProjectModel

Write = Callable[[Store], Changes]


@dataclass
class _Failure:
    error: BaseException


class EditQueue(QObject):
    """Runs writes one at a time, in order, through ``ProjectModel.write``."""

    failed = Signal(str)  # a message for the user
    idle_changed = Signal(bool)

    def __init__(self, model: ProjectModel, parent: QObject | None = None):
        super().__init__(parent)
        self.model = model
        self._queue: deque = deque()
        self._busy = False

    @property
    def idle(self) -> bool:
        return not self._busy and not self._queue

    def clear(self) -> None:
        """Drop the writes not yet started (the project they were made for was closed)."""
        self._queue.clear()
        if not self._busy:
            self.idle_changed.emit(True)

    def run(self, name: str, fn: Write, on_done: Callable[[Changes], None] | None = None,
            on_failed: Callable[[BaseException], None] | None = None) -> None:
        was_idle = self.idle
        self._queue.append((name, fn, on_done, on_failed))
        if was_idle:
            self.idle_changed.emit(False)
        self._next()

    def _next(self) -> None:
        if self._busy:
            return
        if not self._queue:
            self.idle_changed.emit(True)
            return
        name, fn, on_done, on_failed = self._queue.popleft()

        def job(store: Store) -> object:
            try:
                return fn(store)
            except Exception as exc:  # reported by the queue, in the panel, not as a crash
                return _Failure(exc)

        def finished(result: object) -> None:
            self._busy = False
            if isinstance(result, _Failure):
                self._report(result.error, on_failed)
            elif on_done is not None:
                on_done(result if isinstance(result, Changes) else Changes())
            self._next()

        self._busy = True
        try:
            self.model.write(name, job, finished)
        except WorkbenchError as exc:  # no project open
            self._busy = False
            self._report(exc, on_failed)
            self._next()

    def _report(self, error: BaseException, on_failed: Callable[[BaseException], None] | None) -> None:
        if on_failed is not None:
            on_failed(error)
        self.failed.emit(str(error) if isinstance(error, WorkbenchError) else f"{type(error).__name__}: {error}")


class EditCommand(QUndoCommand):
    """One undoable edit: ``redo`` and ``undo`` are writes (``fn(store) -> Changes``)."""

    def __init__(self, queue: EditQueue, text: str, redo: Write, undo: Write, *,
                 on_redone: Callable[[Changes], None] | None = None, merge: tuple | None = None):
        super().__init__(text)
        self.queue = queue
        self._redo, self._undo = redo, undo
        self._on_redone = on_redone
        self.merge_key = merge  # consecutive commands with the same key merge (typing a persona)
        self.failed = False
        self.stack: QUndoStack | None = None

    def id(self) -> int:  # noqa: A003 (Qt API)
        return 1 if self.merge_key is not None else -1

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802 (Qt API)
        if not isinstance(other, EditCommand) or other.merge_key != self.merge_key or self.failed or other.failed:
            return False
        # This command's undo still restores the state before the first edit; redo does the last.
        self._redo = other._redo
        self.setText(other.text())
        return True

    def redo(self) -> None:
        self.failed = False
        self.queue.run(self.text(), self._redo, self._redone, self._redo_failed)

    def undo(self) -> None:
        if self.failed:
            return
        self.queue.run(f"Undo {self.text()}", self._undo)

    def _redone(self, changes: Changes) -> None:
        if self._on_redone is not None:
            self._on_redone(changes)

    def _redo_failed(self, _error: BaseException) -> None:
        self.failed = True
        stack = self.stack
        try:
            if stack is not None and stack.index() > 0 and stack.command(stack.index() - 1) is self:
                self.setObsolete(True)
                stack.undo()  # an obsolete command is dropped, not undone
        except RuntimeError:  # the stack or the command was deleted meanwhile
            pass


_kept: deque = deque(maxlen=2000)  # Python owns the wrappers of the commands it pushed


def edit(history: QUndoStack | None, queue: EditQueue, text: str, redo: Write, undo: Write, *,
         on_redone: Callable[[Changes], None] | None = None, merge: tuple | None = None) -> EditCommand | None:
    """Apply an edit: pushed on ``history`` (which applies it), or applied directly without one."""
    if history is None:
        queue.run(text, redo, on_redone)
        return None
    command = EditCommand(queue, text, redo, undo, on_redone=on_redone, merge=merge)
    command.stack = history
    _kept.append(command)
    history.push(command)
    return command
