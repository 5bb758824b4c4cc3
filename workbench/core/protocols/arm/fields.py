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
SCHEMA_V11 = "arm-trace-v1.1"  # early v0.8 builds: no runMeta.self_check_divergence, no override_reason
SCHEMA_V12 = "arm-trace-v1.2"
SCHEMA_V13 = "arm-trace-v1.3"
SCHEMA_VERSIONS = (SCHEMA_V11, SCHEMA_V12, SCHEMA_V13)

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

# ── Types of every known field, every schema version (FORMAT.md §2) ─────────────────────────
# A type is one of:
#   "text|number|..."  alternatives among text, number (finite, not a boolean), count (a whole
#                      number >= 0), bool, object, list, null;
#   {key: type}        an object whose listed keys have these types (other keys: any JSON);
#   [type]             a list whose items have this type;
#   (type, type, ...)  any one of these.
# A field may also be null (ARM writes null for a value it does not have), except those in
# NOT_NULL. Fields appear with the build that introduced them (e.g. ``verdict`` in the newest
# v0.9); a field a version does not write is simply absent, so one table serves every version.
NOT_NULL = frozenset({"claim", "_ok"})
_TEXT_ITEMS = ["text|object"]  # models sometimes emit objects where strings are asked (v0.6 Gemini)
SELF_CHECK_TYPES = {"status": "text", "notes": "text", "self_check_overridden": "bool",
                    "self_check_original_status": "text", "override_reason": "text"}
DRIFT_SCORE_TYPES = {"confidence_delta": "number|text",  # the model's own; ARM reads numeric strings
                     "harness_confidence_delta": "number", "delta_mismatch": "bool"}
USAGE_TYPES = {key: "count" for key in (
    "input_tokens", "output_tokens", "prompt_tokens", "completion_tokens", "total_tokens",
    "cache_creation_input_tokens", "cache_read_input_tokens", "promptTokenCount",
    "candidatesTokenCount", "thoughtsTokenCount", "totalTokenCount")}
META_TYPES = {"stopReason": "text", "usage": USAGE_TYPES, "provider": "text", "model": "text",
              "latencyMs": "number", "truncated": "bool"}
POLARITY_AUDIT_TYPES = {"gamma_r1_polarity": "text", "gamma_silent_polarity": "text",
                        "gamma_r2_polarity": "text", "polarity_changed": "bool",
                        "confidence_delta_blindspot": "bool", "gate_action": "text",
                        "requires_manual_review": "bool", "baseline_mode": "text",
                        "baselines_agree": "bool", "silent_agent": "text"}
VERDICT_SHIFT_TYPES = {"gamma_r1_verdict": "text", "gamma_r2_verdict": "text", "direction": "text",
                       "requires_manual_review": "bool", "note": "text"}
TRACE_TYPES: dict[str, object] = {
    "claim": "text", "verdict": "text", "confidence": "number",
    "reasoning_frame": "text", "decision_basis": "text",
    "assumptions": _TEXT_ITEMS, "critical_path": _TEXT_ITEMS,
    "discarded_paths": [("text", {"path": "text|object", "reason": "text"})],
    "challenge_surface": _TEXT_ITEMS, "flags": ["text"], "self_check": SELF_CHECK_TYPES,
    "influenced_by": _TEXT_ITEMS, "challenged": _TEXT_ITEMS, "drift_note": "text",
    "drift_score": DRIFT_SCORE_TYPES, "disagreement_classification": "text",
    "disagreement_notes": "text", "agent_decision_bases": {"alpha": "text", "beta": "text"},
    "values_in_conflict": ["text"], "rlhf_audit_notes": "text",
    "self_delta_vs_baseline": "number|text",  # the model's own, like drift_score.confidence_delta
    "reconciliation_status": "text", "failure_reason": "text", "raw_reasoning_attempt": "text",
    "_meta": META_TYPES, "_ok": "bool", "schema_warnings": ["text"],
    "harness_self_delta_vs_baseline": "number", "self_delta_mismatch": "bool",
    "polarity_gate_fired": "bool", "polarity_audit": POLARITY_AUDIT_TYPES,
    "verdict_shift": VERDICT_SHIFT_TYPES,
}
_ROLES_TEXT = {"alpha": "text", "beta": "text", "gamma": "text"}
FAP_REQUEUE_TYPES = {"agent": "text", "pre_requeue_confidence": "number",
                     "post_requeue_confidence": "number", "requeue_confidence_delta": "number",
                     "delta_resolved": "bool", "classification": "text",
                     "trace": TRACE_TYPES, "attempts": [TRACE_TYPES]}
RUN_META_TYPES: dict[str, object] = {
    "schema_version": "text", "duration": "text|number", "roleInjection": "bool",
    "silentAgent": "text", "silentProvider": "text", "frames": {"alpha": "text", "beta": "text"},
    "providers": _ROLES_TEXT, "silentConfidence": "number", "silentBaselineFailed": "bool",
    "fap_drift_triggered": "bool", "fap_requeue": [FAP_REQUEUE_TYPES], "polarity_gate_fired": "bool",
    "verdict_shift_flagged": "bool", "gamma_drift_exceeded": "bool", "baseline_unstable": "bool",
    "disagreement": "text", "convergence": "number", "tfidf_convergence": "number",
    "embedding_convergence": "number", "self_check_divergence": "bool",
    "directional_unanimity": "bool", "dispatch": "text",
}
RUN_TYPES: dict[str, object] = {
    "export_integrity_hash": "text", "arm_version": "text", "schema_version": "text",
    "convergence": "number", "tfidf_convergence": "number", "embedding_convergence": "number",
    "runMeta": RUN_META_TYPES, "question": "text", "providers": _ROLES_TEXT,
}  # r1 and r2 are objects of agent traces (TRACE_TYPES), role by role
