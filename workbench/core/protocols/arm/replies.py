"""Turning a model's reply into a :class:`Trace`, with ARM's repair and validation rules.

Before anything else, the reply is reduced to the agent's own words (SPEC §1 "Reading a reply"):
text between fence tokens (the call's, and any block in the workbench's fence format) is quoted
peer data and is removed; a reply without fence tokens is left exactly as it came.
Repairs before parsing (FORMAT.md §2): trim; strip only a leading ```` ``` ````/```` ```json ````
fence and a trailing fence; rewrite the Gemini artefact ``""key":`` to ``"key":``.
Validation: ``confidence`` must be a finite number (else the trace is rejected as
``schema_validation_failure``); outside [0, 1] it is clamped with a ``schema_warnings`` entry;
a bad self-reported delta, disagreement class or reconciliation status is a warning only.
A reply that fails is never coerced: it becomes a failed trace that keeps the raw text and
the reason. A parsed trace then gets the deterministic self_check override.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema

from workbench.core.protocols.arm.gates import apply_self_check_override
from workbench.core.protocols.arm.js import is_js_number, js_number, js_stringify
from workbench.core.protocols.arm.metrics import DISAGREEMENT_TYPES
from workbench.core.protocols.arm.trace import CALL_FAILED, PARSE_FAILED, Trace, parse_trace, trace_type_problem
from workbench.core.protocols.shared.replies import embedded_objects, loads, own_reply, validation_problem

RECONCILIATION_STATUSES = ("success", "failed", "gamma_flip_detected")
TRUNCATION_STOP_REASONS = frozenset({"max_tokens", "length", "MAX_TOKENS"})

__all__ = ["repair_reply", "expected_schema_warnings", "parse_reply", "failed_trace", "reply_meta",
           "RECONCILIATION_STATUSES", "TRACE_MODELS"]


# ----- the reply models: what the parser validates, and the schema a trace call sends ----------
# Each field is read as leniently as ARM's own field types allow (``fields.TRACE_TYPES``: text or
# an object where text is asked, a numeric string for a delta), and is *sent* as the prompt asks
# (``WithJsonSchema``): a reply that obeys the schema is always one the parser accepts.
def _text_schema(*choices: str) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", **({"enum": list(choices)} if choices else {})})


_TEXT_LIST = WithJsonSchema({"type": "array", "items": {"type": "string"}})
Text = Annotated[str | None, _text_schema()]
TextItems = Annotated[list[str | dict] | None, _TEXT_LIST]
VerdictText = Annotated[str | None, _text_schema("yes", "no", "conditional")]
BasisText = Annotated[str | None, _text_schema("utilitarian", "deontological", "hybrid", "uncertain")]
Delta = Annotated[float | str | None, WithJsonSchema({"type": "number"})]


class _Reply(BaseModel):
    model_config = ConfigDict(extra="allow")


class SelfCheckReply(_Reply):
    status: Annotated[str | None, _text_schema("clean", "warning")] = None
    notes: Text = None


class DiscardedPathReply(_Reply):
    path: Annotated[str | dict | None, _text_schema()] = None
    reason: Text = None


class DriftScoreReply(_Reply):
    confidence_delta: Delta = None


class DecisionBasesReply(_Reply):
    alpha: BasisText = None
    beta: BasisText = None


class _TraceReply(_Reply):
    claim: str
    verdict: VerdictText = None
    confidence: float = Field(strict=True, allow_inf_nan=False)


class TraceR1Reply(_TraceReply):
    """A round-1 (and silent baseline) trace, reply schema ``arm_trace_r1``."""

    reasoning_frame: Annotated[str | None, WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "null"}]})] = None
    decision_basis: BasisText = None
    assumptions: TextItems = None
    critical_path: TextItems = None
    discarded_paths: Annotated[list[DiscardedPathReply | str] | None,
                               WithJsonSchema({"type": "array", "items": DiscardedPathReply.model_json_schema()})] = None
    challenge_surface: TextItems = None
    flags: TextItems = None
    self_check: SelfCheckReply | None = None


class TraceR2Reply(_TraceReply):
    """A round-2 trace of alpha or beta, reply schema ``arm_trace_r2``."""

    reasoning_frame: Annotated[str | None, WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "null"}]})] = None
    decision_basis: BasisText = None
    assumptions: TextItems = None
    critical_path: TextItems = None
    challenge_surface: TextItems = None
    flags: TextItems = None
    self_check: SelfCheckReply | None = None
    influenced_by: TextItems = None
    challenged: TextItems = None
    drift_note: Text = None
    drift_score: DriftScoreReply | None = None


class TraceGammaR2Reply(_TraceReply):
    """Gamma's reconciliation in round 2, reply schema ``arm_trace_gamma_r2``."""

    critical_path: TextItems = None
    disagreement_classification: Annotated[str | None, _text_schema("none", "information", "reasoning", "values")] = None
    disagreement_notes: Text = None
    agent_decision_bases: DecisionBasesReply | None = None
    values_in_conflict: TextItems = None
    rlhf_audit_notes: Text = None
    influenced_by: TextItems = None
    challenged: TextItems = None
    drift_score: DriftScoreReply | None = None
    self_delta_vs_baseline: Delta = None
    reconciliation_status: Annotated[str | None, _text_schema(*RECONCILIATION_STATUSES)] = None
    self_check: SelfCheckReply | None = None


TRACE_MODELS: dict[str, type[BaseModel]] = {"arm_trace_r1": TraceR1Reply, "arm_trace_r2": TraceR2Reply,
                                            "arm_trace_gamma_r2": TraceGammaR2Reply}
ARM_TRACE_MAX_TOKENS = "budgets"  # a trace's output cap is the run's ARM budget for its round (arm.budgets)


