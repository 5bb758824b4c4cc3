"""Workspaces: the window's arrangements of its panels, one per task (UI.md, issue 26).

The window has one dock per panel, and a panel exists once (one widget over the one shared
ProjectModel). A workspace is an arrangement of those docks: switching saves the arrangement
being left (``QMainWindow.saveState``) and restores the one entered, or lays it out from its
declaration below the first time and on Reset. So a panel floated, moved or closed in one
workspace stays so in that workspace only, and each arrangement is saved across restarts,
versioned (``LAYOUT_VERSION``): an arrangement saved for another set of docks is ignored.

Why not a QStackedWidget of one QMainWindow per workspace: the panels would have to be moved
from window to window as workspaces switch (a widget has one parent), and each window's saved
state would name docks that live elsewhere half of the time. One window re-arranged is what
``saveState``/``restoreState`` are made for, and what Qt Creator's modes and napari do.

Adding a panel to a workspace is one line in :data:`WORKSPACES`, for instance the study view
tabbed with the Quadrant: ``Place("studyPanel", tab_with="quadrantPanel")``, or the protocol
editor beside Clusters & Agents: ``Place("protocolEditorPanel", beside="clustersPanel", share=0.45)``.
Teach presents one panel at a time, in the order the other workspaces list them.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabBar, QToolBar

LAYOUT_VERSION = 3  # 3: the Protocol Editor docked in Design; 2: per-workspace arrangements; 1: one layout


@dataclass(frozen=True)
class Place:
    """Where a panel's dock goes in a workspace: the first one fills the window; the others are
    tabbed with, beside (to the right of) or below a dock placed before them. ``share`` is the
    part of the window's width (beside) or height (below) the new dock takes."""

    panel: str  # the panel's OBJECT_NAME
    tab_with: str | None = None
    beside: str | None = None
    below: str | None = None
    share: float = 0.5


@dataclass(frozen=True)
class Workspace:
    key: str  # its action is "workspace_<key>"
    title: str
    tip: str
    places: tuple[Place, ...] = ()
    presenter: bool = False  # Teach: one panel at a time, in presenter mode

    @property
    def panels(self) -> tuple[str, ...]:
        return tuple(p.panel for p in self.places)


WORKSPACES: tuple[Workspace, ...] = (
    Workspace("design", "Design", "Set up the panel of agents (clusters, agents, personas, providers) and the "
              "protocol's prompts", (Place("clustersPanel"), Place("protocolEditorPanel", beside="clustersPanel",
                                                                  share=0.45))),
    Workspace("run", "Run", "Start and watch runs: the timeline of calls and the call selected",
              (Place("liveRunPanel"),)),
    # Anchors & Restoration is the only view of a Resonance Echo run's results (its markers,
    # checks and restorations), as the others are of theirs; Teach can present it like any panel.
    # The protocols rarely share a run, so their views are tabbed, each at the window's size.
    Workspace("results", "Results", "Read a run's results: quadrant, drift, findings, CONS, reports, anchors; studies",
              (Place("quadrantPanel"), Place("driftPanel", tab_with="quadrantPanel"),
               Place("findingsPanel", tab_with="quadrantPanel"), Place("anchorsPanel", tab_with="quadrantPanel"),
               Place("studyPanel", tab_with="quadrantPanel"))),
    Workspace("audit", "Audit", "Every call, trace, vote and finding, the list and the record read whole",
              (Place("traceInspectorPanel"),)),
    Workspace("teach", "Teach", "Present one panel at a time, in large type and high contrast", presenter=True),
)
FIRST_START = "results"  # a first start shows the demo's results


def by_key(key: str) -> Workspace | None:
    return next((w for w in WORKSPACES if w.key == key), None)


def home_of(panel: str) -> Workspace | None:
    """The first workspace (Teach aside) that places ``panel``: where a link to it leads."""
    return next((w for w in WORKSPACES if not w.presenter and panel in w.panels), None)


def teaching_order(panels) -> list[str]:
    """The panels Teach presents, in the order the workspaces list them, then any other."""
    placed = [p for w in WORKSPACES for p in w.panels]
    ordered = list(dict.fromkeys(p for p in placed if p in panels))
    return ordered + [p for p in panels if p not in ordered]


