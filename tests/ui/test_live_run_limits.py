"""Live Run draws each deployment's concurrency limit (SPEC §10): a run started from the panel against
the loopback server that answers a 429 shows, in its Limit tab, the cut and the steps back up,
beside the requests in flight; a run that met no 429 shows its flat limit without bringing the tab
forward; a simulated run (no limit at all) has no such tab."""

from __future__ import annotations

from tests.support.fake_llm_server import FakeLLMServer, Reply
from tests.ui.conftest import WAIT_MS
from tests.ui.live_run_helpers import RUN_MS, click, click_run, empty_project, open_document, panel_of, read, sample
from tests.ui.test_live_run_user import artifact_or_vote
from workbench.services.llm import adaptive


def rcp(base_url: str, **provider) -> dict:
    doc = sample("rcp-ollama.json")  # 2 clusters of 3 agents: 6 artifacts, then 30 votes
    doc["providers"]["local"].update({"api_base": base_url, "model": "openai/fake-model", "max_retries": 0,
                                      **provider})
    doc["clusters"] = [{**c, "agents": [{**c["agents"][0], "id": f"{c['name'][0]}{i}"} for i in range(3)]}
                       for c in doc["clusters"]]
    doc["dispatch"] = "concurrent"
    return doc


def concurrency_tab(panel) -> bool:
    tabs = panel.detail_tabs
    return tabs.isTabVisible(tabs.indexOf(panel.limit_plot))


def test_a_429_shows_the_cut_and_the_growth_beside_the_calls(qtbot, window, tmp_path, open_project, monkeypatch):
    # Steps up at once after clean calls (the rule's own pacing is the limiter's tests' business):
    # the chart must show a cut and a growth within a 36-call run.
    monkeypatch.setattr(adaptive, "COOLDOWN_PAUSES", 0)
    monkeypatch.setattr(adaptive, "FIRST_ROUNDS", 1)
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    with FakeLLMServer(default=Reply(text=artifact_or_vote, latency_s=0.02)) as server:
        server.enqueue(Reply(status=429, retry_after=1, error_message="slow down"))
        open_document(qtbot, panel, monkeypatch, rcp(server.base_url, max_concurrency=4), tmp_path)
        with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as finished:
            click(qtbot, panel.start_button)
    summary = finished.args[0]
    assert summary["status"] == "completed" and summary["failed_calls"] == 0, summary.get("error")
    run_id = summary["run_id"]
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    click_run(qtbot, panel, run_id)
    qtbot.waitUntil(lambda: concurrency_tab(panel) and panel.limit_plot.run_id == run_id, timeout=WAIT_MS)

    chart = panel.limit_plot.chart
    assert list(chart.steps) == ["local"] and chart.ceiling == 4
    limits = [v for _t, v in chart.steps["local"]]
    assert limits[0] == 4 and limits[1] == 2  # the start, then the cut
    assert limits[-1] > 2 and chart.grew == len(limits) - 2 >= 1  # then grown back, a step at a time
    assert [(c[1], c[2]) for c in chart.cuts] == [(2, "local")] and chart.cuts[0][3] == 1
    times = [t for t, _v in chart.steps["local"]]
    assert times == sorted(times) and times[-1] <= chart.end_s
    # The requests in flight: each answered one in and out (placed by its answer's time less its
    # latency, to the millisecond: a neighbour may overlap by a hair), while the server saw the limit hold.
    assert server.max_in_flight <= 4 and chart.in_flight[-1][1] == 0 and min(n for _t, n in chart.in_flight) >= 0
    stored = read(path, "SELECT count(*) AS n FROM llm_calls WHERE run_id = ? AND latency_ms IS NOT NULL", (run_id,))
    assert len(chart.in_flight) == 2 * stored[0]["n"]  # every answered request, in and out

    # What is drawn: one step line, the cut marked, the tab brought forward and named by its cuts.
    assert panel.detail_tabs.currentWidget() is panel.limit_plot
    assert panel.detail_tabs.tabText(panel.detail_tabs.indexOf(panel.limit_plot)) == "Limit ▼1"
    [line] = panel.limit_plot._lines.values()
    xs, ys = line.getData()
    assert list(ys[:4]) == [4, 4, 2, 2] and xs[-1] == chart.end_s
    assert list(panel.limit_plot._cuts.getData()[1]) == [2]
    assert "local 4→2" in panel.limit_plot.caption.text() and "1 cut on 429s" in panel.limit_plot.caption.text()
    assert panel.limit_plot.plot.isVisible() and panel.limit_plot.plot.height() >= 240


