"""The main window's menus, their actions and shortcuts, and when each action is enabled.

Every action a user can take from the keyboard is here, with its shortcut, so Help > Keyboard
Shortcuts (generated from these actions, plus any the panels add) never drifts from the keys.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QMenu

from workbench.ui import theme

if TYPE_CHECKING:
    from workbench.ui.main_window import MainWindow


def keys(*sequences: str) -> list[QKeySequence]:
    """The same keys on every platform (Qt reads Ctrl as Cmd on macOS). Not the platform's
    standard bindings: on X11 those add media keys ("New", "Close"...) a keyboard rarely has."""
    return [QKeySequence(k) for k in sequences]


class WindowMenus:
    def __init__(self, window: MainWindow):
        self.window = w = window
        bar = w.menuBar()

        file_menu = bar.addMenu("&File")
        self.new = self._add(file_menu, "&New Project…", keys("Ctrl+N"), w.new_project,
                             "Create an empty project file")
        self.open = self._add(file_menu, "&Open…", keys("Ctrl+O"), w.open_project, "Open a project file")
        self.recent_menu = QMenu("Open &Recent", w)
        file_menu.addMenu(self.recent_menu)
        self.recent_menu.aboutToShow.connect(self.fill_recent)
        self.save_as = self._add(file_menu, "Save &As…", keys("Ctrl+Shift+S"), w.save_as,
                                 "Copy the project to a new file and go on working in the copy")
        file_menu.addSeparator()
        self.import_arm = self._add(file_menu, "&Import ARM Traces…", keys("Ctrl+I"), w.import_arm,
                                    "Import ARM trace files (JSON) into the project")
        self.close = self._add(file_menu, "&Close Project", keys("Ctrl+W"), w.model.close,
                               "Close the project (the window stays open)")
        file_menu.addSeparator()
        self.quit = self._add(file_menu, "&Quit", keys("Ctrl+Q"), w.close, "Quit the workbench")

        edit_menu = bar.addMenu("&Edit")
        self.undo = w.history.createUndoAction(w, "&Undo")
        self.undo.setShortcuts(keys("Ctrl+Z"))
        self.redo = w.history.createRedoAction(w, "&Redo")
        self.redo.setShortcuts(keys("Ctrl+Shift+Z", "Ctrl+Y"))
        self.undo.setObjectName("undoAction")
        self.redo.setObjectName("redoAction")
        edit_menu.addAction(self.undo)
        edit_menu.addAction(self.redo)

        view_menu = bar.addMenu("&View")
        workspace_menu = view_menu.addMenu("&Workspace")
        workspace_menu.setObjectName("workspaceMenu")
        for action in w.workspaces.actions.values():
            workspace_menu.addAction(action)
        workspace_menu.addSeparator()
        self.reset_layout = self._add(workspace_menu, "&Reset Workspace", [], w.reset_layout,
                                      "Put this workspace's panels back as it came (the others keep theirs)")
        self.presenter = self._add(view_menu, "&Presenter Mode", keys("F11"), w.toggle_presenter,
                                   "One panel filling the window, in large type and high contrast (Teach)")
        self.presenter.setObjectName("presenterModeAction")
        self.presenter.setCheckable(True)
        view_menu.addSeparator()
        # A panel shown here joins the workspace on screen (each workspace keeps its own set).
        for dock in w.docks.values():
            view_menu.addAction(dock.toggleViewAction())
        view_menu.addSeparator()
        theme_menu = view_menu.addMenu("&Theme")
        self.theme_group = QActionGroup(w)
        self.themes: dict[str, QAction] = {}
        for name, label in theme.THEMES.items():
            action = QAction(label, w)
            action.setCheckable(True)
            action.triggered.connect(lambda _checked=False, n=name: w.set_theme(n))
            self.theme_group.addAction(action)
            theme_menu.addAction(action)
            self.themes[name] = action
        theme_menu.addSeparator()
        self.toggle_theme = self._add(theme_menu, "&Toggle Light/Dark", keys("Ctrl+Shift+T"),
                                      w.toggle_theme, "Switch between the light and the dark theme")
        self.zoom_in = self._add(view_menu, "Zoom &In", keys("Ctrl++", "Ctrl+="),
                                 w.zoom_in, "Larger text")
        self.zoom_out = self._add(view_menu, "Zoom &Out", keys("Ctrl+-"), w.zoom_out, "Smaller text")
        self.zoom_reset = self._add(view_menu, "Reset &Zoom", keys("Ctrl+0"), w.zoom_reset,
                                    "Text at its normal size")
        view_menu.addSeparator()
        self.message_history = self._add(view_menu, "&Message History…", keys("Ctrl+Shift+H"),
                                         w.show_message_history, "Every message of this session, with details")

        run_menu = bar.addMenu("&Run")
        self.start_run = self._add(run_menu, "&Start Run", keys("F5"), w.start_run,
                                   "Start the configuration chosen in Live Run")
        self.cancel_run = self._add(run_menu, "&Cancel Run", keys("Shift+F5"), w.cancel_run,
                                    "Stop the run in progress (it stays resumable)")

        help_menu = bar.addMenu("&Help")
        self.protocols = self._add(help_menu, "&Protocol Notes", keys("F1"), w.show_protocols,
                                   "What each protocol measures, and how to read what it shows")
        self.shortcuts = self._add(help_menu, "&Keyboard Shortcuts", keys("Ctrl+/"), w.show_shortcuts,
                                   "Every keyboard shortcut of the workbench")
        help_menu.addSeparator()
        # The guided tour: resumes where it was left ("Resume Tour (step k of n)"), or starts over.
        self.tour = self._add(help_menu, "&Tour", keys("Shift+F1"), self.show_tour,
                              "A guided walk through the panels and how to read them")
        self.tour.setObjectName("tourAction")
        self.tour_over = self._add(help_menu, "Start Tour &Over", [], lambda: self.show_tour(restart=True),
                                   "Start the guided tour again from its first step")
        self.tour_over.setObjectName("tourOverAction")
        self.tour_controller = None  # made when first asked for
        help_menu.aboutToShow.connect(self.sync_tour)
        help_menu.addSeparator()
        self.about = self._add(help_menu, "&About Resonance Workbench", [], w.show_about,
                               "Versions, and the open project's path")

        # The names the window has always had (tests and users' scripts know them).
        w.action_new, w.action_open, w.action_save_as = self.new, self.open, self.save_as
        w.action_import, w.action_close = self.import_arm, self.close
        w.recent_menu = self.recent_menu
        w._fill_recent_menu = self.fill_recent
        self.sync_theme(w.theme_name)
        self.sync_zoom(w.zoom)
        self.sync_tour()
        self.update_actions()

    def _add(self, menu: QMenu, text: str, shortcuts: list[QKeySequence], slot: Callable, tip: str) -> QAction:
        action = QAction(text, self.window)
        action.setShortcuts(shortcuts)
        action.setStatusTip(tip)
        action.setToolTip(tip)
        action.triggered.connect(lambda _checked=False: slot())
        menu.addAction(action)
        return action

    # ----- state -------------------------------------------------------------------------------
    def update_actions(self) -> None:
        w = self.window
        store = w.model.store
        has_project, busy, running = store is not None, w.model.busy, w.runs.running
        writable = has_project and not store.read_only
        self.save_as.setEnabled(has_project and not busy)
        self.import_arm.setEnabled(writable and not busy)
        self.close.setEnabled(has_project and not busy)
        self.new.setEnabled(not busy)
        self.open.setEnabled(not busy)
        self.recent_menu.setEnabled(not busy)
        self.start_run.setEnabled(writable and not running)
        self.cancel_run.setEnabled(running)

    def sync_theme(self, name: str) -> None:
        if name in self.themes:
            self.themes[name].setChecked(True)

    def sync_zoom(self, zoom: float) -> None:
        # It says where it goes (100 %) and, when elsewhere, where the zoom is now.
        now = round(zoom * 100)
        self.zoom_reset.setText("Reset &Zoom to 100%" + ("" if now == 100 else f" (now {now}%)"))
        self.zoom_in.setEnabled(zoom < theme.ZOOM_MAX)
        self.zoom_out.setEnabled(zoom > theme.ZOOM_MIN)

    def sync_presenter(self, on: bool) -> None:
        self.presenter.setChecked(on)

    def show_tour(self, restart: bool = False):
        """Help ▸ Tour: at the step it was left at, or from the start."""
        from workbench.ui.tour import TourController

        if self.tour_controller is None:
            self.tour_controller = TourController(self.window)
            self.tour_controller.changed.connect(self.sync_tour)
        if restart:
            self.tour_controller.start(0)
        else:
            self.tour_controller.resume()
        return self.tour_controller

    def sync_tour(self) -> None:
        from workbench.ui.tour import TourMemory
        from workbench.ui.tour_steps import STEPS

        at = TourMemory(self.window.settings).resume_index()
        if at is None:
            self.tour.setText("&Tour")
        else:
            self.tour.setText(f"Resume &Tour (step {at + 1} of {len(STEPS)})")
        self.tour_over.setVisible(at is not None)

    def fill_recent(self) -> None:
        menu = self.recent_menu
        menu.clear()
        recent = self.window.settings.recent_files()
        for path in recent:
            action = menu.addAction(str(path).replace("&", "&&"))
            action.setEnabled(path.exists())
            action.triggered.connect(lambda _checked=False, p=path: self.window.open_path(p))
        if not recent:
            menu.addAction("(none)").setEnabled(False)

    def shortcut_rows(self) -> list[tuple[str, str, str]]:
        """Every shortcut: the menus' actions, then those the panels define."""
        from workbench.ui.help import shortcut_rows
        from workbench.ui.tour_steps import TOUR_KEYS

        others = [(panel.TITLE, action) for panel in self.window.panels.values()
                  for action in panel.findChildren(QAction) if action.shortcuts()]
        tour = [("Help ▸ Tour", what, QKeySequence(key).toString(QKeySequence.SequenceFormat.NativeText))
                for what, key in TOUR_KEYS]
        return shortcut_rows(self.window.menuBar(), others) + tour

    def all_actions(self) -> list[QAction]:
        """The actions of the menus (not the submenus' own entries), in menu order."""
        found: list[QAction] = []

        def walk(menu: QMenu) -> None:
            for action in menu.actions():
                if action.menu() is not None:
                    walk(action.menu())
                elif not action.isSeparator():
                    found.append(action)

        for top in self.window.menuBar().actions():
            if top.menu() is not None:
                walk(top.menu())
        return found
