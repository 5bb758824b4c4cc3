"""Resonance Echo's outcome metrics for studies (SPEC §9), for any run it wraps:
``loss_detected_share``, the share of the run's marker checks that found the marker gone, and
``restored_share``, the share of the restorations it started that ended by resuming the session
(not by escalating to the conductor). Each is None for a run with no check, or no restoration."""

from __future__ import annotations

from workbench.core.protocols.shared.declaration import Metrics, RunView

NAMES = ("loss_detected_share", "restored_share")


def compute(view: RunView) -> dict[str, float | None]:
    checks = view.records("echo_check")
    steps: dict[str, set[str]] = {}
    for r in view.records("echo_restoration"):
        steps.setdefault(str(r.get("restoration")), set()).add(str(r.get("step")))
    return {"loss_detected_share": sum(not c.get("success") for c in checks) / len(checks) if checks else None,
            "restored_share": sum("resume" in s for s in steps.values()) / len(steps) if steps else None}


METRICS = Metrics(names=NAMES, compute=compute, shares=frozenset(NAMES))
