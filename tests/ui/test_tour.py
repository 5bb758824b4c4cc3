"""Help ▸ Tour as a teacher drives it: the menu, Next / Back / Leave (buttons and keys), resume."""

from __future__ import annotations

import re
import shutil

import pytest
from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtWidgets import QDockWidget, QTabWidget

from tests.ui.conftest import WAIT_MS
from workbench.services.project_model import ProjectModel
from workbench.ui import theme
from workbench.ui.main_window import MainWindow
from workbench.ui.settings import AppSettings
from workbench.ui.tour import TourMemory
from workbench.ui.tour_steps import MAX_SENTENCES, STEPS
from workbench.ui.workspaces import home_of

SIZE = QSize(1280, 720)  # a classroom projector


@pytest.fixture(scope="module")
def built_demo(tmp_path_factory):
    """The demo with its runs (every panel has something to show), built once."""
    from workbench.core.project.demo import build_demo
    from workbench.services.runs.demo_runs import populate

    return build_demo(tmp_path_factory.mktemp("tour") / "demo.rwb", populate=populate)


@pytest.fixture
def demo(built_demo, tmp_path, qtbot, window, open_project):
    """The window at 1280×720 on a copy of the demo."""
    window.persist_layout = False
    window.resize(SIZE)
    qtbot.waitUntil(lambda: window.size() == SIZE, timeout=WAIT_MS)
    path = tmp_path / "demo.rwb"
    shutil.copy(built_demo, path)
    open_project(path)
    return window


def start_tour(qtbot, window):
    window.menus.tour.trigger()  # Help ▸ Tour
    tour = window.menus.tour_controller
    qtbot.waitUntil(lambda: tour.card.isVisible(), timeout=WAIT_MS)
    return tour


def settled(qtbot, tour):
    """The outline and the card follow the target once Qt has laid it out (a queued sync)."""
    qtbot.waitUntil(lambda: not tour._sync_timer.isActive(), timeout=WAIT_MS)


def clip(window, widget) -> QRect:
    rect = QRect(widget.mapTo(window, widget.rect().topLeft()), widget.size())
    parent = widget.parentWidget()
    while parent is not None and parent is not window:
        rect &= QRect(parent.mapTo(window, parent.rect().topLeft()), parent.size())
        parent = parent.parentWidget()
    return rect & window.rect()


def room_beside(tour, size: QSize) -> bool:
    """Whether the card fits somewhere in the window outside the outlined target."""
    room, target = tour._room(), tour.overlay.highlight
    bands = (QRect(room.left(), room.top(), target.left() - room.left(), room.height()),
             QRect(target.right() + 1, room.top(), room.right() - target.right(), room.height()),
             QRect(room.left(), room.top(), room.width(), target.top() - room.top()),
             QRect(room.left(), target.bottom() + 1, room.width(), room.bottom() - target.bottom()))
    return any(b.width() >= size.width() and b.height() >= size.height() for b in bands)


def test_steps_are_short_plain_sentences_on_real_docks(window):
    assert len({s.key for s in STEPS}) == len(STEPS)
    docks = {d.objectName() for d in window.findChildren(QDockWidget)}
    for step in STEPS:
        assert 2 <= len(step.sentences) <= MAX_SENTENCES, step.key
        for sentence in step.sentences:
            assert len(sentence) <= 200 and sentence.strip() == sentence, sentence
            assert re.search(r"[.!?)]$", sentence), sentence  # whole sentences, read aloud
        assert step.dock is None or step.dock in docks, step.key
    said = " ".join(f"{s.title} {s.text}" for s in STEPS)
    for needed in ("SQLite", "SIM", "reference cluster", "θ", "τ", "positive consensus", "negative polar",
                   "Unclassified", "polarity gate", "FAP", "Stable, Degraded or Recovering",
                   "Teaching scenario", "challenged", "MCP", "PROVEN", "REFUTED", "CONTESTED",
                   "INSUFFICIENT_EVIDENCE", "escalated to a person", "what-if"):
        assert needed in said, needed


def test_every_step_raises_its_dock_and_outlines_its_target(qtbot, demo):
    window = demo
    tour = start_tour(qtbot, window)
    assert tour.index == 0 and tour.card.counter.text() == f"Step 1 of {len(STEPS)}"
    for i, step in enumerate(STEPS):
        assert tour.index == i
        settled(qtbot, tour)
        card = tour.card.geometry()
        assert window.rect().contains(card), step.key
        if step.dock is None:
            assert tour.overlay.highlight is None
        else:
            dock = window.findChild(QDockWidget, step.dock)
            assert dock.isVisible() and not dock.visibleRegion().isEmpty(), step.key  # raised over its tabs
            target = tour.target()
            if step.target:  # the demo shows every target at 1280×720
                assert target.objectName() == step.target, step.key
            else:
                assert target is dock
            assert tour.overlay.highlight.contains(clip(window, target)), step.key
            if room_beside(tour, card.size()):  # a target filling its workspace leaves none
                assert not card.intersects(tour.overlay.highlight), step.key
            # The tour follows the workspaces: the one that shows the step's panel.
            panel = step.dock.removesuffix("Dock")
            assert window.workspaces.current == home_of(panel).key, step.key
            if step.target and target.inherits("GraphicsView"):  # a chart it explains is there to see
                assert target.width() >= 400 and target.height() >= 300, step.key
        for label in step.tabs:  # the step's tabs are the ones in front
            assert any(t.tabText(t.currentIndex()).startswith(label) for t in dock.findChildren(QTabWidget)), \
                (step.key, label)
        if i < len(STEPS) - 1:
            if i % 2:
                qtbot.keyClick(tour.card.next_button, Qt.Key.Key_Right)
            else:
                qtbot.mouseClick(tour.card.next_button, Qt.MouseButton.LeftButton)
    assert tour.card.next_button.text() == "Finish"
    qtbot.keyClick(tour.card, Qt.Key.Key_Left)
    assert tour.index == len(STEPS) - 2


