"""Resonant Consensus Protocol: one user-facing sentence per resonance state (paper §8)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

MIXED_RESULTS = (
    "No positive consensus: request clarification, present the perspectives explicitly, "
    "or acknowledge genuine ambiguity."
)


def _names(names: Sequence[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def guidance(tier: str, *, reference: str, approving: Sequence[str], n: int) -> str:
    """The paper's §8 orchestrator response for ``tier``, worded for this panel.

    ``approving`` is the approval set S (cluster names), ``n`` the number of clusters.
    """
    k = len(approving)
    if tier == "positive_consensus":
        head = f"{k} of {n} clusters"
        if k == n:
            head = "both clusters" if n == 2 else f"all {n} clusters"
        text = (
            f"Present with confidence: {head} endorse it, "
            "so cross-cluster endorsement gives strong validation."
        )
        if reference not in approving:
            text += f" Note that the reference cluster {reference!r} did not join."
        return text
    if tier == "negative_consensus":
        who = f"{n - k} of {n} perspectives"
        if k == 0:
            who = "Both perspectives" if n == 2 else "All perspectives"
        return (
            f"Surface the rejection: {who} identified concerns with it. "
            "Ask the user for clarification or acknowledge the limitation."
        )
    if tier == "positive_polar":
        return (
            f"From the {reference} perspective: present it with attribution to {reference}, "
            "and consider surfacing the disagreement."
        )
    if tier == "negative_polar":
        others = list(approving)
        noun = "perspective" if len(others) == 1 else "perspectives"
        that = "that perspective" if len(others) == 1 else "those perspectives"
        return (
            f"From the {_names(others)} {noun}: present it with attribution to the opposing view; "
            f"the user's framing may align with {that}."
        )
    raise ValueError(f"unknown tier {tier!r}")


def guidance_for(state: Mapping[str, object], reference: str) -> str:
    """:func:`guidance` for a resonance state dict as returned by ``classify_payload``."""
    approving = list(state["approval_set"])  # type: ignore[call-overload]
    n = len(state["cluster_rates"])  # type: ignore[arg-type]
    return guidance(str(state["tier"]), reference=reference, approving=approving, n=n)


def mixed_results_guidance(states: Iterable[Mapping[str, object]]) -> str | None:
    """The paper's "mixed results" row: a sentence when no artifact reached positive consensus.

    None when some artifact is positive_consensus, and for an empty list (nothing to advise on).
    """
    tiers = [s["tier"] for s in states]
    if not tiers or "positive_consensus" in tiers:
        return None
    return MIXED_RESULTS
