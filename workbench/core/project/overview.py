"""Counts that sum up what a project holds for a panel (the panels still waiting for their views)."""

from __future__ import annotations

from workbench.core.project import _sql
from workbench.core.project.store import Store

# (label, table, condition) for each line; the conditions are fixed here, never built from input.
_LINES = {
    "anchors": (("active anchors", "echo_anchors", "active = 1"),
                ("verifications", "echo_verifications", None),
                ("failed verifications", "echo_verifications", "success = 0"),
                ("restoration steps", "echo_restorations", None)),
    "drift": (("ARM runs", "runs", "protocol = 'arm'"),
              ("imported ARM traces", "runs", "protocol = 'arm' AND source = 'import'"),
              ("round-2 traces", "traces", "round_no = 2")),
    "quadrant": (("resonant-consensus runs", "runs", "protocol = 'rcp'"),
                 ("artifacts", "artifacts", None),
                 ("clusters", "clusters", None)),
    "traces": (("agent traces", "traces", None),
               ("traces that failed to parse", "traces", "ok = 0"),
               ("artifacts", "artifacts", None),
               ("votes", "votes", None),
               ("invalid or missing votes", "votes", "status != 'valid'")),
}


def counts(store: Store, topic: str) -> dict[str, int]:
    """``{label: count}`` for one of: anchors, drift, quadrant, traces."""
    return {label: _sql.count(store, table, where) for label, table, where in _LINES[topic]}


def tables(topic: str) -> tuple[str, ...]:
    """The tables a topic's counts read (what a panel showing them listens to)."""
    return tuple(dict.fromkeys(table for _, table, _ in _LINES[topic]))
