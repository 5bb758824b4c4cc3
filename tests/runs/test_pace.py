"""A room's pace for simulated runs (services/runs/pace.py), through the real runner, on a fake
clock: no test here sleeps for its timing."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from tests.support.fake_llm_server import FakeLLMServer, Reply
from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config
from workbench.services.runs.pace import DELAY, STEP, Pace, Pacer
from workbench.services.runs.runner import PAUSE_MARK, Runner

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"
WAIT_S = 30.0  # a generous bound on a wait for another thread; never a timing


class FakeClock:
    """Time that moves only when a pace waits: ``sleep`` advances it and returns at once."""

    def __init__(self):
        self.now = 0.0
        self.slept = 0.0
        self._lock = threading.Lock()

    def clock(self) -> float:
        with self._lock:
            return self.now

    def sleep(self, seconds: float, cancel=None) -> bool:
        with self._lock:
            self.now += seconds
            self.slept += seconds
        return bool(cancel is not None and cancel.is_set())


def sim_config(**extra):
    return parse_run_config({**json.loads((SAMPLES / "rcp-sim.json").read_text()), **extra})


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "pace.rwb")
    yield s
    s.close_connection()


def until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.005)


@pytest.mark.parametrize("dispatch", ["concurrent", "sequential"])
def test_at_half_a_second_a_call_no_more_calls_complete_than_the_pace_allows(store, dispatch):
    fake = FakeClock()
    pacer = Pacer(clock=fake.clock, sleep=fake.sleep)
    pacer.set_pace(Pace(DELAY, 0.5))
    ended: list[float] = []
    runner = Runner(store, pace=pacer, on_call=lambda e: ended.append(fake.clock()) if e.kind == "finished" else None)
    run_id = runner.create(sim_config(dispatch=dispatch))
    summary = runner.execute(run_id)
    assert summary["status"] == "completed" and summary["calls"] == len(ended) > 10
    # By any moment T, at most floor(T / 0.5) calls have completed: the k-th (from 1) at T >= 0.5 k.
    for k, at in enumerate(sorted(ended), start=1):
        assert at >= 0.5 * k - 1e-9, (k, at)
    assert fake.slept >= 0.5 * len(ended) - 1e-9


def test_step_mode_advances_exactly_one_phase_per_press(store):
    pacer = Pacer()
    pacer.set_pace(Pace(STEP))
    phases: list[int] = []  # the phase (batch) of every call finished, in order
    holds: list[str] = []
    lock = threading.Lock()

    def on_call(e):
        if e.kind == "finished":
            with lock:
                phases.append(e.round_idx)

    def on_progress(p):
        if p.message.startswith(PAUSE_MARK):
            holds.append(p.phase)

    runner = Runner(store, pace=pacer, on_call=on_call, on_progress=on_progress)
    run_id = runner.create(sim_config(refinement_rounds=1))
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(runner.execute(run_id)))
    thread.start()
    try:
        seen = 0
        for press in range(3):
            until(lambda: pacer.holding and len(holds) == press + 1, f"the hold after phase {press + 1}")
            with lock:
                done = sorted(set(phases))
            assert done == list(range(1, press + 2)), (press, done)  # Start, then one phase per press
            assert len(phases) > seen  # the phase made its calls
            seen = len(phases)
            pacer.next_phase()
        pacer.set_pace(Pace())  # Play: the rest as fast as possible
        thread.join(WAIT_S)
        assert not thread.is_alive()
    finally:
        runner.cancel.set()
        thread.join(WAIT_S)
    assert result["status"] == "completed" and len(set(phases)) > 3


def test_cancel_ends_a_run_held_for_next_and_it_stays_resumable(store):
    pacer = Pacer()
    pacer.set_pace(Pace(STEP))
    runner = Runner(store, pace=pacer)
    run_id = runner.create(sim_config())
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(runner.execute(run_id)))
    thread.start()
    until(lambda: pacer.holding, "the hold after the first phase")
    runner.cancel.set()
    thread.join(WAIT_S)
    assert not thread.is_alive() and result["status"] == "interrupted"
    pacer.set_pace(Pace())
    assert Runner(store, pace=pacer).execute(run_id)["status"] == "completed"


def test_a_run_that_calls_a_real_model_is_never_slowed(store, monkeypatch):
    fake = FakeClock()
    pacer = Pacer(clock=fake.clock, sleep=fake.sleep)
    pacer.set_pace(Pace(DELAY, 2.0))
    monkeypatch.setenv("LOOP_KEY", "sk-loopback-0123456789")
    with FakeLLMServer(default=Reply(text="NO")) as server:
        cfg = sim_config(providers={"local": {"model": "openai/fake-model", "api_base": server.base_url,
                                              "api_key_env": "LOOP_KEY", "max_retries": 0}},
                         clusters=[{"name": "advocate", "agents": [{"id": "a1", "provider": "local"},
                                                                   {"id": "a2", "provider": "local"}]},
                                   {"name": "critic", "agents": [{"id": "c1", "provider": "local"}]}])
        runner = Runner(store, pace=pacer)
        summary = runner.execute(runner.create(cfg))
    assert summary["calls"] > 0
    assert fake.slept == 0.0  # not one wait, whatever the control says


def test_a_change_of_pace_reaches_a_waiting_call():
    """Switching to "as fast as possible" lets a call waiting for its 2 s turn go at once."""
    pacer = Pacer()  # the real clock: the wait would take 2 s
    pacer.set_pace(Pace(DELAY, 2.0))
    pacer.begin(simulated=True)
    went = threading.Event()
    thread = threading.Thread(target=lambda: pacer.before_call() and went.set())
    thread.start()
    pacer.set_pace(Pace())
    thread.join(WAIT_S)
    assert went.is_set()
