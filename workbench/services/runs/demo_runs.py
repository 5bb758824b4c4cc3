"""The demo's runs: every protocol's offline sample, run into the demo as it is built, so each
panel of ``make run`` / ``rwb gui --demo`` opens on data (``sample_runs/*-sim.json``, the same
configs ``rwb run`` takes; the simulated panel, so no model is called and nothing is paid)."""

from __future__ import annotations

from pathlib import Path

from workbench.core.project.demo import DEMO_SPEC, REPO_ROOT, build_default_demo
from workbench.core.project.store import Store

SAMPLES = ("rcp-sim.json", "arm-sim.json", "findings-sim.json", "cons-sim.json", "rcp-echo-sim.json")


def populate(store: Store) -> None:
    """Run each sample to its end in ``store``, as ``rwb run CONFIG --project FILE`` would."""
    from workbench.core.runs.config import parse_run_config, read_config_file
    from workbench.services.runs.preflight import preflight
    from workbench.services.runs.runner import Runner

    for name in SAMPLES:
        cfg = parse_run_config(read_config_file(REPO_ROOT / "sample_runs" / name))
        preflight(cfg)
        runner = Runner(store)
        runner.execute(runner.create(cfg))


def ensure_full_demo(dest: Path) -> Path:
    """The demo at ``dest``, built with its runs unless a build newer than its spec, its
    samples and this module exists."""
    sources = [DEMO_SPEC, Path(__file__), *(REPO_ROOT / "sample_runs" / name for name in SAMPLES)]
    if dest.exists() and dest.stat().st_mtime >= max(p.stat().st_mtime for p in sources):
        return dest
    return build_default_demo(dest, populate=populate)
