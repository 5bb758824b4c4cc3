"""ARM metrics against hand-computed values (FORMAT.md §3), edge cases and JS details."""

from __future__ import annotations

import math
import re
import struct

import pytest

from workbench.core.protocols.arm import (
    Trace,
    claim_direction,
    delta_mismatch,
    directional_unanimity,
    disagreement_second_opinion,
    drift_band,
    drift_band_legacy,
    fap_drift_triggered,
    fdlibm_log,
    gamma_drift_exceeded,
    harness_delta,
    jaccard_convergence,
    js_words,
    self_check_divergence,
    shared_prior_warning,
    tfidf_convergence,
    usable_claims,
    valid_disagreement,
    verdict_of,
    verdict_transition,
)


def T(**kw) -> Trace:
    return Trace(**kw)


# ── Jaccard ──────────────────────────────────────────────────────────────────────────────────
def test_jaccard_hand_computed():
    # A: {alpha, should, disclose, everything}   ("now" is too short: only 5+ characters count)
    # B: {should, disclose, nothing}
    # C: {never}
    # J(A,B) = |{should, disclose}| / |{alpha, should, disclose, everything, nothing}| = 2/5 = 0.4
    # J(A,C) = 0/5 = 0 ; J(B,C) = 0/4 = 0 ; mean = 0.4 / 3 = 0.1333...
    claims = ["Alpha should disclose everything now", "Should disclose nothing", "Never"]
    assert jaccard_convergence(claims) == pytest.approx(0.4 / 3, abs=1e-15)


def test_jaccard_uses_sets_and_ascii_word_splitting():
    # repeats do not count; "café" splits into "caf" (é is a separator, as JS \W is ASCII-only)
    assert jaccard_convergence(["should should should", "should"]) == 1.0
    assert jaccard_convergence(["cafés maybe", "caf"]) == 0.0  # union {maybe} only -> 0/1
    # em-dash separates: "policy—based" is "policy" + "based"
    assert jaccard_convergence(["policy—based", "policy based"]) == 1.0


def test_jaccard_edge_cases():
    assert jaccard_convergence([]) is None
    assert jaccard_convergence(["only one agent spoke"]) is None
    assert jaccard_convergence(["No", "Yes"]) == 0.0  # no 5+ tokens: union empty -> pair scores 0
    assert jaccard_convergence(["identical claims here", "identical claims here"]) == 1.0


# ── TF-IDF ───────────────────────────────────────────────────────────────────────────────────
CLAIMS = ["cats eat fish", "cats eat mice", "dogs eat meat"]


def test_tfidf_unsmoothed_hand_computed():
    # N = 3; df: cats 2, eat 3, fish/mice/dogs/meat 1; tf = 1/3 for every term.
    # idf = ln(N/df): cats ln 1.5, eat ln 1 = 0, the rest ln 3.
    # v1 = (cats ln1.5, fish ln3)/3, v2 = (cats ln1.5, mice ln3)/3, v3 = (dogs ln3, meat ln3)/3
    # cos(v1,v2) = ln1.5^2 / (ln1.5^2 + ln3^2) = 0.16440195 / 1.37135086 = 0.11988321
    # cos(v1,v3) = cos(v2,v3) = 0 (only "eat" is shared, with weight 0)
    # mean = 0.11988321 / 3 = 0.03996107
    assert tfidf_convergence(CLAIMS, smooth=False) == pytest.approx(0.0399610710213297, abs=1e-15)


def test_tfidf_smoothed_hand_computed():
    # idf + 1: cats 1.40546511, eat 1, the rest 2.09861229 (tf 1/3 cancels in the cosine)
    # |v1|^2 = |v2|^2 = 1.40546511^2 + 1 + 2.09861229^2 = 1.97533 + 1 + 4.40417 = 7.37950
    # |v3|^2 = 2 * 4.40417 + 1 = 9.80835
    # cos(v1,v2) = (1.97533 + 1) / 7.37950 = 0.40319
    # cos(v1,v3) = cos(v2,v3) = 1 / sqrt(7.37950 * 9.80835) = 0.11754
    # mean = (0.40319 + 2 * 0.11754) / 3 = 0.21276
    assert tfidf_convergence(CLAIMS, smooth=True) == pytest.approx(0.2127566804960319, abs=1e-15)


def test_tfidf_edge_cases():
    same = ["same words here", "same words here"]
    assert tfidf_convergence(same, smooth=False) == 0.0  # every idf is ln(2/2) = 0
    assert tfidf_convergence(same, smooth=True) == 1.0
    assert tfidf_convergence(["two documents only", "another document"], smooth=False) == 0.0
    assert tfidf_convergence(["No", "Yes"], smooth=True) == 0.0  # nothing of 3+ chars: empty vectors
    assert tfidf_convergence(["one claim"], smooth=True) is None
    assert tfidf_convergence([], smooth=False) is None


