"""The main window as a user drives it: menus, docks, new/save as/reopen, bad files, live updates."""

from __future__ import annotations

import sqlite3

from PySide6.QtWidgets import QDockWidget

from tests.ui.conftest import WAIT_MS
from workbench.core.project import _sql
from workbench.core.project.schema import APPLICATION_ID, MIGRATIONS
from workbench.core.project.store import Store
from workbench.services.project_model import ProjectModel
from workbench.ui import prompts
from workbench.ui.main_window import MainWindow
from workbench.ui.settings import AppSettings

PANEL_TITLES = ["Clusters & Agents", "Protocol Editor", "Live Run", "Trace Inspector", "Quadrant",
                "Drift & Convergence", "Anchors & Restoration", "Findings & Reports", "Studies"]


def add_cluster(store: Store, name: str):
    def write(s: Store):
        with _sql.write(s) as tx:
            cid = tx.insert("clusters", {"name": name})
            tx.insert("agents", {"id": f"{name}-1", "cluster_id": cid, "provider": None})
        return tx.changes
    return write


def cluster_names(window) -> list[str]:
    table = window.panels["clustersPanel"].clusters
    return [table.model.row(i)["name"] for i in range(table.model.rowCount())]


def test_window_has_the_file_menu_and_a_dock_per_panel(window):
    menus = {a.text().replace("&", ""): a.menu() for a in window.menuBar().actions()}
    file_items = [a.text().replace("&", "") for a in menus["File"].actions() if a.text()]
    for item in ("New Project…", "Open…", "Open Recent", "Save As…"):
        assert item in file_items
    titles = sorted(d.windowTitle().replace("&&", "&") for d in window.findChildren(QDockWidget))
    assert titles == sorted(PANEL_TITLES)
    # The workspace shown (Results, on a first start) shows its docks, and only those.
    shown = {name for name, dock in window.docks.items() if not dock.isHidden()}
    assert shown == set(window.workspaces.workspace.panels) and window.workspaces.current == "results"
    assert "No project open" in window.project_label.text()


def test_new_project_save_as_and_reopen(qtbot, window, tmp_path, monkeypatch):
    first, second = tmp_path / "first.rwb", tmp_path / "second.rwb"

    monkeypatch.setattr(prompts, "new_project_path", lambda *a: first)
    with qtbot.waitSignal(window.model.opened, timeout=WAIT_MS):
        window.action_new.trigger()
    assert first.exists() and window.model.path == first
    assert "first" in window.windowTitle()

    with qtbot.waitSignal(window.model.changed, timeout=WAIT_MS):
        window.model.write("add cluster", add_cluster(window.model.store, "advocate"))
    qtbot.waitUntil(lambda: cluster_names(window) == ["advocate"], timeout=WAIT_MS)  # read off the GUI thread

    monkeypatch.setattr(prompts, "save_as_path", lambda *a: second)
    with qtbot.waitSignal(window.model.opened, timeout=WAIT_MS):
        window.action_save_as.trigger()
    assert window.model.path == second
    assert "second" in window.windowTitle()

    window.action_close.trigger()
    assert window.model.store is None
    assert cluster_names(window) == []
    window.show_panel("clustersPanel")  # (in the Design workspace)
    assert window.panels["clustersPanel"].empty_label.isVisible()

    monkeypatch.setattr(prompts, "open_project_path", lambda *a: second)
    with qtbot.waitSignal(window.model.opened, timeout=WAIT_MS):
        window.action_open.trigger()
    qtbot.waitUntil(lambda: cluster_names(window) == ["advocate"], timeout=WAIT_MS)
    assert window.settings.recent_files()[:2] == [second, first]


def test_open_recent_lists_projects_and_opens_them(qtbot, window, tmp_path, open_project):
    path = tmp_path / "recent.rwb"
    Store.create(path).close_connection()
    open_project(path)
    window.model.close()
    window._fill_recent_menu()
    actions = [a for a in window.recent_menu.actions() if a.text() == str(path)]
    assert actions and actions[0].isEnabled()
    with qtbot.waitSignal(window.model.opened, timeout=WAIT_MS):
        actions[0].trigger()
    assert window.model.path == path


