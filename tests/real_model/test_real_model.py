"""The real-model drill as tests (issue 19): bench/real_model.py's checks, against Gemma 3 270M
served by llama-cpp-python's server on loopback.

Opt-in, and never part of a plain ``make test``: these tests run only when asked for, with
``-m real_model`` or ``RWB_REAL_MODEL=1``, and only where ``make real-model`` has built
``.venv-real/`` (llama-cpp-python[server]) and assembled ``.models/gemma3-270m-q4_k_m.gguf``.
Otherwise they skip at once, with the reason. ``RWB_REAL_MODEL_URL`` points them at a server that
is already running instead of starting one. They take about as long as the drill (minutes).

    make real-model                                           # once: the venv, the GGUF, the drill
    make test PYTEST_ARGS="-m real_model tests/real_model"    # or: RWB_REAL_MODEL=1 make test
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench" / "real_model.py"

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(2 * 3600)]


def _bench():
    spec = importlib.util.spec_from_file_location("rwb_bench_real_model", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _opted_in(config: pytest.Config) -> bool:
    if os.environ.get("RWB_REAL_MODEL", "") not in ("", "0"):
        return True
    expr = config.getoption("markexpr", default="") or ""
    return "real_model" in expr and "not real_model" not in expr


def skip_reason(config: pytest.Config) -> str | None:
    """Why the drill cannot run here (None: it can). Only file checks: instant."""
    if not _opted_in(config):
        return "the real-model drill is opt-in: run with -m real_model or RWB_REAL_MODEL=1 (after make real-model)"
    if os.environ.get("RWB_REAL_MODEL_URL"):
        return None
    if not (REPO / ".venv-real" / "bin" / "python").exists():
        return "no .venv-real/ with llama-cpp-python[server]: run make real-model first"
    if not (REPO / ".models" / "gemma3-270m-q4_k_m.gguf").exists():
        return "no .models/gemma3-270m-q4_k_m.gguf: run make real-model first"
    return None


@pytest.fixture(scope="module")
def drill(request, tmp_path_factory):
    reason = skip_reason(request.config)
    if reason:
        pytest.skip(reason)
    bench = _bench()
    workdir = tmp_path_factory.mktemp("real-model")
    url = os.environ.get("RWB_REAL_MODEL_URL")
    if url:
        results = bench.run_drill(bench.normalise_url(url), workdir=workdir, progress=None)
    else:
        with bench.Server(log_path=workdir / "server.log") as server:
            results = bench.run_drill(server.api_base, workdir=workdir, progress=None)
    print("\n" + bench.table(results))
    return bench, results


def _result(drill, protocol: str, mode: str):
    bench, results = drill
    return next(r for r in results if r.protocol == protocol and r.mode == mode)


@pytest.mark.parametrize("protocol", ["rcp", "findings", "cons", "echo", "arm"])
@pytest.mark.parametrize("mode", ["on", "off"])
def test_every_run_gives_a_result(drill, protocol, mode):
    """No refused configuration (exit 2), no timeout, no run without a status."""
    r = _result(drill, protocol, mode)
    assert r.exit_code is not None and r.exit_code != 2 and r.status, r.note or f"exit {r.exit_code}"


@pytest.mark.parametrize("protocol", ["rcp", "findings", "cons"])
def test_structured_output_gives_valid_replies(drill, protocol):
    """With the schema sent (json_object, the form llama-cpp-python's server accepts), at least 90%
    of the RCP votes, the findings votes and the CONS ballots are valid."""
    bench, _ = drill
    r = _result(drill, protocol, "on")
    assert r.valid_rate is not None and r.valid_rate >= bench.VALID_FLOOR, \
        f"{r.votes_valid}/{r.votes_expected} valid ({r.note})"


@pytest.mark.parametrize("protocol", ["rcp", "findings", "cons", "echo", "arm"])
@pytest.mark.parametrize("mode", ["on", "off"])
def test_a_run_past_the_floor_is_degraded(drill, protocol, mode):
    """A run missing more than max_missing_share of its votes ends degraded (exit 3), never completed."""
    r = _result(drill, protocol, mode)
    if r.misses_floor:
        assert (r.status, r.exit_code) == ("degraded", 3), \
            f"{r.missing_share:.0%} missing, yet status {r.status}, exit {r.exit_code}"
    elif r.status == "degraded":
        assert r.exit_code == 3
