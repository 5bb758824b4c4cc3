"""The main window: a tool window of docks over one shared ProjectModel."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (QDockWidget, QLabel, QMainWindow, QMenu, QProgressBar,
                               QPushButton, QToolBar, QWidget)

from workbench.core.project.changes import Changes
from workbench.core.project.store import Store
from workbench.services.runs.manual_agents import QtManualAgents
from workbench.services.project_model import ProjectModel
from workbench.services.reads import Reader
from workbench.services.runs.service import RunService
from workbench.ui import prompts
from workbench.ui.panels import ALL_PANELS
from workbench.ui.panels.base import Panel
from workbench.ui.panels.live_run_panel import progress_text
from workbench.ui.settings import AppSettings
from workbench.ui.widgets.notices import NoticeArea

APP_NAME = "Resonance Workbench"
LAYOUT_VERSION = 1  # bump when the set of docks changes, so an old saved layout is ignored


class MainWindow(QMainWindow):
    def __init__(self, model: ProjectModel, settings: AppSettings, parent: QWidget | None = None):
        super().__init__(parent)
        self.model = model
        self.settings = settings
        self._status_reader = Reader(model.reads, self, name="read status")
        self.persist_layout = True
        self._auto_size_until = 0.0  # a smoke launch (bench/startup.py) leaves the user's layout alone
        self.setWindowTitle(APP_NAME)
        self.setObjectName("mainWindow")
        self.resize(1400, 880)
        self.setDockOptions(QMainWindow.DockOption.AnimatedDocks | QMainWindow.DockOption.AllowNestedDocks
                            | QMainWindow.DockOption.AllowTabbedDocks)

        # The docks fill the window: the central widget is an empty, hidden placeholder.
        placeholder = QWidget(self)
        placeholder.hide()
        self.setCentralWidget(placeholder)

        # Live runs: owned by the window, shut down before the model when it closes.
        self.manual_agents = QtManualAgents(self)
        self.runs = RunService(model, self.manual_agents, self)

        self.panels: dict[str, Panel] = {}
        self.docks: dict[str, QDockWidget] = {}
        for panel_class in ALL_PANELS:
            panel = panel_class(model, self)
            # Qt reads "&" in a dock title as a mnemonic marker, so it must be doubled.
            dock = QDockWidget(panel_class.TITLE.replace("&", "&&"), self)
            dock.setObjectName(panel_class.OBJECT_NAME + "Dock")
            dock.setWidget(panel)
            self.panels[panel_class.OBJECT_NAME] = panel
            self.docks[panel_class.OBJECT_NAME] = dock

        self.panels["liveRunPanel"].attach(self.runs, self.manual_agents)  # type: ignore[attr-defined]

        self._build_notices()
        self._build_menus()
        self._build_status_bar()
        self._default_layout()
        self._layout_restored = self._restore_layout()

        model.opened.connect(self._on_opened)
        model.closed.connect(self._on_closed)
        model.failed.connect(self._on_failed)
        model.busy_changed.connect(self._on_busy_changed)
        model.changed.connect(self._on_changed)

    # ----- construction ----------------------------------------------------------------------
    def _build_notices(self) -> None:
        self.notices = NoticeArea(self)
        bar = QToolBar("Notices", self)
        bar.setObjectName("noticesBar")
        bar.setMovable(False)
        bar.setFloatable(False)
        bar.toggleViewAction().setVisible(False)
        bar.addWidget(self.notices)
        bar.hide()
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
        self.notices.emptied.connect(lambda empty: bar.setVisible(not empty))
        self._notices_bar = bar

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self.action_new = self._action(file_menu, "&New Project…", QKeySequence.StandardKey.New, self._on_new)
        self.action_open = self._action(file_menu, "&Open…", QKeySequence.StandardKey.Open, self._on_open)
        self.recent_menu = QMenu("Open &Recent", self)
        file_menu.addMenu(self.recent_menu)
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self.action_save_as = self._action(file_menu, "Save &As…", QKeySequence.StandardKey.SaveAs, self._on_save_as)
        file_menu.addSeparator()
        self.action_import = self._action(file_menu, "&Import ARM Traces…", None, self._on_import)
        self.action_close = self._action(file_menu, "&Close Project", QKeySequence.StandardKey.Close, self.model.close)
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", QKeySequence.StandardKey.Quit, self.close)

        view_menu = self.menuBar().addMenu("&View")
        for dock in self.docks.values():
            view_menu.addAction(dock.toggleViewAction())
        view_menu.addSeparator()
        self._action(view_menu, "&Reset Layout", None, self._reset_layout)
        self._update_actions()

    def _action(self, menu: QMenu, text: str, shortcut, slot) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(shortcut)
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        self.project_label = QLabel("No project open", self)
        self.project_label.setObjectName("projectLabel")
        self.provider_label = QLabel("", self)
        self.provider_label.setObjectName("providerLabel")
        self.progress = QProgressBar(self)
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(True)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setToolTip("Cancel the run in progress (it stays resumable)")
        self.cancel_button.clicked.connect(self._on_cancel_clicked)
        bar.addWidget(self.project_label, 1)
        bar.addPermanentWidget(self.provider_label)
        bar.addPermanentWidget(self.progress)
        bar.addPermanentWidget(self.cancel_button)
        self.progress.hide()
        self.cancel_button.hide()
        self.runs.running_changed.connect(self._on_run_running_changed)
        self.runs.progressed.connect(self._on_run_progressed)
        self.runs.finished.connect(self._on_run_finished)
        self.runs.failed.connect(self._on_run_failed)
        self.manual_agents.asked.connect(self._on_manual_asked)
        self.manual_agents.answered.connect(self._on_manual_settled)
        self.manual_agents.withdrawn.connect(self._on_manual_settled)

    def _default_layout(self) -> None:
        d = self.docks
        area = Qt.DockWidgetArea
        self.addDockWidget(area.LeftDockWidgetArea, d["clustersPanel"])
        self.addDockWidget(area.RightDockWidgetArea, d["traceInspectorPanel"])
        self.addDockWidget(area.RightDockWidgetArea, d["quadrantPanel"])
        self.splitDockWidget(d["traceInspectorPanel"], d["quadrantPanel"], Qt.Orientation.Horizontal)
        self.tabifyDockWidget(d["quadrantPanel"], d["driftPanel"])
        self.addDockWidget(area.BottomDockWidgetArea, d["liveRunPanel"])
        self.tabifyDockWidget(d["liveRunPanel"], d["anchorsPanel"])
        self.tabifyDockWidget(d["anchorsPanel"], d["findingsPanel"])
        for dock in d.values():
            dock.show()
        d["quadrantPanel"].raise_()
        d["liveRunPanel"].raise_()
        self._size_docks()

    def _size_docks(self) -> None:
        # Sizes only take effect once the window has its real size, so this runs again on show.
        d = self.docks
        width, height = max(self.width(), 1000), max(self.height(), 700)
        self.resizeDocks([d["clustersPanel"], d["traceInspectorPanel"], d["quadrantPanel"]],
                         [int(width * 0.3), int(width * 0.4), int(width * 0.3)], Qt.Orientation.Horizontal)
        # Qt gives the docks above the height asked for; the bottom area takes the rest.
        top = [d["clustersPanel"], d["traceInspectorPanel"], d["quadrantPanel"]]
        self.resizeDocks(top, [int(height * 0.56)] * len(top), Qt.Orientation.Vertical)

    def _restore_layout(self) -> bool:
        geometry, state = self.settings.window_state()
        if geometry is not None:
            self.restoreGeometry(geometry)
        restored = state is not None and self.restoreState(state, LAYOUT_VERSION)
        self._notices_bar.setVisible(False)  # its visibility follows its content, not the layout
        return bool(restored)

    def showEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        if not self._layout_restored:
            # No saved layout: size the docks now, and again while the window system settles the
            # window's size in the first seconds (extra height would otherwise all go to the bottom).
            self._layout_restored = True
            self._auto_size_until = time.monotonic() + 2.0
            QTimer.singleShot(0, self._size_docks)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        if time.monotonic() < self._auto_size_until:
            QTimer.singleShot(0, self._size_docks)

    def _reset_layout(self) -> None:
        for dock in self.docks.values():
            dock.setFloating(False)
        self._default_layout()

    # ----- file actions ----------------------------------------------------------------------
    def _on_new(self) -> None:
        path = prompts.new_project_path(self, self.settings.last_dir())
        if path is None:
            return
        if self.model.path is not None and path.absolute() == self.model.path:
            self.notices.add("warning", "That is the open project; choose another file for a new project.")
            return
        self.settings.set_last_dir(path)
        self.model.create(path, overwrite=True)  # the dialog already asked before replacing

    def _on_open(self) -> None:
        path = prompts.open_project_path(self, self.settings.last_dir())
        if path is not None:
            self.open_path(path)

    def open_path(self, path: Path) -> None:
        self.settings.set_last_dir(path)
        self.model.open(path)

    def _on_save_as(self) -> None:
        if self.model.store is None:
            return
        path = prompts.save_as_path(self, self.settings.last_dir())
        if path is None:
            return
        self.settings.set_last_dir(path)
        self.model.save_as(path, overwrite=True)  # the dialog already asked before replacing

    def _on_import(self) -> None:
        if self.model.store is None:
            return
        paths = prompts.import_arm_paths(self, self.settings.last_dir())
        if not paths:
            return
        self.settings.set_last_dir(paths[0])
        outcome: dict[str, list] = {"done": [], "refused": []}

        def job(store) -> Changes:
            from workbench.core.project.arm_import import import_arm_file
            from workbench.core.errors import InputError

            changes = Changes()
            for path in paths:  # each file on its own: a bad one does not stop the others
                try:
                    result = import_arm_file(store, path)
                    outcome["done"].append(result)
                    if not result.already_imported:
                        changes = changes | Changes(frozenset({"runs", "rounds", "traces"}))
                except InputError as exc:
                    outcome["refused"].append(str(exc))
            return changes

        def report(_changes) -> None:
            done, refused = outcome["done"], outcome["refused"]
            new = [r for r in done if not r.already_imported]
            text = f"Imported {len(new)} ARM run(s) with {sum(r.traces for r in new)} traces."
            if len(done) > len(new):
                text += f" {len(done) - len(new)} file(s) were already in the project."
            if refused:
                self.notices.add("warning", text + f" {len(refused)} file(s) refused.", "\n".join(refused))
            else:
                self.notices.add("info", text)

        self.model.write("import ARM traces", job, report)

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        recent = self.settings.recent_files()
        for path in recent:
            action = self.recent_menu.addAction(str(path).replace("&", "&&"))
            action.setEnabled(path.exists())
            action.triggered.connect(lambda _checked=False, p=path: self.open_path(p))
        if not recent:
            self.recent_menu.addAction("(none)").setEnabled(False)

    # ----- model events ----------------------------------------------------------------------
    def _on_opened(self, store: Store) -> None:
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
        self._update_title()
        self._read_status()
        self._update_actions()

    def _on_closed(self) -> None:
        self._status_reader.cancel()
        self.notices.set_banner(None)
        self._update_title()
        self.provider_label.setText("")
        self._update_actions()

    def _on_changed(self, changes) -> None:
        if changes.touches("providers", "project"):
            self._read_status()

    def _on_failed(self, message: str, details: str) -> None:
        self.notices.add("error", message, details)

    def _on_busy_changed(self, busy: bool) -> None:
        if self.runs.running:  # the bar shows the run's progress until it ends
            self._update_actions()
            return
        self.progress.setVisible(busy)
        self.progress.setRange(0, 0)  # indeterminate until runs report real progress
        self.progress.setFormat("Working…")
        self._update_actions()

    # ----- runs ------------------------------------------------------------------------------
    def _on_cancel_clicked(self) -> None:
        self.runs.cancel()
        self.model.workers.cancel_all()

    def _on_run_running_changed(self, running: bool) -> None:
        self.cancel_button.setVisible(running)
        self.progress.setVisible(running or self.model.busy)
        self.progress.setRange(0, 0)
        self.progress.setFormat("Starting run…" if running else "Working…")

    def _on_run_progressed(self, progress) -> None:
        if not self.manual_agents.pending():
            self.progress.setRange(0, max(progress.total, 1))
            self.progress.setValue(progress.done)
            self.progress.setFormat(progress_text(progress))

    def _on_manual_asked(self, _call) -> None:
        self.progress.setFormat("Waiting for you")
        dock = self.docks["liveRunPanel"]
        dock.show()
        dock.raise_()
        if not dock.isFloating() and dock.height() < 420:  # room to read the prompt and answer
            self.resizeDocks([dock], [420], Qt.Orientation.Vertical)

    def _on_manual_settled(self, _key: str) -> None:
        if self.runs.last_progress is not None and not self.manual_agents.pending():
            self.progress.setFormat(progress_text(self.runs.last_progress))

    def _on_run_finished(self, summary: dict) -> None:
        run_id, status = summary.get("run_id", "?"), summary.get("status")
        counts = (f"{summary.get('calls', 0)} call(s), {summary.get('failed_calls', 0)} failed, "
                  f"{summary.get('invalid_calls', 0)} invalid")
        error = summary.get("error") or ""
        if status == "completed":
            self.notices.add("info", f"Run {run_id} completed: {counts}.")
        elif status == "interrupted":
            self.notices.add("warning", f"Run {run_id} was interrupted ({error or 'stopped'}): {counts}. "
                                        "Select it in Live Run and Resume to finish it.")
        else:
            self.notices.add("error", f"Run {run_id} failed: {counts}.", error)

    def _on_run_failed(self, message: str, details: str) -> None:
        self.notices.add("error" if details or not self.runs.running else "warning", message, details)

    # ----- display ---------------------------------------------------------------------------
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

            return meta.project_name(reading), panel.providers(reading)

        self._status_reader.load(read, self._show_status, cleanup=reading.close_connection)

    def _show_status(self, status: tuple) -> None:
        name, providers = status
        self._update_title(name)
        if not providers:
            self.provider_label.setText("Providers: none configured")
            return
        names = [("sim (simulated, offline)" if p["model"] == "sim" else p["name"]) for p in providers]
        self.provider_label.setText("Providers: " + ", ".join(names))

    def _update_actions(self) -> None:
        has_project = self.model.store is not None
        busy = self.model.busy
        self.action_save_as.setEnabled(has_project and not busy)
        self.action_import.setEnabled(has_project and not busy and not self.model.store.read_only)
        self.action_close.setEnabled(has_project and not busy)
        self.action_new.setEnabled(not busy)
        self.action_open.setEnabled(not busy)

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
            self.settings.save_window_state(self.saveGeometry(), self.saveState(LAYOUT_VERSION))
        self.runs.shutdown()  # cancel and wait for a run first: it writes to the model's file
        self.model.shutdown()
        super().closeEvent(event)
