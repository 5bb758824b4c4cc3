"""The Trace Inspector on a project with a simulated RCP run (plus an unreadable vote) and imported
corpus ARM traces: filters and full-text search, the R1/R2 diff, audit notes that outlive the
project being closed, "Open in Trace Inspector", an invalid vote's raw text and reason, and an
imported trace's stored values beside the recomputed ones."""

from __future__ import annotations

import shutil

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QTextDocument
from PySide6.QtWidgets import QWidget

from tests.core.test_records import BAD_VOTE_TEXT, build_project
from tests.ui import fit_rules
from tests.ui.conftest import WAIT_MS
from workbench.core.project import records, search
from workbench.core.project.records import RecordFilter
from workbench.core.project.refs import RecordRef
from workbench.core.project.store import Store


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from tests.conftest import CORPUS

    if not (CORPUS / "traces").is_dir():
        pytest.skip(f"the ARM corpus is absent: expected it at {CORPUS}")
    path = tmp_path_factory.mktemp("inspector") / "p.rwb"
    return path, build_project(path, CORPUS)


@pytest.fixture
def project(built, tmp_path):
    path, ids = built
    copy = tmp_path / "p.rwb"
    shutil.copy(path, copy)
    return copy, ids


@pytest.fixture
def panel(window):
    window.show_panel("traceInspectorPanel")  # (the Audit workspace)
    return window.panels["traceInspectorPanel"]


def expected_keys(path, f: RecordFilter = RecordFilter(), text: str = "") -> list[tuple]:
    """What the list should show, read straight from the file (LIKE: the reference search)."""
    store = Store.open(path).reader()
    try:
        plan = search.SearchPlan(text, search.LIKE) if text else None
        return [(r["kind"], r["id"]) for r in records.window(store, f, offset=0, limit=10**6, search=plan)]
    finally:
        store.close_connection()


def reveal(qtbot, window, panel, ref: RecordRef) -> None:
    window.model.reveal(ref)
    qtbot.waitUntil(lambda: panel.detail.detail is not None and panel.detail.detail.id == ref.id
                    and panel.detail.detail.kind == ref.kind, timeout=WAIT_MS)
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)


def selected_keys(panel) -> list[tuple]:
    return [(panel.list.model.row(i.row())["_kind"], panel.list.model.row(i.row())["id"])
            for i in panel.list.view.selectionModel().selectedRows()]


def test_a_filter_and_a_text_search_return_the_expected_rows(qtbot, window, panel, project, open_project):
    path, ids = project
    open_project(path)
    qtbot.waitUntil(lambda: panel.list.model.rowCount() > 0, timeout=WAIT_MS)
    panel.filter_bar.choose("kind", "trace")
    panel.filter_bar.choose("agent", "gamma")
    want = expected_keys(path, RecordFilter(kind="trace", agent="gamma"))
    assert len(want) == 6 and {ids["gamma_r1"], ids["gamma_r2"], ids["legacy_gamma_r2"]} <= {i for _, i in want}
    qtbot.waitUntil(lambda: panel.visible_keys() == want, timeout=WAIT_MS)
    assert panel.list.count_label.text() == "6 rows"
    panel.filter_bar.choose("protocol", "rcp")  # no gamma in the RCP run
    qtbot.waitUntil(lambda: panel.visible_keys() == [], timeout=WAIT_MS)

    panel.filter_bar.clear()
    # This SQLite has FTS5 and the project is writable: the index was built in the background as
    # soon as the project was shown, and the bar says so (not "LIKE").
    assert search.fts5_available()
    qtbot.waitUntil(lambda: panel.filter_bar.search_mode.text() == "Search: FTS5", timeout=WAIT_MS)
    assert search.index_state(Store.open(path).reader()).exists
    want = expected_keys(path, text="countermeasure")
    assert want and all(kind == "trace" for kind, _ in want)
    panel.list.filter.setText("countermeasure")
    qtbot.waitUntil(lambda: panel.visible_keys() == want, timeout=WAIT_MS)
    assert panel.filter_bar.search_mode.text() == "Search: FTS5"
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    assert panel.visible_keys() == want
    panel.filter_bar.choose("agent", "gamma")  # the filters and the search combine
    qtbot.waitUntil(lambda: panel.visible_keys() == [k for k in want if k in
                                                     expected_keys(path, RecordFilter(agent="gamma"))],
                    timeout=WAIT_MS)
    assert panel.visible_keys()


