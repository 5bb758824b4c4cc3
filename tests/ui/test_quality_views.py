"""Issue 19 in the GUI: the Trace Inspector marks a flagged call and explains the flag; Clusters &
Agents ▸ Providers shows the provider health rows, and reads them again when calls change."""

from __future__ import annotations

import pytest

from tests.core.quality_project import add_call
from tests.core.test_provider_stats import build
from tests.ui.conftest import WAIT_MS
from workbench.core.project import quality
from workbench.core.project.changes import Changes
from workbench.core.project.records import RecordFilter


@pytest.fixture
def project(tmp_path):
    quality.clear_cache()
    path = tmp_path / "p.rwb"
    build(path).close_connection()
    return path


def test_the_trace_inspector_marks_and_explains_a_flagged_call(qtbot, window, project, open_project):
    panel = window.panels["traceInspectorPanel"]
    open_project(project)
    panel.set_filters(RecordFilter(kind="call", quality="template_echo"))
    qtbot.waitUntil(lambda: panel.list.model.rowCount() == 1, timeout=WAIT_MS)
    row = panel.list.model.row(0)
    assert row["quality"] == "⚑ echo" and "placeholder <one sentence>" in row["_quality"]
    panel.select("call", row["id"])
    qtbot.waitUntil(lambda: panel.detail.detail is not None and panel.detail.detail.id == row["id"], timeout=WAIT_MS)
    assert [f.code for f in panel.detail.detail.extras["quality"]] == ["template_echo"]
    assert "⚑ template echo" in panel.detail.badges.text()
    section = panel.detail.sections["quality"]
    assert "repeats the prompt's own template text" in section.text()
    assert "never changes a vote" in section.text()
    # An unflagged call shows no mark and no section.
    panel.set_filters(RecordFilter(kind="call", provider="cloud"))
    qtbot.waitUntil(lambda: panel.list.model.rowCount() == 3, timeout=WAIT_MS)
    assert all(panel.list.model.row(i)["quality"] == "" for i in range(3))


def test_the_providers_tab_shows_health_rows_and_follows_new_calls(qtbot, window, project, open_project):
    panel = window.panels["clustersPanel"]
    panel.tabs.setCurrentIndex(1)
    open_project(project)
    health = panel.provider_health
    qtbot.waitUntil(lambda: len(health.rows()) == 2, timeout=WAIT_MS)
    rows = {r["provider"]: r for r in health.rows()}
    assert rows["local"]["valid"] == "86% (18/21)" and rows["local"]["p95"] == "200 ms"
    assert rows["local"]["cost"] == "unknown (1 call)"
    assert rows["local"]["flags"] == "⚑ echo 1, cut 1, stamp 1" and rows["cloud"]["cost"] == "$0.0400"
    assert health.isVisibleTo(panel) and health.table.isVisibleTo(panel)
    before = health.refresh_count
    with qtbot.waitSignal(window.model.changed, timeout=WAIT_MS):
        window.model.write("add a call", _add)
    qtbot.waitUntil(lambda: health.refresh_count > before, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: {r["provider"]: r for r in health.rows()}["local"]["calls"] == 22, timeout=WAIT_MS)
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    # A change to the configuration alone does not read the calls again.
    settled = health.refresh_count
    with qtbot.waitSignal(window.model.changed, timeout=WAIT_MS):
        window.model.write("touch settings", _touch_settings)
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    assert health.refresh_count == settled


def _add(store) -> Changes:
    return add_call(store, "r2", agent="a1", latency_ms=50.0, with_changes=True)[1]


def _touch_settings(store) -> Changes:
    from workbench.core.project.meta import set_setting

    return set_setting(store, "quality-test", "1")
