"""Re-deriving every value an ARM file stores that can be recomputed from the file itself.

Each check is ``{metric, stored, recomputed, match, note}``; numbers match within 1e-9.
``recomputed`` is the value under the rules of the trace's OWN version (SPEC §11): a rule its
build did not have is never applied (:mod:`.versions` reads which rules it had). Where today's
rules give another value, the entry adds ``today: {value, match}`` and its ``note`` says which
rule came later ("older rule: the polarity gate came with ...; this trace's version (...)
predates it"), so today's reading stays visible without being counted against the file.
``match: false`` is always a difference no rule explains: ``rwb arm metrics`` exits 1 on one.
A value computed outside the trace (OpenAI embeddings) is listed with ``match: null`` and a note.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from workbench.core.protocols.arm.gates import OVERRIDE_RECONCILER as REASON_RECONCILER
from workbench.core.protocols.arm.gates import (
    apply_self_check_override,
    fap_abort_placeholder,
    override_reason_for,
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
    r1_claims,
    run_convergence,
    self_check_divergence,
    tfidf_convergence,
)
from workbench.core.protocols.arm.replies import TRUNCATION_STOP_REASONS, expected_schema_warnings
from workbench.core.protocols.arm.trace import PARSE_FAILED, ArmRun, Trace, trace_to_upstream
from workbench.core.protocols.arm.versions import (
    AUDIT_V13,
    GATE_OVERRIDE_REASON,
    HARNESS_FIELDS,
    OVERRIDE_REASON,
    OVERRIDE_RECONCILER,
    POLARITY_GATE,
    SCHEMA_WARNINGS,
    SELF_CHECK_OVERRIDE,
    SMOOTHED_IDF,
    TODAY,
    ArmBuild,
)

TOL = 1e-9
NOTE_EMBEDDING = "not recomputable offline: OpenAI embeddings (text-embedding-3-small cosine)"
# The placeholder's keys that came with the harness fields (v0.8): an older build wrote none.
HARNESS_PLACEHOLDER_KEYS = ("_ok", "harness_self_delta_vs_baseline", "self_delta_mismatch")

__all__ = ["TOL", "same", "stored_checks", "gate_in_build", "is_workbench_export", "unexplained",
           "gate_options", "NOTE_EMBEDDING"]


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
           recomputable: bool = True, today: tuple[Any, str] | None = None) -> dict:
    """One check. ``today``: (today's value, why the trace's own rules differ), shown only when
    today's value differs from ``recomputed`` (the value under the trace's own rules)."""
    entry = {"metric": metric, "stored": stored, "recomputed": recomputed,
             "match": same(stored, recomputed) if recomputable else None, "note": note}
    if today is not None and not same(today[0], recomputed):
        value, why = today
        entry["note"] = why if note is None else f"{note}; {why}"
        entry["today"] = {"value": value, "match": same(stored, value) if recomputable else None}
    return entry


def _today(build: ArmBuild, rule: str, value: Any) -> tuple[Any, str] | None:
    """Today's value, when the trace's build did not have ``rule``."""
    return None if build.has(rule) else (value, build.older_note(rule))


def unexplained(entry: dict) -> bool:
    """A stored value that differs from its recomputation under the trace's own rules."""
    return entry["match"] is False


def is_workbench_export(run: ArmRun) -> bool:
    """A run the workbench wrote (it records ``runMeta.dispatch``, which ARM never wrote)."""
    return run.build.workbench


def gate_in_build(run: ArmRun) -> bool:
    return run.build.has(POLARITY_GATE)


def gate_options(has: Callable[[str], bool], silent_agent: Any) -> dict:
    """The polarity gate as a build with these rules ran it. With every rule it is the gate the
    workbench runs on its own runs (``rounds.workbench_gate_options``; a test holds them equal)."""
    options: dict[str, Any] = {"stamp_override": has(GATE_OVERRIDE_REASON)}
    if has(AUDIT_V13):
        options.update(blindspot_source="harness",
                       audit_extra={"baseline_mode": "visible_r1", "silent_agent": silent_agent})
    return options


