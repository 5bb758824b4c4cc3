"""Re-deriving every value an ARM file stores that can be recomputed from the file itself.

Each check is ``{metric, stored, recomputed, match, note}``; numbers match within 1e-9. The
rules applied are those of the build that wrote the file, read from the file itself:
- the polarity gate existed when ``runMeta.polarity_gate_fired`` is present (or from v1.2);
- the FAP drift flag when ``runMeta.fap_drift_triggered`` is present;
- the verdict-shift advisory when ``runMeta.verdict_shift_flagged`` is present;
- the deterministic self_check override and the harness deltas from arm-trace-v1.2;
- a workbench export (it records ``runMeta.dispatch``) is checked with the workbench's own gate
  options (blind spot on the harness delta, audit with ``baseline_mode``/``silent_agent``).
A value computed outside the trace (OpenAI embeddings) is listed with ``match: null`` and a note.

Older rules are never matched silently. Where the build that wrote the file applied an older
rule than today's, the entry's ``recomputed`` is TODAY's value; when the stored value differs
from it, ``match`` is false, ``note`` says which older rule explains the difference, and
``build_rule`` gives the value that older rule yields (``{"recomputed", "match"}``), so both
values are reported. The older rules (docs/limits.md lists them, with FORMAT.md):
- no polarity gate before v0.8 (:data:`NOTE_NO_GATE`);
- no deterministic self_check override before v0.8, then (arm-trace-v1.1) the flags path only
  and no ``override_reason`` (:data:`NOTE_OVERRIDE_LEGACY`, :data:`NOTE_OVERRIDE_V11`);
- the v0.6/v0.7.1 FAP abort placeholder: traces of those builds had no ``_ok`` and no harness
  deltas (:data:`NOTE_PLACEHOLDER_LEGACY`).
A difference no older rule explains has ``match: false`` and no ``build_rule``: ``rwb arm
metrics`` counts those as ``summary.unexplained``.
"""

from __future__ import annotations

import copy
from typing import Any

from workbench.core.protocols.arm.gates import (
    apply_self_check_override,
    fap_abort_placeholder,
    polarity_gate,
    requeue_record,
    silent_baseline_failed,
)
from workbench.core.protocols.arm.js import export_integrity_hash, is_js_number
from workbench.core.protocols.arm.metrics import (
    delta_mismatch,
    fap_drift_triggered,
    gamma_drift_exceeded,
    harness_delta,
    run_convergence,
    self_check_divergence,
)
from workbench.core.protocols.arm.replies import TRUNCATION_STOP_REASONS, expected_schema_warnings
from workbench.core.protocols.arm.trace import (
    LEGACY,
    PARSE_FAILED,
    SCHEMA_V11,
    ArmRun,
    Trace,
    trace_to_upstream,
)

TOL = 1e-9
NOTE_EMBEDDING = "not recomputable offline: OpenAI embeddings (text-embedding-3-small cosine)"
NOTE_NO_GATE = ("this build had no polarity gate (runMeta has no polarity_gate_fired), so the stored "
                "status predates it; the workbench gate fires here ({r1}→{r2})")
NOTE_OVERRIDE_LEGACY = ("older rule: v0.6/v0.7.1 builds had no deterministic self_check override (it came "
                        "with v0.8), so the model's own status stands; today's rule gives {today}")
NOTE_OVERRIDE_V11 = ("older rule: arm-trace-v1.1 (early v0.8) overrode on the flags path only "
                     "(values_conflict/contested_domain) and wrote no override_reason; the reconciler path "
                     "and override_reason came with arm-trace-v1.2; today's rule gives {today}")
NOTE_PLACEHOLDER_LEGACY = ("older rule: v0.6/v0.7.1 builds wrote traces without {key} (it came with v0.8), so "
                           "their FAP abort placeholder has none; today's placeholder writes {value}")
LEGACY_PLACEHOLDER_KEYS = ("_ok", "harness_self_delta_vs_baseline", "self_delta_mismatch")

__all__ = ["TOL", "same", "stored_checks", "gate_in_build", "is_workbench_export", "NOTE_NO_GATE",
           "NOTE_OVERRIDE_LEGACY", "NOTE_OVERRIDE_V11", "NOTE_PLACEHOLDER_LEGACY", "NOTE_EMBEDDING"]