class Workspaces(QObject):
    """Switches the window's docks between the workspaces, remembers each arrangement, and
    offers the actions (View ▸ Workspace, the bar at the window's left edge, Ctrl+1 … Ctrl+5)."""

    switched = Signal(str)  # the workspace now shown
    presented = Signal(str)  # Teach: the panel now presented

    def __init__(self, window: QMainWindow, docks: dict[str, QDockWidget]):
        super().__init__(window)
        self.window, self.docks = window, docks
        self.current = ""
        self.previous = ""  # the workspace before Teach (where leaving presenter mode goes back to)
        self.states: dict[str, object] = {}  # key -> QByteArray of a workspace not on screen
        self.order = teaching_order(list(docks))
        self.group = QActionGroup(self)
        self.group.setExclusive(True)
        self.actions: dict[str, QAction] = {}
        for number, ws in enumerate(WORKSPACES, start=1):
            action = QAction(f"&{number} {ws.title}", window)
            action.setObjectName(f"workspace_{ws.key}")
            action.setCheckable(True)
            action.setShortcut(QKeySequence(f"Ctrl+{number}"))
            action.setToolTip(f"{ws.title} (Ctrl+{number}): {ws.tip}")
            action.setStatusTip(ws.tip)
            action.setIconText(ws.title)  # the bar shows the title without its number
            action.triggered.connect(lambda _checked=False, k=ws.key: self.switch(k))
            self.group.addAction(action)
            self.actions[ws.key] = action
        self.bar = self._make_bar()

    def _make_bar(self) -> QToolBar:
        bar = QToolBar("Workspaces", self.window)
        bar.setObjectName("workspaceBar")
        bar.setMovable(False)
        bar.setFloatable(False)
        bar.setOrientation(Qt.Orientation.Vertical)
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        bar.toggleViewAction().setVisible(False)  # the way to switch: always there
        for action in self.actions.values():
            bar.addAction(action)
        self.window.addToolBar(Qt.ToolBarArea.LeftToolBarArea, bar)
        return bar

    # ----- switching -------------------------------------------------------------------------
    @property
    def workspace(self) -> Workspace:
        return by_key(self.current) or WORKSPACES[0]

    def start(self, current: str, states: dict[str, object]) -> None:
        """The arrangements saved last time, and the workspace the window was left in."""
        self.states = {k: v for k, v in states.items() if by_key(k) is not None}
        self._enter(current if by_key(current) is not None else FIRST_START)

    def switch(self, key: str) -> None:
        if by_key(key) is None or key == self.current:
            self._sync_actions()
            return
        self.states[self.current] = self.window.saveState(LAYOUT_VERSION)
        if by_key(key).presenter and not self.workspace.presenter:
            self.previous = self.current
        self._enter(key)

    def _enter(self, key: str) -> None:
        self.current = key
        ws = self.workspace
        if not ws.presenter:  # normal type first: the arrangement is restored at its own size
            self.window.set_presenter(False)
        state = self.states.pop(key, None)
        if state is None or not self.window.restoreState(state, LAYOUT_VERSION):
            self.arrange(ws)
        self.window.set_presenter(ws.presenter)  # (the saved state shows or hides its bar too)
        if ws.presenter and self.presented_panel() is None:
            self.present(self.order[0])
        self.tidy_tab_bars()
        QTimer.singleShot(0, self.tidy_tab_bars)
        self._sync_actions()
        self.switched.emit(key)
        if ws.presenter:
            self.presented.emit(self.presented_panel() or "")

    def _sync_actions(self) -> None:
        action = self.actions.get(self.current)
        if action is not None:
            action.setChecked(True)

    def reset(self) -> None:
        """The current workspace as it came (its own arrangement; the others keep theirs)."""
        self.arrange(self.workspace)
        if self.workspace.presenter:
            self.present(self.order[0])
        self.tidy_tab_bars()
        QTimer.singleShot(0, self.tidy_tab_bars)

    def arrange(self, ws: Workspace) -> None:
        """Lay out ``ws`` from its declaration: its docks placed, every other dock hidden."""
        window = self.window
        for dock in self.docks.values():
            dock.setFloating(False)
            window.removeDockWidget(dock)  # out of every tab group: re-tabifying leaves stray bars
        sizes: list[tuple[QDockWidget, float, Qt.Orientation]] = []
        for place in ws.places:
            dock = self.docks.get(place.panel)
            if dock is None:
                continue
            if place.tab_with in self.docks:
                window.tabifyDockWidget(self.docks[place.tab_with], dock)
            elif place.beside in self.docks:
                window.splitDockWidget(self.docks[place.beside], dock, Qt.Orientation.Horizontal)
                sizes.append((dock, place.share, Qt.Orientation.Horizontal))
            elif place.below in self.docks:
                window.splitDockWidget(self.docks[place.below], dock, Qt.Orientation.Vertical)
                sizes.append((dock, place.share, Qt.Orientation.Vertical))
            else:
                window.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, dock)
            dock.show()
        for place in ws.places:  # the first of each tab group in front
            if place.tab_with is None and place.panel in self.docks:
                self.docks[place.panel].raise_()
        # The others stay in the layout, hidden, so that the saved arrangement names them (a
        # dock out of the layout is left out of saveState, and restoreState leaves it as it was).
        for name, dock in self.docks.items():
            if name not in ws.panels:
                window.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, dock)
                dock.hide()
        if sizes:
            self._size(sizes)
            QTimer.singleShot(0, lambda: self._size(sizes))  # again once the window has its size

    def _size(self, sizes) -> None:
        for dock, share, orientation in sizes:
            whole = self.window.width() if orientation == Qt.Orientation.Horizontal else self.window.height()
            self.window.resizeDocks([dock], [int(whole * share)], orientation)

    def tidy_tab_bars(self) -> None:
        """Qt leaves behind, visible, the tab bar of a tab group that changed again before the
        layout was applied (docks tabified one after another, or a state restored over another):
        a bar whose tabs are not the docks of a current tab group is such a leftover, and is
        hidden. A bar that is a current group's, in the window, is shown (hidden while its group
        was being made, Qt would leave it so)."""
        window = self.window
        by_title = {dock.windowTitle(): dock for dock in self.docks.values()}
        for bar in window.findChildren(QTabBar, options=Qt.FindChildOption.FindDirectChildrenOnly):
            titles = [bar.tabText(i) for i in range(bar.count())]
            first = by_title.get(titles[0]) if titles else None
            group = [] if first is None or first.isFloating() or first.isHidden() else \
                [first, *window.tabifiedDockWidgets(first)]
            current = len(group) > 1 and sorted(titles) == sorted(d.windowTitle() for d in group)
            placed = bar.geometry().left() >= 0 and bar.geometry().top() >= 0
            bar.setVisible(current and placed)

    def save_state(self) -> dict[str, object]:
        """Every workspace's arrangement, the one on screen as it is now."""
        return {**self.states, self.current: self.window.saveState(LAYOUT_VERSION)}

    # ----- links and Teach -------------------------------------------------------------------
    def show_panel(self, panel: str) -> None:
        """Bring ``panel`` in front: in this workspace if it is placed here (a tab raised), in
        Teach by presenting it, else in the workspace that shows it (a link's target)."""
        dock = self.docks.get(panel)
        if dock is None:
            return
        if self.workspace.presenter:
            self.present(panel)
            return
        if dock.isHidden():
            home = home_of(panel)
            if home is not None and home.key != self.current:
                self.switch(home.key)
            dock.show()
        dock.raise_()

    def front_panel(self) -> str | None:
        """The panel a user looks at in this workspace: the one holding the focus, else the
        first in front (a dock behind a tab is moved off the window)."""
        def in_front(dock: QDockWidget) -> bool:
            return dock.isVisible() and dock.geometry().bottom() >= 0 and dock.geometry().right() >= 0

        focus = self.window.focusWidget()
        for name, dock in self.docks.items():
            if focus is not None and in_front(dock) and dock.isAncestorOf(focus):
                return name
        return next((n for n in self.order if in_front(self.docks[n]) and not self.docks[n].isFloating()), None)

    def presented_panel(self) -> str | None:
        shown = [n for n in self.order if not self.docks[n].isHidden()]
        return shown[0] if shown else None

    def present(self, panel: str) -> None:
        """Teach: ``panel`` alone, filling the window."""
        dock = self.docks.get(panel)
        if dock is None or not self.workspace.presenter:
            return
        for name, other in self.docks.items():
            if name != panel and not other.isHidden():
                other.setFloating(False)
                other.hide()
        if dock.isFloating():
            dock.setFloating(False)
        dock.show()
        dock.raise_()
        self.tidy_tab_bars()
        self.presented.emit(panel)

    def step(self, by: int) -> None:
        """Teach: the next (``by`` = 1) or previous (-1) panel."""
        now = self.presented_panel()
        at = self.order.index(now) if now in self.order else -1
        self.present(self.order[(at + by) % len(self.order)])

    def toggle_presenter(self) -> None:
        """F11: present the panel in front (Teach), or go back to the workspace before it."""
        if self.workspace.presenter:
            self.leave_presenter()
            return
        front = self.front_panel()
        self.switch("teach")
        if front is not None:
            self.present(front)

    def leave_presenter(self) -> None:
        back = self.previous if by_key(self.previous) is not None and self.previous != "teach" else FIRST_START
        self.switch(back)
