"""Studies for the GUI: check a design, estimate it, and run or resume a study on a worker thread.

A thin Qt shell over :class:`~workbench.services.runs.studies.StudyRunner`, as
:class:`~workbench.services.runs.service.RunService` is over the Runner: the study runs on the
service's own thread with its own connection to the project file; progress comes back as a
queued signal (coalesced: a fast study cannot flood the event loop); Cancel stops it at the next
call boundary and leaves it resumable (``rwb study resume`` or :meth:`StudyService.resume`).
The results reach the Studies panel through the model's poll of ``study_results``.

:func:`check_design` is what the design view calls as it is edited (off the GUI thread): the
same ``parse_study`` ``rwb study run`` refuses with, then the estimate and guardrail warnings of
``rwb study run --estimate``, so the window and the CLI say the same.

Signals (on the GUI thread): ``started(study_id, {arm: results stored})``, ``progressed(StudyProgress)``,
``finished(summary)`` (``rwb study run``'s summary), ``failed(message)``, ``running_changed(bool)``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal, Slot

from workbench.core.errors import WorkbenchError
from workbench.services.workers import JobError, Worker, WorkerPool

if TYPE_CHECKING:
    from workbench.core.project.store import Store
    from workbench.services.project_model import ProjectModel
    from workbench.services.runs.studies import StudyProgress


def check_design(document: dict) -> dict:
    """A study document as the view edits it: ``{"error": one line}`` as ``rwb study run`` would
    refuse it, else its estimate (``rwb study run --estimate``) with the design's ``warnings``."""
    from workbench.core.studies.spec import parse_study
    from workbench.services.runs.study_checks import design_warnings, estimate_study

    try:
        study = parse_study(document)
    except WorkbenchError as exc:
        return {"error": str(exc)}
    return {**estimate_study(study), "warnings": design_warnings(study)}


class StudyService(QObject):
    started = Signal(str, dict)  # study id, {arm: results stored so far}
    progressed = Signal(object)  # StudyProgress
    finished = Signal(dict)  # the study's summary
    failed = Signal(str)
    running_changed = Signal(bool)

    _started = Signal(str, dict)  # from the study's thread
    _progress_ready = Signal()  # from the study's thread

    def __init__(self, model: ProjectModel, parent: QObject | None = None, *, gateway=None):
        super().__init__(parent)
        self.model = model
        self.gateway = gateway
        self._pool = WorkerPool(self, max_threads=1)
        self._worker: Worker | None = None
        self._lock = threading.Lock()
        self._latest: StudyProgress | None = None
        self._pending = False
        self._closed = False
        self.study_id: str | None = None
        self._started.connect(self._on_started)
        self._progress_ready.connect(self._on_progress_ready)
        model.closed.connect(self.cancel)

    @property
    def running(self) -> bool:
        return self._worker is not None

    def start(self, document: dict) -> bool:
        """Create the study ``document`` describes in the open project and run it."""

        def begin(store: Store, runner) -> str:
            from workbench.core.studies.spec import parse_study
            from workbench.services.runs.studies import check_before_spending
            from workbench.services.runs.study_checks import design_warnings

            study = parse_study(document)
            check_before_spending(study)
            return runner.create(study, warnings=design_warnings(study))

        return self._launch("run study", begin)

    def resume(self, study_id: str) -> bool:
        """Go on where a cancelled (or killed) study stopped."""

        def begin(store: Store, _runner) -> str:
            from workbench.services.runs.owners import mark_stale_runs
            from workbench.services.runs.studies import check_before_spending, load

            mark_stale_runs(store)
            check_before_spending(load(store, study_id))
            return study_id

        return self._launch(f"resume {study_id}", begin)

    def cancel(self) -> None:
        if self._worker is not None:
            self._worker.cancel_event.set()

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        with self._lock:
            self._closed = True
        self.cancel()
        return self._pool.wait(timeout_ms)

    # ----- the study's thread ------------------------------------------------------------------
    def _launch(self, name: str, begin) -> bool:
        store = self.model.store
        if self._closed:
            return False
        if self._worker is not None:
            self.failed.emit("A study is already running. Cancel it or wait for it to finish.")
            return False
        if store is None:
            self.failed.emit("No project is open.")
            return False
        if store.read_only:
            self.failed.emit("This project is open read-only, so it cannot record a study.")
            return False

        def job(cancel: threading.Event) -> dict:
            from workbench.core.project import studies as rows
            from workbench.services.runs.runner import Runner
            from workbench.services.runs.studies import StudyRunner

            try:
                runner = StudyRunner(store, Runner(store, gateway=self.gateway, cancel=cancel),
                                     on_progress=self._report, cancel=cancel)
                study_id = begin(store, runner)
                done = {name: c.results for name, c in rows.arm_counts(store, study_id).items()}
                self._emit(self._started, study_id, done)
                return runner.run(study_id)
            finally:
                store.close_connection()

        self._latest, self._pending = None, False
        self._worker = self._pool.start(name, job, self._on_finished, self._on_failed)
        self.running_changed.emit(True)
        return True

    def _emit(self, signal, *args) -> None:
        with self._lock:
            if not self._closed:
                signal.emit(*args)

    def _report(self, progress: StudyProgress) -> None:
        with self._lock:
            self._latest = progress
            if self._pending or self._closed:
                return  # the GUI has not taken the previous one yet: it takes this one
            self._pending = True
            self._progress_ready.emit()

    # ----- the GUI thread ----------------------------------------------------------------------
    @Slot(str, dict)
    def _on_started(self, study_id: str, done: dict) -> None:
        self.study_id = study_id
        self.started.emit(study_id, done)

    @Slot()
    def _on_progress_ready(self) -> None:
        with self._lock:
            progress, self._latest, self._pending = self._latest, None, False
        if progress is not None:
            self.progressed.emit(progress)

    def _on_finished(self, summary: object) -> None:
        self._on_progress_ready()
        self._worker = None
        self.running_changed.emit(False)
        self.finished.emit(dict(summary) if isinstance(summary, dict) else {})

    def _on_failed(self, error: JobError) -> None:
        self._worker = None
        self.running_changed.emit(False)
        if isinstance(error.exception, WorkbenchError):
            self.failed.emit(f"The study could not run: {error.message}")
        else:
            self.failed.emit(f"The study stopped on an unexpected error: {error.message}")