def _traces(run: ArmRun) -> list[tuple[str, Trace]]:
    out = []
    for name, block in (("r1", run.r1), ("r2", run.r2)):
        for role, t in (block or {}).items():
            if isinstance(t, Trace):
                out.append((f"{name}.{role}", t))
    return out


def stored_checks(run: ArmRun, source: dict | None = None) -> list[dict]:
    """Every recomputable value ``run`` stores, next to its recomputation under the trace's own rules."""
    checks: list[dict] = []
    build = run.build
    meta = run.meta
    conv = run_convergence(run)
    a1, b1, g1, s1 = (run.trace(1, r) for r in ("alpha", "beta", "gamma", "silent"))
    a2, b2, g2 = (run.trace(2, r) for r in ("alpha", "beta", "gamma"))

    if run.present("export_integrity_hash"):
        checks.append(_entry("export_integrity_hash", run.export_integrity_hash,
                             export_integrity_hash(source if source is not None else {})))

    tfidf_today = None if build.has(SMOOTHED_IDF) else \
        _today(build, SMOOTHED_IDF, tfidf_convergence(r1_claims(run), smooth=True))
    for key, value, today in (("convergence", conv["jaccard"], None), ("tfidf_convergence", conv["tfidf"], tfidf_today)):
        for where, holder in (("", run), ("runMeta.", meta)):
            if holder.present(key):
                checks.append(_entry(where + key, getattr(holder, key), value, today=today))
    for where, holder in (("", run), ("runMeta.", meta)):
        if holder.present("embedding_convergence"):
            checks.append(_entry(where + "embedding_convergence", holder.embedding_convergence, None,
                                 NOTE_EMBEDDING, recomputable=False))

    if meta.present("schema_version") and run.present("schema_version"):
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
    if isinstance(s1, Trace) and s1.provider is not None and (silent := _silent_provider(run)) is not None:
        checks.append(_entry("r1.silent._meta.provider", s1.provider, silent))

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
    checks += _gate_checks(run, build, g1, g2, s1)
    checks += _override_checks(run, build)
    checks += _failure_checks(run)
    return checks


def _silent_provider(run: ArmRun) -> Any:
    """Who answered the silent baseline. A workbench run records it (``runMeta.silentProvider``:
    the baseline rotates over a batch's providers, so it need not be the draw's own provider);
    ARM never wrote it, because its silent baseline was always a second draw of the drawn agent's
    provider (``runMeta.providers[silentAgent]``). None when the file says neither."""
    meta = run.meta
    if meta.present("silentProvider"):
        return meta.silent_provider
    if isinstance(meta.providers, dict) and isinstance(meta.silent_agent, str) and meta.silent_agent in meta.providers:
        return meta.providers[meta.silent_agent]
    return None


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


def _status_after(fired: bool, g2: Trace) -> Any:
    """Gamma's reconciliation_status after the gate: gamma_flip_detected when it fired, failed for
    a failed trace; otherwise the model's own word stands (ARM validates it, never rewrites it),
    unless it claims the flip only the gate may log."""
    if fired:
        return "gamma_flip_detected"
    if not g2.ok:
        return "failed"
    return "success" if g2.reconciliation_status == "gamma_flip_detected" else g2.reconciliation_status


