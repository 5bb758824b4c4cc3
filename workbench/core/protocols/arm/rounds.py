"""An ARM run as a step generator (see :mod:`.steps`): isolation, analysis, deliberation, gates.

1. Round 1, isolation: alpha, beta, gamma and the silent baseline answer the question alone.
   ``dispatch="sequential"`` yields one call per Batch in ARM's order (alpha, beta, gamma,
   silent); ``"concurrent"`` yields one Batch of all four. The run records which.
2. Convergence analysis (a ``Note`` of kind "metrics"): Jaccard, TF-IDF (the schema's idf),
   directional unanimity, self_check divergence, shared-prior warning.
3. Round 2, deliberation: alpha and beta see the compressed round-1 traces of alpha, beta and
   gamma plus their own round-1 confidence. Gamma R2 sees all round-1 traces (compressed), as the
   seed says, plus alpha R2, beta R2 and the silent baseline as in ARM's code (FORMAT.md §1);
   ``gamma_context="arm"`` drops the round-1 traces to reproduce ARM's code exactly. The silent
   agent sees nothing and is not re-run.
   If the silent baseline failed, gamma R2 is not dispatched (FAP abort placeholder).
4. Gates. FAP, right after alpha/beta R2 (ARM v0.8's order): each of alpha/beta whose
   self-reported delta exceeds the threshold is re-dispatched with only the question and its own
   compressed round-1 trace, up to ``fap_max_attempts`` until one parses; every attempt is kept
   in ``runMeta.fap_requeue`` (round 2 itself is kept as answered; gamma reconciles the round-2
   traces). After gamma R2: the polarity gate / verdict-shift advisory.

Keys: ``r1/<role>``, ``r2/<role>``, ``fap/<role>/<attempt>``. Each call is a step of
:mod:`.steps` (``r1``, ``silent``, ``r2``, ``gamma_r2``, ``fap_requeue``) rendered from the run's
templates (:class:`~..shared.declaration.Prompts`); a reply is read once (:func:`.records.read`).
The generator returns an :class:`~workbench.core.protocols.arm.trace.ArmRun` in ARM's export
shape (schema v1.3 by default).
"""

from __future__ import annotations

import copy
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from workbench.core.errors import InputError
from workbench.core.protocols.arm.config import ARM_DISPATCH, DEFAULTS, ROLES, ArmOptions
from workbench.core.protocols.arm.formats import GAMMA_R2_FORMAT, r1_format, r2_format
from workbench.core.protocols.arm.gates import (
    fap_abort_placeholder,
    fap_drift_agents,
    polarity_gate,
    requeue_record,
    silent_baseline_failed,
)
from workbench.core.protocols.arm.metrics import (
    delta_mismatch,
    directional_unanimity,
    disagreement_second_opinion,
    gamma_drift_exceeded,
    harness_delta,
    jaccard_convergence,
    self_check_divergence,
    shared_prior_warning,
    tfidf_convergence,
    usable_claims,
)
from workbench.core.protocols.arm.peers import (
    baseline_label,
    confidence_of,
    reconciliation_view,
    round1_view,
    view_json,
)
from workbench.core.protocols.arm.records import read
from workbench.core.protocols.arm.replies import parse_reply
from workbench.core.protocols.arm.steps import IDENTITY
from workbench.core.protocols.arm.trace import SCHEMA_V13, ArmRun, RunMeta, Trace
from workbench.core.protocols.shared.declaration import Prompts
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Batch, Note, Reading
from workbench.core.protocols.shared.templates import TemplateProblem
from workbench.core.protocols.shared.validation import validate

ArmSteps = Generator[Batch | Note, dict[str, AgentReply] | None, ArmRun]
_OPTIONS = ("frames", "role_injection", "silent_draw", "silent_provider", "dispatch", "gamma_context",
            "fap_threshold", "fap_requeue", "fap_max_attempts", "schema_version", "budgets")


