"""The main window: a tool window of docks over one shared ProjectModel, in workspaces.

What it adds around the panels: the workspaces (``workspaces``: Design, Run, Results, Audit and
Teach, switched from the bar at its left edge), presenter mode (``presenter``), the menus and their
shortcuts (``window_menus``), one undo stack for configuration edits (``history``, given to every
panel), the light and dark themes and the zoom (remembered), the one non-blocking message area
with its history, and a status bar with the open project, its providers and the progress of any
long action with its Cancel.

The window never grows by itself, and its docks never move by themselves: the docks scroll their
panel rather than impose its minimum size, the message area lies over the docks, and the status
bar keeps one height and elides its labels. So the geometry it saves is the user's, and a
1280×720 projector fits it.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QFont, QGuiApplication, QUndoStack
from PySide6.QtWidgets import QApplication, QDockWidget, QFrame, QMainWindow, QScrollArea, QWidget

from workbench.core.paths import APPLICATION
from workbench.core.project.changes import Changes
from workbench.core.project.store import Store
from workbench.services.project_model import ProjectModel
from workbench.services.reads import Reader
from workbench.services.runs.manual_agents import QtManualAgents
from workbench.services.runs.service import RunService
from workbench.services.runs.study_service import StudyService
from workbench.ui import prompts, theme
from workbench.ui.panels import ALL_PANELS
from workbench.ui.panels.base import Panel
from workbench.ui.panels.live_run_panel import progress_text
from workbench.ui.preload import import_in_background
from workbench.ui.presenter import PresenterBar
from workbench.ui.settings import AppSettings
from workbench.ui.widgets.notices import NoticeArea, NoticeOverlay
from workbench.ui.widgets.run_names import run_title
from workbench.ui.widgets.status import ElidedLabel, JobStatus
from workbench.ui.window_menus import WindowMenus
from workbench.ui.workspaces import LAYOUT_VERSION, Workspaces

APP_NAME = APPLICATION  # the window's title is the name the data folder uses
PREFERRED_SIZE = QSize(1400, 880)
FRAME_ALLOWANCE = QSize(16, 40)  # a window manager's border and title bar, not known before showing


def fit_geometry(available: QRect, preferred: QSize = PREFERRED_SIZE) -> QRect:
    """The default geometry: the preferred size, or less to fit ``available`` (the screen less its
    panels) with room for the window frame, centred."""
    width = max(min(preferred.width(), available.width() - FRAME_ALLOWANCE.width()), 320)
    height = max(min(preferred.height(), available.height() - FRAME_ALLOWANCE.height()), 240)
    rect = QRect(0, 0, width, height)
    rect.moveCenter(available.center())
    return rect


class _Progress(QObject):
    """Emitted from a worker thread; delivered (queued) on the GUI thread."""

    progressed = Signal(int, int, str)  # done, total, what is being done


class MainWindow(QMainWindow):
    zoom_changed = Signal(float)  # the new factor: plots scale their fonts and markers by it
    theme_changed = Signal(str)  # "light" or "dark"
    preloaded = Signal()  # emitted from the import thread (ui/preload.py): queued to this one
    _type_scale = 1.0  # the type scale the window's widgets are at (type_scale.follow)

    def __init__(self, model: ProjectModel, settings: AppSettings, parent: QWidget | None = None):
        super().__init__(parent)
        self.model = model
        self.settings = settings
        self._status_reader = Reader(model.reads, self, name="read status")
        self.persist_layout = True  # a smoke launch (bench/startup.py) leaves the user's layout alone
        self.presenting = False  # presenter mode: larger type, high contrast (the Teach workspace)
        self._job_text = ""  # what the model is busy with, when this window asked for it
        self._job_cancel: threading.Event | None = None  # set by Cancel: the job stops between steps
        self.setWindowTitle(APP_NAME)
        self.setObjectName("mainWindow")
        self.setDockOptions(QMainWindow.DockOption.AnimatedDocks | QMainWindow.DockOption.AllowNestedDocks
                            | QMainWindow.DockOption.AllowTabbedDocks)

        app = QApplication.instance()
        theme.install(app)
        theme.set_presenter(False)  # (a window closed in presenter mode leaves it on in the module)
        self.theme_name = theme.apply_theme(app, settings.theme() or theme.DEFAULT_THEME, high_contrast=False)
        self.zoom = theme.apply_zoom(app, settings.zoom())
        self._type_scale = theme.type_scale()
        self._set_window_font()

        # The docks fill the window: the central widget is an empty, hidden placeholder.
        placeholder = QWidget(self)
        placeholder.hide()
        self.setCentralWidget(placeholder)

        # Undo and redo of configuration edits: one stack, shared by every panel, cleared when
        # the project changes (a command of one project must never run on another).
        self.history = QUndoStack(self)
        self.history.setUndoLimit(500)

        # Live runs: owned by the window, shut down before the model when it closes.
        self.manual_agents = QtManualAgents(self)
        self.runs = RunService(model, self.manual_agents, self)
        self.studies = StudyService(model, self)  # studies designed and run in the Studies panel

        self.panels: dict[str, Panel] = {}
        self.docks: dict[str, QDockWidget] = {}
        for panel_class in ALL_PANELS:
            panel = panel_class(model, self)
            if getattr(panel, "history", None) is None:  # (the Findings panel's is a vote table)
                panel.history = self.history
            # Qt reads "&" in a dock title as a mnemonic marker, so it must be doubled.
            dock = QDockWidget(panel_class.TITLE.replace("&", "&&"), self)
            dock.setObjectName(panel_class.OBJECT_NAME + "Dock")
            dock.setWidget(self._scroller(panel))
            self.panels[panel_class.OBJECT_NAME] = panel
            self.docks[panel_class.OBJECT_NAME] = dock

        self.panels["liveRunPanel"].attach(self.runs, self.manual_agents)  # type: ignore[attr-defined]
        self.preloaded.connect(self._on_preloaded)
        self.panels["findingsPanel"].attach_runs(self.runs)  # type: ignore[attr-defined]  (re-research)
        self.panels["anchorsPanel"].attach(self.runs)  # type: ignore[attr-defined]  (the teaching scenario)
        self.panels["studyPanel"].attach(self.studies)  # type: ignore[attr-defined]
        self.panels["studyPanel"].quadrant_requested.connect(self._on_quadrant_requested)  # type: ignore[attr-defined]

        self.workspaces = Workspaces(self, self.docks)
        self.presenter_bar = PresenterBar(self.workspaces, {n: p.TITLE for n, p in self.panels.items()}, self)
        self.addToolBar(Qt.ToolBarArea.BottomToolBarArea, self.presenter_bar)
        self._build_notices()
        self.menus = WindowMenus(self)
        self._build_status_bar()
        self.setGeometry(fit_geometry(self._available()))
        self._restore_layout()
        model.reveal_requested.connect(self._on_reveal_requested)

        model.opened.connect(self._on_opened)
        model.closed.connect(self._on_closed)
        model.failed.connect(self._on_failed)
        model.busy_changed.connect(self._on_busy_changed)
        model.changed.connect(self._on_changed)

    # ----- construction ----------------------------------------------------------------------
    def _scroller(self, panel: Panel) -> QScrollArea:
        """The panel in a frameless scroll area: a dock smaller than the panel's minimum size
        scrolls it instead of forcing the window to grow."""
        scroll = QScrollArea(self)
        scroll.setObjectName(panel.objectName() + "Scroll")
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidgetResizable(True)
        scroll.setWidget(panel)
        return scroll

    def _build_notices(self) -> None:
        """The message area lies over the docks (a toast): a notice never moves a dock."""
        self.notices = NoticeArea(self)
        self._notices_bar = NoticeOverlay(self.notices, self, self._docks_room)
        self.notices.emptied.connect(self._on_notices_changed)
        self.notices.history_requested.connect(self.show_message_history)

    def _on_notices_changed(self, empty: bool) -> None:
        self._notices_bar.show_if(not empty)
        if not empty:  # again once the messages have their width (their height depends on it)
            QTimer.singleShot(0, self._notices_bar, self._notices_bar.place)

    def _docks_room(self) -> QRect:
        """The part of the window the docks share: below the menu, above the status bar and
        the presenter controls, right of the workspace bar."""
        top = self.menuBar().geometry().bottom() + 1 if self.menuBar().isVisible() else 0
        bottom = self.statusBar().geometry().top() if self.statusBar().isVisible() else self.height()
        if self.presenter_bar.isVisible():
            bottom = min(bottom, self.presenter_bar.geometry().top())
        bar = self.workspaces.bar
        left = bar.geometry().right() + 1 if bar.isVisible() else 0
        return QRect(left, top, self.width() - left, bottom - top)

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        self.project_label = ElidedLabel("No project open", self)
        self.project_label.setObjectName("projectLabel")
        self.provider_label = ElidedLabel("", self, mode=Qt.TextElideMode.ElideRight)
        self.provider_label.setObjectName("providerLabel")
        self.job = JobStatus(self)
        # The names the tests and the Live Run panel's users know.
        self.progress = self.job.bar
        self.cancel_button = self.job.cancel_button
        self.job.cancel_clicked.connect(self._on_cancel_clicked)
        bar.addWidget(self.project_label, 3)
        bar.addWidget(self.provider_label, 2)
        bar.addPermanentWidget(self.job)
        self._fit_status_bar()
        self.runs.running_changed.connect(self._on_run_running_changed)
        self.runs.progressed.connect(self._on_run_progressed)
        self.runs.finished.connect(self._on_run_finished)
        self.runs.failed.connect(self._on_run_failed)
        self.manual_agents.asked.connect(self._on_manual_asked)
        self.manual_agents.answered.connect(self._on_manual_settled)
        self.manual_agents.withdrawn.connect(self._on_manual_settled)

    def _available(self) -> QRect:
        screen = self.screen() or QGuiApplication.primaryScreen()
        return screen.availableGeometry() if screen is not None else QRect(0, 0, 1280, 720)

    def _restore_layout(self) -> None:
        """The window's geometry and the workspaces as they were left (each one's arrangement);
        the first start is in the Results workspace, at a size that fits the screen."""
        geometry = self.settings.window_geometry()
        if geometry is not None:
            self.restoreGeometry(geometry)
            self._fit_to_screen()
        current, states = self.settings.workspaces(LAYOUT_VERSION)
        self.workspaces.start(current, states)

    def _on_reveal_requested(self, _ref) -> None:
        """A link ("Open in Trace Inspector"): the workspace that shows the Inspector."""
        self.workspaces.show_panel("traceInspectorPanel")

    def _on_quadrant_requested(self, run_id: str) -> None:
        """A link ("Open in Quadrant"): the Quadrant shows that run, in front in its workspace."""
        self.panels["quadrantPanel"].show_run(run_id)  # type: ignore[attr-defined]
        self.workspaces.show_panel("quadrantPanel")

    def show_panel(self, name: str) -> None:
        """``name``'s panel in front: here, or in the workspace that shows it."""
        self.workspaces.show_panel(name)

    def _fit_to_screen(self) -> None:
        """A geometry saved on a bigger screen (or grown by an older version) is brought back
        inside the screen this window is on."""
        if self.isMaximized() or self.isFullScreen():
            return
        available = self._available()
        if self.width() > available.width() or self.height() > available.height():
            self.setGeometry(fit_geometry(available, self.size()))

    def showEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        QTimer.singleShot(0, self, self._preload)  # after the first paint

    def _preload(self) -> None:
        import_in_background(self.preloaded.emit)

    def _on_preloaded(self) -> None:
        """Panels make their charts now, while the window is idle, not when a run's first results
        arrive (a chart costs 25 to 45 ms to make: a stall in the middle of a live run)."""
        for panel in self.panels.values():
            warm_up = getattr(panel, "warm_up", None)
            if warm_up is not None:
                QTimer.singleShot(0, panel, warm_up)

    def warmed_up(self) -> bool:
        """The background imports are in and every panel has made its charts (benchmarks start
        a live run once this holds, as a person would a moment after the window opens)."""
        from workbench.ui import preload

        return preload.imported.is_set() and all(getattr(p, "is_warm", lambda: True)() for p in self.panels.values())

    def event(self, event) -> bool:
        handled = super().event(event)
        if event.type() == QEvent.Type.ApplicationFontChange:  # zoomed, by whoever
            self._set_window_font()
            # A widget with a stylesheet keeps the font it had when the sheet was set (Qt's
            # stylesheet style resolves it then): set the sheets again, so every label zooms.
            self._restyle(lambda sheet: "font-size" not in sheet)
            self._follow_type_scale()
            self._fit_status_bar()
        return handled

    def reset_layout(self) -> None:
        """View ▸ Reset Workspace: this workspace's arrangement as it came."""
        self.workspaces.reset()

    # ----- presenter mode --------------------------------------------------------------------
    def set_presenter(self, on: bool) -> None:
        """Presenter mode (the Teach workspace): type at least theme.PRESENTER_PT times the zoom,
        the theme's high-contrast palette, the presenter controls below the panel."""
        self.presenter_bar.setVisible(on)
        self.workspaces.bar.setVisible(not on)  # the panel fills the window; Ctrl+1 … 5 still switch
        if on == self.presenting:
            return
        self.presenting = on
        self._remember_fonts()
        theme.set_presenter(on)
        self.theme_name = theme.apply_theme(QApplication.instance(), self.theme_name, restyle=self, high_contrast=on)
        self._set_window_font()
        self._follow_type_scale()
        self.theme_changed.emit(self.theme_name)
        self.zoom_changed.emit(self.zoom)  # plots size their type by zoom × presenter scale
        self.menus.sync_presenter(on)

    def toggle_presenter(self) -> None:
        self.workspaces.toggle_presenter()

    def _fit_status_bar(self) -> None:
        """The status bar keeps the height of its tallest state (a job's Cancel button shown),
        so a run starting or ending never moves the docks."""
        if getattr(self, "job", None) is None:
            return  # (a font event while the window is being made)
        bar = self.statusBar()
        tallest = max(self.job.cancel_button.sizeHint().height(), self.job.bar.sizeHint().height(),
                      self.project_label.sizeHint().height())
        bar.setFixedHeight(tallest + 6)

    # ----- theme and zoom --------------------------------------------------------------------
    def set_theme(self, name: str) -> None:
        app = QApplication.instance()
        self.theme_name = theme.apply_theme(app, name, restyle=self)  # this window's sheets set anew
        self.settings.set_theme(self.theme_name)
        self.menus.sync_theme(self.theme_name)
        self.theme_changed.emit(self.theme_name)

    def toggle_theme(self) -> None:
        self.set_theme("dark" if self.theme_name == "light" else "light")

    def _set_window_font(self) -> None:
        """The zoomed application font, set on the window so the dock titles zoom too: a dock
        draws its title in the font it read once when made (the platform's title font) while
        its own font equals the application's, and in its own font otherwise. The font differs
        from the application's only in an unseen style strategy."""
        font = QFont(QApplication.instance().font())
        font.setStyleStrategy(QFont.StyleStrategy.PreferQuality)
        chrome = QFont()  # (no property set: the menu and the status bar inherit the window's)
        if theme.presenter_scale() != 1.0:  # presenter mode: larger type, times the zoom
            chrome = QFont(font)  # the menu and the status bar keep the normal type: room for the panel
            font.setPointSizeF(round(font.pointSizeF() * theme.presenter_scale(), 2))
        self.setFont(font)
        self.menuBar().setFont(chrome)
        self.statusBar().setFont(chrome)

    def _remember_fonts(self) -> None:
        """Before the type scale changes: each widget's own font at scale 1 (type_scale.follow),
        noted before any widget's own handler of the change has set it anew."""
        from workbench.ui import type_scale

        type_scale.remember(self, self._type_scale)

    def _follow_type_scale(self) -> None:
        """Widgets with a font or a stylesheet of their own follow the new type scale too."""
        from workbench.ui import type_scale

        new = theme.type_scale()
        type_scale.follow(self, self._type_scale, new, skip=(self.menuBar(), self.statusBar()))
        self._type_scale = new

    def _restyle(self, which) -> None:
        # This window's widgets only: QApplication.allWidgets() also holds widgets of closed
        # windows awaiting deletion, and touching them crashed (as it did in theme.apply_theme).
        for widget in [self, *self.findChildren(QWidget)]:
            sheet = widget.styleSheet()
            if sheet and which(sheet):
                widget.setStyleSheet(sheet)

    def set_zoom(self, factor: float) -> None:
        self._remember_fonts()
        zoom = theme.apply_zoom(QApplication.instance(), factor)
        self.settings.set_zoom(zoom)
        if zoom != self.zoom:
            self.zoom = zoom
            self.zoom_changed.emit(zoom)
        self.menus.sync_zoom(zoom)

    def zoom_in(self) -> None:
        self.set_zoom(theme.zoom_step(self.zoom, +1))

    def zoom_out(self) -> None:
        self.set_zoom(theme.zoom_step(self.zoom, -1))

    def zoom_reset(self) -> None:
        self.set_zoom(1.0)

    # ----- windows of the Help and View menus -------------------------------------------------
    def _window(self, name: str, make) -> QWidget:
        window = getattr(self, name, None)
        if window is None:
            window = make()
            setattr(self, name, window)
        return window

    def _present(self, window: QWidget) -> QWidget:
        window.show()
        window.raise_()
        window.activateWindow()
        return window

    def show_message_history(self) -> QWidget:
        from workbench.ui.widgets.notices import MessageHistoryWindow

        return self._present(self._window("message_history", lambda: MessageHistoryWindow(self.notices, self)))

    def show_about(self) -> QWidget:
        from workbench.ui.help import AboutWindow

        about = self._window("about_window", lambda: AboutWindow(self))
        about.refresh(self.model.path)
        return self._present(about)

    def show_protocols(self) -> QWidget:
        from workbench.ui.help import ProtocolsWindow

        return self._present(self._window("protocols_window", lambda: ProtocolsWindow(self)))

    def show_shortcuts(self) -> QWidget:
        from workbench.ui.help import ShortcutsWindow

        window = self._window("shortcuts_window", lambda: ShortcutsWindow(self))
        window.fill(self.menus.shortcut_rows())
        return self._present(window)

    # ----- file actions ----------------------------------------------------------------------
    def new_project(self) -> None:
        path = prompts.new_project_path(self, self.settings.last_dir())
        if path is None:
            return
        if self.model.path is not None and path.absolute() == self.model.path:
            self.notices.add("warning", "That is the open project; choose another file for a new project.")
            return
        self.settings.set_last_dir(path)
        self._job_text = f"Creating {path.name}…"
        self.model.create(path, overwrite=True)  # the dialog already asked before replacing

    def open_project(self) -> None:
        path = prompts.open_project_path(self, self.settings.last_dir())
        if path is not None:
            self.open_path(path)

    def open_path(self, path: Path) -> None:
        self.settings.set_last_dir(path)
        self._job_text = f"Opening {Path(path).name}…"
        self.model.open(path)

    def save_as(self) -> None:
        if self.model.store is None:
            return
        path = prompts.save_as_path(self, self.settings.last_dir())
        if path is None:
            return
        self.settings.set_last_dir(path)
        self._job_text = f"Saving a copy as {path.name}…"
        self.model.save_as(path, overwrite=True)  # the dialog already asked before replacing

    def import_arm(self) -> None:
        if self.model.store is None:
            return
        paths = prompts.import_arm_paths(self, self.settings.last_dir())
        if not paths:
            return
        self.settings.set_last_dir(paths[0])
        outcome: dict[str, list] = {"done": [], "refused": [], "skipped": []}
        cancel = self._job_cancel = threading.Event()
        progress = _Progress(self)
        progress.progressed.connect(self._on_import_progressed)
        self._job_text = "Importing ARM traces…"
        started = time.monotonic()

        def job(store) -> Changes:
            from workbench.core.errors import InputError
            from workbench.core.project.arm_import import import_arm_file

            changes = Changes()
            for i, path in enumerate(paths):  # each file on its own: a bad one does not stop the others
                if cancel.is_set():  # between files: what was imported stays
                    outcome["skipped"] = paths[i:]
                    break
                progress.progressed.emit(i, len(paths), f"{path.name}|{time.monotonic() - started}")
                try:
                    result = import_arm_file(store, path)
                    outcome["done"].append(result)
                    if not result.already_imported:
                        changes = changes | Changes(frozenset({"runs", "rounds", "traces"}))
                except InputError as exc:
                    outcome["refused"].append(str(exc))
            return changes

        def report(_changes) -> None:
            progress.deleteLater()
            done, refused, skipped = outcome["done"], outcome["refused"], outcome["skipped"]
            new = [r for r in done if not r.already_imported]
            text = f"Imported {len(new)} ARM run(s) with {sum(r.traces for r in new)} traces."
            if len(done) > len(new):
                text += f" {len(done) - len(new)} file(s) were already in the project."
            if skipped:
                text += f" Cancelled: {len(skipped)} file(s) not imported."
            if refused:
                self.notices.add("warning", text + f" {len(refused)} file(s) refused.", "\n".join(refused))
            else:
                self.notices.add("info", text)

        self.model.write("import ARM traces", job, report)
        self._show_job()

    def _on_import_progressed(self, done: int, total: int, what: str) -> None:
        name, _, elapsed = what.partition("|")
        eta = ""
        if done > 0 and elapsed:
            left = float(elapsed) / done * (total - done)
            eta = ", ETA <1 s" if left < 1 else f", ETA {left:.0f} s"
        self._job_text = f"Importing {done + 1}/{total}: {name}{eta}"
        self._show_job(done, total)

    def fill_recent_menu(self) -> None:
        self.menus.fill_recent()

    # ----- runs ------------------------------------------------------------------------------
    def start_run(self) -> None:
        """Start the configuration chosen in Live Run (its Start button, by the keyboard)."""
        panel = self.panels["liveRunPanel"]
        self.show_panel("liveRunPanel")
        button = getattr(panel, "start_button", None)
        if button is not None and button.isEnabled():
            button.click()
        elif not self.runs.running:
            self.notices.add("info", "Choose a configuration in Live Run to start a run.")

    def cancel_run(self) -> None:
        self.runs.cancel()

    # ----- model events ----------------------------------------------------------------------
    def _on_opened(self, store: Store) -> None:
        self.history.clear()
        self.settings.add_recent(store.path)
        self.notices.clear_messages()
        report = store.report
        if report.read_only:
            self.notices.set_banner("warning", report.read_only_reason or "This project is open read-only.")
        elif report.recovered:
            self.notices.set_banner("info", report.recovered)
        elif report.migrated_from is not None:
            self.notices.set_banner(
                "info", f"This project was upgraded from schema v{report.migrated_from} to "
                        f"v{report.schema_version}. The original was kept as {report.backup_path.name}.")
        else:
            self.notices.set_banner(None)
        self._refresh_status()
        self.menus.update_actions()
        about = getattr(self, "about_window", None)
        if about is not None and about.isVisible():
            about.refresh(store.path)

    def _on_closed(self) -> None:
        self.history.clear()
        self.notices.set_banner(None)
        self._refresh_status()
        self.menus.update_actions()
        about = getattr(self, "about_window", None)
        if about is not None and about.isVisible():
            about.refresh(None)

    def _on_changed(self, changes) -> None:
        if changes.touches("providers", "project"):
            self._read_status()

    def _on_failed(self, message: str, details: str) -> None:
        self.notices.add("error", message, details)

    def _on_busy_changed(self, busy: bool) -> None:
        if not busy:
            self._job_text = ""
            self._job_cancel = None
        self._show_job()
        self.menus.update_actions()

    def _show_job(self, done: int = 0, total: int = 0) -> None:
        """The status bar's progress: a run's while one goes, else the model's job's."""
        if self.runs.running:
            return
        if not self.model.busy:
            self.job.finish()
            return
        cancellable = self._job_cancel is not None
        self.job.show_progress(self._job_text or "Working…", done, total, cancellable=cancellable,
                               tooltip="Stop after the file being imported (what is imported stays)")

    # ----- runs ------------------------------------------------------------------------------
    def _on_cancel_clicked(self) -> None:
        if self.runs.running:
            self.runs.cancel()
            self.job.show_progress("Cancelling… the run stops after the calls in flight.", cancellable=False)
            return
        if self._job_cancel is not None:
            self._job_cancel.set()
            self.job.show_progress("Cancelling after the current file…", cancellable=False)
        self.model.workers.cancel_all()

    def _on_run_running_changed(self, running: bool) -> None:
        if running:
            self.job.show_progress("Starting run…", cancellable=True,
                                   tooltip="Cancel the run in progress (it stays resumable)")
        else:
            self.job.finish()
            self._show_job()
        self.menus.update_actions()

    def _on_run_progressed(self, progress) -> None:
        if not self.manual_agents.pending():
            self.job.show_progress(progress_text(progress), progress.done, max(progress.total, 1),
                                   cancellable=True, tooltip="Cancel the run in progress (it stays resumable)")

    def _on_manual_asked(self, _call) -> None:
        self.job.show_progress("Waiting for you", cancellable=True,
                               tooltip="Cancel the run in progress (it stays resumable)")
        dock = self.docks["liveRunPanel"]
        self.show_panel("liveRunPanel")
        room = min(420, int(self.height() * 0.55))  # to read the prompt and answer it
        if not dock.isFloating() and dock.height() < room:
            self.resizeDocks([dock], [room], Qt.Orientation.Vertical)

    def _on_manual_settled(self, _key: str) -> None:
        last = self.runs.last_progress
        if last is not None and not self.manual_agents.pending() and self.runs.running:
            self.job.show_progress(progress_text(last), last.done, max(last.total, 1), cancellable=True)

    def _on_run_finished(self, summary: dict) -> None:
        status = summary.get("status")
        # Named as the lists name it (label, protocol, start), the id only when the row is unknown.
        run_id = (run_title(summary["run"], status=False, sim=False) if isinstance(summary.get("run"), dict)
                  else summary.get("run_id") or summary.get("batch_id", "?"))
        counts = (f"{summary.get('calls', 0)} call(s), {summary.get('failed_calls', 0)} failed, "
                  f"{summary.get('invalid_calls', 0)} invalid")
        error = summary.get("error") or ""
        if status == "completed":
            self.notices.add("info", f"Run {run_id} completed: {counts}.")
        elif status == "degraded":
            retry = (" Select it in Live Run and Resume to issue its failed calls again."
                     if summary.get("failed_calls") else "")
            self.notices.add("warning", f"Run {run_id} finished degraded: its results are marked so. {error}{retry}")
        elif status == "interrupted":
            self.notices.add("warning", f"Run {run_id} was interrupted ({error or 'stopped'}): {counts}. "
                                        "Select it in Live Run and Resume to finish it.")
        else:
            self.notices.add("error", f"Run {run_id} failed: {counts}.", error)

    def _on_run_failed(self, message: str, details: str) -> None:
        self.notices.add("error" if details or not self.runs.running else "warning", message, details)

    # ----- the status bar --------------------------------------------------------------------
    def _refresh_status(self) -> None:
        """Everything the status bar and the title say about the open project, from scratch:
        what a previous project showed never survives a switch."""
        self._status_reader.cancel()
        self.provider_label.setText("")
        self._update_title()
        if self.model.store is not None:
            self.provider_label.setText("Providers: reading…")
            self._read_status()

    def _update_title(self, name: str | None = None) -> None:
        store = self.model.store
        if store is None:
            self.setWindowTitle(APP_NAME)
            self.project_label.setText("No project open")
            return
        suffix = " [read-only]" if store.read_only else ""
        self.setWindowTitle(f"{name or store.path.stem} — {store.path.name}{suffix} — {APP_NAME}")
        self.project_label.setText(f"{store.path}{suffix}")

    def _read_status(self) -> None:
        """The project's name and providers, read off the GUI thread."""
        store = self.model.store
        if store is None:
            return
        reading = store.reader()

        def read(_cancel):
            from workbench.core.project import meta, panel

            return store.path, meta.project_name(reading), panel.providers(reading)

        self._status_reader.load(read, self._show_status, on_failed=self._on_status_failed,
                                 cleanup=reading.close_connection)

    def _show_status(self, status: tuple) -> None:
        path, name, providers = status
        if self.model.store is None or path != self.model.store.path:
            return  # read from a project that is no longer open
        self._update_title(name)
        if not providers:
            self.provider_label.setText("Providers: none configured")
            return
        names = [("sim (simulated, offline)" if p["model"] == "sim" else p["name"]) for p in providers]
        self.provider_label.setText("Providers: " + ", ".join(names))

    def _on_status_failed(self, error) -> None:
        self.provider_label.setText(f"Providers: not read ({error.message})")

    def reads_idle(self) -> bool:
        """Every panel shows the project as last read, and no read is running or due (tests and
        benchmarks wait for this instead of sleeping)."""
        if self.model.store is None:
            return True
        panels = [p for p in self.panels.values()]
        return (all(p.refresh_count > 0 for p in panels)
                and not any(r.loading for r in self.findChildren(Reader)))

    # ----- closing ---------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt API)
        if self.persist_layout:
            self.settings.save_workspaces(LAYOUT_VERSION, self.saveGeometry(), self.workspaces.current,
                                          self.workspaces.save_state())
        for name in ("message_history", "about_window", "protocols_window", "shortcuts_window"):
            window = getattr(self, name, None)
            if window is not None:
                window.close()
        self.runs.shutdown()  # cancel and wait for a run first: it writes to the model's file
        self.studies.shutdown()
        self.model.shutdown()
        super().closeEvent(event)
