"""CONS in the Findings & Reports panel, driven by clicks: the matrix of a stored run shows every
ballot, and moving a threshold shows the verdict that would change (no model call)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from tests.core.test_cons_view import run_sample
from tests.ui.conftest import WAIT_MS
from workbench.core.project import cons_view
from workbench.core.project.store import Store


def cons_project(path):
    store = Store.create(path)
    run_sample(store)
    [row] = cons_view.questions(store)
    ids = [b.id for b in cons_view.question_detail(store, row.id).ballots]
    store.close_connection()
    return path, ids


def click_tab(qtbot, tabs, title_start: str) -> None:
    bar = tabs.tabBar()
    index = next(i for i in range(bar.count()) if bar.tabText(i).startswith(title_start))
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(index).center())
    assert tabs.currentIndex() == index


def open_cons(qtbot, window, open_project, path):
    open_project(path)
    panel = window.panels["findingsPanel"]
    window.docks["findingsPanel"].raise_()
    click_tab(qtbot, panel.tabs, "CONS")
    qtbot.waitUntil(lambda: panel.cons.loaded_count > 0 and panel.cons.detail() is not None, timeout=WAIT_MS)
    return panel.cons


def test_the_matrix_of_a_stored_run_shows_every_ballot(qtbot, window, tmp_path, open_project):
    path, ids = cons_project(tmp_path / "c.rwb")
    view = open_cons(qtbot, window, open_project, path)
    assert sorted(view.matrix.ballot_ids()) == sorted(ids) and len(ids) == 5
    m = view.matrix
    assert [m.horizontalHeaderItem(c).text() for c in range(m.columnCount())] == ["single file", "split per module"]
    assert m.rowCount() == 5
    texts = [m.item(r, c).text() for r in range(m.rowCount()) for c in range(m.columnCount()) if m.item(r, c)]
    assert sum(t.startswith("▲ accept") for t in texts) == 5
    tip = m.item(0, 0).toolTip()
    assert "Rationale:" in tip and "Evidence" in tip  # the rationale on hover
    assert "PROVEN" in view.heading.text()
    click_tab(qtbot, view.tabs, "Verdict")
    html = view.verdict.toPlainText()
    assert "PROVEN" in html and "Conflicts (1)" in html and "accept split per module" in html
    assert "Escalations to a human (0)" in html


def test_moving_a_threshold_shows_the_verdict_that_would_change(qtbot, window, tmp_path, open_project):
    path, _ = cons_project(tmp_path / "c.rwb")
    view = open_cons(qtbot, window, open_project, path)
    click_tab(qtbot, view.tabs, "Thresholds")
    whatif = view.whatif
    qtbot.waitUntil(lambda: whatif.table.model.rowCount() == 1, timeout=WAIT_MS)
    assert whatif.changed_rows() == [] and "0 of 1 verdict would change" in whatif.summary.text()
    # Two page steps up on each slider: 0.80 -> 0.90 for consensus and count.
    for slider in (whatif.consensus.slider, whatif.count.slider):
        slider.setFocus()
        for _ in range(2):
            qtbot.keyClick(slider, Qt.Key.Key_PageUp)
    assert whatif.thresholds() == (0.9, 0.9, 3)
    qtbot.waitUntil(lambda: len(whatif.changed_rows()) == 1, timeout=WAIT_MS)
    [row] = whatif.changed_rows()
    assert (row["before"], row["after"], row["changed_label"]) == ("PROVEN", "undecided", "⇄ changes")
    assert "1 of 1 verdict would change" in whatif.summary.text()
    qtbot.mouseClick(whatif.reset_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: whatif.changed_rows() == [], timeout=WAIT_MS)
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