@dataclass(frozen=True)
class ArmRunConfig:
    """One ARM run. Every default comes from :class:`~.config.ArmOptions`, which also validates
    the options (an :class:`InputError` names the field); ``frames`` and ``budgets`` may be given in
    part, the rest taking their defaults."""

    question: str
    providers: dict[str, str]  # alpha, beta, gamma -> provider name
    frames: dict[str, str] = field(default_factory=lambda: DEFAULTS.frames.model_dump())
    role_injection: bool = DEFAULTS.role_injection
    silent_draw: str = DEFAULTS.silent_draw
    silent_provider: str | None = DEFAULTS.silent_provider  # see rotate_silent_baseline
    dispatch: str = ARM_DISPATCH
    gamma_context: str = DEFAULTS.gamma_context  # the seed and our issue: gamma sees all round-1 traces
    fap_threshold: float = DEFAULTS.fap_threshold
    fap_requeue: bool = DEFAULTS.fap_requeue
    fap_max_attempts: int = DEFAULTS.fap_max_attempts
    schema_version: str = DEFAULTS.schema_version
    budgets: dict[str, int] = field(default_factory=lambda: DEFAULTS.budgets.model_dump())

    def __post_init__(self) -> None:
        if not isinstance(self.question, str) or not self.question.strip():
            raise InputError("question", "required")
        for role in ROLES:
            if not isinstance(self.providers.get(role), str) or not self.providers[role]:
                raise InputError(f"providers.{role}", "required: the provider that answers as this agent")
        options = validate(ArmOptions, {name: getattr(self, name) for name in _OPTIONS})
        object.__setattr__(self, "frames", options.frames.model_dump())  # completed with the defaults
        object.__setattr__(self, "budgets", options.budgets.model_dump())

    @property
    def effective_frames(self) -> dict[str, str]:
        if not self.role_injection:
            return {"alpha": "independent", "beta": "independent"}
        return {"alpha": self.frames["alpha"], "beta": self.frames["beta"]}

    @property
    def silent(self) -> str:
        return self.silent_provider or self.providers[self.silent_draw]


def workbench_gate_options(silent_draw: str) -> dict:
    """How the workbench runs the polarity gate on its own runs (and re-checks their exports):
    blind-spot on the harness delta, the baseline mode in the audit, the override stamped."""
    return {"blindspot_source": "harness", "stamp_override": True,
            "audit_extra": {"baseline_mode": "visible_r1", "silent_agent": silent_draw}}


def _call(prompts: Prompts, step: str, key: str, agent: str, round_no: int, provider: str, budget: int,
          values: dict[str, Any], **meta: object) -> AgentCall:
    """One trace call of ``step``, rendered from the run's template with ``values`` (the step's
    variables; the untrusted ones are fenced with the call's fresh fence). A template that cannot
    be rendered with them is an :class:`InputError` naming ``prompts.STEP``."""
    try:
        return prompts.call(step, key=key, agent=agent, round_no=round_no, values=values,
                            meta={"role": agent, "provider": provider, "max_tokens": budget, **meta})
    except TemplateProblem as exc:
        raise InputError(f"prompts.{step}", str(exc)) from None


def _dispatch(cfg: ArmRunConfig, calls: list[AgentCall], label: str):
    """Yield the calls (one per Batch when sequential), return ``key -> parsed Trace``."""
    replies: dict[str, AgentReply] = {}
    groups = [[c] for c in calls] if cfg.dispatch == "sequential" else [calls]
    for group in groups:
        answer = yield Batch(tuple(group), label)
        replies.update(answer or {})
    traces = {}
    for call in calls:
        reply = replies.get(call.key)
        if reply is None:
            meta = {"provider": call.meta["provider"]}
            traces[call.key] = parse_reply(None, meta, error="the driver returned no reply for this call")
        else:
            traces[call.key] = reading(call, reply).value
    return traces


def reading(call: AgentCall, reply: AgentReply) -> Reading:
    """The reply's reading: the one its driver made (:func:`~..shared.steps.read_reply`), else made now."""
    return reply.reading if reply.reading is not None else read(call, reply)


def _annotate_drift(r2: Trace, r1: Trace | None) -> Trace:
    """ARM's harness delta on a parsed R2 trace: C_R2 - C_R1 next to the model's own number."""
    if not r2.ok:
        return r2
    out = copy.deepcopy(r2)
    hd = harness_delta(out.confidence, r1.confidence if isinstance(r1, Trace) else None)
    base = out.drift_score if isinstance(out.drift_score, dict) else {}
    out.drift_score = {**base, "harness_confidence_delta": hd,
                       "delta_mismatch": delta_mismatch(base.get("confidence_delta"), hd)}
    return out


