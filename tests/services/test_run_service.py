"""RunService and QtManualAgents without any widget: start, progress, refusal, cancel and resume,
shutdown, and a person answering from the GUI thread while the runner's thread waits."""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path

import pytest

from workbench.core.project import _sql
from workbench.core.project.demo import build_demo
from workbench.core.project.store import Store
from workbench.core.protocols.shared.steps import AgentCall
from workbench.core.runs.config import parse_run_config
from workbench.services.project_model import ProjectModel
from workbench.services.runs.agents import AgentRouter
from workbench.services.runs.manual_agents import QtManualAgents
from workbench.services.runs.service import RunService
from workbench.services.workers import live_workers

WAIT_MS = 15_000
DEMO_CALLS = 36  # the demo's RCP config: 6 artifacts, each voted on by the 5 other agents


def demo_project(tmp_path: Path, **config) -> Path:
    """The demo project; ``config`` overrides keys of its saved RCP configuration (row 1)."""
    path = build_demo(tmp_path / "demo.rwb")
    if config:
        store = Store.open(path)
        try:
            saved = _sql.get(store, "protocol_configs", 1)
            _sql.update(store, "protocol_configs", 1, {"config_json": {**saved["config_json"], **config}})
        finally:
            store.close_connection()
    return path


def slow_sim(monkeypatch, *, delay_s: float = 0.0, gate: threading.Event | None = None, hold_from: int = 1):
    """Make the simulated panel slow: each call sleeps ``delay_s``; from call ``hold_from`` on,
    calls wait for ``gate`` (at most 10 s)."""
    original = AgentRouter._simulate
    counter = itertools.count(1)

    def patched(self, call, name):
        if gate is not None and next(counter) >= hold_from:
            gate.wait(10)
        time.sleep(delay_s)
        return original(self, call, name)

    monkeypatch.setattr(AgentRouter, "_simulate", patched)


def read(path: Path, sql: str, params: tuple = ()) -> list[dict]:
    """Read the project file through a connection of its own, as another process would."""
    store = Store.open(path)
    try:
        return _sql.query(store, sql, params)
    finally:
        store.close_connection()


@pytest.fixture
def model(qtbot):
    m = ProjectModel()
    yield m
    m.shutdown()


@pytest.fixture
def opened(qtbot, model):
    def _open(path: Path) -> ProjectModel:
        with qtbot.waitSignal(model.opened, timeout=WAIT_MS):
            model.open(path)
        return model
    return _open


@pytest.fixture
def service(model):
    manual = QtManualAgents()
    s = RunService(model, manual)
    yield s
    s.shutdown()


def test_a_run_of_the_demo_completes_and_reports_as_it_goes(qtbot, tmp_path, opened, service):
    path = demo_project(tmp_path)
    opened(path)
    events: list[tuple] = []
    service.running_changed.connect(lambda running: events.append(("running", running)))
    service.started.connect(lambda run_id: events.append(("started", run_id)))
    service.progressed.connect(lambda p: events.append(("progress", p.done, p.total)))
    with qtbot.waitSignal(service.finished, timeout=WAIT_MS) as finished:
        assert service.start(1)
        assert service.running
    summary = finished.args[0]
    assert summary["status"] == "completed" and summary["calls"] == DEMO_CALLS
    assert not service.running and service.run_id is None

    run_id = summary["run_id"]
    assert events[0] == ("running", True) and events[1] == ("started", run_id)
    assert events[-1] == ("running", False)
    progress = [e for e in events if e[0] == "progress"]
    assert progress and progress[-1][1] == progress[-1][2] == DEMO_CALLS
    assert all(later[1] >= earlier[1] for earlier, later in zip(progress, progress[1:]))
    [run] = read(path, "SELECT status, simulated, config_id FROM runs WHERE id = ?", (run_id,))
    assert run == {"status": "completed", "simulated": 1, "config_id": 1}


def test_a_second_start_is_refused_while_a_run_goes(qtbot, tmp_path, opened, service, monkeypatch):
    gate = threading.Event()
    slow_sim(monkeypatch, gate=gate, hold_from=2)
    opened(demo_project(tmp_path, dispatch="sequential"))
    assert service.start(1)
    qtbot.waitUntil(lambda: service.run_id is not None, timeout=WAIT_MS)
    with qtbot.waitSignal(service.failed, timeout=WAIT_MS) as refused:
        assert not service.start(1)
    assert "already in progress" in refused.args[0] and service.run_id in refused.args[0]
    assert not service.resume(service.run_id)
    service.cancel()
    with qtbot.waitSignal(service.finished, timeout=WAIT_MS) as finished:
        gate.set()
    assert finished.args[0]["status"] == "interrupted"