def test_tfidf_counts_repeats():
    # bag, not set: "risk risk gain" vs "risk gain gain", N = 2, smoothed idf 1 for both terms
    # v1 = (risk 2/3, gain 1/3), v2 = (risk 1/3, gain 2/3): cos = (2/9 + 2/9) / (5/9) = 0.8
    assert tfidf_convergence(["risk risk gain", "risk gain gain"], smooth=True) == pytest.approx(0.8, abs=1e-15)


def test_failed_traces_and_empty_claims_are_excluded():
    traces = [T(claim="A usable claim here", ok_flag=True), T(claim="[PARSE FAILED]"),
              T(claim="Another usable claim", ok_flag=False), T(claim=""), T(claim=None), None,
              T(claim="Second usable claim here")]
    assert usable_claims(traces) == ["A usable claim here", "Second usable claim here"]


def test_fdlibm_log_is_v8s_math_log():
    def bits(x: float) -> int:
        return struct.unpack(">q", struct.pack(">d", x))[0]
    assert bits(math.log(3.0)) - bits(fdlibm_log(3.0)) == 1  # one ulp below the correctly rounded ln 3
    for x in (1.5, 2.0, 0.5, 10.0, 1e-300, 7.0 / 3.0):
        assert abs(fdlibm_log(x) - math.log(x)) <= 2 * math.ulp(math.log(x))
    assert fdlibm_log(1.0) == 0.0 and fdlibm_log(0.0) == -math.inf and math.isnan(fdlibm_log(-1.0))


def test_lowercasing_matches_js_to_lower_case_for_tokens():
    # The only non-ASCII code points whose lower case holds an ASCII word character:
    # U+0130 -> "i" + combining dot (a separator), U+212A Kelvin sign -> "k".
    assert js_words("\u0130STANBUL") == ["i", "stanbul"]
    assert js_words("\u212aELVIN") == ["kelvin"]
    assert js_words("Ünïcode—naïve ΣΟΦΙΑ") == ["n", "code", "na", "ve"]


def test_only_two_non_ascii_code_points_lower_case_to_ascii_word_characters():
    # Why folding those two explicitly reproduces JS toLowerCase + /\W+/ whatever Python's
    # Unicode version: every other non-ASCII character stays a separator after lower-casing.
    word = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
    found = {cp for cp in range(0x80, 0x110000)
             if not 0xD800 <= cp <= 0xDFFF and word & set(chr(cp).lower())}
    assert found == {0x130, 0x212A}
    for cp in found:  # the explicit fold agrees with Python's (and JS's) lower case
        assert js_words(chr(cp) + "x") == [w for w in re.split(r"[^A-Za-z0-9_]+", (chr(cp) + "x").lower()) if w]


def test_shared_prior_warning_is_inclusive_at_040():
    assert shared_prior_warning(0.40) is True  # SPEC: >= 0.40 (ARM's UI used > 0.4)
    assert shared_prior_warning(0.3999999) is False
    assert shared_prior_warning(None) is False


# ── Drift ────────────────────────────────────────────────────────────────────────────────────
def test_harness_delta_is_plain_unrounded_subtraction():
    assert harness_delta(0.68, 0.72) == -0.039999999999999925
    assert harness_delta(0.7, None) is None and harness_delta(True, 0.5) is None
    assert harness_delta("0.7", 0.5) is None


def test_delta_mismatch_is_strictly_greater_than_002():
    assert delta_mismatch(0.02, 0.0) is False  # exactly 0.02 apart: not a mismatch
    assert delta_mismatch(-0.02, 0) is False
    assert delta_mismatch(0.0201, 0.0) is True
    assert delta_mismatch(0.03, 0.0) is True
    # binary noise counts exactly as it did in ARM's JS:
    assert delta_mismatch(0.06, 0.04) is False  # |0.06 - 0.04| = 0.019999999999999997
    assert delta_mismatch(0.27, 0.25) is True  # |0.27 - 0.25| = 0.020000000000000018
    assert delta_mismatch(None, 0.1) is False and delta_mismatch(0.1, None) is False


@pytest.mark.parametrize("delta, band, legacy", [
    (-0.2, "large downward shift", "deep tightening"),
    (-0.15, "downward shift", "epistemic tightening"),
    (-0.04, "downward shift", "epistemic tightening"),
    (0, "no shift", "epistemic tightening"),
    (0.04, "minor shift", "minor shift"),
    (0.040000000000000036, "upward shift", "⚠ memetic drift"),
    (0.1, "upward shift", "⚠ memetic drift"),
    ("−0.05", "downward shift", "epistemic tightening"),  # Unicode minus accepted
    ("abc", "⚠ invalid delta", "⚠ invalid delta"),
    (None, "—", "—"),
])
def test_bands(delta, band, legacy):
    assert drift_band(delta) == band and drift_band_legacy(delta) == legacy


