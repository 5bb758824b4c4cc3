"""Deterministic simulated runs for the report tests: the sample configurations, fixed seeds and
fixed run ids (the run id seeds Echo's markers), so a report's bytes depend on nothing else but
its date, which :func:`normalise` replaces."""

from __future__ import annotations

import json
import re
from pathlib import Path

from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_runs"
GOLDEN = REPO / "tests" / "golden" / "reports"

# report name -> sample configuration
RUNS = {"rcp": "rcp-sim.json", "findings": "findings-sim.json", "cons": "cons-sim.json",
        "arm": "arm-sim.json", "rcp-echo": "rcp-echo-sim.json"}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?Z?)?")


def run_sample(store: Store, name: str, monkeypatch, suffix: str = "golden") -> str:
    """Run the sample behind report ``name`` to its end; its run id is ``{name}-{suffix}``."""
    import workbench.services.runs.runner as runner_module
    from workbench.services.runs.runner import Runner

    monkeypatch.setattr(runner_module, "new_run_id", lambda protocol: f"{name}-{suffix}")
    cfg = parse_run_config(json.loads((SAMPLES / RUNS[name]).read_text()))
    runner = Runner(store)
    run_id = runner.create(cfg)
    summary = runner.execute(run_id)
    assert summary["status"] == "completed", summary
    return run_id


def normalise(text: str) -> str:
    """A report with its dates (the run's start, in the CONS report and manifest) as YYYY-MM-DD."""
    return _DATE.sub("YYYY-MM-DD", text)