def same(a: Any, b: Any) -> bool:
    """Deep equality where numbers (not booleans) may differ by at most 1e-9."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if is_js_number(a) and is_js_number(b):
        return abs(a - b) <= TOL
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _entry(metric: str, stored: Any, recomputed: Any, note: str | None = None,
           recomputable: bool = True, older: tuple[str, Any] | None = None) -> dict:
    """One check. ``older``: (why, value under the build's older rule); used only when the stored
    value differs from today's ``recomputed``, which then stays in the entry next to it."""
    entry = {"metric": metric, "stored": stored, "recomputed": recomputed,
             "match": same(stored, recomputed) if recomputable else None, "note": note}
    if older is not None and entry["match"] is False:
        why, build_value = older
        entry["note"] = why if note is None else f"{note}; {why}"
        entry["build_rule"] = {"recomputed": build_value, "match": same(stored, build_value)}
    return entry


def unexplained(entry: dict) -> bool:
    """A stored value that differs from today's recomputation with no older rule to explain it."""
    return entry["match"] is False and not (entry.get("build_rule") or {}).get("match")


def is_workbench_export(run: ArmRun) -> bool:
    """A run the workbench wrote (it records ``runMeta.dispatch``, which ARM never wrote)."""
    return run.meta.present("dispatch")


def gate_in_build(run: ArmRun) -> bool:
    return run.generation != LEGACY or run.meta.present("polarity_gate_fired")


def _traces(run: ArmRun) -> list[tuple[str, Trace]]:
    out = []
    for name, block in (("r1", run.r1), ("r2", run.r2)):
        for role, t in (block or {}).items():
            if isinstance(t, Trace):
                out.append((f"{name}.{role}", t))
    return out


def stored_checks(run: ArmRun, source: dict | None = None) -> list[dict]:
    """Every recomputable value ``run`` stores, next to the workbench's recomputation."""
    checks: list[dict] = []
    meta = run.meta
    conv = run_convergence(run)
    a1, b1, g1, s1 = (run.trace(1, r) for r in ("alpha", "beta", "gamma", "silent"))
    a2, b2, g2 = (run.trace(2, r) for r in ("alpha", "beta", "gamma"))

    if run.present("export_integrity_hash"):
        checks.append(_entry("export_integrity_hash", run.export_integrity_hash,
                             export_integrity_hash(source if source is not None else {})))

    for key, value in (("convergence", conv["jaccard"]), ("tfidf_convergence", conv["tfidf"])):
        for where, holder in (("", run), ("runMeta.", meta)):
            if holder.present(key):
                checks.append(_entry(where + key, getattr(holder, key), value))
    for where, holder in (("", run), ("runMeta.", meta)):
        if holder.present("embedding_convergence"):
            checks.append(_entry(where + "embedding_convergence", holder.embedding_convergence, None,
                                 NOTE_EMBEDDING, recomputable=False))

    if meta.present("schema_version"):
        checks.append(_entry("runMeta.schema_version", meta.schema_version, run.schema_version))
    if meta.present("silentConfidence"):
        checks.append(_entry("runMeta.silentConfidence", meta.silent_confidence,
                             s1.confidence if isinstance(s1, Trace) else None))
    if meta.present("silentBaselineFailed"):
        checks.append(_entry("runMeta.silentBaselineFailed", meta.silent_baseline_failed,
                             silent_baseline_failed(s1)))
    if meta.present("disagreement"):
        checks.append(_entry("runMeta.disagreement", meta.disagreement,
                             g2.disagreement_classification if isinstance(g2, Trace) else None))
    for role, t in (("alpha", a1), ("beta", b1), ("gamma", g1)):
        for where, block in (("runMeta.providers", meta.providers), ("providers", run.providers)):
            if isinstance(block, dict) and role in block and isinstance(t, Trace) and t.provider is not None:
                checks.append(_entry(f"{where}.{role}", block[role], t.provider))

    silent_draw = meta.silent_agent
    if isinstance(s1, Trace) and s1.provider is not None and isinstance(meta.providers, dict) \
            and silent_draw in meta.providers:
        checks.append(_entry("r1.silent._meta.provider", s1.provider, meta.providers[silent_draw]))

    if meta.present("fap_drift_triggered"):
        checks.append(_entry("runMeta.fap_drift_triggered", meta.fap_drift_triggered, fap_drift_triggered(a2, b2)))
    if meta.present("gamma_drift_exceeded"):
        checks.append(_entry("runMeta.gamma_drift_exceeded", meta.gamma_drift_exceeded, gamma_drift_exceeded(g2)))
    if meta.present("self_check_divergence"):
        checks.append(_entry("runMeta.self_check_divergence", meta.self_check_divergence,
                             self_check_divergence([a1, b1, g1])))
    for i, rec in enumerate(meta.fap_requeue if isinstance(meta.fap_requeue, list) else []):
        checks += _requeue_checks(i, rec, run)

    checks += _drift_checks(run, a1, b1, a2, b2, g2, s1)
    checks += _gate_checks(run, g1, g2, s1)
    checks += _override_checks(run)
    checks += _failure_checks(run)
    return checks


def _drift_checks(run, a1, b1, a2, b2, g2, s1) -> list[dict]:
    out = []
    for role, r1t, r2t in (("alpha", a1, a2), ("beta", b1, b2)):
        if not isinstance(r2t, Trace) or not isinstance(r2t.drift_score, dict):
            continue
        hd = harness_delta(r2t.confidence, r1t.confidence if isinstance(r1t, Trace) else None)
        if "harness_confidence_delta" in r2t.drift_score:
            out.append(_entry(f"r2.{role}.drift_score.harness_confidence_delta", r2t.harness_confidence_delta, hd))
        if "delta_mismatch" in r2t.drift_score:
            out.append(_entry(f"r2.{role}.drift_score.delta_mismatch", r2t.delta_mismatch,
                              delta_mismatch(r2t.confidence_delta, hd)))
    if isinstance(g2, Trace) and g2.ok:
        hd = harness_delta(g2.confidence, s1.confidence if isinstance(s1, Trace) else None)
        if g2.present("harness_self_delta_vs_baseline"):
            out.append(_entry("r2.gamma.harness_self_delta_vs_baseline", g2.harness_self_delta_vs_baseline, hd))
        if g2.present("self_delta_mismatch"):
            out.append(_entry("r2.gamma.self_delta_mismatch", g2.self_delta_mismatch,
                              delta_mismatch(g2.self_delta_vs_baseline, hd)))
    return out


def _gate_checks(run: ArmRun, g1, g2, s1) -> list[dict]:
    out: list[dict] = []
    if not isinstance(g2, Trace):
        return out
    if isinstance(g2.claim, str) and g2.claim.startswith("[FAP"):
        return _placeholder_checks(run, g2)
    meta = run.meta
    if is_workbench_export(run):
        gate = polarity_gate(g1, g2, s1, blindspot_source="harness",
                             audit_extra={"baseline_mode": "visible_r1", "silent_agent": meta.silent_agent})
    else:
        gate = polarity_gate(g1, g2, s1, stamp_override=False)
    if not gate_in_build(run):
        if g2.ok:  # today's gate against the build's (none): the model's own status stands
            why = NOTE_NO_GATE.format(r1=gate.r1_verdict.upper(), r2=gate.r2_verdict.upper())
            today = "gamma_flip_detected" if gate.fired else "success"
            out.append(_entry("r2.gamma.reconciliation_status", g2.reconciliation_status, today,
                              older=(why, "success")))
            if gate.fired:
                out.append(_entry("r2.gamma.self_check.status (gate override)", g2.status, "warning",
                                  older=(why, g2.status)))
        return out
    if meta.present("polarity_gate_fired"):
        out.append(_entry("runMeta.polarity_gate_fired", meta.polarity_gate_fired, gate.fired))
    expected_status = "gamma_flip_detected" if gate.fired else ("success" if g2.ok else "failed")
    out.append(_entry("r2.gamma.reconciliation_status", g2.reconciliation_status, expected_status))
    if g2.ok:
        out.append(_entry("r2.gamma.polarity_gate_fired", g2.polarity_gate_fired, True if gate.fired else None))
        out.append(_entry("r2.gamma.polarity_audit", g2.polarity_audit,
                          gate.gamma_r2.polarity_audit if gate.fired else None))
    if gate.fired:
        prefix = gate.gamma_r2.self_check["notes"].split(" Gamma self-reported")[0]
        notes = g2.self_check.get("notes") if isinstance(g2.self_check, dict) else None
        out.append(_entry("r2.gamma.self_check.status (gate override)", g2.status, "warning"))
        out.append(_entry("r2.gamma.self_check.notes (gate prefix)",
                          notes[:len(prefix)] if isinstance(notes, str) else notes, prefix))
    if meta.present("verdict_shift_flagged"):
        out.append(_entry("runMeta.verdict_shift_flagged", meta.verdict_shift_flagged, gate.verdict_shift))
        out.append(_entry("r2.gamma.verdict_shift", g2.verdict_shift,
                          gate.gamma_r2.verdict_shift if gate.verdict_shift else None))
    return out


def _placeholder_checks(run: ArmRun, g2: Trace) -> list[dict]:
    """The FAP abort placeholder, field by field, against the one ARM writes today."""
    expected = trace_to_upstream(fap_abort_placeholder(g2.provider, g2.model))
    stored = trace_to_upstream(g2)
    out = []
    for key, value in expected.items():
        metric = f"r2.gamma.{key} (FAP abort placeholder)"
        if key == "_meta":
            out.append(_entry("r2.gamma._meta.stopReason (FAP abort placeholder)", g2.stop_reason, "aborted"))
        elif key not in stored and run.generation == LEGACY and key in LEGACY_PLACEHOLDER_KEYS:
            why = NOTE_PLACEHOLDER_LEGACY.format(key=key, value=js_value(value))
            out.append(_entry(metric + " (absent)", None, value, older=(why, None)))
        else:
            out.append(_entry(metric, stored.get(key), value))
    for key in stored:
        if key not in expected:
            out.append(_entry(f"r2.gamma.{key} (FAP abort placeholder)", stored[key], None,
                              "a key the placeholder does not have"))
    return out


def js_value(value: Any) -> str:
    return "null" if value is None else "true" if value is True else "false" if value is False else repr(value)


def _override_rule_of_build(run: ArmRun, t: Trace) -> tuple[str, Any] | None:
    """What the build's own (older) override rule gave, as (template of why, value), or None
    when the build applied today's rule (arm-trace-v1.2 and later)."""
    if run.generation == LEGACY:
        return NOTE_OVERRIDE_LEGACY, {"status": "clean", "override_reason": None}
    if run.generation == SCHEMA_V11:
        flagged = isinstance(t.flags, list) and any(f in ("values_conflict", "contested_domain") for f in t.flags)
        return NOTE_OVERRIDE_V11, {"status": "auto_warn" if flagged else "clean", "override_reason": None}
    return None


def _override_checks(run: ArmRun) -> list[dict]:
    """Every parsed trace whose model reported ``clean`` gets today's override rule re-run; a
    build with an older rule (legacy, arm-trace-v1.1) is reported against both."""
    out = []
    for where, t in _traces(run):
        check = t.self_check if isinstance(t.self_check, dict) else {}
        if not t.ok or where == "r2.gamma" and t.polarity_gate_fired:
            continue
        original = check.get("self_check_original_status", check.get("status"))
        if original != "clean":
            continue
        before = copy.deepcopy(t)
        before.self_check = {"status": "clean", "notes": check.get("notes", "")}
        after = apply_self_check_override(before)
        today = {"status": after.status, "override_reason": after.override_reason}
        build = _override_rule_of_build(run, t)
        older = (build[0].format(today=f"{today['status']} ({today['override_reason']})"), build[1]) if build else None
        out.append(_entry(f"{where}.self_check (override)",
                          {"status": t.status, "override_reason": t.override_reason}, today, older=older))
        if run.generation == LEGACY:
            continue  # legacy builds wrote no schema_warnings
        if t.present("schema_warnings") or expected_schema_warnings(trace_to_upstream(t)):
            stored = t.schema_warnings if isinstance(t.schema_warnings, list) else t.schema_warnings
            kept = [w for w in stored or [] if isinstance(w, str) and w.startswith("confidence_out_of_range:")]
            out.append(_entry(f"{where}.schema_warnings", stored,
                              kept + expected_schema_warnings(trace_to_upstream(t)) or None))
    return out


def _failure_checks(run: ArmRun) -> list[dict]:
    """A failed trace's harness-written fields follow from its stop reason."""
    out = []
    for where, t in _traces(run):
        if t.ok or t.claim != PARSE_FAILED or not isinstance(t.meta, dict):
            continue
        truncated = t.stop_reason in TRUNCATION_STOP_REASONS
        if "truncated" in t.meta:
            out.append(_entry(f"{where}._meta.truncated", t.truncated, truncated))
        if isinstance(t.flags, list):
            out.append(_entry(f"{where}.flags (truncation_detected)", "truncation_detected" in t.flags, truncated))
        if truncated and isinstance(t.usage, dict):
            out.append(_entry(f"{where}.failure_reason", t.failure_reason,
                              f"Truncated at max_tokens ({t.usage.get('output_tokens')}). Raise token budget."))
    return out


def _requeue_checks(i: int, rec: Any, run: ArmRun) -> list[dict]:
    if not isinstance(rec, dict) or rec.get("agent") not in ("alpha", "beta"):
        return []
    r2t = run.trace(2, rec["agent"])
    attempt = Trace._from_upstream(rec["trace"]) if isinstance(rec.get("trace"), dict) else None
    if not isinstance(r2t, Trace):
        return []
    expected = requeue_record(rec["agent"], r2t, [attempt] if attempt else [], arm_rules=True)
    keys = ("pre_requeue_confidence", "post_requeue_confidence", "requeue_confidence_delta",
            "delta_resolved", "classification")
    return [_entry(f"runMeta.fap_requeue[{i}].{k}", rec.get(k), expected[k]) for k in keys if k in rec]

