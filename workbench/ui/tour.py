"""Help ▸ Tour: a guided walk through the panels, step by step (the steps: :mod:`.tour_steps`).

- :class:`~workbench.ui.widgets.tour_overlay.TourOverlay` dims the window around the step's
  target (a dock, or a widget in it) and outlines it in the theme's accent colour; the card is
  :class:`~workbench.ui.widgets.tour_card.TourCard`.
- :class:`TourController` shows a step: it goes to the workspace that shows the target's panel
  (the window's ``show_panel``: Design, Run, Results or Audit), raises its dock (a tabified dock
  comes to the front), selects the step's tabs, and places the card where it does not cover the
  target when there is room. It follows the target as it moves or resizes, the theme and the zoom.
- The tour changes nothing of the user's layout beyond raising docks and choosing tabs; a dock
  the user had closed is shown for its step and closed again when the tour ends, and the window
  goes back to the workspace the tour started in.
- Leaving remembers the step (:class:`TourMemory`, in the window's settings file); Help ▸ Tour then resumes there;
  finishing forgets it.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRect, Qt, QTimer, Signal
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabWidget, QWidget

from workbench.ui.settings import AppSettings
from workbench.ui.tour_steps import STEPS, TourStep
from workbench.ui.widgets.tour_card import TourCard
from workbench.ui.widgets.tour_overlay import TourOverlay

MARGIN = 12  # between the card and the window's edges
GAP = 14  # between the card and the target
PAD = 3  # the outline sits this far outside the target
FOLLOW = (QEvent.Type.Move, QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.Hide)


class TourMemory:
    """The step a tour was left at, by key (a list of steps that changed never resumes wrongly),
    kept with the window's other settings (:class:`~workbench.ui.settings.AppSettings`' file)."""

    def __init__(self, settings: AppSettings):
        self._settings = settings

    def resume_index(self) -> int | None:
        key = self._settings.tour_step()
        return next((i for i, step in enumerate(STEPS) if step.key == key), None)

    def remember(self, index: int) -> None:
        self._settings.set_tour_step(STEPS[index].key)

    def forget(self) -> None:
        self._settings.set_tour_step(None)


class TourController(QObject):
    changed = Signal()  # started, moved to another step, left or finished

    def __init__(self, window: QMainWindow, memory: TourMemory | None = None):
        super().__init__(window)
        self.window = window
        self.memory = memory or TourMemory(window.settings)
        self.steps = STEPS
        self.index = 0
        self.active = False
        self.overlay = TourOverlay(window)
        self.overlay.hide()
        self.card = TourCard(window)
        self.card.hide()
        self.card.next_button.clicked.connect(self.next)
        self.card.back_button.clicked.connect(self.back)
        self.card.leave_button.clicked.connect(self.leave)
        self.card.demo_button.clicked.connect(self._on_demo_clicked)
        self._watched: list[QWidget] = []
        self._shown_docks: list[QDockWidget] = []  # docks the user had closed, shown by the tour
        self._workspace = ""  # where the tour started (it goes back there at the end)
        self._sync_timer = QTimer(self)
        self._sync_timer.setSingleShot(True)
        self._sync_timer.setInterval(0)
        self._sync_timer.timeout.connect(self.sync)
        window.installEventFilter(self)
        for signal, slot in ((getattr(window, "theme_changed", None), self._on_theme_changed),
                             (getattr(window, "zoom_changed", None), self._schedule_sync)):
            if signal is not None:
                signal.connect(slot)
        model = getattr(window, "model", None)
        if model is not None:
            for signal in (model.opened, model.closed, model.busy_changed):
                signal.connect(self._on_project_changed)

    # ----- driving -------------------------------------------------------------------------------
    @property
    def step(self) -> TourStep:
        return self.steps[self.index]

    def resume(self) -> None:
        """Help ▸ Tour: at the remembered step, else from the start."""
        remembered = self.memory.resume_index()
        self.start(remembered if remembered is not None else 0)

    def start(self, index: int = 0) -> None:
        workspaces = getattr(self.window, "workspaces", None)
        if not self.active and workspaces is not None:
            self._workspace = workspaces.current
        self.active = True
        self.overlay.show()
        self.card.show()
        self.show_step(index)

    def show_step(self, index: int) -> None:
        self.index = max(0, min(index, len(self.steps) - 1))
        step = self.step
        self.card.set_step(step, self.index, len(self.steps))
        self._sync_demo_button()
        dock = self._dock(step)
        if dock is not None:
            self._go_to_workspace_of(dock)
            if dock.isHidden():
                dock.show()
                if dock not in self._shown_docks:
                    self._shown_docks.append(dock)
            dock.raise_()
            for label in step.tabs:
                self._select_tab(dock, label)
        workspaces = getattr(self.window, "workspaces", None)
        if dock is not None and workspaces is not None:  # where the step is: the bar's name for it
            self.card.counter.setText(f"{self.card.counter.text()} · {workspaces.workspace.title}")
        self.sync()
        self.card.next_button.setFocus(Qt.FocusReason.OtherFocusReason)
        self.changed.emit()

    def next(self) -> None:
        if self.index >= len(self.steps) - 1:
            self.finish()
        else:
            self.show_step(self.index + 1)

    def back(self) -> None:
        if self.index > 0:
            self.show_step(self.index - 1)

    def leave(self) -> None:
        """Close the tour; Help ▸ Tour resumes at this step (the first step is not worth keeping)."""
        self._keep_place()
        self._close()

    def _keep_place(self) -> None:
        if self.index > 0:
            self.memory.remember(self.index)
        else:
            self.memory.forget()

    def finish(self) -> None:
        self.memory.forget()
        self._close()

    def _close(self) -> None:
        self.active = False
        self.card.hide()
        self.overlay.hide()
        self._watch([])
        for dock in self._shown_docks:
            dock.hide()
        self._shown_docks = []
        workspaces = getattr(self.window, "workspaces", None)
        if workspaces is not None and self._workspace:
            workspaces.switch(self._workspace)
        self.changed.emit()

    def _go_to_workspace_of(self, dock: QDockWidget) -> None:
        """The workspace that shows ``dock``'s panel, when the one on screen does not (Teach
        presents it instead)."""
        workspaces = getattr(self.window, "workspaces", None)
        name = next((n for n, d in getattr(self.window, "docks", {}).items() if d is dock), None)
        if workspaces is None or name is None or not dock.isHidden():
            return
        if workspaces.workspace.presenter:
            workspaces.present(name)
            return
        from workbench.ui.workspaces import home_of

        home = home_of(name)
        if home is not None and home.key != workspaces.current:
            workspaces.switch(home.key)

    # ----- what to show --------------------------------------------------------------------------
    def _dock(self, step: TourStep) -> QDockWidget | None:
        if step.dock is None:
            return None
        return self.window.findChild(QDockWidget, step.dock)

    def target(self) -> QWidget | None:
        """The step's target as it can be seen now: its widget if shown, else its dock."""
        dock = self._dock(self.step)
        if dock is None or not dock.isVisible():
            return None
        if self.step.target:  # the one shown (a chart made anew leaves its old one until deleted)
            for widget in dock.findChildren(QWidget, self.step.target):
                if widget.isVisible() and not self._clip(widget).isEmpty():
                    return widget
        return dock

    def _designated(self) -> list[QWidget]:
        """The step's own target widget, watched even while hidden (shown again, it is outlined)."""
        dock = self._dock(self.step)
        widget = dock.findChild(QWidget, self.step.target) if dock is not None and self.step.target else None
        return [widget] if widget is not None else []

    @staticmethod
    def _select_tab(dock: QDockWidget, label: str) -> bool:
        for tabs in dock.findChildren(QTabWidget):
            for i in range(tabs.count()):
                text = tabs.tabText(i).replace("&&", "&")
                if (text == label or text.startswith(label + " (")) and tabs.isTabVisible(i):  # "CONS (3)"
                    tabs.setCurrentIndex(i)
                    return True
        return False

    def _clip(self, widget: QWidget) -> QRect:
        """``widget``'s rectangle in the window, cut to what its parents show (a widget in a
        scrolled panel may be partly out of view)."""
        rect = QRect(widget.mapTo(self.window, widget.rect().topLeft()), widget.size())
        parent = widget.parentWidget()
        while parent is not None and parent is not self.window:
            rect &= QRect(parent.mapTo(self.window, parent.rect().topLeft()), parent.size())
            parent = parent.parentWidget()
        return rect & self.window.rect()

    # ----- placing -------------------------------------------------------------------------------
    def sync(self) -> None:
        """Outline the target where it is now and place the card beside it."""
        if not self.active:
            return
        target = self.target()
        inside = target is not None and target.window() is self.window  # not a floating dock
        highlight = self._clip(target).adjusted(-PAD, -PAD, PAD, PAD) & self.window.rect() if inside else None
        self._watch(self._chain(target) + self._designated() if inside else self._designated())
        self.overlay.highlight = highlight
        self.overlay.setGeometry(self.window.rect())
        room = self._room()
        width = min(self.card.preferred_width(), room.width())
        self.card.fit(width, room.height())
        dock = self._dock(self.step)
        area = self._clip(dock) if inside and dock is not None else highlight
        self.card.move(self._place(self.card.size(), highlight, room, area))
        self.overlay.raise_()
        self.card.raise_()
        self.overlay.update()

    def _room(self) -> QRect:
        """Where the card may go: the window less its menu bar, status bar and margins."""
        top = self.window.menuBar().geometry().bottom() + 1 if self.window.menuBar().isVisible() else 0
        bar = self.window.statusBar()
        bottom = bar.geometry().top() if bar.isVisible() else self.window.height()
        return QRect(0, top, self.window.width(), bottom - top).adjusted(MARGIN, MARGIN, -MARGIN, -MARGIN)

    @staticmethod
    def _place(size, target: QRect | None, room: QRect, area: QRect | None = None):
        """Beside the target (right, left, below, above), inside ``room``: where it covers the
        least of the target, then of its surroundings, then of ``area`` (the target's dock); in
        the middle without a target."""
        def inside(x: int, y: int) -> QRect:
            x = max(room.left(), min(x, room.right() + 1 - size.width()))
            y = max(room.top(), min(y, room.bottom() + 1 - size.height()))
            return QRect(x, y, size.width(), size.height())

        if target is None:
            return inside(room.center().x() - size.width() // 2, room.center().y() - size.height() // 2).topLeft()
        candidates = [inside(target.right() + GAP, target.top()),
                      inside(target.left() - GAP - size.width(), target.top()),
                      inside(target.left(), target.bottom() + GAP),
                      inside(target.left(), target.top() - GAP - size.height()),
                      inside(target.right() - size.width() - GAP, target.bottom() - size.height() - GAP)]

        near = target.adjusted(-3 * GAP, -3 * GAP, 3 * GAP, 3 * GAP)  # its tabs and headings

        def covered(rect: QRect) -> tuple[int, ...]:
            parts = (rect & target, rect & near, rect & (area or target))
            return tuple(r.width() * r.height() for r in parts)

        return min(candidates, key=covered).topLeft()  # min keeps the first of equals

    # ----- following -----------------------------------------------------------------------------
    def _chain(self, widget: QWidget) -> list[QWidget]:
        chain = []
        while widget is not None and widget is not self.window:
            chain.append(widget)
            widget = widget.parentWidget()
        return chain

    def _watch(self, widgets: list[QWidget]) -> None:
        for widget in self._watched:
            if widget not in widgets:
                try:
                    widget.removeEventFilter(self)
                except RuntimeError:  # deleted meanwhile (a chart made anew): nothing to undo
                    pass
        for widget in widgets:
            if widget not in self._watched:
                widget.installEventFilter(self)
        self._watched = widgets

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        kind = event.type()
        if not self.active:
            return False
        if kind in FOLLOW or kind == QEvent.Type.ZOrderChange:
            self._schedule_sync()
        elif kind == QEvent.Type.Close and watched is self.window:
            self._keep_place()  # closing the window leaves the tour where it was
        return False

    def _schedule_sync(self, *_args) -> None:
        if self.active:
            self._sync_timer.start()

    def _on_theme_changed(self, name: str) -> None:
        self.card.restyle(name)
        self._schedule_sync()

    def _on_project_changed(self, *_args) -> None:
        self._sync_demo_button()
        self._schedule_sync()

    # ----- the demo ------------------------------------------------------------------------------
    def _sync_demo_button(self) -> None:
        model = getattr(self.window, "model", None)
        wanted = bool(self.active and self.index == 0 and model is not None and model.store is None)
        self.card.demo_button.setVisible(wanted)
        self.card.demo_button.setEnabled(wanted and not model.busy)
        if self.active:
            self._schedule_sync()

    def _on_demo_clicked(self) -> None:
        """Open the bundled demo, as ``rwb gui --demo`` does (built off the GUI thread if needed)."""
        from workbench.core.project.demo import demo_path
        from workbench.services.runs.demo_runs import ensure_full_demo

        self.card.demo_button.setEnabled(False)
        self.window.model.open_prepared(demo_path(), ensure_full_demo)