def test_the_r1_r2_diff_shows_a_changed_word(qtbot, window, panel, project, open_project):
    path, ids = project
    open_project(path)
    reveal(qtbot, window, panel, RecordRef("trace", ids["gamma_r2"], ids["arm"]))
    panel.detail.tabs.setCurrentIndex(panel.detail.compare_index)
    doc: QTextDocument = panel.compare.rounds.document()
    plain = doc.toPlainText()
    assert "R1 → R2 for gamma" in plain and "0.85 → 0.7" in plain
    added = doc.find("refrain")  # R1: "should autonomously deploy"; R2: "should refrain from ... deploying"
    assert not added.isNull() and added.charFormat().fontUnderline() and not added.charFormat().fontStrikeOut()
    removed = doc.find("security")  # R1's "The security AI", gone in R2
    assert not removed.isNull() and removed.charFormat().fontStrikeOut()
    # Claim, confidence and verdict come first, each marked changed or same.
    assert plain.index("Claim") < plain.index("Confidence") < plain.index("Verdict") < plain.index("Reasoning")
    # Two runs side by side, aligned by round and agent.
    panel.compare.setCurrentIndex(panel.compare.tab_runs)
    assert panel.compare.choose_other(ids["rerun"])
    qtbot.waitUntil(lambda: "aligned by round and agent" in panel.compare.runs.toPlainText(), timeout=WAIT_MS)
    assert "gamma" in panel.compare.runs.toPlainText() and "silent" in panel.compare.runs.toPlainText()


def test_an_audit_note_survives_closing_and_reopening_the_project(qtbot, window, panel, project, open_project):
    path, ids = project
    open_project(path)
    ref = RecordRef("trace", ids["gamma_r2"], ids["arm"])
    reveal(qtbot, window, panel, ref)
    form = panel.detail.audit
    assert "No audit notes" in form.history.text()
    form.buttons["suspect"].setChecked(True)
    form.note.setPlainText("the claim flips but the gate did not fire")
    qtbot.mouseClick(form.save, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "the claim flips" in panel.detail.audit.history.text(), timeout=WAIT_MS)
    assert "audit: suspect" in panel.detail.badges.text()
    # Undoable through the window's history, and redone.
    assert window.history.canUndo()
    window.history.undo()
    qtbot.waitUntil(lambda: "No audit notes" in panel.detail.audit.history.text(), timeout=WAIT_MS)
    window.history.redo()
    qtbot.waitUntil(lambda: "the claim flips" in panel.detail.audit.history.text(), timeout=WAIT_MS)
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)

    with qtbot.waitSignal(window.model.closed, timeout=WAIT_MS):
        window.model.close()
    assert panel.detail.detail is None
    open_project(path)
    reveal(qtbot, window, panel, ref)
    assert "the claim flips but the gate did not fire" in panel.detail.audit.history.text()
    panel.filter_bar.choose("audit", "suspect")  # listed in its own filter
    qtbot.waitUntil(lambda: panel.visible_keys() == [("trace", ids["gamma_r2"])], timeout=WAIT_MS)
    row = panel.list.model.row(0)
    assert row["audit"] == "? suspect"


def test_open_in_trace_inspector_selects_the_record_and_shows_it(qtbot, window, panel, project, open_project):
    path, ids = project
    open_project(path)
    panel.filter_bar.choose("kind", "call")  # a filter that hides the trace
    panel.list.filter.setText("Pontevedra")
    qtbot.waitUntil(lambda: panel.visible_keys() and all(k == "call" for k, _ in panel.visible_keys()),
                    timeout=WAIT_MS)
    reveal(qtbot, window, panel, RecordRef("trace", ids["gamma_r2"], ids["arm"]))
    qtbot.waitUntil(lambda: selected_keys(panel) == [("trace", ids["gamma_r2"])], timeout=WAIT_MS)
    assert panel.filters == RecordFilter(run=ids["arm"])  # narrowed to the record's run
    assert panel.filter_bar.combos["run"].currentData() == ids["arm"]
    assert panel.list.filter.text() == ""
    assert panel.detail.claim.text().startswith("The AI should refrain from autonomously deploying")
    assert "reconciler_values_disagreement" in panel.detail.sections["self_check"].text()
    assert "Original status" in panel.detail.sections["self_check"].text()

    # A record beyond the windows loaded: windows are read until its row is in.
    panel.filter_bar.clear()
    panel.list.model.window = 20
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    position = expected_keys(path).index(("vote", ids["bad_vote"]))
    assert position > 3 * 20
    reveal(qtbot, window, panel, RecordRef("vote", ids["bad_vote"], ids["rcp"]))
    qtbot.waitUntil(lambda: selected_keys(panel) == [("vote", ids["bad_vote"])], timeout=WAIT_MS)
    assert panel.filters == RecordFilter()  # it was in the list: nothing narrowed


