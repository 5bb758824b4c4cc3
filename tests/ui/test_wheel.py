"""The mouse wheel never edits while you scroll (issue 26): over a slider, a spin box or a combo box
without focus it scrolls the page; once the widget is clicked, it changes the value as before."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDoubleSpinBox,
    QLabel,
    QScrollArea,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from tests.services.test_run_service import demo_project
from tests.ui.conftest import WAIT_MS


def wheel(widget: QWidget, notches: int = -3) -> None:
    """``notches`` of the mouse wheel over the middle of ``widget`` (negative: scroll down)."""
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(centre, QPointF(widget.mapToGlobal(centre.toPoint())), QPoint(0, 0),
                        QPoint(0, 120 * notches), Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                        Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)


def page(qtbot):
    """A scrolling page with a slider, a spin box and a combo box on it, taller than its view."""
    from workbench.ui.app import create_application

    create_application()  # the application as `rwb gui` makes it: the guard is installed there
    scroll = QScrollArea()
    body = QWidget()
    layout = QVBoxLayout(body)
    layout.addWidget(QLabel("top"))
    slider = QSlider(Qt.Orientation.Horizontal)
    slider.setRange(0, 100)
    slider.setValue(40)
    spin = QDoubleSpinBox()
    spin.setValue(0.4)
    combo = QComboBox()
    combo.addItems(["one", "two", "three"])
    for w in (slider, spin, combo):
        layout.addWidget(w)
    layout.addSpacing(2000)
    scroll.setWidget(body)
    scroll.setWidgetResizable(True)
    scroll.resize(300, 200)
    qtbot.addWidget(scroll)
    scroll.show()
    qtbot.waitExposed(scroll)
    return scroll, slider, spin, combo


def test_a_wheel_over_an_unfocused_slider_spin_box_or_combo_scrolls_the_page_not_the_value(qtbot):
    scroll, slider, spin, combo = page(qtbot)
    bar = scroll.verticalScrollBar()
    for widget, value in ((slider, slider.value), (spin, spin.value), (combo, combo.currentIndex)):
        assert widget.focusPolicy() == Qt.FocusPolicy.StrongFocus  # a wheel never focuses it
        bar.setValue(0)
        before, top = value(), bar.value()
        wheel(widget, notches=-1)
        assert value() == before, type(widget).__name__
        assert not widget.hasFocus()
        assert bar.value() > top, f"the page did not scroll over the {type(widget).__name__}"


def test_once_clicked_the_wheel_changes_the_value(qtbot):
    _scroll, slider, spin, _combo = page(qtbot)
    slider.setFocus()
    qtbot.waitUntil(slider.hasFocus, timeout=WAIT_MS)
    wheel(slider, notches=1)
    assert slider.value() != 40
    spin.setFocus()
    qtbot.waitUntil(spin.hasFocus, timeout=WAIT_MS)
    wheel(spin, notches=1)
    assert spin.value() != 0.4


def test_the_agent_editors_strictness_is_left_alone_by_a_wheel(qtbot, window, tmp_path, open_project):
    """The case the issue saw: scrolling the agent editor moved Strictness from 0.4 to 0.16."""
    from workbench.ui.app import create_application

    create_application()
    open_project(demo_project(tmp_path))
    clusters = window.panels["clustersPanel"]
    qtbot.waitUntil(lambda: clusters.view is not None, timeout=WAIT_MS)
    agent = clusters.view.agents[0]["id"]
    assert clusters.select_agent(agent)
    sliders = [s for s in clusters.findChildren(QSlider) if s.isVisibleTo(clusters)]
    spins = [s for s in clusters.findChildren(QDoubleSpinBox) if s.isVisibleTo(clusters)]
    assert sliders or spins
    for widget in sliders + spins:
        before = widget.value()
        widget.clearFocus()
        wheel(widget)
        assert widget.value() == before
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)


def test_the_guard_sees_only_the_widgets_it_guards(qtbot, monkeypatch):
    """One filter per guarded widget, adopted as the style polishes it: no call into Python for
    the events of every other widget (an application filter made 28,000 such calls while the
    window was made, 0.2 s of its start-up)."""
    from workbench.ui import theme, wheel_guard

    scroll, _slider, _spin, _combo = page(qtbot)
    watched: list[str] = []

    class Spy(wheel_guard.WheelGuard):
        def eventFilter(self, obj, event):  # noqa: N802 (Qt API)
            watched.append(type(obj).__name__)
            return super().eventFilter(obj, event)

    monkeypatch.setattr(theme._State, "on_polish", theme._State.on_polish)  # put back after
    monkeypatch.setattr(wheel_guard, "_guard", None)
    monkeypatch.setattr(wheel_guard, "WheelGuard", Spy)
    spy = wheel_guard.install(QApplication.instance())
    body = scroll.widget()
    label = QLabel("plain", body)
    later = QSlider(Qt.Orientation.Horizontal, body)  # made after the guard: adopted when polished
    body.layout().addWidget(label)
    body.layout().addWidget(later)
    label.show()
    later.show()
    label.setText("changed")
    label.repaint()
    QApplication.processEvents()
    assert watched and set(watched) <= {"QSlider", "QDoubleSpinBox", "QComboBox"}, watched
    assert later.focusPolicy() == Qt.FocusPolicy.StrongFocus
    watched.clear()
    wheel(later, notches=-1)
    assert watched == ["QSlider"]
    for widget in QApplication.allWidgets():
        widget.removeEventFilter(spy)