def repair_reply(raw: str) -> str:
    """ARM's repairs: outer fences only (backticks inside strings survive), Gemini's ``""key":``."""
    cleaned = re.sub(r"^```(?:json)?\s*", "", raw.strip(), flags=re.IGNORECASE)
    cleaned = re.sub(r"\s*```\s*$", "", cleaned).strip()
    return re.sub(r'""([^"]+)":', r'"\1":', cleaned)


def _js(value: Any) -> str:
    """``JSON.stringify(value)`` (compact) for the values a warning quotes."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return js_stringify(value)


def expected_schema_warnings(data: dict) -> list[str]:
    """The warnings ARM derives from a parsed reply, except ``confidence_out_of_range``
    (which needs the value before clamping)."""
    warnings = []
    drift = data.get("drift_score")
    cd = drift.get("confidence_delta") if isinstance(drift, dict) else None
    if cd is not None and not (is_js_number(cd) and -1 <= cd <= 1):
        warnings.append(f"drift_delta_invalid:{_js(cd)}")
    dc = data.get("disagreement_classification")
    if dc is not None and dc not in DISAGREEMENT_TYPES:
        warnings.append(f"disagreement_classification_invalid:{_js(dc)}")
    rs = data.get("reconciliation_status")
    if rs is not None and rs not in RECONCILIATION_STATUSES:
        warnings.append(f"reconciliation_status_invalid:{_js(rs)}")
    return warnings


def reply_meta(meta: dict | None) -> dict:
    """ARM's ``_meta`` from a driver's reply meta (provider, model, stop reason, usage, latency)."""
    meta = meta or {}
    usage = meta.get("usage")
    if usage is None and any(k in meta for k in ("prompt_tokens", "completion_tokens")):
        usage = {k: meta[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens") if k in meta}
    stop = meta.get("stop_reason", meta.get("finish_reason", meta.get("stopReason")))
    latency = meta.get("latency_ms", meta.get("latencyMs"))
    return {"stopReason": stop, "usage": usage, "provider": meta.get("provider"),
            "model": meta.get("model"), "latencyMs": latency}


def failed_trace(raw: str | None, reason: str, meta: dict, *, schema_reject: bool = False,
                 call_failed: bool = False) -> Trace:
    """ARM's failed-trace shape: sentinel claim, null confidence, the raw text and the reason."""
    truncated = meta.get("stopReason") in TRUNCATION_STOP_REASONS
    first = "call_failure" if call_failed else ("schema_validation_failure" if schema_reject else "serialization_failure")
    flags = [first] + (["truncation_detected"] if truncated else [])
    if truncated:
        usage = meta.get("usage") if isinstance(meta.get("usage"), dict) else {}
        out_tokens = usage.get("output_tokens", usage.get("completion_tokens"))
        reason = f"Truncated at max_tokens ({out_tokens}). Raise token budget."
        notes = "Token budget exceeded."
    else:
        notes = "The call failed." if call_failed else ("Schema validation failed." if schema_reject else "JSON parse error.")
    return parse_trace({
        "claim": CALL_FAILED if call_failed else PARSE_FAILED,
        "confidence": None,
        "reconciliation_status": "failed",
        "failure_reason": reason,
        "raw_reasoning_attempt": raw,
        "flags": flags,
        "self_check": {"status": "failed", "notes": notes},
        "_meta": {**meta, "truncated": truncated},
        "_ok": False,
    })


def _read(text: str) -> Any:
    """The reply as JSON: whole (raw control characters inside strings allowed), else the one
    JSON object written inside prose (the tolerant reader of ``shared.replies``)."""
    try:
        return loads(text)
    except json.JSONDecodeError:
        found: list[dict] = []
        for obj in embedded_objects(text):
            if obj not in found:
                found.append(obj)
        if len(found) == 1:
            return found[0]
        raise


def parse_reply(raw: str | None, meta: dict | None = None, *, error: str | None = None,
                fence: str | None = None, schema: str | None = None) -> Trace:
    """A model reply -> a parsed trace (``_ok: true``) or a failed trace (``_ok: false``).
    ``fence`` is the call's fence name (``call.meta["delimiter"]``); the raw text is kept whole.
    ``schema`` (the call's ``reply_schema``) also validates the reply with its model
    (:data:`TRACE_MODELS`)."""
    m = reply_meta(meta)
    if raw is None:
        return failed_trace(None, error or "the call returned no text", m, call_failed=True)
    try:
        data = _read(repair_reply(own_reply(raw, fence)))
    except json.JSONDecodeError as exc:
        return failed_trace(raw, f"{exc.msg} at line {exc.lineno} column {exc.colno}", m)
    if not isinstance(data, dict):
        return failed_trace(raw, f"reply is a JSON {type(data).__name__}, not an object", m, schema_reject=True)
    conf = data.get("confidence")
    if not is_js_number(conf):
        return failed_trace(raw, f"confidence missing or non-numeric (got {_js(conf)})", m, schema_reject=True)
    warnings = []
    if conf < 0 or conf > 1:
        data["confidence"] = min(1, max(0, conf))
        warnings.append(f"confidence_out_of_range:{js_number(conf)}")
    warnings += expected_schema_warnings(data)
    if (problem := trace_type_problem(data)) is not None:  # a field of the wrong type: not a trace
        return failed_trace(raw, str(problem), m, schema_reject=True)
    if schema in TRACE_MODELS:
        try:
            TRACE_MODELS[schema].model_validate(data)
        except ValidationError as exc:
            return failed_trace(raw, validation_problem(exc), m, schema_reject=True)
    data["_meta"] = m
    data["_ok"] = True
    if warnings:
        data["schema_warnings"] = warnings
    return apply_self_check_override(parse_trace(data))