def test_the_detail_of_an_invalid_vote_shows_its_raw_text_and_reason(qtbot, window, panel, project, open_project):
    path, ids = project
    open_project(path)
    reveal(qtbot, window, panel, RecordRef("vote", ids["bad_vote"], ids["rcp"]))
    sections = panel.detail.sections
    keys = list(sections)
    assert keys[:2] == ["why", "raw"]  # the reason and the raw text first
    assert "neither starts with YES or NO" in sections["why"].text()
    assert BAD_VOTE_TEXT in sections["raw"].text()
    assert "invalid" in panel.detail.badges.text() and "SIM" in panel.detail.badges.text()
    assert panel.detail.claim.text() == "INVALID on r1-a1"
    # One click away: the fenced request and the raw reply of the call behind it.
    panel.detail.tabs.setCurrentIndex(panel.detail.tab_call)
    assert panel.detail.call_view.reply.toPlainText() == BAD_VOTE_TEXT
    assert "cost" in panel.detail.call_view.summary.text()
    qtbot.waitUntil(lambda: selected_keys(panel) == [("vote", ids["bad_vote"])], timeout=WAIT_MS)
    row = panel.list.model.row(panel.list.view.selectionModel().selectedRows()[0].row())
    assert row["validity"] == "⚠ invalid"


def test_stored_versus_recomputed_shows_an_imported_traces_stored_values_with_notes(qtbot, window, panel, project,
                                                                                     open_project):
    path, ids = project
    open_project(path)
    reveal(qtbot, window, panel, RecordRef("trace", ids["legacy_gamma_r2"], ids["legacy"]))
    assert panel.detail.tabs.isTabVisible(panel.detail.tab_stored)
    table = panel.detail.stored
    rows = {r[0]: r for r in table.rows()}
    status = rows["r2.gamma.reconciliation_status"]
    assert table.rows()[0][0].startswith("r2.gamma.") and table.is_bold(0)  # about this trace: first, in bold
    assert not table.is_bold(len(table.rows()) - 1)
    # the file's own version had no polarity gate: its rule reproduces the stored value (SPEC §11)
    assert status[1] == "success" and status[2] == "success" and status[4] == "✓"
    assert "older rule: the polarity gate" in status[5] and "today's rule gives: gamma_flip_detected" in status[5]
    assert rows["convergence"][4] == "✓" and rows["convergence"][3] == "0"
    assert "older rule" in panel.detail.stored_label.text()

    reveal(qtbot, window, panel, RecordRef("trace", ids["gamma_r2"], ids["arm"]))
    rows = {r[0]: r for r in panel.detail.stored.rows()}
    assert rows["embedding_convergence"][1] == "0.7050635040553618"
    assert rows["embedding_convergence"][4] == "—"
    assert "not recomputable offline" in rows["embedding_convergence"][5]
    reveal(qtbot, window, panel, RecordRef("vote", ids["bad_vote"], ids["rcp"]))
    assert not panel.detail.tabs.isTabVisible(panel.detail.tab_stored)  # only ARM traces have stored values


def _in_dock(qtbot, window, size):
    """A second Trace Inspector on the window's model, in a scroll area like a dock's, ``size``."""
    from PySide6.QtWidgets import QFrame, QScrollArea

    from workbench.ui.panels.trace_inspector_panel import TraceInspectorPanel

    area = QScrollArea()
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidgetResizable(True)
    panel = TraceInspectorPanel(window.model)
    area.setWidget(panel)
    qtbot.addWidget(area)
    area.resize(*size)
    area.show()
    return area, panel


