"""The demo's runs: every sample of ``sample_runs/samples.json`` run into the demo as it is built,
so each panel of ``make run`` / ``rwb gui --demo`` opens on data. These are the steps ``rwb samples``
builds the committed sample projects from (the same configurations, the conductor's decisions,
the reviewer's decisions); the simulated panel, so no model is called and nothing is paid. The
sample that imports the README's real ARM trace is included when the corpus is there at build
time (``../shared/corpus`` beside the repository).

Running them takes about 1.5 s (the samples are small and sequential); a demo newer than its spec,
the manifest, every file it lists and this module is opened as it is, never rebuilt.
"""

from __future__ import annotations

from pathlib import Path

from workbench.core.project.demo import DEMO_SPEC, build_default_demo
from workbench.core.project.store import Store


def populate(store: Store) -> None:
    """Run every sample's steps in ``store``, as ``rwb samples`` does into each sample's own file."""
    from workbench.services.samples.build import populate_demo

    populate_demo(store)


def ensure_full_demo(dest: Path) -> Path:
    """The demo at ``dest``, built with its runs unless a build newer than its spec, its
    samples and this module exists."""
    from workbench.services.samples.build import demo_sources

    sources = [DEMO_SPEC, Path(__file__), *demo_sources()]
    if dest.exists() and dest.stat().st_mtime >= max(p.stat().st_mtime for p in sources if p.exists()):
        return dest
    return build_default_demo(dest, populate=populate)