def run_arm(cfg: ArmRunConfig, prompts: Prompts | None = None) -> ArmSteps:
    """Drive one ARM run with the run's templates (default: ARM's own); see the module
    docstring for the steps and keys."""
    prompts = prompts if prompts is not None else Prompts(IDENTITY)
    frames, providers, q = cfg.effective_frames, dict(cfg.providers), cfg.question
    yield Note("phase", f"ARM run: dispatch {cfg.dispatch}, silent baseline = {cfg.silent_draw} draw "
                        f"via {cfg.silent}", {"dispatch": cfg.dispatch})

    # ── Round 1: isolation ──
    r1_frames = {**frames, "gamma": "independent"}
    r1_calls = [  # reasoning_frame is a field of alpha's and beta's traces only
        _call(prompts, "r1", f"r1/{role}", role, 1, providers[role], cfg.budgets["r1"],
              {"question": q, "role": role, "frame": r1_frames[role],
               "reply_format": r1_format(frames.get(role))}, frame=r1_frames[role])
        for role in ("alpha", "beta", "gamma")]
    r1_calls.append(_call(prompts, "silent", "r1/silent", "silent", 1, cfg.silent, cfg.budgets["r1"],
                          {"question": q, "draw": cfg.silent_draw, "frame": frames.get(cfg.silent_draw),
                           "reply_format": r1_format(None)}, draw=cfg.silent_draw))
    got = yield from _dispatch(cfg, r1_calls, "Round 1: isolation")
    r1 = {role: got[f"r1/{role}"] for role in ("alpha", "beta", "gamma", "silent")}

    # ── Between rounds: convergence analysis ──
    visible = [r1["alpha"], r1["beta"], r1["gamma"]]
    claims = usable_claims(visible)
    jac = jaccard_convergence(claims)
    tfidf = tfidf_convergence(claims, smooth=cfg.schema_version == SCHEMA_V13)
    unanimity = directional_unanimity(visible)
    divergence = self_check_divergence(visible)
    yield Note("metrics", f"Round 1 convergence: Jaccard {jac}, TF-IDF {tfidf}",
               {"jaccard_convergence": jac, "tfidf_convergence": tfidf, "directional_unanimity": unanimity,
                "self_check_divergence": divergence, "shared_prior_warning": shared_prior_warning(jac)})
    silent_failed = silent_baseline_failed(r1["silent"])
    if silent_failed:
        yield Note("gate", "FAP: the silent baseline failed; gamma R2 will not be dispatched",
                   {"gate": "fap_silent_abort"})

    # ── Round 2: deliberation (alpha, beta) ──
    peers = round1_view(r1)
    r2_calls = [_call(prompts, "r2", f"r2/{role}", role, 2, providers[role], cfg.budgets["r2"],
                      {"question": q, "role": role, "frame": frames[role], "own_confidence": confidence_of(r1[role]),
                       "peer_traces": peers.text, "reply_format": r2_format(frames[role])},
                      frame=frames[role], peer_views=peers.views)
                for role in ("alpha", "beta")]
    got = yield from _dispatch(cfg, r2_calls, "Round 2: deliberation")
    r2: dict[str, Trace] = {role: _annotate_drift(got[f"r2/{role}"], r1[role]) for role in ("alpha", "beta")}
    drifted = fap_drift_agents(r2, cfg.fap_threshold)
    if drifted:
        yield Note("gate", f"FAP: self-reported confidence rose by more than +{cfg.fap_threshold} "
                           f"in {', '.join(drifted)}", {"gate": "fap_drift", "agents": drifted})
    requeue = []
    if cfg.fap_requeue and drifted:  # ARM's order: the re-queue runs before gamma reconciles
        requeue = yield from _requeue(cfg, prompts, drifted, r1, r2)

    # ── Round 2: reconciliation (gamma) ──
    if silent_failed:
        gamma = fap_abort_placeholder(providers["gamma"], None)
    else:
        baseline = confidence_of(r1["silent"])
        label = baseline_label(cfg.silent_draw, cfg.silent, providers["gamma"], baseline)
        shown = reconciliation_view(r2, r1["silent"], label, r1 if cfg.gamma_context == "arm+r1" else None)
        call = _call(prompts, "gamma_r2", "r2/gamma", "gamma", 2, providers["gamma"], cfg.budgets["gamma_r2"],
                     {"question": q, "baseline_confidence": baseline, "peer_traces": shown.text,
                      "reply_format": GAMMA_R2_FORMAT}, gamma_context=cfg.gamma_context, peer_views=shown.views)
        got = yield from _dispatch(cfg, [call], "Round 2: reconciliation")
        gamma = copy.deepcopy(got["r2/gamma"])
        if gamma.ok:
            hd = harness_delta(gamma.confidence, r1["silent"].confidence)
            gamma.harness_self_delta_vs_baseline = hd
            gamma.self_delta_mismatch = delta_mismatch(gamma.self_delta_vs_baseline, hd)
        else:
            gamma.reconciliation_status = "failed"

    # ── Gates ──
    gate = polarity_gate(r1["gamma"], gamma, r1["silent"], **workbench_gate_options(cfg.silent_draw))
    r2["gamma"] = gate.gamma_r2
    if gate.fired:
        yield Note("gate", f"Polarity gate: gamma flipped {gate.r1_verdict.upper()}→{gate.r2_verdict.upper()}; "
                           "logged as gamma_flip_detected", {"gate": "polarity", "transition": "flip"})
    elif gate.verdict_shift:
        yield Note("gate", f"Verdict shift (advisory): gamma {gate.r1_verdict.upper()}→{gate.r2_verdict.upper()}",
                   {"gate": "verdict_shift", "transition": "shift"})

    second, rule = disagreement_second_opinion(r2["alpha"], r2["beta"])
    meta = RunMeta(
        schema_version=cfg.schema_version, role_injection=cfg.role_injection, silent_agent=cfg.silent_draw,
        silent_provider=cfg.silent, frames=frames, providers=providers,
        silent_confidence=r1["silent"].confidence, silent_baseline_failed=True if silent_failed else None,
        fap_drift_triggered=bool(drifted), fap_requeue=requeue or None,
        polarity_gate_fired=gate.fired, verdict_shift_flagged=gate.verdict_shift,
        gamma_drift_exceeded=gamma_drift_exceeded(r2["gamma"], cfg.fap_threshold),
        disagreement=r2["gamma"].disagreement_classification, convergence=jac, tfidf_convergence=tfidf,
        embedding_convergence=None, self_check_divergence=divergence, directional_unanimity=unanimity,
        dispatch=cfg.dispatch,
        extra={"gamma_context": cfg.gamma_context,
               "disagreement_second_opinion": {"type": second, "rule": rule}},
    )
    meta.upstream_keys = [k for k, name in meta._MAP if getattr(meta, name) is not None
                          or k in ("embedding_convergence", "convergence", "tfidf_convergence",
                                   "silentConfidence", "disagreement", "directional_unanimity")]
    meta.upstream_keys += list(meta.extra)
    return ArmRun(schema_version=cfg.schema_version, r1=r1, r2=r2, convergence=jac, tfidf_convergence=tfidf,
                  embedding_convergence=None, run_meta=meta, question=q, providers=providers,
                  upstream_keys=["schema_version", "r1", "r2", "convergence", "tfidf_convergence",
                                 "embedding_convergence", "runMeta", "question", "providers"])


