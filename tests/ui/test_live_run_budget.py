"""Live Run: the estimate beside Start (worked out off the GUI thread whenever the configuration
validates), and the reply cache's hit rate while a run goes and when it ends."""

from __future__ import annotations

from tests.support.fake_llm_server import FakeLLMServer, Reply
from tests.ui.conftest import WAIT_MS
from tests.ui.live_run_helpers import empty_project, panel_of, plain, put, start, template
from workbench.services.runs.runner import RunProgress


def small_rcp(**overrides) -> dict:
    """Two advocates and two critics: 4 artifacts, 12 votes."""
    doc = template("rcp-advocate-critic")
    doc["clusters"] = [{**c, "agents": c["agents"][:2]} for c in doc["clusters"]]
    return {**doc, **overrides}


def test_the_estimate_shows_beside_start_and_the_cache_hit_rate_in_the_progress(qtbot, window, tmp_path,
                                                                                 open_project):
    open_project(empty_project(tmp_path))
    panel = panel_of(window)
    put(qtbot, panel, small_rcp())
    qtbot.waitUntil(lambda: panel.estimate_label.text().startswith("≈ 16 calls"), timeout=WAIT_MS)
    assert panel.estimate_label.text().endswith("$0.0000")  # the simulated panel costs nothing
    assert "dry run of the protocol's generator" in panel.estimate_label.toolTip()

    with FakeLLMServer(default=Reply(text='{"vote": "YES", "reason": "fine"}')) as server:
        doc = small_rcp(cache=True, providers={"sim": {"model": "openai/fake-model", "api_base": server.base_url,
                                                       "max_retries": 0, "max_concurrency": 4}})
        put(qtbot, panel, doc)
        qtbot.waitUntil(lambda: "cost unknown" in panel.estimate_label.text(), timeout=WAIT_MS * 3)
        assert panel.estimate_label.text().startswith("≈ 16 calls")
        assert "openai/fake-model" in panel.estimate_label.toolTip()
        first = start(qtbot, window)
        assert first["cache_hit_rate"] < 1  # (two calls of one run with the same prompt may share an entry)
        sent = len(server.chat_requests)
        second = start(qtbot, window)
        assert len(server.chat_requests) == sent  # answered from the project file
    assert second["status"] == "completed" and second["cache_hits"] == 16 and second["cache_hit_rate"] == 1.0
    assert "cache hit rate 100%" in plain(panel.progress_label.text())
    panel._on_run_progressed(RunProgress("r", "votes", 3, 16, 0, None, cache_hits=2, cache_calls=3))
    assert "3/16 calls, 0 failed, cache 2/3 hits" in plain(panel.progress_label.text())