@pytest.mark.parametrize("name", ["light", "dark"])
def test_the_card_fits_1280x720_whole_in_both_themes(qtbot, demo, name):
    window = demo
    window.menus.themes[name].trigger()
    tour = start_tour(qtbot, window)
    assert theme.css("accent", name) in tour.card.styleSheet()
    for _step in STEPS:
        settled(qtbot, tour)
        card = tour.card
        assert window.rect().contains(card.geometry())
        assert card.scroll.verticalScrollBar().maximum() == 0  # every word shows, none scrolled away
        assert card.title.height() >= card.title.heightForWidth(card.title.width())
        for button in (card.back_button, card.next_button, card.leave_button):
            assert card.rect().contains(button.geometry()) and button.width() >= button.sizeHint().width()
        card.next_button.click()
    assert not tour.active


def test_a_theme_change_restyles_the_open_tour(qtbot, demo):
    tour = start_tour(qtbot, demo)
    demo.menus.toggle_theme.trigger()
    assert theme.css("accent", "dark") in tour.card.styleSheet()
    demo.menus.toggle_theme.trigger()
    assert theme.css("accent", "light") in tour.card.styleSheet()


def test_leave_remembers_the_step_and_help_tour_resumes_there(qtbot, demo):
    window = demo
    tour = start_tour(qtbot, window)
    for _ in range(4):
        qtbot.keyClick(tour.card.next_button, Qt.Key.Key_Right)
    qtbot.mouseClick(tour.card.leave_button, Qt.MouseButton.LeftButton)
    assert not tour.card.isVisible() and not tour.overlay.isVisible()
    assert window.menus.tour.text().replace("&", "") == f"Resume Tour (step 5 of {len(STEPS)})"
    assert window.menus.tour_over.isVisible()

    # Another session (a new window over the same settings) offers the same step.
    again = MainWindow(ProjectModel(), AppSettings())
    qtbot.addWidget(again)
    assert again.menus.tour.text().replace("&", "") == f"Resume Tour (step 5 of {len(STEPS)})"
    again.close()

    window.menus.tour.trigger()
    assert tour.card.isVisible() and tour.index == 4
    assert tour.card.counter.text() == f"Step 5 of {len(STEPS)} · Results"  # and where it is
    window.menus.tour_over.trigger()  # or start over
    assert tour.index == 0


def test_escape_leaves_the_tour(qtbot, demo):
    tour = start_tour(qtbot, demo)
    qtbot.keyClick(tour.card.next_button, Qt.Key.Key_Right)
    qtbot.keyClick(tour.card.next_button, Qt.Key.Key_Escape)
    assert not tour.active and not tour.card.isVisible()
    assert TourMemory(demo.settings).resume_index() == 1


def test_finishing_clears_the_resume_point(qtbot, demo):
    window = demo
    TourMemory(demo.settings).remember(len(STEPS) - 2)
    tour = start_tour(qtbot, window)
    assert tour.index == len(STEPS) - 2
    qtbot.mouseClick(tour.card.next_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(tour.card.next_button, Qt.MouseButton.LeftButton)  # Finish
    assert not tour.active
    assert TourMemory(demo.settings).resume_index() is None
    assert window.menus.tour.text() == "&Tour" and not window.menus.tour_over.isVisible()


def test_the_outline_follows_its_target_when_the_window_resizes(qtbot, demo):
    window = demo
    tour = start_tour(qtbot, window)
    tour.show_step(next(i for i, s in enumerate(STEPS) if s.key == "ballot_matrix"))
    settled(qtbot, tour)
    before = QRect(tour.overlay.highlight)
    window.resize(1180, 700)
    qtbot.waitUntil(lambda: tour.overlay.highlight.contains(clip(window, tour.target()))
                    and tour.overlay.highlight != before, timeout=WAIT_MS)
    assert window.rect().contains(tour.card.geometry())


def test_a_closed_dock_is_shown_for_its_step_and_closed_again(qtbot, demo):
    window = demo
    drift = window.docks["driftPanel"]
    drift.close()
    tour = start_tour(qtbot, window)
    tour.show_step(next(i for i, s in enumerate(STEPS) if s.dock == "driftPanelDock"))
    assert drift.isVisible()
    qtbot.keyClick(tour.card.next_button, Qt.Key.Key_Escape)
    assert drift.isHidden()


def test_the_tour_offers_the_demo_when_no_project_is_open(qtbot, window):
    tour = start_tour(qtbot, window)
    assert tour.card.demo_button.isVisible()
    qtbot.keyClick(tour.card.next_button, Qt.Key.Key_Right)
    assert not tour.card.demo_button.isVisible()


def test_the_tour_and_its_keys_are_in_the_shortcut_list(qtbot, window):
    rows = window.show_shortcuts().rows()
    assert ("Help", "Tour", "Shift+F1") in rows
    assert ("Help ▸ Tour", "Next tour step", "Right") in rows
    assert ("Help ▸ Tour", "Leave the tour", "Esc") in rows
