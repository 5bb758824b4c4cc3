"""One stored run's metric values (SPEC §9): its protocol's declared metrics, and those of each
wrapper around it (Resonance Echo) whose part its summary holds, as a run's report has their
sections. ``view`` is a ``RunView``: the run as stored, or a rule-only arm's re-classification
of it (the run's records with the arm's config and summary)."""

from __future__ import annotations

import math

from workbench.core.protocols.shared.declaration import RunView


def run_metrics(view: RunView, protocol: str | None = None) -> dict[str, float | None]:
    from workbench.core import registry

    declared = registry.protocols()
    own = declared.get(protocol or view.run["protocol"])
    out: dict[str, float | None] = {}
    if own is not None and own.metrics is not None:
        out.update(own.metrics.compute(view))
    for wrapper in declared.values():
        if not wrapper.runnable and wrapper.metrics is not None and view.summary.get(wrapper.name):
            out.update(wrapper.metrics.compute(view))
    return {k: (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None)
            for k, v in out.items()}