def test_no_tab_for_a_run_without_429s_nor_a_simulated_run(qtbot, window, tmp_path, open_project, monkeypatch):
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    with FakeLLMServer(default=Reply(text=artifact_or_vote)) as server:
        open_document(qtbot, panel, monkeypatch, rcp(server.base_url, max_concurrency=4), tmp_path)
        with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as finished:
            click(qtbot, panel.start_button)
    run_id = finished.args[0]["run_id"]
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    click_run(qtbot, panel, run_id)
    # A real provider that never refused: the history holds its start only, drawn flat at 4 ...
    qtbot.waitUntil(lambda: panel.limit_plot.run_id == run_id, timeout=WAIT_MS)
    assert [v for _t, v in panel.limit_plot.chart.steps["local"]] == [4] and not panel.limit_plot.chart.cuts
    assert panel.detail_tabs.tabText(panel.detail_tabs.indexOf(panel.limit_plot)) == "Limit"

    assert panel.detail_tabs.currentWidget() is not panel.limit_plot  # nothing happened: not brought forward

    # ... while a simulated run has no limit at all: no tab.
    open_document(qtbot, panel, monkeypatch, sample("rcp-sim.json"), tmp_path, "sim.json")
    with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as finished:
        click(qtbot, panel.start_button)
    sim_run = finished.args[0]["run_id"]
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    click_run(qtbot, panel, sim_run)
    qtbot.waitUntil(lambda: panel.limit_plot.run_id == sim_run, timeout=WAIT_MS)
    assert panel.limit_plot.chart is None and not concurrency_tab(panel)


def test_waiting_for_batch_shows_with_the_providers_counts(qtbot, window, tmp_path, open_project, monkeypatch):
    from tests.runs.test_batch_runs import SECRET, config, model_reply
    from tests.support.fake_batch_api import BatchScript, FakeBatchAPI

    monkeypatch.setenv("BATCH_TEST_KEY", SECRET)
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    batches = FakeBatchAPI()
    batches.enqueue(BatchScript(hold=True))  # the first batch: in progress until released
    with FakeLLMServer(Reply(text=model_reply), batches=batches) as server:
        open_document(qtbot, panel, monkeypatch, config(server.base_url, batch_poll_s=0.05), tmp_path)
        with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as finished:
            click(qtbot, panel.start_button)
            # Live: the progress line says so, with the provider's counts, while the batch is out.
            qtbot.waitUntil(lambda: "waiting for batch" in panel.progress_label.text(), timeout=RUN_MS)
            [batch_id] = list(batches.batches)
            assert f"gpt {batch_id} in_progress, 0 of 4 done" in panel.progress_label.text()
            click(qtbot, panel.cancel_button)  # the batch runs on at the provider; the run waits for it
        summary = finished.args[0]
        assert summary["status"] == "interrupted" and summary["calls"] == 0
        run_id = summary["run_id"]
        qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
        click_run(qtbot, panel, run_id)
        qtbot.waitUntil(panel.resume_button.isEnabled, timeout=WAIT_MS)

        # Resume collects the batch the cancelled run left out, once it has ended.
        batches.release()
        with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as resumed:
            click(qtbot, panel.resume_button)
        assert resumed.args[0]["status"] == "completed" and resumed.args[0]["calls"] == 16
        assert len(batches.batches) == 2  # the first phase's batch collected, not sent again

        # A run left waiting by `rwb run --detach`: listed as waiting for its batch, its counts in its reason.
        from workbench.core.project.store import Store
        from workbench.core.runs.config import parse_run_config
        from workbench.services.runs.runner import Runner

        store = Store.open(path)
        try:
            runner = Runner(store, detach=True)
            detached = runner.create(parse_run_config(config(server.base_url)))
            assert runner.execute(detached)["status"] == "waiting"
        finally:
            store.close_connection()
    qtbot.waitUntil(lambda: any(r["id"] == detached for r in panel._run_rows), timeout=WAIT_MS)
    click_run(qtbot, panel, detached)
    [row] = [r for r in panel._run_rows if r["id"] == detached]
    assert row["status_text"] == "⧗ waiting for batch"
    qtbot.waitUntil(lambda: "0 of 4 done" in panel.calls_heading.text(), timeout=WAIT_MS)
    assert f"rwb resume {detached} collects it" in panel.calls_heading.text()