def test_cancel_then_resume_issues_only_the_missing_calls(qtbot, tmp_path, opened, service, monkeypatch):
    gate = threading.Event()
    slow_sim(monkeypatch, gate=gate, hold_from=4)
    path = demo_project(tmp_path, dispatch="sequential")
    opened(path)
    assert service.start(1)
    qtbot.waitUntil(lambda: service.last_progress is not None and service.last_progress.done == 3, timeout=WAIT_MS)
    run_id = service.run_id
    service.cancel()
    with qtbot.waitSignal(service.finished, timeout=WAIT_MS) as stopped:
        gate.set()  # the call in flight completes and is kept; nothing after it starts
    assert stopped.args[0]["status"] == "interrupted"
    done_before = stopped.args[0]["calls"]
    assert 3 <= done_before < DEMO_CALLS
    [run] = read(path, "SELECT status, error FROM runs WHERE id = ?", (run_id,))
    assert run["status"] == "interrupted" and "cancelled" in run["error"]

    with qtbot.waitSignal(service.finished, timeout=WAIT_MS) as resumed:
        assert service.resume(run_id)
    summary = resumed.args[0]
    assert summary["status"] == "completed" and summary["resumed_calls"] == done_before
    keys = [r["step_key"] for r in read(path, "SELECT step_key FROM llm_calls WHERE run_id = ?", (run_id,))]
    assert len(keys) == len(set(keys)) == DEMO_CALLS  # exactly a straight run's calls, no duplicate

    with qtbot.waitSignal(service.finished, timeout=WAIT_MS) as straight:
        assert service.start(1)
    other = straight.args[0]["run_id"]
    straight_keys = {r["step_key"] for r in read(path, "SELECT step_key FROM llm_calls WHERE run_id = ?", (other,))}
    assert straight_keys == set(keys)


def test_shutdown_cancels_the_run_and_waits_for_its_thread(qtbot, tmp_path, opened, service, monkeypatch):
    slow_sim(monkeypatch, delay_s=0.05)
    path = demo_project(tmp_path, dispatch="sequential")
    opened(path)
    assert service.start(1)
    qtbot.waitUntil(lambda: service.last_progress is not None and service.last_progress.done >= 2, timeout=WAIT_MS)
    run_id = service.run_id
    started = time.monotonic()
    assert service.shutdown(timeout_ms=WAIT_MS)
    assert time.monotonic() - started < 2.0  # cancelled, not run to its end
    assert live_workers() == []
    [run] = read(path, "SELECT status FROM runs WHERE id = ?", (run_id,))
    assert run["status"] == "interrupted"
    calls = read(path, "SELECT count(*) AS n FROM llm_calls WHERE run_id = ?", (run_id,))[0]["n"]
    assert calls < DEMO_CALLS


def test_closing_the_project_cancels_its_run(qtbot, tmp_path, opened, service, monkeypatch):
    slow_sim(monkeypatch, delay_s=0.05)
    path = demo_project(tmp_path, dispatch="sequential")
    model = opened(path)
    with qtbot.waitSignal(service.started, timeout=WAIT_MS) as started:
        service.start(1)
    with qtbot.waitSignal(service.finished, timeout=WAIT_MS) as finished:
        model.close()
    assert finished.args[0]["status"] == "interrupted"
    [run] = read(path, "SELECT status FROM runs WHERE id = ?", (started.args[0],))
    assert run["status"] == "interrupted"


