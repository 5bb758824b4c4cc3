"""The compressed peer view (FORMAT.md §1): what one agent is shown of another's trace.

A round-2 call shows its peers' traces as one untrusted block, fenced by the template engine
(the step's ``peer_traces`` variable): each compressed trace as JSON under a label naming whose
trace it is and from which round. The labels sit inside the fence with the JSON they name, as in
ARM's own prompts, so they are built here with it; every word outside the fence is the step's
template's. :class:`PeerView` also keeps the views by key (``alpha_r1``, ``beta_r2``,
``baseline``...): the values the simulated panel reads, never the prompt.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workbench.core.protocols.arm.trace import Trace


def compress_trace(trace: Trace | None) -> dict[str, Any] | None:
    """The compressed peer view: claim, confidence, frame, basis, the first 4 assumptions
    (``key_assumptions``), the first 5 critical-path steps (``main_path``), the first 3
    challenges (``top_challenges``), flags and the self_check status. ``None`` for a failed trace."""
    if not isinstance(trace, Trace) or not trace.ok:
        return None

    def head(value: Any, n: int) -> Any:
        return value[:n] if isinstance(value, list) else value

    view = {
        "claim": trace.claim,
        "confidence": trace.confidence,
        "reasoning_frame": trace.reasoning_frame,
        "decision_basis": trace.decision_basis,
        "key_assumptions": head(trace.explicit_assumptions, 4),
        "main_path": head(trace.critical_path, 5),
        "top_challenges": head(trace.challenge_surface, 3),
        "flags": trace.flags,
        "self_check_status": trace.status,
    }
    return {k: v for k, v in view.items() if v is not None}


def view_json(trace: Trace | None) -> str:
    """A compressed trace as the prompt shows it (``null`` for a failed trace)."""
    return json.dumps(compress_trace(trace), ensure_ascii=False, indent=2)


def confidence_of(trace: Trace | None) -> Any:
    """A trace's confidence, None when it failed (a template shows "unknown")."""
    return trace.confidence if isinstance(trace, Trace) else None


def round_label(role: str, round_no: int) -> str:
    return f"{role.upper()} R{round_no} (compressed)"


OWN_R1_LABEL = "GAMMA R1, your own visible round-1 answer (compressed)"


def baseline_label(draw: str, silent_provider: str, gamma_provider: str, confidence: Any) -> str:
    """Gamma's own prior only when the baseline is a gamma draw by gamma's provider; otherwise
    it is named for what it is (ARM labelled a rotated baseline "YOUR OWN prior" by mistake)."""
    if draw == "gamma" and silent_provider == gamma_provider:
        name = "GAMMA R1 SILENT BASELINE (your own isolated prior, never shown to peers)"
    else:
        name = (f"ISOLATED BASELINE ({draw} draw answered by {silent_provider}; not your own prior, "
                "never shown to peers)")
    return f"{name} (confidence: {'unknown' if confidence is None else confidence})"


@dataclass(frozen=True)
class PeerView:
    """Traces shown to one call: ``(key, label, trace)`` in the order shown."""

    items: Sequence[tuple[str, str, Trace | None]]

    @property
    def text(self) -> str:
        """The block the template fences: each labelled compressed trace, a blank line between."""
        return "\n\n".join(f"{label}:\n{view_json(trace)}" for _, label, trace in self.items)

    @property
    def views(self) -> dict[str, dict | None]:
        """The compressed traces by key, in the order shown."""
        return {key: compress_trace(trace) for key, _, trace in self.items}


def round1_view(r1: dict[str, Trace | None]) -> PeerView:
    """What alpha and beta see in round 2: the compressed round-1 traces of alpha, beta and gamma."""
    return PeerView([(f"{role}_r1", round_label(role, 1), r1.get(role)) for role in ("alpha", "beta", "gamma")])


def reconciliation_view(r2: dict[str, Trace | None], silent: Trace | None, baseline: str,
                        r1: dict[str, Trace | None] | None = None) -> PeerView:
    """What gamma sees in round 2: alpha R2, beta R2 and the silent baseline (ARM); with ``r1``
    also the compressed round-1 traces of alpha, beta and its own visible gamma R1."""
    items = [("alpha_r2", round_label("alpha", 2), r2.get("alpha")),
             ("beta_r2", round_label("beta", 2), r2.get("beta")), ("baseline", baseline, silent)]
    if r1 is not None:
        items += [("alpha_r1", round_label("alpha", 1), r1.get("alpha")),
                  ("beta_r1", round_label("beta", 1), r1.get("beta")), ("gamma_r1", OWN_R1_LABEL, r1.get("gamma"))]
    return PeerView(items)