def test_the_default_dock_size_shows_list_and_detail_without_scrolling(qtbot, window, project, open_project):
    path, ids = project
    area, panel = _in_dock(qtbot, window, (780, 300))
    open_project(path)
    reveal(qtbot, window, panel, RecordRef("trace", ids["gamma_r2"], ids["arm"]))
    qtbot.waitUntil(lambda: panel.split.isVisible(), timeout=WAIT_MS)
    # Wide and short: side by side, the filters folded; the list keeps its rows (UI.md), so the
    # panel asks for little more than the dock has (a few pixels scroll), the detail beside it.
    assert panel.split.orientation() == Qt.Orientation.Horizontal
    assert panel.filter_bar.folded and panel.filter_bar.grid_box.isHidden()
    assert fit_rules.whole_rows(panel.list.view) >= min(panel.list.view.model().rowCount(), 8)
    assert panel.height() <= area.viewport().height() + 40 and not area.horizontalScrollBar().isVisible()
    detail = panel.detail.mapTo(panel, panel.detail.rect().topLeft())
    assert detail.y() < area.viewport().height() // 3 and panel.detail.tabs.height() >= 60
    assert panel.detail.claim_box.isVisible() and panel.detail.claim_box.height() > 0
    # Unfolded by the user, the filters stay so.
    panel.filter_bar.toggle.click()
    assert not panel.filter_bar.folded
    area.resize(780, 320)
    qtbot.waitUntil(lambda: panel.width() == area.viewport().width(), timeout=WAIT_MS)
    assert not panel.filter_bar.folded
    panel.filter_bar.toggle.click()
    # A narrow, short dock stacks them; the list keeps its rows and the panel scrolls (UI.md: what
    # does not fit scrolls, nothing is cut), across the width it has.
    area.resize(500, 320)
    qtbot.waitUntil(lambda: panel.split.orientation() == Qt.Orientation.Vertical, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: panel.width() == area.viewport().width(), timeout=WAIT_MS)
    rows = panel.list.view.model().rowCount()
    assert fit_rules.whole_rows(panel.list.view) >= min(rows, 8)
    assert area.verticalScrollBar().isVisible() and not area.horizontalScrollBar().isVisible()
    assert [w for w in panel.findChildren(QWidget) if fit_rules.shown(w) and not fit_rules.skip_for_clipping(w)
            and fit_rules.clipped(w)] == []


def test_the_list_and_detail_switch_between_side_by_side_and_stacked_both_ways(qtbot, window, project, open_project):
    path, ids = project
    area, panel = _in_dock(qtbot, window, (600, 700))
    open_project(path)
    reveal(qtbot, window, panel, RecordRef("trace", ids["gamma_r2"], ids["arm"]))
    vertical, horizontal = Qt.Orientation.Vertical, Qt.Orientation.Horizontal
    qtbot.waitUntil(lambda: panel.split.orientation() == vertical, timeout=WAIT_MS)  # narrow: stacked
    for width, want in ((950, horizontal), (600, vertical), (950, horizontal), (1200, horizontal), (650, vertical)):
        area.resize(width, 700)
        qtbot.waitUntil(lambda: panel.split.orientation() == want, timeout=WAIT_MS)
        assert panel.detail.detail is not None  # the record stays shown
    # The panel on its own (no dock) follows its own size the same way.
    panel2 = panel
    area.takeWidget()
    qtbot.addWidget(panel2)
    panel2.resize(950, 600)
    panel2.show()
    qtbot.waitUntil(lambda: panel2.split.orientation() == horizontal, timeout=WAIT_MS)
    panel2.resize(600, 600)
    qtbot.waitUntil(lambda: panel2.split.orientation() == vertical, timeout=WAIT_MS)


def test_the_header_and_the_r1_r2_diff_read_in_both_themes_after_a_theme_change(qtbot, window, panel, project,
                                                                                  open_project):
    from PySide6.QtGui import QPalette

    from workbench.ui import theme

    path, ids = project
    open_project(path)
    reveal(qtbot, window, panel, RecordRef("trace", ids["gamma_r2"], ids["arm"]))
    panel.detail.tabs.setCurrentIndex(panel.detail.compare_index)

    def ratios() -> dict[str, float]:
        title = panel.detail.title
        pal = title.palette()
        ink = pal.color(title.foregroundRole())
        out = {f"title on {role.name}": theme.contrast(ink, pal.color(role))
               for role in (QPalette.ColorRole.Window, QPalette.ColorRole.Base)}
        view = panel.compare.rounds
        base = view.palette().color(QPalette.ColorRole.Base)
        doc = view.document()
        for word, what in (("security", "removed"), ("refrain", "added")):
            found = doc.find(word)
            assert not found.isNull(), word
            out[f"{what} word"] = theme.contrast(found.charFormat().foreground().color(), base)
        return out

    try:
        for name in ("dark", "light", "dark"):  # at run time, each way
            window.set_theme(name)
            qtbot.waitUntil(lambda: panel.compare.rounds.palette().color(QPalette.ColorRole.Base)
                            == QColor(theme.PALETTES[name]["Base"]), timeout=WAIT_MS)
            low = {k: round(v, 2) for k, v in ratios().items() if v < 4.5}
            assert not low, f"{name}: below 4.5:1: {low}"
            assert "Trace #" in panel.detail.title.text()
    finally:
        window.set_theme("light")
