"""ARM rules by version: which rule each build that wrote a trace had (SPEC §11, FORMAT.md §2-3).

A rule a version did not have is never applied to its traces. :data:`RULES` is the one table
(docs/protocols.md, "Rules by version", is written from it): each rule names the version it came
with, the first schema and ARM app version that certainly have it, and the fields whose presence
proves a build had it (some came mid-version: late v0.7.1 builds already wrote the polarity gate).

:func:`detect_build` reads a run's version from three signals, strongest first:
1. evidence: a field only a build with the rule writes (``runMeta.polarity_gate_fired``, an
   ``override_reason``, a workbench export's ``runMeta.dispatch``...) turns the rule on;
2. the schema: ``schema_version`` (top level, else ``runMeta.schema_version``);
3. with no schema, the ARM app version (``arm_version``, top level or in ``runMeta``).
A schema newer than any known gets today's rules (every rule) and a note; an unknown schema
between known ones gets the rules of the newest known one before it, and a note.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from workbench.core.errors import InputError
from workbench.core.protocols.arm.fields import LEGACY, SCHEMA_V11, SCHEMA_V12, SCHEMA_V13, SCHEMA_VERSIONS
from workbench.core.protocols.shared.validation import shown

# An ``ArmRun`` (trace.py imports this module, so it is not imported back: read by its attributes).
ArmRun = Any

# Rule names, used by the checks that depend on them.
POLARITY_GATE = "polarity_gate"
DRIFT_FLAGS = "drift_flags"
HARNESS_FIELDS = "harness_fields"
FAP_ABORT = "fap_abort"
SCHEMA_WARNINGS = "schema_warnings"
SELF_CHECK_OVERRIDE = "self_check_override"
OVERRIDE_RECONCILER = "override_reconciler_path"
OVERRIDE_REASON = "override_reason"
VERDICT_SHIFT = "verdict_shift"
SMOOTHED_IDF = "smoothed_idf"
AUDIT_V13 = "gate_audit_v13"
GATE_OVERRIDE_REASON = "gate_override_reason"

LEGACY_LABEL = "v0.6/v0.7.1, no schema_version"
_SCHEMA_RE = re.compile(r"arm-trace-v(\d{1,6})(?:\.(\d{1,6}))?(?:\.(\d{1,6}))?")
_APP_RE = re.compile(r"v?(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?\b")
APP_VERSION_KEYS = ("arm_version", "armVersion", "app_version", "appVersion")  # in runMeta

__all__ = [
    "Rule", "RULES", "ArmBuild", "detect_build", "effective_schema", "check_schema_version",
    "smoothed_idf_for", "POLARITY_GATE", "DRIFT_FLAGS", "HARNESS_FIELDS", "FAP_ABORT", "SCHEMA_WARNINGS",
    "SELF_CHECK_OVERRIDE", "OVERRIDE_RECONCILER", "OVERRIDE_REASON", "VERDICT_SHIFT", "SMOOTHED_IDF",
    "AUDIT_V13", "GATE_OVERRIDE_REASON", "LEGACY_LABEL",
]


def _version_tuple(match: re.Match) -> tuple[int, int, int]:
    """(major, minor, patch), a missing part read as 0, so v1.3 and v1.3.0 compare equal."""
    parts = [int(g) for g in match.groups() if g is not None] + [0, 0]
    return parts[0], parts[1], parts[2]


_KNOWN = {name: _version_tuple(_SCHEMA_RE.fullmatch(name)) for name in SCHEMA_VERSIONS}  # type: ignore[arg-type]
NEWEST = max(SCHEMA_VERSIONS, key=lambda s: _KNOWN[s])
OLDEST = min(SCHEMA_VERSIONS, key=lambda s: _KNOWN[s])


# ── evidence: fields that only a build with the rule writes ─────────────────────────────────
def _traces(run: ArmRun) -> Iterator[Any]:
    for block in (run.r1, run.r2):
        for value in (block or {}).values() if isinstance(block, dict) else ():
            if hasattr(value, "self_check"):
                yield value


def _self_checks(run: ArmRun) -> Iterator[dict]:
    for t in _traces(run):
        if isinstance(t.self_check, dict):
            yield t.self_check


def _meta_has(*keys: str) -> Callable[[ArmRun], bool]:
    return lambda run: any(run.meta.present(k) for k in keys)


def _trace_has(*keys: str) -> Callable[[ArmRun], bool]:
    return lambda run: any(t.present(k) for t in _traces(run) for k in keys)


def _any(*tests: Callable[[ArmRun], bool]) -> Callable[[ArmRun], bool]:
    return lambda run: any(test(run) for test in tests)


def _workbench(run: ArmRun) -> bool:
    """A run the workbench wrote: it records ``runMeta.dispatch``, which ARM never wrote."""
    return run.meta.present("dispatch")


def _overridden(run: ArmRun) -> bool:
    return any(c.get("status") == "auto_warn" or "self_check_overridden" in c for c in _self_checks(run))


def _reason_stamped(run: ArmRun) -> bool:
    """A deterministic override (``auto_warn``) that names its reason (the gate's own is not one)."""
    return any(c.get("status") == "auto_warn" and c.get("override_reason") is not None for c in _self_checks(run))


def _harness_delta_written(run: ArmRun) -> bool:
    return any(isinstance(t.drift_score, dict) and "harness_confidence_delta" in t.drift_score for t in _traces(run))


def _fap_placeholder(run: ArmRun) -> bool:
    gamma = (run.r2 or {}).get("gamma") if isinstance(run.r2, dict) else None
    return isinstance(getattr(gamma, "claim", None), str) and gamma.claim.startswith("[FAP")


def _audit_v13(run: ArmRun) -> bool:
    return any(isinstance(t.polarity_audit, dict) and "baseline_mode" in t.polarity_audit for t in _traces(run))


@dataclass(frozen=True)
class Rule:
    name: str
    what: str  # in words, as a note names it
    came_with: str  # the version it came with, in words (docs/protocols.md)
    schema: str | None  # the first schema that certainly has it (None: no ARM schema does)
    app: tuple[int, int, int] | None  # the first ARM app version that certainly has it, or None
    evidence: Callable[[ArmRun], bool]  # fields whose presence prove a build had it


NEVER: Callable[[ArmRun], bool] = lambda run: False  # noqa: E731 - a rule nothing in a file proves

# In the order the rules came. Derived from FORMAT.md and checked on every corpus file.
RULES: tuple[Rule, ...] = (
    Rule(POLARITY_GATE, "the polarity gate (a firm yes/no flip of gamma logs gamma_flip_detected)",
         "late v0.7.1 builds (they write runMeta.polarity_gate_fired), and every schema from arm-trace-v1.1",
         SCHEMA_V11, (0, 8, 0), _any(_meta_has("polarity_gate_fired"), _trace_has("polarity_gate_fired", "polarity_audit"))),
    Rule(DRIFT_FLAGS, "the run-level flags fap_drift_triggered and gamma_drift_exceeded",
         "late v0.7.1 builds, and every schema from arm-trace-v1.1",
         SCHEMA_V11, (0, 8, 0), _meta_has("fap_drift_triggered", "gamma_drift_exceeded")),
    Rule(HARNESS_FIELDS, "the harness fields (_ok on every trace, harness deltas and their mismatch flags)",
         "v0.8 (arm-trace-v1.1)",
         SCHEMA_V11, (0, 8, 0), _any(_trace_has("_ok", "harness_self_delta_vs_baseline", "self_delta_mismatch"),
                                  _harness_delta_written)),
    Rule(FAP_ABORT, "the FAP silent-baseline abort (gamma R2 replaced by a placeholder)",
         "v0.8 (arm-trace-v1.1)",
         SCHEMA_V11, (0, 8, 0), _any(_meta_has("silentBaselineFailed"), _fap_placeholder)),
    Rule(SCHEMA_WARNINGS, "schema_warnings on traces", "v0.8 (arm-trace-v1.1)",
         SCHEMA_V11, (0, 8, 0), _trace_has("schema_warnings")),
    Rule(SELF_CHECK_OVERRIDE, "the deterministic self_check override (flags path: values_conflict, contested_domain)",
         "v0.8 (arm-trace-v1.1)", SCHEMA_V11, (0, 8, 0), _overridden),
    Rule(OVERRIDE_RECONCILER, "the override's reconciler path (disagreement values, values_in_conflict)",
         "arm-trace-v1.2", SCHEMA_V12, (0, 9, 0), _reason_stamped),
    Rule(OVERRIDE_REASON, "override_reason on overridden self_checks", "arm-trace-v1.2",
         SCHEMA_V12, (0, 9, 0), _reason_stamped),
    Rule(VERDICT_SHIFT, "the verdict-shift advisory (runMeta.verdict_shift_flagged)",
         "the newest v0.9 build (arm-trace-v1.2 files with runMeta.verdict_shift_flagged), and arm-trace-v1.3",
         SCHEMA_V13, None, _any(_meta_has("verdict_shift_flagged"), _trace_has("verdict_shift"))),
    Rule(SMOOTHED_IDF, "the smoothed TF-IDF idf, ln(N/df) + 1", "arm-trace-v1.3", SCHEMA_V13, None, NEVER),
    Rule(AUDIT_V13, "the polarity audit's baseline_mode and silent_agent, and its blind spot on the harness delta",
         "arm-trace-v1.3 (post-0.9) and the workbench's own runs",
         SCHEMA_V13, None, _any(_audit_v13, _workbench)),
    Rule(GATE_OVERRIDE_REASON, "override_reason on the polarity gate's override (polarity_gate_flip)",
         "the workbench's own runs (ARM never stamped it)", None, None, _workbench),
)
_BY_NAME = {rule.name: rule for rule in RULES}
TODAY = frozenset(_BY_NAME)  # what the workbench applies to a trace it writes today


# ── the version a file names ─────────────────────────────────────────────────────────────────
def effective_schema(data: dict) -> tuple[str, Any] | None:
    """``(field, value)`` of the schema a raw file names: top level, else ``runMeta`` (where a
    null, like any null field, says nothing); None if neither."""
    if "schema_version" in data:
        return "schema_version", data["schema_version"]
    meta = data.get("runMeta")
    if isinstance(meta, dict) and meta.get("schema_version") is not None:
        return "runMeta.schema_version", meta["schema_version"]
    return None


def check_schema_version(value: object, field: str = "schema_version") -> None:
    """Refuse a schema that is not ``arm-trace-vX.Y`` at or after the oldest known one."""
    m = _SCHEMA_RE.fullmatch(value) if isinstance(value, str) else None
    if m is None or _version_tuple(m) < _KNOWN[OLDEST]:
        named = repr(value) if isinstance(value, str) and len(value) <= 60 else shown(value)
        raise InputError(field, f"unsupported ARM schema {named}; expected {OLDEST} or later "
                         f"(known: {', '.join(SCHEMA_VERSIONS)}), or none (v0.6/v0.7.1 exports)")


def _rules_schema(schema: str) -> tuple[str, bool, str | None]:
    """For a schema name (already checked): the known schema whose rules apply, whether it is
    newer than every known one (then today's rules apply), and a note when it is not known."""
    version = _version_tuple(_SCHEMA_RE.fullmatch(schema))  # type: ignore[arg-type]
    for known in SCHEMA_VERSIONS:
        if _KNOWN[known] == version:  # "arm-trace-v1.3.0" is v1.3
            return known, False, None
    if version > _KNOWN[NEWEST]:
        return NEWEST, True, (f"schema {schema} is newer than the newest this workbench knows ({NEWEST}): "
                              "today's rules are applied")
    before = max((s for s in SCHEMA_VERSIONS if _KNOWN[s] < version), key=lambda s: _KNOWN[s])
    return before, False, (f"schema {schema} is not one this workbench knows: the rules of {before}, "
                           "the newest known schema before it, are applied")


def smoothed_idf_for(schema: object) -> bool:
    """The TF-IDF idf variant of a schema name (``None``: a workbench run still going, written as v1.3)."""
    if schema is None:
        return True
    m = _SCHEMA_RE.fullmatch(schema) if isinstance(schema, str) else None
    return m is not None and _version_tuple(m) >= _KNOWN[_BY_NAME[SMOOTHED_IDF].schema]  # type: ignore[index]


def _app_version(run: ArmRun) -> tuple[str, tuple[int, int, int]] | None:
    candidates = [run.arm_version] + [run.meta.extra.get(k) for k in APP_VERSION_KEYS]
    for value in candidates:
        m = _APP_RE.match(value.strip()) if isinstance(value, str) else None
        if m is not None:
            return value.strip(), _version_tuple(m)
    return None


# ── the build ────────────────────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class ArmBuild:
    """What is known of the build that wrote a run, and the rules it had."""

    schema: str | None  # as the file names it
    rules_of: str  # LEGACY or the known schema whose rules apply
    app_version: str | None
    workbench: bool
    rules: frozenset[str]
    why: dict[str, str]  # rule -> why it is judged in or out
    notes: tuple[str, ...] = ()

    def has(self, rule: str) -> bool:
        return rule in self.rules

    @property
    def label(self) -> str:
        if self.schema is None:
            return LEGACY_LABEL if self.app_version is None else f"no schema_version, arm_version {self.app_version}"
        return self.schema if self.app_version is None else f"{self.schema}, arm_version {self.app_version}"

    def older_note(self, rule: str) -> str:
        """Why a rule is not applied: it came with a later version than this trace's."""
        r = _BY_NAME[rule]
        return f"older rule: {r.what} came with {r.came_with}; this trace's version ({self.label}) predates it"

    def to_json(self) -> dict:
        return {"label": self.label, "schema_version": self.schema, "rules_of": self.rules_of,
                "arm_version": self.app_version, "workbench_export": self.workbench,
                "rules": {r.name: {"applied": r.name in self.rules, "came_with": r.came_with, "why": self.why[r.name]}
                          for r in RULES},
                "notes": list(self.notes)}


def detect_build(run: ArmRun) -> ArmBuild:
    """The rules of the build that wrote ``run``, read from the run itself (see the module doc)."""
    named = run.schema_version if run.present("schema_version") else run.meta.schema_version
    schema = named if isinstance(named, str) else None
    notes: list[str] = []
    rules_of, newer = LEGACY, False
    if schema is not None and _SCHEMA_RE.fullmatch(schema):
        rules_of, newer, note = _rules_schema(schema)
        notes += [note] if note else []
    app = _app_version(run)
    rules, why = set(), {}
    for r in RULES:
        if newer:
            applied, reason = True, f"today's rule: schema {schema} is newer than {NEWEST}"
        elif r.evidence(run):
            applied, reason = True, "the file writes what only a build with it writes"
        elif rules_of != LEGACY:
            applied = r.schema is not None and _KNOWN[rules_of] >= _KNOWN[r.schema]
            reason = f"schema {rules_of} {'has' if applied else 'predates'} it"
        elif app is not None and r.app is not None:
            applied = app[1] >= r.app
            reason = f"arm_version {app[0]} {'has' if applied else 'predates'} it"
        else:
            applied, reason = False, "no schema_version and nothing in the file shows it"
        why[r.name] = reason
        if applied:
            rules.add(r.name)
    return ArmBuild(schema, rules_of, app[0] if app else None, _workbench(run), frozenset(rules), why, tuple(notes))
