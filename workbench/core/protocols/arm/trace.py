"""The ARM trace model: one agent trace (:class:`Trace`), the run metadata (:class:`RunMeta`)
and a whole run (:class:`ArmRun`), read from and written back to ARM's own JSON.

Design rules:
- Field names follow the workbench's ``traces`` table where a column corresponds
  (``explicit_assumptions`` <- upstream ``assumptions``, ``rlhf_audit`` <- ``rlhf_audit_notes``,
  ``meta`` <- ``_meta``, ``ok_flag`` <- ``_ok``); the full table is :data:`TRACE_FIELD_MAP`.
- Values are kept exactly as read (no coercion): a reader of old traces must never lose or
  reshape data. Unknown keys go to ``extra`` verbatim. The original key order is remembered,
  so ``to_upstream`` reproduces the file exactly (value equality and key order).
- Derived views (``ok``, ``provider``, ``override_reason``, ``prompt_tokens`` ...) are
  read-only properties over the stored values.

Schema generations (FORMAT.md §2): ``legacy`` (v0.6 and v0.7.1 exports, no ``schema_version``,
no ``_ok``), ``arm-trace-v1.1`` (early v0.8 builds), ``arm-trace-v1.2`` (v0.8 and v0.9) and
``arm-trace-v1.3`` (post-0.9, smoothed TF-IDF; also what the workbench writes). A later
``arm-trace-vX.Y`` is read with today's rules; which rules a file's own build had is
:attr:`ArmRun.build` (:mod:`.versions`).

Reading a file (:func:`parse_run`) checks the type of every known field of every version
(:data:`~.fields.TRACE_TYPES`, :data:`~.fields.RUN_TYPES`) and the size limits of
docs/limits.md, and refuses the first problem with its path (``r1.alpha.confidence: must be a
number, got "high"``). A single trace built from a model's reply (:func:`parse_trace`) is not
type-checked: a reply's odd field is the model's answer, kept as it came (see
:func:`trace_type_problem` for a caller that wants to know).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from workbench.core.errors import InputError
from workbench.core.limits import (
    MAX_ARM_ROLES,
    MAX_ARM_TEXT_CHARS,
    MAX_LIST_ITEMS,
    MAX_NAME_CHARS,
    check_count,
    check_json,
    check_name,
    check_text,
    too_long,
)
from workbench.core.protocols.arm.fields import (  # noqa: F401  (re-exported)
    CALL_FAILED,
    FAP_ABORT_CLAIM,
    LEGACY,
    NOT_NULL,
    PARSE_FAILED,
    RUN_FIELD_MAP,
    RUN_META_FIELD_MAP,
    RUN_TYPES,
    SCHEMA_V11,
    SCHEMA_V12,
    SCHEMA_V13,
    SCHEMA_VERSIONS,
    TRACE_FIELD_MAP,
    TRACE_NESTED_MAP,
    TRACE_TYPES,
)
from workbench.core.protocols.arm.js import is_js_number
from workbench.core.protocols.arm.versions import (
    SMOOTHED_IDF,
    ArmBuild,
    check_schema_version,
    detect_build,
    effective_schema,
)
from workbench.core.protocols.shared.validation import shown


@dataclass
class _Record:
    """Shared reading and writing: a field per known upstream key, ``extra`` for the rest.

    ``upstream_keys`` is the key order as read; ``None`` means built by the workbench (then
    fields that are not ``None`` are written, in the map's order, then ``extra``).
    """

    _MAP: ClassVar[tuple[tuple[str, str], ...]] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    upstream_keys: list[str] | None = field(default=None, repr=False)

    @classmethod
    def _from_upstream(cls, data: dict, convert: dict[str, Any] | None = None):
        to_field = dict(cls._MAP)
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            if key in to_field:
                name = to_field[key]
                values[name] = convert[name](value) if convert and name in convert else copy.deepcopy(value)
            else:
                extra[key] = copy.deepcopy(value)
        return cls(**values, extra=extra, upstream_keys=list(data))

    def _to_upstream(self, convert: dict[str, Any] | None = None) -> dict:
        to_field = dict(self._MAP)
        out: dict[str, Any] = {}

        def value_of(key: str) -> Any:
            name = to_field[key]
            value = getattr(self, name)
            return convert[name](value) if convert and name in convert else copy.deepcopy(value)

        order = self.upstream_keys or []
        for key in order:
            if key in to_field:
                out[key] = value_of(key)
            elif key in self.extra:
                out[key] = copy.deepcopy(self.extra[key])
        for key, _name in self._MAP:  # fields set since reading (or on a fresh record)
            if key not in out and key not in order and getattr(self, to_field[key]) is not None:
                out[key] = value_of(key)
        for key, value in self.extra.items():
            if key not in out:
                out[key] = copy.deepcopy(value)
        return out

    def present(self, upstream_key: str) -> bool:
        """Whether the key was in the JSON as read (for a fresh record: whether it is set)."""
        if self.upstream_keys is not None:
            return upstream_key in self.upstream_keys
        name = dict(self._MAP).get(upstream_key)
        return (getattr(self, name) is not None) if name else upstream_key in self.extra


@dataclass
class Trace(_Record):
    """One agent trace of one round. Values are kept exactly as ARM stored them."""

    _MAP: ClassVar[tuple[tuple[str, str], ...]] = TRACE_FIELD_MAP
    claim: Any = None
    verdict: Any = None
    confidence: Any = None
    reasoning_frame: Any = None
    decision_basis: Any = None
    explicit_assumptions: Any = None
    critical_path: Any = None
    discarded_paths: Any = None
    challenge_surface: Any = None
    flags: Any = None
    self_check: Any = None
    influenced_by: Any = None
    challenged: Any = None
    drift_note: Any = None
    drift_score: Any = None
    disagreement_classification: Any = None
    disagreement_notes: Any = None
    agent_decision_bases: Any = None
    values_in_conflict: Any = None
    rlhf_audit: Any = None
    self_delta_vs_baseline: Any = None
    reconciliation_status: Any = None
    failure_reason: Any = None
    raw_reasoning_attempt: Any = None
    meta: Any = None
    ok_flag: Any = None
    schema_warnings: Any = None
    harness_self_delta_vs_baseline: Any = None
    self_delta_mismatch: Any = None
    polarity_gate_fired: Any = None
    polarity_audit: Any = None
    verdict_shift: Any = None

    # ── derived, read-only views (named after the traces table's columns) ──
    @property
    def ok(self) -> bool:
        """Parsed successfully: ``_ok`` is not false and the claim is not a failure sentinel."""
        if self.ok_flag is False:
            return False
        return not (isinstance(self.claim, str) and self.claim in (PARSE_FAILED, CALL_FAILED))

    def _meta_get(self, key: str) -> Any:
        return self.meta.get(key) if isinstance(self.meta, dict) else None

    @property
    def provider(self) -> Any:
        return self._meta_get("provider")

    @property
    def model(self) -> Any:
        return self._meta_get("model")

    @property
    def stop_reason(self) -> Any:
        return self._meta_get("stopReason")

    @property
    def usage(self) -> Any:
        return self._meta_get("usage")

    @property
    def latency_ms(self) -> Any:
        return self._meta_get("latencyMs")

    @property
    def truncated(self) -> Any:
        return self._meta_get("truncated")

    def _usage_first(self, *keys: str) -> Any:
        usage = self.usage
        if isinstance(usage, dict):
            for key in keys:
                if isinstance(usage.get(key), int) and not isinstance(usage.get(key), bool):
                    return usage[key]
        return None

    @property
    def prompt_tokens(self) -> int | None:
        return self._usage_first("input_tokens", "prompt_tokens", "promptTokenCount")

    @property
    def completion_tokens(self) -> int | None:
        return self._usage_first("output_tokens", "completion_tokens", "candidatesTokenCount")

    def _sub(self, obj: Any, key: str) -> Any:
        return obj.get(key) if isinstance(obj, dict) else None

    @property
    def status(self) -> Any:
        """``self_check.status``."""
        return self._sub(self.self_check, "status")

    @property
    def override_reason(self) -> Any:
        return self._sub(self.self_check, "override_reason")

    @property
    def confidence_delta(self) -> Any:
        """The model's own ``drift_score.confidence_delta``."""
        return self._sub(self.drift_score, "confidence_delta")

    @property
    def harness_confidence_delta(self) -> Any:
        return self._sub(self.drift_score, "harness_confidence_delta")

    @property
    def delta_mismatch(self) -> Any:
        return self._sub(self.drift_score, "delta_mismatch")


def parse_trace(data: dict, where: str = "trace") -> Trace:
    """Read one upstream trace object. Nothing is coerced; unknown keys go to ``extra``."""
    if not isinstance(data, dict):
        raise InputError(where, f"an agent trace must be a JSON object, got {type(data).__name__}")
    return Trace._from_upstream(data)


def trace_to_upstream(trace: Trace) -> dict:
    """The trace as ARM's JSON, keys in the order they were read."""
    return trace._to_upstream()


@dataclass
class RunMeta(_Record):
    """``runMeta``: the run's settings and the run-level flags ARM computed."""

    _MAP: ClassVar[tuple[tuple[str, str], ...]] = RUN_META_FIELD_MAP
    schema_version: Any = None
    duration: Any = None
    role_injection: Any = None
    silent_agent: Any = None
    silent_provider: Any = None
    frames: Any = None
    providers: Any = None
    silent_confidence: Any = None
    silent_baseline_failed: Any = None
    fap_drift_triggered: Any = None
    fap_requeue: Any = None
    polarity_gate_fired: Any = None
    verdict_shift_flagged: Any = None
    gamma_drift_exceeded: Any = None
    baseline_unstable: Any = None
    disagreement: Any = None
    convergence: Any = None
    tfidf_convergence: Any = None
    embedding_convergence: Any = None
    self_check_divergence: Any = None
    directional_unanimity: Any = None
    dispatch: Any = None


def _traces_in(value: Any, where: str) -> Any:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InputError(where, f"must be a JSON object of agent traces, got {type(value).__name__}")
    return {k: (parse_trace(v, f"{where}.{k}") if isinstance(v, dict) else copy.deepcopy(v))
            for k, v in value.items()}


def _traces_out(value: Any) -> Any:
    if value is None:
        return None
    return {k: (trace_to_upstream(v) if isinstance(v, Trace) else copy.deepcopy(v)) for k, v in value.items()}


@dataclass
class ArmRun(_Record):
    """A whole ARM run: round-1 and round-2 traces by role, stored metrics, runMeta."""

    _MAP: ClassVar[tuple[tuple[str, str], ...]] = RUN_FIELD_MAP
    export_integrity_hash: Any = None
    arm_version: Any = None
    schema_version: Any = None
    r1: Any = None  # {"alpha": Trace, "beta": Trace, "gamma": Trace, "silent": Trace}
    r2: Any = None  # {"alpha": Trace, "beta": Trace, "gamma": Trace}
    convergence: Any = None
    tfidf_convergence: Any = None
    embedding_convergence: Any = None
    run_meta: Any = None  # RunMeta
    question: Any = None
    providers: Any = None

    @property
    def generation(self) -> str:
        """The schema the file names (top level, else in runMeta), or ``legacy`` (v0.6/v0.7.1)."""
        return self.build.schema or LEGACY

    @property
    def build(self) -> ArmBuild:
        """The build that wrote the run and the rules it had (:mod:`.versions`)."""
        return detect_build(self)

    @property
    def smoothed_idf(self) -> bool:
        """TF-IDF idf variant of this trace's own version: ln(N/df)+1 from v1.3 on, ln(N/df) before."""
        return self.build.has(SMOOTHED_IDF)

    def trace(self, round_no: int, role: str) -> Trace | None:
        block = self.r1 if round_no == 1 else self.r2
        value = block.get(role) if isinstance(block, dict) else None
        return value if isinstance(value, Trace) else None

    @property
    def meta(self) -> RunMeta:
        return self.run_meta if isinstance(self.run_meta, RunMeta) else RunMeta()


def parse_run(data: object) -> ArmRun:
    """Read a whole ARM export (any generation in the corpus, or a workbench export).

    Raises :class:`InputError` when ``data`` is not an ARM run or names an unknown schema.
    """
    if not isinstance(data, dict):
        raise InputError("", f"an ARM trace file must hold a JSON object, got {type(data).__name__}")
    if not isinstance(data.get("r1"), dict):
        raise InputError("r1", "missing: this is not an ARM trace (expected r1 {alpha, beta, gamma, silent})")
    meta = data.get("runMeta")
    if meta is not None and not isinstance(meta, dict):
        raise InputError("runMeta", f"must be a JSON object, got {type(meta).__name__}")
    if (named := effective_schema(data)) is not None:  # a newer schema is read with today's rules
        check_schema_version(named[1], named[0])
    check_run_types(data)
    return ArmRun._from_upstream(data, convert={
        "r1": lambda v: _traces_in(v, "r1"),
        "r2": lambda v: _traces_in(v, "r2"),
        "run_meta": lambda v: RunMeta._from_upstream(v) if isinstance(v, dict) else copy.deepcopy(v),
    })


# ── type and size checks of a whole file ─────────────────────────────────────────────────────
_WORDS = {"text": "text", "number": "a number", "count": "a whole number >= 0", "bool": "true or false",
          "object": "an object", "list": "a list", "null": "null"}


def _kind_ok(kind: str, value: object) -> bool:
    if kind == "text":
        return isinstance(value, str)
    if kind == "number":
        return is_js_number(value)
    if kind == "count":
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "list":
        return isinstance(value, list)
    return kind == "null" and value is None


def _alternatives(spec: object) -> list:
    if isinstance(spec, tuple):
        return [alt for part in spec for alt in _alternatives(part)]
    if isinstance(spec, str):
        return spec.split("|")
    return [spec]


def _words(alternatives: list) -> str:
    words = []
    for alt in alternatives:
        word = "an object" if isinstance(alt, dict) else "a list" if isinstance(alt, list) else _WORDS[alt]
        if alt != "null" and word not in words:
            words.append(word)
    return " or ".join(words)


def check_value(value: object, spec: object, path: str, *, nullable: bool = True) -> None:
    """Raise an :class:`InputError` at ``path`` unless ``value`` has the type ``spec`` describes
    (the type language of :data:`~.fields.TRACE_TYPES`); strings and lists are size-checked too."""
    if value is None and nullable:
        return
    alternatives = _alternatives(spec)
    for alt in alternatives:
        if isinstance(alt, dict):
            if isinstance(value, dict):
                for key, sub in alt.items():
                    if key in value:
                        check_value(value[key], sub, f"{path}.{key}" if path else key, nullable=key not in NOT_NULL)
                return
        elif isinstance(alt, list):
            if isinstance(value, list):
                check_count(value, MAX_LIST_ITEMS, path)
                for i, item in enumerate(value):
                    check_value(item, alt[0], f"{path}[{i}]", nullable=False)
                return
        elif _kind_ok(alt, value):
            check_text(value, MAX_ARM_TEXT_CHARS, path)
            return
    raise InputError(path, f"must be {_words(alternatives)}, got {shown(value)}")


def trace_type_problem(data: dict, where: str = "trace") -> InputError | None:
    """The first field of one trace object whose type is wrong (or too long), or None."""
    try:
        check_value(data, TRACE_TYPES, where)
    except InputError as exc:
        return exc
    return None


def _long_strings(data: object) -> None:
    """Every string in the file, keys included, is at most MAX_ARM_TEXT_CHARS (unknown keys too)."""
    stack: list[tuple[object, tuple]] = [(data, ())]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if len(key) > MAX_NAME_CHARS:
                    raise InputError(_path(where), f"has a key that {too_long(len(key), MAX_NAME_CHARS)}")
                stack.append((value, where + (key,)))
        elif isinstance(node, list):
            stack.extend((value, where + (i,)) for i, value in enumerate(node))
        elif isinstance(node, str) and len(node) > MAX_ARM_TEXT_CHARS:
            raise InputError(_path(where), too_long(len(node), MAX_ARM_TEXT_CHARS))


def _path(parts: tuple) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def check_run_types(data: dict) -> None:
    """The whole file within the limits, and every known field of its type (any schema version)."""
    check_json(data, "")
    _long_strings(data)
    for key, spec in RUN_TYPES.items():
        if key in data:
            check_value(data[key], spec, key)
    for block in ("r1", "r2"):
        roles = data.get(block)
        if roles is None and block == "r2":
            continue
        if not isinstance(roles, dict):
            raise InputError(block, f"must be an object of agent traces, got {shown(roles)}")
        check_count(roles, MAX_ARM_ROLES, block, "agent traces")
        for role, trace in roles.items():
            try:  # a role is stored and shown as a name (SPEC §11): the key itself is not echoed
                check_name(role)
            except ValueError as exc:
                raise InputError(block, f"a role's name {exc}") from None
            if trace is not None and not isinstance(trace, dict):
                raise InputError(f"{block}.{role}", f"must be an object (an agent trace), got {shown(trace)}")
            if trace is not None:
                check_value(trace, TRACE_TYPES, f"{block}.{role}")


def run_to_upstream(run: ArmRun) -> dict:
    """The run as ARM's JSON, keys in the order they were read (a file round-trips exactly)."""
    return run._to_upstream(convert={
        "r1": _traces_out,
        "r2": _traces_out,
        "run_meta": lambda v: v._to_upstream() if isinstance(v, RunMeta) else copy.deepcopy(v),
    })


def field_names(record_type: type[_Record]) -> list[str]:
    """The workbench field names of a record type (without the bookkeeping fields)."""
    return [f.name for f in fields(record_type) if f.name not in ("extra", "upstream_keys")]