def test_a_bad_file_gives_a_message_not_a_dialog(qtbot, window, tmp_path):
    path = tmp_path / "notes.rwb"
    path.write_text("not a database\n" * 50)
    with qtbot.waitSignal(window.model.failed, timeout=WAIT_MS):
        window.open_path(path)
    assert window.model.store is None
    [notice] = window.notices.messages
    assert notice.level == "error"
    assert "not an SQLite database" in notice.text
    assert window._notices_bar.isVisible()
    assert path.read_text() == "not a database\n" * 50


def test_a_newer_file_opens_read_only_with_a_banner(qtbot, window, tmp_path, open_project):
    path = tmp_path / "future.rwb"
    Store.create(path).close_connection()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 42")
    conn.close()
    store = open_project(path)
    assert store.read_only
    assert window.notices.banner is not None and "read-only" in window.notices.banner.text
    assert window._notices_bar.isVisible()
    assert "[read-only]" in window.windowTitle()


def test_an_older_file_is_upgraded_and_says_so(qtbot, window, tmp_path, open_project):
    path = tmp_path / "old.rwb"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.executescript(f"BEGIN; {MIGRATIONS[1]} PRAGMA user_version = 1; COMMIT;")
    conn.execute("INSERT INTO project VALUES (1, 'old', '', 't0', '0.0.1')")
    conn.close()
    open_project(path)
    assert "upgraded from schema v1" in window.notices.banner.text
    assert window.notices.banner.level == "info"


def test_writes_from_another_process_appear_without_reopening(qtbot, window, tmp_path, open_project):
    path = tmp_path / "shared.rwb"
    Store.create(path).close_connection()
    open_project(path)
    outside = Store.open(path)  # another connection, as the MCP server or the CLI would have
    _sql.insert(outside, "clusters", {"name": "from-outside"})
    outside.close_connection()
    qtbot.waitUntil(lambda: cluster_names(window) == ["from-outside"], timeout=WAIT_MS)


def test_panels_refresh_only_for_changes_that_concern_them(qtbot, window, tmp_path, open_project):
    path = tmp_path / "p.rwb"
    Store.create(path).close_connection()
    open_project(path)
    clusters, anchors = window.panels["clustersPanel"], window.panels["anchorsPanel"]
    before = clusters.refresh_count, anchors.refresh_count

    def add_marker(s: Store):
        return _sql.insert(s, "echo_markers", {"hex": "abcdef", "marker": "salt — abcdef", "issued_at": "t"})[1]

    with qtbot.waitSignal(window.model.changed, timeout=WAIT_MS):
        window.model.write("marker", add_marker)
    qtbot.waitUntil(lambda: anchors.refresh_count == before[1] + 1, timeout=WAIT_MS)
    # The watcher sees the same commit a poll later: it is not announced a second time.
    qtbot.wait(3 * window.model.POLL_MS)
    assert anchors.refresh_count == before[1] + 1
    assert clusters.refresh_count == before[0]


def test_layout_and_recent_files_persist_in_qsettings(qtbot, tmp_path, open_project, window):
    path = tmp_path / "p.rwb"
    Store.create(path).close_connection()
    open_project(path)
    window.docks["quadrantPanel"].hide()  # in Results
    window.workspaces.switch("audit")
    window.close()

    again = MainWindow(ProjectModel(), AppSettings())
    qtbot.addWidget(again)
    again.show()
    assert again.workspaces.current == "audit"  # where the window was left
    assert not again.docks["traceInspectorPanel"].isHidden()
    again.workspaces.switch("results")  # its own arrangement, as it was left
    assert again.docks["quadrantPanel"].isHidden() and not again.docks["driftPanel"].isHidden()
    assert again.settings.recent_files()[0] == path
    again.close()