def test_runs_left_running_by_a_dead_process_become_resumable_on_open(qtbot, tmp_path, opened, service):
    import socket
    import subprocess
    import sys

    path = demo_project(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    store = Store.open(path)
    _sql.insert(store, "runs", {"id": "rcp-stale", "protocol": "rcp", "status": "running", "started_at": "2025-01-01T00:00:00Z",
                          "owner_json": {"host": socket.gethostname(), "pid": int(dead.stdout)}})
    store.close_connection()
    model = opened(path)
    qtbot.waitUntil(lambda: _sql.get(model.store, "runs", "rcp-stale")["status"] == "interrupted", timeout=WAIT_MS)
    assert "stopped" in _sql.get(model.store, "runs", "rcp-stale")["error"]


def test_a_bad_configuration_fails_with_a_message(qtbot, tmp_path, opened, service):
    opened(demo_project(tmp_path))
    with qtbot.waitSignal(service.failed, timeout=WAIT_MS) as failed:
        assert service.start(999)
    assert "no saved configuration 999" in failed.args[0] and failed.args[1] == ""
    assert not service.running


def test_nothing_starts_without_a_writable_project(qtbot, tmp_path, model, service):
    with qtbot.waitSignal(service.failed, timeout=WAIT_MS) as failed:
        assert not service.start(1)
    assert "No project is open" in failed.args[0]
    assert not service.running


def test_a_person_answers_the_conductor_from_the_gui_thread(qtbot, tmp_path, opened, model):
    """A CONS run whose 3/2 split is contested asks the conductor; the answer is stored."""
    path = tmp_path / "cons.rwb"
    Store.create(path).close_connection()
    opened(path)
    manual = QtManualAgents()
    service = RunService(model, manual)
    try:
        asked: list[AgentCall] = []
        manual.asked.connect(lambda call: (asked.append(call), manual.answer(call.key, "Write-through, reviewed in Q3.")))
        with qtbot.waitSignal(service.finished, timeout=WAIT_MS) as finished:
            assert service.start_config(cons_config(), label="contested")
        summary = finished.args[0]
        assert [c.purpose for c in asked] == ["hitl_decision"] and asked[0].agent == "conductor"
        assert summary["status"] == "completed"
        assert summary["cons"]["humanDecision"] == "Write-through, reviewed in Q3."
        rows = read(path, "SELECT e.decision, e.status FROM cons_escalations e JOIN cons_questions q "
                          "ON q.id = e.question_id WHERE q.run_id = ?", (summary["run_id"],))
        assert rows and all(r == {"decision": "Write-through, reviewed in Q3.", "status": "resolved"} for r in rows)
    finally:
        service.shutdown()


def cons_config(seed: int = 0):
    """Five simulated agents on two options, three leaning one way and two the other, and no
    challenge round: the verdict is contested and the conductor must decide."""
    def agents(prefix: str, stance: float, n: int) -> list[dict]:
        return [{"id": f"{prefix}{i}", "provider": "sim",
                 "params": {"stance": stance, "strictness": 0.2, "sycophancy": 0.0}} for i in range(1, n + 1)]
    return parse_run_config({
        "protocol": "cons", "seed": seed, "max_challenge_rounds": 0,
        "query": "Which caching strategy should the API gateway use for product data: "
                 "write-through or cache-aside with a time limit?",
        "options": ["Write-through", "Cache-aside with TTL"],
        "providers": {"sim": {"model": "sim"}},
        "clusters": [{"name": "panel", "agents": agents("w", 0.95, 3) + agents("c", 0.05, 2)}]})


# ----- QtManualAgents on its own ----------------------------------------------------------------
def _call(key: str = "cons/hitl") -> AgentCall:
    return AgentCall(key=key, agent="conductor", purpose="hitl_decision",
                     messages=({"role": "user", "content": "Your decision:"},))


def test_manual_agents_block_the_asking_thread_until_answered(qtbot):
    manual = QtManualAgents()
    result: list = []
    cancel = threading.Event()
    with qtbot.waitSignal(manual.asked, timeout=WAIT_MS) as asked:
        thread = threading.Thread(target=lambda: result.append(manual.ask(_call(), cancel)))
        thread.start()
    assert asked.args[0].key == "cons/hitl"
    assert [c.key for c in manual.pending()] == ["cons/hitl"]
    time.sleep(0.1)
    assert result == []  # still waiting for the person
    with qtbot.waitSignal(manual.answered, timeout=WAIT_MS):
        assert manual.answer("cons/hitl", "approve")
    thread.join(5)
    assert result == ["approve"] and manual.pending() == []
    assert not manual.answer("cons/hitl", "again")  # nothing waits any more


def test_manual_agents_give_up_when_the_run_is_cancelled(qtbot):
    manual = QtManualAgents()
    result: list = []
    cancel = threading.Event()
    with qtbot.waitSignal(manual.asked, timeout=WAIT_MS):
        thread = threading.Thread(target=lambda: result.append(manual.ask(_call("k"), cancel)))
        thread.start()
    with qtbot.waitSignal(manual.withdrawn, timeout=WAIT_MS) as withdrawn:
        cancel.set()
    thread.join(5)
    assert withdrawn.args == ["k"] and result == [None]
    assert not manual.answer("k", "too late") and manual.pending() == []


def test_nothing_is_emitted_from_a_run_thread_after_shutdown(qtbot, model):
    """A thread that outlives shutdown (its wait timed out) emits nothing into the service, which
    the window may delete once shutdown returns."""
    from workbench.services.runs.runner import CallEvent, RunProgress

    service = RunService(model, QtManualAgents())
    heard: list = []
    for signal in (service._calls_ready, service._progress_ready, service._created):
        signal.connect(lambda *a: heard.append(a))
    assert service.shutdown()
    thread = threading.Thread(target=lambda: (
        service._report_call(CallEvent("started", "r", "k", "a1", "vote", 1, "vote")),
        service._report(RunProgress("r", "vote", 0, 1, 0, None)),
        service._emit(service._created, "r")))
    thread.start()
    thread.join(5)
    qtbot.wait(50)
    assert heard == [] and not service.start(1)
