"""Calls per second through the whole runner (gateway, litellm, persistence of every call)
against the loopback server at 200 ms latency: sequential and concurrent dispatch.

An RCP run with 6 agents makes 6 generate calls and 30 vote calls.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tests.support.fake_llm_server import FakeLLMServer, Reply
from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config
from workbench.services.llm.gateway import warm_up
from workbench.services.runs.runner import Runner

LATENCY_S = float(os.environ.get("LATENCY_S", "0.2"))


def answer(request) -> str:
    return "YES" if "Response to evaluate" in request.messages[-1]["content"] else "A short answer about cars."


def config(base_url: str, dispatch: str) -> dict:
    agents = lambda p: [{"id": f"{p}{i}", "provider": "local"} for i in (1, 2, 3)]
    return {"protocol": "rcp", "query": "Close the centre?", "seed": 1, "dispatch": dispatch,
            "providers": {"local": {"model": "openai/fake-model", "api_base": base_url, "max_concurrency": 8,
                                    "timeout_s": 30}},
            "clusters": [{"name": "a", "agents": agents("a")}, {"name": "c", "agents": agents("c")}]}


def main() -> None:
    warm_up()
    with FakeLLMServer(default=Reply(text=answer, latency_s=LATENCY_S)) as server, tempfile.TemporaryDirectory() as tmp:
        store = Store.create(Path(tmp) / "bench.rwb")
        for dispatch in ("sequential", "concurrent"):
            runner = Runner(store)
            run_id = runner.create(parse_run_config(config(server.base_url, dispatch)))
            start = time.perf_counter()
            summary = runner.execute(run_id)
            wall = time.perf_counter() - start
            calls = summary["calls"]
            print(f"{dispatch:<11} {calls} calls in {wall:6.2f} s = {calls / wall:6.2f} calls/s "
                  f"(server latency {LATENCY_S * 1000:.0f} ms, max {server.max_in_flight} in flight, "
                  f"status {summary['status']})")
        store.close_connection()


if __name__ == "__main__":
    main()
