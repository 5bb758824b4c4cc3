"""ARM's metrics, exactly as FORMAT.md §3 defines them (per schema version).

- convergence: Jaccard over 5+-character word SETS, and TF-IDF cosine over 3+-character word
  BAGS (unsmoothed idf up to arm-trace-v1.2, smoothed from v1.3), both over the round-1 claims
  of alpha, beta and gamma (never silent); ``None`` with fewer than two usable claims;
- drift: the harness delta ``C_R2 - C_R1`` (gamma: ``C_gammaR2 - C_silent``), unrounded, its
  bands, and ``delta_mismatch`` (|self-report - harness| > 0.02, strictly);
- run-level flags: ``fap_drift_triggered``, ``gamma_drift_exceeded``, ``self_check_divergence``;
- claim direction, verdict, verdict transition, directional unanimity;
- the disagreement enum check and the workbench's deterministic second opinion.

Floating-point work follows ARM's JS loop order, so values match to the last bit where the
logarithm does (see :func:`~workbench.core.protocols.arm.js.fdlibm_log`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence

from workbench.core.protocols.arm.js import fdlibm_log, is_js_number, js_words
from workbench.core.protocols.arm.trace import PARSE_FAILED, ArmRun, Trace

DRIFT_UP_THRESHOLD = 0.04
DRIFT_DOWN_THRESHOLD = -0.15
DELTA_MISMATCH_EPS = 0.02
SHARED_PRIOR_THRESHOLD = 0.40  # SPEC §4: Jaccard >= 0.40 raises the shared-prior warning
DISAGREEMENT_TYPES = ("none", "information", "reasoning", "values")
VERDICTS = ("yes", "no", "conditional")
WARN_STATUSES = frozenset({"warning", "auto_warn", "failed"})
CONVERGENCE_ROLES = ("alpha", "beta", "gamma")

__all__ = [
    "DRIFT_UP_THRESHOLD", "DRIFT_DOWN_THRESHOLD", "DELTA_MISMATCH_EPS", "SHARED_PRIOR_THRESHOLD",
    "DISAGREEMENT_TYPES", "VERDICTS", "usable_claims", "r1_claims", "jaccard_convergence",
    "tfidf_convergence", "run_convergence", "shared_prior_warning", "harness_delta",
    "delta_mismatch", "drift_band", "drift_band_legacy", "fap_drift_triggered",
    "gamma_drift_exceeded", "self_check_divergence", "claim_direction", "verdict_of",
    "verdict_transition", "directional_unanimity", "valid_disagreement",
    "disagreement_second_opinion",
]


# ── Convergence ──────────────────────────────────────────────────────────────────────────────
def usable_claims(traces: Iterable[Trace | None]) -> list[str]:
    """Claims of traces that parsed (``_ok`` not false, no failure sentinel) and are non-empty."""
    return [t.claim for t in traces
            if isinstance(t, Trace) and t.ok and isinstance(t.claim, str) and t.claim]


def r1_claims(run: ArmRun) -> list[str]:
    return usable_claims(run.trace(1, role) for role in CONVERGENCE_ROLES)


def jaccard_convergence(claims: Sequence[str]) -> float | None:
    """Mean pairwise Jaccard of the sets of 5+-character words; ``None`` with < 2 claims."""
    if len(claims) < 2:
        return None
    sets = [{w for w in js_words(c) if len(w) > 4} for c in claims]
    total, pairs = 0.0, 0
    for i in range(len(sets)):
        for j in range(i + 1, len(sets)):
            union = len(sets[i] | sets[j])
            total += len(sets[i] & sets[j]) / union if union > 0 else 0
            pairs += 1
    return total / pairs


def tfidf_convergence(claims: Sequence[str], *, smooth: bool,
                      log: Callable[[float], float] = fdlibm_log) -> float | None:
    """Mean pairwise cosine of TF-IDF vectors over 3+-character word bags.

    idf = ln(N/df) (``smooth=False``, up to arm-trace-v1.2) or ln(N/df) + 1 (v1.3). ``log``
    defaults to fdlibm's (V8's ``Math.log``); pass ``math.log`` for a correctly rounded one.
    """
    if len(claims) < 2:
        return None
    docs = [[w for w in js_words(c) if len(w) > 2] for c in claims]
    n = len(docs)
    df: dict[str, int] = {}
    for terms in docs:
        for term in dict.fromkeys(terms):
            df[term] = df.get(term, 0) + 1
    vectors: list[dict[str, float]] = []
    for terms in docs:
        tf: dict[str, int] = {}
        for term in terms:
            tf[term] = tf.get(term, 0) + 1
        vectors.append({term: (count / len(terms)) * (log(n / df[term]) + (1 if smooth else 0))
                        for term, count in tf.items()})

    def norm(v: dict[str, float]) -> float:
        acc = 0.0
        for x in v.values():
            acc = acc + x * x
        return math.sqrt(acc)

    total, pairs = 0.0, 0
    for i in range(n):
        for j in range(i + 1, n):
            a, b = vectors[i], vectors[j]
            dot = 0.0
            for term, val in a.items():
                if term in b:
                    dot += val * b[term]
            ma, mb = norm(a), norm(b)
            total += dot / (ma * mb) if ma and mb else 0
            pairs += 1
    return total / pairs


def run_convergence(run: ArmRun, *, log: Callable[[float], float] = fdlibm_log) -> dict:
    """Jaccard and TF-IDF (the run's own idf variant) over the run's round-1 claims."""
    claims = r1_claims(run)
    return {"jaccard": jaccard_convergence(claims),
            "tfidf": tfidf_convergence(claims, smooth=run.smoothed_idf, log=log),
            "claims": len(claims), "idf": "smoothed" if run.smoothed_idf else "unsmoothed"}


def shared_prior_warning(jaccard: float | None) -> bool:
    """SPEC §4: Jaccard >= 0.40 (ARM's own UI used > 0.4; SPEC wins)."""
    return jaccard is not None and jaccard >= SHARED_PRIOR_THRESHOLD


# ── Drift ────────────────────────────────────────────────────────────────────────────────────
def harness_delta(after: object, before: object) -> float | None:
    """``after - before`` when both are finite numbers (plain subtraction, unrounded)."""
    return after - before if is_js_number(after) and is_js_number(before) else None  # type: ignore[operator]


def delta_mismatch(self_reported: object, harness: object, eps: float = DELTA_MISMATCH_EPS) -> bool:
    """|self-report - harness| > eps, strictly; false whenever either side is missing."""
    if not (is_js_number(self_reported) and is_js_number(harness)):
        return False
    return abs(self_reported - harness) > eps  # type: ignore[operator]


_JS_DECIMAL = re.compile(r"^[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)$")


def _as_delta(delta: object) -> float | None | str:
    """ARM's coercion: numbers as they are; strings via JS ``Number`` after mapping Unicode
    minus/en/em dashes to '-'. Returns None for missing and "invalid" for anything non-finite."""
    if delta is None:
        return None
    if isinstance(delta, bool):
        return "invalid"
    if isinstance(delta, (int, float)):
        return float(delta) if math.isfinite(delta) else "invalid"
    text = re.sub("[\u2212\u2013\u2014]", "-", str(delta)).strip()
    if text == "":
        return 0.0  # JS: Number("") === 0
    if re.fullmatch(r"0[xX][0-9a-fA-F]+", text):
        return float(int(text, 16))
    if not _JS_DECIMAL.match(text):
        return "invalid"
    value = float(text.replace("Infinity", "inf"))
    return value if math.isfinite(value) else "invalid"


def drift_band(delta: object) -> str:
    """Descriptive band (ARM after 0.9.0; SPEC §4). Exactly 0 is "no shift"."""
    n = _as_delta(delta)
    if n is None:
        return "—"
    if n == "invalid":
        return "⚠ invalid delta"
    if n < DRIFT_DOWN_THRESHOLD:
        return "large downward shift"
    if n < 0:
        return "downward shift"
    if n == 0:
        return "no shift"
    return "minor shift" if n <= DRIFT_UP_THRESHOLD else "upward shift"


def drift_band_legacy(delta: object) -> str:
    """ARM v0.7.1 -> 0.9.0 label (withdrawn upstream as a contamination detector)."""
    n = _as_delta(delta)
    if n is None:
        return "—"
    if n == "invalid":
        return "⚠ invalid delta"
    if n < DRIFT_DOWN_THRESHOLD:
        return "deep tightening"
    if n <= 0:
        return "epistemic tightening"
    return "minor shift" if n <= DRIFT_UP_THRESHOLD else "⚠ memetic drift"


# ── Run-level flags ──────────────────────────────────────────────────────────────────────────
def fap_drift_triggered(alpha_r2: Trace | None, beta_r2: Trace | None,
                        threshold: float = DRIFT_UP_THRESHOLD) -> bool:
    """Alpha's or beta's SELF-REPORTED ``drift_score.confidence_delta`` is a number > threshold."""
    return any(isinstance(t, Trace) and is_js_number(t.confidence_delta) and t.confidence_delta > threshold
               for t in (alpha_r2, beta_r2))


def gamma_drift_exceeded(gamma_r2: Trace | None, threshold: float = DRIFT_UP_THRESHOLD) -> bool:
    """Gamma R2 parsed and its self-reported ``self_delta_vs_baseline`` > threshold."""
    return (isinstance(gamma_r2, Trace) and gamma_r2.ok and is_js_number(gamma_r2.self_delta_vs_baseline)
            and gamma_r2.self_delta_vs_baseline > threshold)


def self_check_divergence(r1_traces: Iterable[Trace | None]) -> bool:
    """Among parsed R1 alpha/beta/gamma: at least one warning-like status and one ``clean``."""
    statuses = [t.status for t in r1_traces if isinstance(t, Trace) and t.ok and isinstance(t.status, str)]
    return any(s in WARN_STATUSES for s in statuses) and any(s == "clean" for s in statuses)


# ── Direction, verdict, transition ───────────────────────────────────────────────────────────
_NEGATION = re.compile(r"\b(?:should not|must not|cannot|will not|should never|ought not)\b", re.ASCII)


def claim_direction(claim: object) -> str:
    """ARM's current claim-direction parser: "yes", "no" or "unknown"."""
    if not isinstance(claim, str) or not claim or claim == PARSE_FAILED or claim.startswith("[FAP"):
        return "unknown"
    text = claim.lower()
    if re.match(r"no\b", text, re.ASCII):
        return "no"
    if re.match(r"yes\b", text, re.ASCII):
        return "yes"
    if _NEGATION.search(text):
        return "no"
    if not re.search(r"\bnot\b", text, re.ASCII) and re.search(r"\bshould\b", text, re.ASCII):
        return "yes"
    return "unknown"


def verdict_of(trace: Trace | None) -> str:
    """The structured ``verdict`` if it is yes/no/conditional, else the claim direction."""
    if not isinstance(trace, Trace):
        return "unknown"
    v = trace.verdict.strip().lower() if isinstance(trace.verdict, str) else ""
    return v if v in VERDICTS else claim_direction(trace.claim)


def verdict_transition(v1: str | None, v2: str | None) -> str:
    """"unknown", "none", "flip" (firm yes<->no) or "shift" (involves conditional)."""
    if v1 in (None, "unknown") or v2 in (None, "unknown"):
        return "unknown"
    if v1 == v2:
        return "none"
    return "flip" if {v1, v2} <= {"yes", "no"} else "shift"


def directional_unanimity(traces: Iterable[Trace | None]) -> bool | None:
    """True when every parsed trace has a firm verdict (yes/no) and they all agree.

    ``None`` with fewer than two parsed traces; False when any verdict is conditional or
    unreadable, or the firm verdicts differ.
    """
    verdicts = [verdict_of(t) for t in traces if isinstance(t, Trace) and t.ok]
    if len(verdicts) < 2:
        return None
    return all(v in ("yes", "no") for v in verdicts) and len(set(verdicts)) == 1


# ── Disagreement ─────────────────────────────────────────────────────────────────────────────
def valid_disagreement(value: object) -> bool:
    return value in DISAGREEMENT_TYPES


_FRAMEWORKS = frozenset({"deontological", "utilitarian"})


def _basis(trace: Trace) -> str:
    return trace.decision_basis.strip().lower() if isinstance(trace.decision_basis, str) else ""


def disagreement_second_opinion(alpha: Trace | None, beta: Trace | None) -> tuple[str | None, str]:
    """The workbench's deterministic reading of the alpha/beta disagreement gamma reconciles.

    Inputs are the two positions (their verdicts and decision bases). Rules, first match wins:
    1. either position missing or unreadable (no parsed trace, or verdict unknown): None;
    2. same verdict and same decision basis: "none";
    3. firm opposite verdicts (yes vs no) from opposed pure frameworks (deontological vs
       utilitarian): "values";
    4. different verdicts where a side answering "conditional" flags ``incomplete_data``:
       "information" (the split hinges on missing facts);
    5. otherwise: "reasoning" (same conclusion by different routes, or different conclusions
       from compatible foundations).
    Returns ``(type, rule)`` with the rule that decided, in words.
    """
    sides = [t for t in (alpha, beta) if isinstance(t, Trace) and t.ok]
    if len(sides) < 2:
        return None, "undetermined: alpha and beta positions are not both available"
    (va, vb) = (verdict_of(t) for t in sides)
    (ba, bb) = (_basis(t) for t in sides)
    if "unknown" in (va, vb):
        return None, f"undetermined: a verdict could not be read (alpha {va}, beta {vb})"
    if va == vb and ba == bb:
        return "none", f"same verdict ({va}) and same decision basis ({ba or '?'})"
    if {va, vb} == {"yes", "no"} and {ba, bb} == _FRAMEWORKS:
        return "values", f"firm opposite verdicts ({va} vs {vb}) from opposed frameworks ({ba} vs {bb})"
    if va != vb:
        for t, v in zip(sides, (va, vb)):
            if v == "conditional" and isinstance(t.flags, list) and "incomplete_data" in t.flags:
                return "information", f"verdicts differ ({va} vs {vb}); the conditional side flags incomplete_data"
        return "reasoning", f"verdicts differ ({va} vs {vb}) without opposed pure frameworks ({ba} vs {bb})"
    return "reasoning", f"same verdict ({va}) by different decision bases ({ba or '?'} vs {bb or '?'})"

