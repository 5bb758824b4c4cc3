"""ARM (Agent Reasoning Markup), SPEC §4 (FORMAT.md is the reference): the public API.

    from workbench.core.protocols import arm
    report = arm.metrics_report(arm.parse_run(data))

Qt-free and pure. Import the names from here; the work is split over the package's modules:

- :mod:`.config`: the ``arm`` options of a run configuration, each default defined once;
- :mod:`.fields` / :mod:`.trace`: the trace model, ``parse_trace`` / ``trace_to_upstream``,
  ``parse_run`` / ``run_to_upstream`` (every corpus file round-trips exactly);
- :mod:`.metrics`: Jaccard and TF-IDF convergence, drift, bands, flags, verdicts;
- :mod:`.gates`: self_check override, polarity gate, FAP, rotating silent baseline;
- :mod:`.replies`: reply parsing with ARM's repairs; :mod:`.records`: a reply read once, and what a run stores;
- :mod:`.steps` / ``prompts/*.j2`` / :mod:`.formats` / :mod:`.peers`: each call's step, its template,
  its reply format and the compressed peer view it shows;
- :mod:`.rounds`: the two-round run as a step generator;
- :mod:`.versions`: the rules by version, and which of them a file's build had (``detect_build``);
- :mod:`.stored` / :mod:`.report`: ``metrics_report`` (``rwb arm metrics``), under the trace's own rules;
- :mod:`.js`: the JavaScript-exact helpers (fdlibm log, JSON.stringify, toFixed).
"""

from __future__ import annotations

from workbench.core.protocols.arm.config import (
    DEFAULTS,
    DISPATCH_MODES,
    FRAMES,
    GAMMA_CONTEXTS,
    ArmBudgets,
    ArmFrames,
    ArmOptions,
)
from workbench.core.protocols.arm.fields import (
    CALL_FAILED,
    FAP_ABORT_CLAIM,
    LEGACY,
    PARSE_FAILED,
    RUN_FIELD_MAP,
    RUN_META_FIELD_MAP,
    SCHEMA_V12,
    SCHEMA_V13,
    SCHEMA_VERSIONS,
    TRACE_FIELD_MAP,
    TRACE_NESTED_MAP,
)
from workbench.core.protocols.arm.gates import (
    OVERRIDE_FLAGS,
    OVERRIDE_POLARITY,
    OVERRIDE_RECONCILER,
    GateResult,
    SilentBaseline,
    apply_self_check_override,
    fap_abort_placeholder,
    fap_drift_agents,
    invariant_violations,
    override_reason_for,
    polarity_gate,
    requeue_record,
    rotate_silent_baseline,
    silent_baseline_failed,
)
from workbench.core.protocols.arm.js import export_integrity_hash, fdlibm_log, js_stringify, js_words
from workbench.core.protocols.arm.metrics import (
    DELTA_MISMATCH_EPS,
    DISAGREEMENT_TYPES,
    DRIFT_DOWN_THRESHOLD,
    DRIFT_UP_THRESHOLD,
    SHARED_PRIOR_THRESHOLD,
    claim_direction,
    delta_mismatch,
    directional_unanimity,
    disagreement_second_opinion,
    drift_band,
    drift_band_legacy,
    fap_drift_triggered,
    gamma_drift_exceeded,
    harness_delta,
    jaccard_convergence,
    r1_claims,
    run_convergence,
    self_check_divergence,
    shared_prior_warning,
    tfidf_convergence,
    usable_claims,
    valid_disagreement,
    verdict_of,
    verdict_transition,
)
from workbench.core.protocols.arm.peers import compress_trace
from workbench.core.protocols.arm.replies import parse_reply, repair_reply
from workbench.core.protocols.arm.report import metrics_report, run_report
from workbench.core.protocols.arm.rounds import ArmRunConfig, run_arm
from workbench.core.protocols.arm.stored import stored_checks
from workbench.core.protocols.arm.trace import (
    ArmRun,
    RunMeta,
    Trace,
    field_names,
    parse_run,
    parse_trace,
    run_to_upstream,
    trace_to_upstream,
)
from workbench.core.protocols.arm.versions import RULES, ArmBuild, detect_build

__all__ = [
    # model
    "Trace", "RunMeta", "ArmRun", "parse_trace", "trace_to_upstream", "parse_run", "run_to_upstream",
    "field_names", "TRACE_FIELD_MAP", "TRACE_NESTED_MAP", "RUN_META_FIELD_MAP", "RUN_FIELD_MAP",
    "PARSE_FAILED", "CALL_FAILED", "FAP_ABORT_CLAIM", "LEGACY", "SCHEMA_V12", "SCHEMA_V13", "SCHEMA_VERSIONS",
    # metrics
    "jaccard_convergence", "tfidf_convergence", "run_convergence", "usable_claims", "r1_claims",
    "shared_prior_warning", "harness_delta", "delta_mismatch", "drift_band", "drift_band_legacy",
    "fap_drift_triggered", "gamma_drift_exceeded", "self_check_divergence", "claim_direction",
    "verdict_of", "verdict_transition", "directional_unanimity", "valid_disagreement",
    "disagreement_second_opinion", "DRIFT_UP_THRESHOLD", "DRIFT_DOWN_THRESHOLD", "DELTA_MISMATCH_EPS",
    "SHARED_PRIOR_THRESHOLD", "DISAGREEMENT_TYPES",
    # gates
    "apply_self_check_override", "override_reason_for", "polarity_gate", "GateResult",
    "silent_baseline_failed", "fap_abort_placeholder", "fap_drift_agents", "requeue_record",
    "rotate_silent_baseline", "SilentBaseline", "invariant_violations",
    "OVERRIDE_FLAGS", "OVERRIDE_RECONCILER", "OVERRIDE_POLARITY",
    # options, replies, prompts, rounds
    "ArmOptions", "ArmFrames", "ArmBudgets", "DEFAULTS", "FRAMES", "DISPATCH_MODES", "GAMMA_CONTEXTS",
    "parse_reply", "repair_reply", "compress_trace", "ArmRunConfig", "run_arm",
    # report, and the rules by version
    "metrics_report", "run_report", "stored_checks", "RULES", "ArmBuild", "detect_build",
    # JS-exact helpers
    "export_integrity_hash", "fdlibm_log", "js_stringify", "js_words",
]