def test_clusters_table_sorts_filters_and_copies(qtbot, window, tmp_path, open_project):
    path = tmp_path / "p.rwb"
    Store.create(path).close_connection()
    store = open_project(path)
    for name in ("critic", "advocate", "safety"):
        with qtbot.waitSignal(window.model.changed, timeout=WAIT_MS):
            window.model.write("add", add_cluster(store, name))
    table = window.panels["clustersPanel"].clusters
    qtbot.waitUntil(lambda: table.visible_rows() == 3, timeout=WAIT_MS)
    table.view.sortByColumn(0, table.view.horizontalHeader().sortIndicatorOrder().AscendingOrder)
    assert [table.proxy.index(r, 0).data() for r in range(3)] == ["advocate", "critic", "safety"]
    table.filter.setText("saf")
    assert table.visible_rows() == 1
    assert table.as_text().splitlines() == ["Cluster\tReference\tθ\tWeight\tAgents\tDescription",
                                            "safety\t\t0.5 (project)\t1.0\t1\t"]  # the project's θ, in sight


def test_import_arm_traces_from_the_file_menu(qtbot, window, tmp_path, open_project, monkeypatch, corpus_dir):
    path = tmp_path / "p.rwb"
    Store.create(path).close_connection()
    open_project(path)
    good = sorted((corpus_dir / "traces").glob("*.json"))[:2]
    bad = tmp_path / "notes.json"
    bad.write_text("not json")
    monkeypatch.setattr(prompts, "import_arm_paths", lambda *a: [*good, bad])
    with qtbot.waitSignal(window.model.changed, timeout=WAIT_MS):
        window.action_import.trigger()
    qtbot.waitUntil(lambda: bool(window.notices.messages), timeout=WAIT_MS)
    [notice] = window.notices.messages
    assert notice.level == "warning"
    assert "Imported 2 ARM run(s)" in notice.text and "1 file(s) refused" in notice.text
    assert _sql.count(window.model.store, "runs", "protocol = 'arm'") == 2
    qtbot.waitUntil(lambda: "<b>2</b></td><td>&nbsp;imported ARM traces" in window.panels["driftPanel"].summary.text(),
                    timeout=WAIT_MS)


def test_a_panel_whose_read_waits_keeps_its_view_and_the_window_goes_on(qtbot, window, tmp_path, open_project,
                                                                         monkeypatch):
    """A read held up (here by a gate, in life by another program's lock) never freezes the
    window: the panel keeps what it shows, marks itself "updating…", and applies the new view
    once the read is done."""
    import threading

    from PySide6.QtCore import QTimer

    from workbench.ui.panels.clusters_panel import ClustersPanel

    path = tmp_path / "p.rwb"
    store = Store.create(path)
    add_cluster(store, "advocate")(store)
    store.close_connection()
    open_project(path)
    window.show_panel("clustersPanel")
    panel = window.panels["clustersPanel"]
    assert cluster_names(window) == ["advocate"]

    gate, threads = threading.Event(), []
    original = ClustersPanel.load

    def held(self, reading, changes, cancel):
        threads.append(threading.current_thread() is threading.main_thread())
        gate.wait(10)
        return original(self, reading, changes, cancel)

    monkeypatch.setattr(ClustersPanel, "load", held)
    ticks = []
    beat = QTimer()
    beat.timeout.connect(lambda: ticks.append(1))
    beat.start(5)
    try:
        with qtbot.waitSignal(window.model.changed, timeout=WAIT_MS):
            window.model.write("add", add_cluster(window.model.store, "critic"))
        qtbot.waitUntil(panel.updating_mark.isVisible, timeout=WAIT_MS)
        assert cluster_names(window) == ["advocate"] and len(ticks) > 10  # the last view, and a live window
        gate.set()
        qtbot.waitUntil(lambda: cluster_names(window) == ["advocate", "critic"], timeout=WAIT_MS)
        assert not panel.updating_mark.isVisible()
        assert threads and not any(threads)  # read on a worker, never on the GUI thread
    finally:
        gate.set()
        beat.stop()
