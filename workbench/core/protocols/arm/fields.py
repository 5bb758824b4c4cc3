"""ARM field names: upstream JSON keys <-> workbench field names, and the schema constants.

The workbench's names follow the ``traces`` table's columns where one corresponds
(``explicit_assumptions`` <- ``assumptions``, ``rlhf_audit`` <- ``rlhf_audit_notes``,
``meta`` <- ``_meta``, ``ok_flag`` <- ``_ok``); everything else keeps ARM's name.
The maps are data so the docs, the importer and the tests read the same table.
"""

from __future__ import annotations

PARSE_FAILED = "[PARSE FAILED]"  # ARM's failed-trace sentinel claim (the only marker before v1.2)
CALL_FAILED = "[CALL FAILED]"  # the workbench's claim for a call that returned no text
FAP_ABORT_CLAIM = "[FAP — Gamma R2 aborted]"
LEGACY = "legacy"
SCHEMA_V12 = "arm-trace-v1.2"
SCHEMA_V13 = "arm-trace-v1.3"
SCHEMA_VERSIONS = (SCHEMA_V12, SCHEMA_V13)

# upstream key -> workbench field, in ARM's usual key order. Keys not listed go to ``extra``.
TRACE_FIELD_MAP: tuple[tuple[str, str], ...] = (
    ("claim", "claim"),
    ("verdict", "verdict"),
    ("confidence", "confidence"),
    ("reasoning_frame", "reasoning_frame"),
    ("decision_basis", "decision_basis"),
    ("assumptions", "explicit_assumptions"),
    ("critical_path", "critical_path"),
    ("discarded_paths", "discarded_paths"),
    ("challenge_surface", "challenge_surface"),
    ("flags", "flags"),
    ("self_check", "self_check"),
    ("influenced_by", "influenced_by"),
    ("challenged", "challenged"),
    ("drift_note", "drift_note"),
    ("drift_score", "drift_score"),
    ("disagreement_classification", "disagreement_classification"),
    ("disagreement_notes", "disagreement_notes"),
    ("agent_decision_bases", "agent_decision_bases"),
    ("values_in_conflict", "values_in_conflict"),
    ("rlhf_audit_notes", "rlhf_audit"),
    ("self_delta_vs_baseline", "self_delta_vs_baseline"),
    ("reconciliation_status", "reconciliation_status"),
    ("failure_reason", "failure_reason"),
    ("raw_reasoning_attempt", "raw_reasoning_attempt"),
    ("_meta", "meta"),
    ("_ok", "ok_flag"),
    ("schema_warnings", "schema_warnings"),
    ("harness_self_delta_vs_baseline", "harness_self_delta_vs_baseline"),
    ("self_delta_mismatch", "self_delta_mismatch"),
    ("polarity_gate_fired", "polarity_gate_fired"),
    ("polarity_audit", "polarity_audit"),
    ("verdict_shift", "verdict_shift"),
)

# Values that live inside nested upstream objects, exposed as properties named after columns.
TRACE_NESTED_MAP: tuple[tuple[str, str], ...] = (
    ("_meta.provider", "provider"),
    ("_meta.model", "model"),
    ("_meta.stopReason", "stop_reason"),
    ("_meta.usage", "usage"),
    ("_meta.usage.{input_tokens|prompt_tokens|promptTokenCount}", "prompt_tokens"),
    ("_meta.usage.{output_tokens|completion_tokens|candidatesTokenCount}", "completion_tokens"),
    ("_meta.latencyMs", "latency_ms"),
    ("_meta.truncated", "truncated"),
    ("self_check.override_reason", "override_reason"),
    ("drift_score.confidence_delta", "confidence_delta"),
    ("drift_score.harness_confidence_delta", "harness_confidence_delta"),
    ("drift_score.delta_mismatch", "delta_mismatch"),
)

RUN_META_FIELD_MAP: tuple[tuple[str, str], ...] = (
    ("schema_version", "schema_version"),
    ("duration", "duration"),
    ("roleInjection", "role_injection"),
    ("silentAgent", "silent_agent"),
    ("silentProvider", "silent_provider"),
    ("frames", "frames"),
    ("providers", "providers"),
    ("silentConfidence", "silent_confidence"),
    ("silentBaselineFailed", "silent_baseline_failed"),
    ("fap_drift_triggered", "fap_drift_triggered"),
    ("fap_requeue", "fap_requeue"),
    ("polarity_gate_fired", "polarity_gate_fired"),
    ("verdict_shift_flagged", "verdict_shift_flagged"),
    ("gamma_drift_exceeded", "gamma_drift_exceeded"),
    ("baseline_unstable", "baseline_unstable"),
    ("disagreement", "disagreement"),
    ("convergence", "convergence"),
    ("tfidf_convergence", "tfidf_convergence"),
    ("embedding_convergence", "embedding_convergence"),
    ("self_check_divergence", "self_check_divergence"),
    ("directional_unanimity", "directional_unanimity"),
    ("dispatch", "dispatch"),
)

RUN_FIELD_MAP: tuple[tuple[str, str], ...] = (
    ("export_integrity_hash", "export_integrity_hash"),
    ("arm_version", "arm_version"),
    ("schema_version", "schema_version"),
    ("r1", "r1"),
    ("r2", "r2"),
    ("convergence", "convergence"),
    ("tfidf_convergence", "tfidf_convergence"),
    ("embedding_convergence", "embedding_convergence"),
    ("runMeta", "run_meta"),
    ("question", "question"),
    ("providers", "providers"),
)