def test_run_level_flags():
    a = T(claim="x", drift_score={"confidence_delta": 0.05})
    b = T(claim="y", drift_score={"confidence_delta": 0.04})
    assert fap_drift_triggered(a, b) is True and fap_drift_triggered(b, b) is False
    # the SELF-REPORTED delta decides, not the harness value
    h = T(claim="y", drift_score={"confidence_delta": 0.0, "harness_confidence_delta": 0.3})
    assert fap_drift_triggered(h, None) is False
    assert gamma_drift_exceeded(T(claim="g", self_delta_vs_baseline=0.06)) is True
    assert gamma_drift_exceeded(T(claim="[PARSE FAILED]", self_delta_vs_baseline=0.06)) is False
    clean, warn = {"status": "clean"}, {"status": "warning"}
    assert self_check_divergence([T(claim="a", self_check=clean), T(claim="b", self_check=warn)]) is True
    assert self_check_divergence([T(claim="a", self_check=clean), T(claim="[PARSE FAILED]",
                                                                     self_check={"status": "failed"})]) is False


# ── Direction, verdict, unanimity ────────────────────────────────────────────────────────────
@pytest.mark.parametrize("claim, direction", [
    ("No — the researcher should not disclose", "no"),
    ("Yes, act now", "yes"),
    ("Nobody should act", "yes"),  # "no" must be a whole word at the start
    ("The AI should NOT autonomously sever the connection", "no"),
    ("The system must not override the refusal", "no"),
    ("It cannot be justified", "no"),
    ("The researcher should publicly disclose", "yes"),
    ("The AI should refrain from deploying", "yes"),  # not a negation phrase (FORMAT: q201 miss)
    ("It should be done, but not now", "unknown"),
    ("The Vietnam War was not a just war", "unknown"),
    ("[PARSE FAILED]", "unknown"),
    ("[FAP — Gamma R2 aborted]", "unknown"),
    ("", "unknown"),
])
def test_claim_direction(claim, direction):
    assert claim_direction(claim) == direction


def test_verdict_prefers_the_structured_field():
    assert verdict_of(T(claim="The AI should act", verdict=" Conditional ")) == "conditional"
    assert verdict_of(T(claim="The AI should act", verdict="maybe")) == "yes"
    assert verdict_of(None) == "unknown"


@pytest.mark.parametrize("v1, v2, kind", [
    ("yes", "no", "flip"), ("no", "yes", "flip"), ("yes", "yes", "none"),
    ("yes", "conditional", "shift"), ("conditional", "no", "shift"),
    ("unknown", "no", "unknown"), (None, "yes", "unknown"),
])
def test_verdict_transition(v1, v2, kind):
    assert verdict_transition(v1, v2) == kind


def test_directional_unanimity():
    yes = [T(claim="We should act", ok_flag=True), T(claim="Yes.", verdict="yes"), T(claim="x", verdict="yes")]
    assert directional_unanimity(yes) is True
    assert directional_unanimity(yes[:2] + [T(claim="x", verdict="conditional")]) is False
    assert directional_unanimity(yes[:2] + [T(claim="No.")]) is False
    assert directional_unanimity(yes[:2] + [T(claim="[PARSE FAILED]")]) is True  # failed: left out
    assert directional_unanimity(yes[:1]) is None


# ── Disagreement ─────────────────────────────────────────────────────────────────────────────
def test_disagreement_enum():
    assert all(valid_disagreement(v) for v in ("none", "information", "reasoning", "values"))
    assert not valid_disagreement("Values") and not valid_disagreement(None)


def test_disagreement_second_opinion_rules():
    def side(v, basis, flags=()):
        return T(claim="c", verdict=v, decision_basis=basis, flags=list(flags))
    assert disagreement_second_opinion(side("no", "hybrid"), side("no", "hybrid"))[0] == "none"
    assert disagreement_second_opinion(side("no", "deontological"), side("yes", "utilitarian"))[0] == "values"
    assert disagreement_second_opinion(side("no", "hybrid"),
                                       side("conditional", "hybrid", ["incomplete_data"]))[0] == "information"
    assert disagreement_second_opinion(side("no", "hybrid"), side("conditional", "hybrid"))[0] == "reasoning"
    assert disagreement_second_opinion(side("no", "deontological"), side("no", "utilitarian"))[0] == "reasoning"
    assert disagreement_second_opinion(side("no", "hybrid"), side("yes", "utilitarian"))[0] == "reasoning"
    assert disagreement_second_opinion(side("no", "hybrid"), None)[0] is None
    assert disagreement_second_opinion(T(claim="unreadable"), side("no", "hybrid"))[0] is None
