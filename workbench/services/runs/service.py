"""Live runs for the GUI: start, resume and cancel a protocol run, or a batch of runs, on a
worker thread.

A thin Qt shell over :class:`~workbench.services.runs.runner.Runner` (Orange3's pattern: the runner
is tested without any widget; this service only moves it off the GUI thread and turns its
callbacks into queued signals). At most one run (or batch) goes at a time. The runner's thread
opens its own connection to the project file and closes it when the run ends; its writes reach
the panels through the ProjectModel's ``data_version`` poll.

Commands: :meth:`RunService.start` (a saved configuration), :meth:`~RunService.start_config` (a
parsed one), :meth:`~RunService.start_document` (a SPEC §6 document, a batch or a single run),
:meth:`~RunService.start_batch`, :meth:`~RunService.resume`, :meth:`~RunService.resume_batch`,
:meth:`~RunService.cancel`. Its :attr:`~RunService.pacer` (services.runs.pace) sets a simulated run's
pace for a room to follow; Live Run's pace control and Next phase button drive it.

Signals (all delivered on the GUI thread):

- ``started(run_id)`` once the run exists in the project file and is about to run (in a batch:
  for each of its runs, as it begins);
- ``batch_started(batch_id)`` once a batch and all its runs exist;
- ``progressed(RunProgress)``: coalesced, so a fast run cannot flood the event loop;
- ``calls_changed(list[CallEvent])``: every call's start and end, in order, delivered in bursts
  (none is dropped: the timeline shows each call as it starts and as it ends);
- ``finished(summary)``: the run (or batch) ended, ``summary["status"]`` says how
  (``completed``, ``interrupted`` when cancelled or waiting, ``failed``). A batch's summary has
  ``batch_id``, the summed call counts, ``runs`` (each run's summary) and the worst status;
- ``failed(message, details)``: the run could not be started or the runner raised;
- ``running_changed(bool)``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal, Slot

from workbench.core.errors import WorkbenchError
from workbench.services.runs.pace import Pacer
from workbench.services.workers import JobError, Worker, WorkerPool

if TYPE_CHECKING:
    from workbench.core.project.store import Store
    from workbench.core.runs.config import RunConfig
    from workbench.services.project_model import ProjectModel
    from workbench.services.runs.agents import ManualAgents
    from workbench.services.runs.runner import CallEvent, RunProgress

# How a batch ends: the run status that wins over its runs' (SPEC §6's order, 4 before 3 before 1).
_WORST = ("failed", "interrupted", "stopped_at_cap", "degraded", "completed")


class RunService(QObject):
    started = Signal(str)  # run id
    batch_started = Signal(str)  # batch id
    progressed = Signal(object)  # RunProgress
    calls_changed = Signal(list)  # [CallEvent], in the order they happened
    finished = Signal(dict)  # the run's (or batch's) summary
    failed = Signal(str, str)  # message for the user, details for the disclosure
    running_changed = Signal(bool)

    _created = Signal(str)  # emitted from the run's thread
    _batch_created = Signal(str)  # emitted from the run's thread
    _progress_ready = Signal()  # emitted from the run's thread
    _calls_ready = Signal()  # emitted from the run's (or a call's) thread

    def __init__(self, model: ProjectModel, manual: ManualAgents | None = None,
                 parent: QObject | None = None, *, gateway=None, pacer: Pacer | None = None):
        super().__init__(parent)
        self.model = model
        self.manual = manual
        self.gateway = gateway  # tests may pass a gateway; None: the runner makes one per run
        # A room's pace for simulated runs (Live Run's pace control); tests pass one on a fake clock.
        self.pacer = pacer or Pacer()
        self._pool = WorkerPool(self, max_threads=1)
        self._worker: Worker | None = None
        self._run_id: str | None = None
        self._last: RunProgress | None = None
        self._lock = threading.Lock()
        self._latest: RunProgress | None = None
        self._pending = False
        self._events: list[CallEvent] = []  # call events not yet delivered (under the lock)
        self._batch_id: str | None = None
        self._closed = False  # after shutdown: no thread emits into this object any more (under the lock)
        self._created.connect(self._on_created)
        self._batch_created.connect(self._on_batch_created)
        self._progress_ready.connect(self._on_progress_ready)
        self._calls_ready.connect(self._on_calls_ready)
        model.closed.connect(self.cancel)  # a closed project cannot go on being written
        model.opened.connect(self._on_opened)

    # ----- state -------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._worker is not None

    @property
    def run_id(self) -> str | None:
        """The run in progress (None before the runner has created it, and when idle)."""
        return self._run_id

    @property
    def batch_id(self) -> str | None:
        """The batch in progress, when the run in progress belongs to one started or resumed here."""
        return self._batch_id

    @property
    def last_progress(self) -> RunProgress | None:
        return self._last

    # ----- commands ----------------------------------------------------------------------
    def start(self, config_id: int, label: str = "") -> bool:
        """Start a new run of the project's saved protocol configuration ``config_id``."""

        def prepare(store: Store, runner) -> str:
            from workbench.core.project import runs
            from workbench.core.project.panel import run_config_from_project
            from workbench.services.runs.estimate import check_budget
            from workbench.services.runs.preflight import preflight

            cfg = run_config_from_project(store, config_id)
            check_budget(cfg)  # a dollar cap on a model with no price: refused, nothing exists yet
            preflight(cfg)  # refused before the run exists (and off the GUI thread: it may import litellm)
            run_id = runner.create(cfg, label=label)
            runs.set_config_id(store, run_id, config_id)
            return run_id

        return self._launch("start run", prepare)

    def start_config(self, cfg: RunConfig, label: str = "") -> bool:
        """Start a new run of a configuration built elsewhere (a batch, a test, a script). A
        configuration whose providers cannot be called is refused before the run exists, through
        ``failed`` (the check runs on the run's thread: it may import litellm)."""

        def prepare(_store: Store, runner) -> str:
            from workbench.services.runs.estimate import check_budget
            from workbench.services.runs.preflight import preflight

            check_budget(cfg)
            preflight(cfg)
            return runner.create(cfg, label=label)

        return self._launch("start run", prepare)

    def start_document(self, data: dict, *, config_id: int | None = None, label: str = "",
                       follow_project: bool = False) -> bool:
        """Start a SPEC §6 document as ``rwb run`` would: a batch when it has a ``batch`` section,
        else one run (linked to the saved configuration ``config_id`` when given). A document
        that does not validate is refused through ``failed``, before anything exists.
        ``follow_project``: the document is the project's, so the project's tau, theta and
        weighting as they stand now apply (read on the run's thread: an edit made a moment ago
        in Clusters & Agents counts even before Live Run has read it)."""
        from workbench.core.runs.batch import is_batch

        if is_batch(data):
            return self.start_batch(data, label=label, follow_project=follow_project)

        def prepare(store: Store, runner) -> str:
            from workbench.core.project import runs
            from workbench.core.project.panel import with_project_settings
            from workbench.core.runs.config import parse_run_config
            from workbench.services.runs.estimate import check_budget
            from workbench.services.runs.preflight import preflight

            cfg = parse_run_config(with_project_settings(store, data) if follow_project else data)
            check_budget(cfg)
            preflight(cfg)
            run_id = runner.create(cfg, label=label)
            if config_id is not None:
                runs.set_config_id(store, run_id, config_id)
            return run_id

        return self._launch("start run", prepare)

    def start_batch(self, data: dict, label: str = "", *, follow_project: bool = False) -> bool:
        """Start a batch (questions × provider mixes × replicates): every run of it is
        validated and preflighted, then all are recorded, then they run in order."""

        def work(store: Store, runner) -> dict:
            from workbench.core.project.panel import with_project_settings
            from workbench.core.runs.batch import expand_batch
            from workbench.services.runs.batches import create_batch
            from workbench.services.runs.estimate import check_document_budget
            from workbench.services.runs.preflight import preflight

            doc = with_project_settings(store, data) if follow_project else data
            _, planned = expand_batch(doc)
            check_document_budget(doc, [run.config for run in planned])
            preflight(*(run.config for run in planned))  # a provider that cannot be called: nothing exists yet
            batch_id, ids = create_batch(store, doc, runner)
            return self._run_batch(store, runner, batch_id, ids)

        return self._launch("start batch", work=work)

    def resume(self, run_id: str) -> bool:
        """Finish an interrupted run: only the calls whose results are missing are issued."""
        return self._launch(f"resume {run_id}", lambda _store, _runner: run_id)

    def resume_batch(self, batch_id: str) -> bool:
        """Finish a batch as ``rwb resume BATCH_ID`` does: the runs it never created are
        created, and every run not completed runs (or resumes) in order."""

        def work(store: Store, runner) -> dict:
            from workbench.services.runs.batches import complete_batch

            return self._run_batch(store, runner, batch_id, complete_batch(store, batch_id, runner))

        return self._launch(f"resume {batch_id}", work=work)

    def cancel(self) -> None:
        """Stop the run at the next call boundary; it is left "interrupted" (resumable)."""
        if self._worker is not None:
            self._worker.cancel_event.set()

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Cancel the run and wait for its thread (the window's closeEvent, before the model's).
        From here on the run's threads (and its calls' threads) emit nothing into this object,
        which may be deleted once this returns, even if a thread outlives the wait."""
        with self._lock:  # an emit in progress on another thread ends before the flag is set
            self._closed = True
        self.cancel()
        return self._pool.wait(timeout_ms)

    def _emit(self, signal, *args) -> None:  # any thread but the GUI's
        """Emit from a run's (or a call's) thread, unless the service has been shut down."""
        with self._lock:
            if not self._closed:
                signal.emit(*args)

    # ----- the run's thread ----------------------------------------------------------------
    def _launch(self, name: str, prepare=None, *, work=None) -> bool:
        """Run on the service's thread: ``prepare(store, runner) -> run_id`` then that run, or
        ``work(store, runner) -> summary`` (a batch)."""
        store = self.model.store
        if self._closed:
            return False
        if self._worker is not None:
            which = f" ({self._run_id})" if self._run_id else ""
            self.failed.emit(f"A run is already in progress{which}. Cancel it or wait for it to finish "
                             "before starting another.", "")
            return False
        if store is None:
            self.failed.emit("No project is open.", "")
            return False
        if store.read_only:
            self.failed.emit("This project is open read-only, so it cannot record a run.", "")
            return False

        def job(cancel: threading.Event) -> dict:
            from workbench.services.runs.runner import Runner

            try:
                runner = Runner(store, gateway=self.gateway, manual=self.manual, on_progress=self._report,
                                cancel=cancel, on_call=self._report_call, pace=self.pacer)
                if work is not None:
                    return work(store, runner)
                run_id = prepare(store, runner)
                self._emit(self._created, run_id)
                return _with_run_row(store, runner.execute(run_id))
            finally:
                store.close_connection()

        self._run_id, self._last, self._latest, self._pending = None, None, None, False
        self._batch_id = None
        with self._lock:
            self._events = []
        self._worker = self._pool.start(name, job, self._on_finished, self._on_failed)
        self.running_changed.emit(True)
        return True

    def _run_batch(self, store: Store, runner, batch_id: str, ids: list[str]) -> dict:  # the run's thread
        from workbench.services.runs.batches import batch_counts, run_batch

        self._emit(self._batch_created, batch_id)
        summaries = run_batch(store, ids, runner.execute, on_run=lambda run_id: self._emit(self._created, run_id))
        statuses = [s.get("status") for s in summaries]
        status = next((w for w in _WORST if w in statuses), "completed")
        if len(summaries) < len(ids) and status == "completed":
            status = "interrupted"
        last = next((s for s in reversed(summaries) if s.get("status") != "completed"), summaries[-1] if summaries else {})
        return {"run_id": batch_id, "batch_id": batch_id, "status": status, "error": last.get("error"),
                "runs": summaries, "planned_runs": len(ids),
                **batch_counts(summaries)}

    def _report_call(self, event: CallEvent) -> None:  # the run's thread, or a call's
        with self._lock:
            self._events.append(event)
            if len(self._events) == 1 and not self._closed:  # the GUI takes every event queued by then
                self._calls_ready.emit()

    def _report(self, progress: RunProgress) -> None:  # the run's thread
        with self._lock:
            self._latest = progress
            if self._pending or self._closed:
                return  # the GUI has not picked up the previous one yet: it takes this one
            self._pending = True
            self._progress_ready.emit()

    # ----- back on the GUI thread ----------------------------------------------------------
    def _on_opened(self, store: Store) -> None:
        """Runs left "running" by a process that died become "interrupted", so they can be resumed."""
        if store.read_only or self._closed:
            return

        def mark(_cancel: threading.Event) -> int:
            from workbench.services.runs.owners import mark_stale_runs

            try:
                return mark_stale_runs(store)  # the model's poll announces what changed
            finally:
                store.close_connection()

        # On this service's own thread, so the project does not look busy (and is not held up).
        self._pool.start("look for interrupted runs", mark)

    @Slot(str)
    def _on_created(self, run_id: str) -> None:
        self._run_id = run_id
        self.started.emit(run_id)
        self._on_calls_ready()  # its first calls may be queued already: they follow its start

    @Slot(str)
    def _on_batch_created(self, batch_id: str) -> None:
        self._batch_id = batch_id
        self.batch_started.emit(batch_id)

    @Slot()
    def _on_calls_ready(self) -> None:
        with self._lock:
            events, self._events = self._events, []
        if events:
            self.calls_changed.emit(events)

    @Slot()
    def _on_progress_ready(self) -> None:
        with self._lock:
            progress, self._latest, self._pending = self._latest, None, False
        if progress is not None:
            self._last = progress
            self.progressed.emit(progress)

    def _on_finished(self, summary: object) -> None:
        self._on_progress_ready()  # anything still coalesced goes out before the end
        self._on_calls_ready()
        self._settle()
        self.finished.emit(dict(summary) if isinstance(summary, dict) else {"status": "completed"})

    def _on_failed(self, error: JobError) -> None:
        self._on_calls_ready()
        self._settle()
        if isinstance(error.exception, WorkbenchError):
            self.failed.emit(f"The run could not start: {error.message}", "")
        else:
            self.failed.emit(f"The run stopped on an unexpected error: {error.message}", error.details)

    def _settle(self) -> None:
        """Idle again before anyone hears of the end, so a listener can start the next run."""
        self._worker = None
        self._run_id = None
        self._batch_id = None
        self.running_changed.emit(False)


def _with_run_row(store: Store, summary: object) -> object:
    """The summary with the run's row beside it (``run``: label, protocol, status, start), read on
    the run's thread: the window names a finished run as every list does, never by its id."""
    if not isinstance(summary, dict) or not summary.get("run_id"):
        return summary
    from workbench.core.project.runs import get_run

    row = get_run(store, summary["run_id"])
    if row is None:
        return summary
    return {**summary, "run": {"label": row.label, "protocol": row.protocol, "status": row.status,
                               "started_at": row.started_at, "simulated": row.simulated}}