def _gate_checks(run: ArmRun, build: ArmBuild, g1, g2, s1) -> list[dict]:
    out: list[dict] = []
    if not isinstance(g2, Trace):
        return out
    if isinstance(g2.claim, str) and g2.claim.startswith("[FAP"):
        return _placeholder_checks(build, g2)
    meta = run.meta
    today = polarity_gate(g1, g2, s1, **gate_options(TODAY.__contains__, meta.silent_agent))
    if not build.has(POLARITY_GATE):
        if g2.ok:  # no gate in the build: the model's own status stands
            why = build.older_note(POLARITY_GATE)
            if today.fired:
                why += f"; today's gate fires here ({today.r1_verdict.upper()}→{today.r2_verdict.upper()})"
            out.append(_entry("r2.gamma.reconciliation_status", g2.reconciliation_status, _status_after(False, g2),
                              today=(_status_after(today.fired, g2), why)))
            if today.fired:
                out.append(_entry("r2.gamma.self_check.status (gate override)", g2.status, g2.status,
                                  today=("warning", why)))
        return out
    gate = polarity_gate(g1, g2, s1, **gate_options(build.has, meta.silent_agent))
    if meta.present("polarity_gate_fired"):
        out.append(_entry("runMeta.polarity_gate_fired", meta.polarity_gate_fired, gate.fired))
    out.append(_entry("r2.gamma.reconciliation_status", g2.reconciliation_status, _status_after(gate.fired, g2)))
    if g2.ok:
        out.append(_entry("r2.gamma.polarity_gate_fired", g2.polarity_gate_fired, True if gate.fired else None))
        audit = gate.gamma_r2.polarity_audit if gate.fired else None
        out.append(_entry("r2.gamma.polarity_audit", g2.polarity_audit, audit, today=_today(
            build, AUDIT_V13, today.gamma_r2.polarity_audit if today.fired else None)))
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


def _placeholder_checks(build: ArmBuild, g2: Trace) -> list[dict]:
    """The FAP abort placeholder, field by field, against the one ARM writes today; the keys
    that came with the harness fields are absent from an older build's placeholder."""
    expected = trace_to_upstream(fap_abort_placeholder(g2.provider, g2.model))
    stored = trace_to_upstream(g2)
    out = []
    for key, value in expected.items():
        metric = f"r2.gamma.{key} (FAP abort placeholder)"
        if key == "_meta":
            out.append(_entry("r2.gamma._meta.stopReason (FAP abort placeholder)", g2.stop_reason, "aborted"))
        elif key not in stored and key in HARNESS_PLACEHOLDER_KEYS and not build.has(HARNESS_FIELDS):
            out.append(_entry(metric + " (absent)", None, None, today=_today(build, HARNESS_FIELDS, value)))
        else:
            out.append(_entry(metric, stored.get(key), value))
    for key in stored:
        if key not in expected:
            out.append(_entry(f"r2.gamma.{key} (FAP abort placeholder)", stored[key], None,
                              "a key the placeholder does not have"))
    return out


def _override(trace: Trace) -> dict:
    after = apply_self_check_override(trace)
    return {"status": after.status, "override_reason": after.override_reason}


def _override_under(build: ArmBuild, trace: Trace, today: dict) -> tuple[dict, str | None]:
    """The override a build with these rules made of a ``clean`` trace, and the first rule it
    lacked that makes today's result differ (None when it had them all)."""
    if not build.has(SELF_CHECK_OVERRIDE):
        return {"status": "clean", "override_reason": None}, SELF_CHECK_OVERRIDE
    reason = override_reason_for(trace)
    if reason == REASON_RECONCILER and not build.has(OVERRIDE_RECONCILER):
        return {"status": "clean", "override_reason": None}, OVERRIDE_RECONCILER
    if reason is not None and not build.has(OVERRIDE_REASON):
        return {"status": "auto_warn", "override_reason": None}, OVERRIDE_REASON
    return today, None


def _override_checks(run: ArmRun, build: ArmBuild) -> list[dict]:
    """Every parsed trace whose model reported ``clean`` gets the override rule of its own
    build re-run (none before v0.8; the flags path only and no reason in arm-trace-v1.1)."""
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
        today = _override(before)
        own, lacking = _override_under(build, before, today)
        out.append(_entry(f"{where}.self_check (override)", {"status": t.status, "override_reason": t.override_reason},
                          own, today=(today, build.older_note(lacking)) if lacking else None))
        if not build.has(SCHEMA_WARNINGS):
            continue  # the build wrote no schema_warnings
        if t.present("schema_warnings") or expected_schema_warnings(trace_to_upstream(t)):
            stored = t.schema_warnings
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