def _requeue(cfg: ArmRunConfig, prompts: Prompts, drifted: list[str], r1: dict[str, Trace], r2: dict[str, Trace]):
    """FAP isolation re-queue: attempts until one parses, at most ``fap_max_attempts``."""
    attempts: dict[str, list[Trace]] = {role: [] for role in drifted}
    pending = list(drifted)
    frames = cfg.effective_frames
    for n in range(1, cfg.fap_max_attempts + 1):
        if not pending:
            break
        calls = [_call(prompts, "fap_requeue", f"fap/{role}/{n}", role, 2, cfg.providers[role], cfg.budgets["r2"],
                       {"question": cfg.question, "role": role, "frame": frames[role],
                        "own_confidence": confidence_of(r1[role]), "threshold": cfg.fap_threshold,
                        "own_trace": view_json(r1[role]), "reply_format": r2_format(frames[role])},
                       fap_attempt=n, frame=frames[role])
                 for role in pending]
        got = yield from _dispatch(cfg, calls, f"FAP re-queue, attempt {n}")
        for role in list(pending):
            trace = got[f"fap/{role}/{n}"]
            attempts[role].append(trace)
            if trace.ok:
                pending.remove(role)
    records = [requeue_record(role, r2[role], attempts[role]) for role in drifted]
    for rec in records:
        yield Note("gate", f"FAP re-queue {rec['agent']}: {rec['pre_requeue_confidence']} -> "
                           f"{rec['post_requeue_confidence']} ({rec['classification']}, "
                           f"{len(rec['attempts'])} attempt(s))", {"gate": "fap_requeue", **{
                               k: rec[k] for k in ("agent", "requeue_confidence_delta", "classification")}})
    return records
