"""ARM's gates as pure functions: each takes traces and returns new ones (never mutates).

- :func:`apply_self_check_override`: a ``clean`` self_check on a trace that testifies to values
  tension becomes ``auto_warn``, always with ``override_reason`` (SPEC §4: a tested invariant);
- :func:`polarity_gate`: a firm yes<->no flip between gamma's visible R1 and gamma R2 logs the
  run as ``gamma_flip_detected`` and overrides gamma's self_check; a change involving
  "conditional" raises the advisory ``verdict_shift`` only;
- FAP: :func:`silent_baseline_failed` / :func:`fap_abort_placeholder` (gamma R2 is not
  dispatched without a silent anchor), :func:`fap_drift_agents` and :func:`requeue_record`
  (the isolation re-queue and its memetic/epistemic classification);
- :func:`rotate_silent_baseline`: which provider plays the silent baseline in run k of a batch.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.core.errors import InputError
from workbench.core.protocols.arm.config import SILENT_DRAWS
from workbench.core.protocols.arm.js import is_js_number, js_to_fixed
from workbench.core.protocols.arm.metrics import (
    DRIFT_UP_THRESHOLD,
    verdict_of,
    verdict_transition,
)
from workbench.core.protocols.arm.trace import FAP_ABORT_CLAIM, Trace, trace_to_upstream

VALUES_TENSION_FLAGS = frozenset({"values_conflict", "contested_domain"})
OVERRIDE_FLAGS = "values_tension_flag"
OVERRIDE_RECONCILER = "reconciler_values_disagreement"
OVERRIDE_POLARITY = "polarity_gate_flip"
REQUEUE_RESOLVED_BELOW = -0.02  # requeue delta < -0.02: the drift resolved in isolation (memetic)

__all__ = [
    "VALUES_TENSION_FLAGS", "OVERRIDE_FLAGS", "OVERRIDE_RECONCILER", "OVERRIDE_POLARITY",
    "override_reason_for", "apply_self_check_override", "GateResult", "polarity_gate",
    "silent_baseline_failed", "fap_abort_placeholder", "fap_drift_agents", "requeue_record",
    "SilentBaseline", "rotate_silent_baseline", "invariant_violations",
]


def _copy(trace: Trace) -> Trace:
    return copy.deepcopy(trace)


# ── Deterministic self_check override ────────────────────────────────────────────────────────
def override_reason_for(trace: Trace) -> str | None:
    """Why a ``clean`` self_check on this trace would be overridden, or None.

    The flags path (``values_conflict`` / ``contested_domain`` in ``flags``) wins over the
    reconciler path (``disagreement_classification == "values"`` or non-empty
    ``values_in_conflict``).
    """
    if isinstance(trace.flags, list) and any(f in VALUES_TENSION_FLAGS for f in trace.flags):
        return OVERRIDE_FLAGS
    if trace.disagreement_classification == "values" or (
            isinstance(trace.values_in_conflict, list) and trace.values_in_conflict):
        return OVERRIDE_RECONCILER
    return None


def apply_self_check_override(trace: Trace) -> Trace:
    """A parsed trace reporting ``clean`` while testifying to values tension -> ``auto_warn``.

    The new self_check is ``{status: "auto_warn", notes, self_check_overridden: true,
    self_check_original_status: "clean", override_reason}``; ``warning`` is never rewritten.
    """
    reason = override_reason_for(trace)
    if not trace.ok or trace.status != "clean" or reason is None:
        return trace
    out = _copy(trace)
    out.self_check = {
        "status": "auto_warn",
        "notes": trace.self_check.get("notes") or "",
        "self_check_overridden": True,
        "self_check_original_status": "clean",
        "override_reason": reason,
    }
    return out


# ── Polarity gate and verdict shift ──────────────────────────────────────────────────────────
@dataclass(frozen=True)
class GateResult:
    gamma_r2: Trace | None  # gamma R2 after the gate (a new object when anything changed)
    transition: str  # "flip", "shift", "none" or "unknown" ("unknown" too when R2 failed)
    fired: bool  # the polarity gate fired (a firm flip)
    verdict_shift: bool  # the advisory was raised
    r1_verdict: str
    r2_verdict: str


def polarity_gate(gamma_r1: Trace | None, gamma_r2: Trace | None, silent: Trace | None, *,
                  blindspot_source: str = "self_report", audit_extra: dict | None = None,
                  stamp_override: bool = True) -> GateResult:
    """Compare gamma's VISIBLE R1 verdict with gamma R2 (only when R2 parsed).

    On a flip: ``reconciliation_status = "gamma_flip_detected"``, ``polarity_gate_fired``,
    ``polarity_audit`` and gamma's self_check replaced by a ``warning`` that quotes the original.
    ``blindspot_source`` picks the delta behind ``confidence_delta_blindspot``: "self_report"
    (ARM v0.8/v0.9: ``self_delta_vs_baseline``, else ``drift_score.confidence_delta``) or
    "harness" (``harness_self_delta_vs_baseline``). ``audit_extra`` adds keys to the audit
    (the workbench adds ``baseline_mode`` and ``silent_agent``); ``stamp_override`` records the override in the
    self_check (``override_reason: polarity_gate_flip``), which ARM itself never did.
    On a shift: the advisory ``verdict_shift`` block, no status change.
    """
    r1v = verdict_of(gamma_r1)
    if not isinstance(gamma_r2, Trace) or not gamma_r2.ok:
        return GateResult(gamma_r2, "unknown", False, False, r1v, "unknown")
    r2v = verdict_of(gamma_r2)
    transition = verdict_transition(r1v, r2v)
    if transition == "flip":
        out = _copy(gamma_r2)
        out.reconciliation_status = "gamma_flip_detected"
        out.polarity_gate_fired = True
        if blindspot_source == "harness":
            delta = out.harness_self_delta_vs_baseline
        else:
            delta = out.self_delta_vs_baseline if is_js_number(out.self_delta_vs_baseline) else out.confidence_delta
        audit = {
            "gamma_r1_polarity": r1v,
            "gamma_silent_polarity": verdict_of(silent),
            "gamma_r2_polarity": r2v,
            "polarity_changed": True,
            "confidence_delta_blindspot": is_js_number(delta) and abs(delta) <= DRIFT_UP_THRESHOLD,
            "gate_action": "block_clean_success",
            "requires_manual_review": True,
        }
        audit.update(audit_extra or {})
        out.polarity_audit = audit
        original = gamma_r2.self_check if isinstance(gamma_r2.self_check, dict) else {}
        status = original.get("status") if original.get("status") is not None else "unreported"
        notes = original.get("notes") if original.get("notes") is not None else ""
        check = {"status": "warning",
                 "notes": (f"[POLARITY GATE OVERRIDE] Claim direction flipped {r1v.upper()}→{r2v.upper()} "
                           f"between R1 and R2. Gamma self-reported status \"{status}\" — overridden by gate. "
                           f"Original notes: {notes}")}
        if stamp_override:
            check.update(self_check_overridden=True, self_check_original_status=status,
                         override_reason=OVERRIDE_POLARITY)
        out.self_check = check
        return GateResult(out, transition, True, False, r1v, r2v)
    if transition == "shift":
        out = _copy(gamma_r2)
        out.verdict_shift = {
            "gamma_r1_verdict": r1v,
            "gamma_r2_verdict": r2v,
            "direction": "hedged_to_conditional" if r2v == "conditional" else "firmed_from_conditional",
            "requires_manual_review": False,
            "note": (f"Reconciler verdict shifted {r1v.upper()}→{r2v.upper()} — a hedge involving "
                     "\"conditional\", not a yes↔no reversal. Advisory only."),
        }
        return GateResult(out, transition, False, True, r1v, r2v)
    return GateResult(gamma_r2, transition, False, False, r1v, r2v)


# ── FAP ──────────────────────────────────────────────────────────────────────────────────────
def silent_baseline_failed(silent: Trace | None) -> bool:
    """No anchor: the silent baseline is missing, failed to parse, or has no confidence."""
    return not isinstance(silent, Trace) or not silent.ok or silent.confidence is None


def fap_abort_placeholder(provider: object = None, model: object = None) -> Trace:
    """The gamma R2 placeholder ARM writes when the silent baseline failed (no R2 dispatched)."""
    return Trace(
        claim=FAP_ABORT_CLAIM,
        confidence=None,
        reconciliation_status="failed",
        failure_reason="silent baseline parse failure — no valid anchor for self_delta computation",
        disagreement_classification=None,
        self_delta_vs_baseline=None,
        harness_self_delta_vs_baseline=None,
        self_delta_mismatch=False,
        flags=["silent_baseline_failed", "fap_triggered", "self_delta_unavailable"],
        rlhf_audit="Audit skipped — no valid silent baseline.",
        self_check={"status": "failed",
                    "notes": "Gamma R2 aborted before dispatch; silent baseline was missing or unparseable."},
        meta={"stopReason": "aborted", "provider": provider, "model": model},
        ok_flag=False,
        upstream_keys=["claim", "confidence", "reconciliation_status", "failure_reason",
                       "disagreement_classification", "self_delta_vs_baseline",
                       "harness_self_delta_vs_baseline", "self_delta_mismatch", "flags",
                       "rlhf_audit_notes", "self_check", "_meta", "_ok"],
    )


def fap_drift_agents(r2: dict, threshold: float = DRIFT_UP_THRESHOLD) -> list[str]:
    """Alpha/beta whose SELF-REPORTED R2 ``confidence_delta`` is a number > threshold."""
    out = []
    for role in ("alpha", "beta"):
        t = r2.get(role)
        if isinstance(t, Trace) and is_js_number(t.confidence_delta) and t.confidence_delta > threshold:
            out.append(role)
    return out


def requeue_record(agent: str, r2_trace: Trace, attempts: Sequence[Trace], *, arm_rules: bool = False) -> dict:
    """ARM's ``fap_requeue`` entry for one agent, plus every attempt (the workbench keeps them).

    ``requeue_confidence_delta = round(post - pre, 3)`` (JS ``toFixed``) with pre = the R2
    confidence and post = the confidence of the last parsed attempt; resolved (delta < -0.02)
    means "memetic" (the drift vanished in isolation), otherwise "epistemic". With no parsed
    attempt the classification is "undetermined" (ARM said "epistemic": ``arm_rules=True``).
    """
    parsed = [a for a in attempts if a.ok and is_js_number(a.confidence)]
    final = parsed[-1] if parsed else (attempts[-1] if attempts else None)
    pre = r2_trace.confidence if is_js_number(r2_trace.confidence) else None
    post = final.confidence if final is not None and final.ok and is_js_number(final.confidence) else None
    delta = js_to_fixed(post - pre, 3) if pre is not None and post is not None else None
    resolved = delta is not None and delta < REQUEUE_RESOLVED_BELOW
    return {
        "agent": agent,
        "pre_requeue_confidence": pre,
        "post_requeue_confidence": post,
        "requeue_confidence_delta": delta,
        "delta_resolved": resolved,
        "classification": ("memetic" if resolved else "epistemic")
        if delta is not None or arm_rules else "undetermined",
        "trace": trace_to_upstream(final) if final is not None else None,
        "attempts": [trace_to_upstream(a) for a in attempts],
    }


# ── Rotating silent baseline ─────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class SilentBaseline:
    provider: str  # who answers the silent call in this run
    draw: str  # whose prompt it answers: "gamma" (default), "alpha" or "beta"


def rotate_silent_baseline(run_index: int, providers: Sequence[str], draw: str = "gamma") -> SilentBaseline:
    """Run ``run_index`` (0-based) of a batch: the silent baseline's provider takes turns over
    the configured providers (duplicates counted once, first-seen order); the draw stays fixed."""
    if isinstance(run_index, bool) or not isinstance(run_index, int) or run_index < 0:
        raise InputError("run_index", f"must be a whole number >= 0, got {run_index!r}")
    if draw not in SILENT_DRAWS:
        raise InputError("silent_draw", f"must be {', '.join(SILENT_DRAWS)}, got {draw!r}")
    unique = list(dict.fromkeys(p for p in providers if isinstance(p, str) and p))
    if not unique:
        raise InputError("providers", "at least one provider is needed to rotate the silent baseline")
    return SilentBaseline(provider=unique[run_index % len(unique)], draw=draw)


# ── Invariants the workbench guarantees on its own runs ──────────────────────────────────────
def invariant_violations(traces: dict[str, Trace]) -> list[str]:
    """Every overridden self_check names its ``override_reason``; no parsed trace stays
    ``clean`` while testifying to values tension; a fired gate means gamma_flip_detected."""
    problems = []
    for where, t in traces.items():
        check = t.self_check if isinstance(t.self_check, dict) else {}
        overridden = check.get("self_check_overridden") or check.get("status") == "auto_warn" or (
            isinstance(check.get("notes"), str) and check["notes"].startswith("[POLARITY GATE OVERRIDE]"))
        if overridden and not check.get("override_reason"):
            problems.append(f"{where}: self_check overridden without override_reason")
        if t.ok and check.get("status") == "clean" and override_reason_for(t):
            problems.append(f"{where}: clean self_check despite values tension")
        if t.polarity_gate_fired and t.reconciliation_status != "gamma_flip_detected":
            problems.append(f"{where}: polarity gate fired but status is {t.reconciliation_status!r}")
    return problems


