"""``metrics_report``: the SPEC §4 JSON for ``rwb arm metrics FILE``.

Recomputes everything from the file's own traces with the rules of its own version (``version``:
which rules its build had, see :mod:`.versions`), reports the workbench's readings (bands, gate,
unanimity, disagreement second opinion) and lists every stored value next to its recomputation
(see :mod:`.stored`). ``notes`` says when the version is one the workbench does not know.
"""

from __future__ import annotations

from typing import Any

from workbench.core.protocols.arm.gates import fap_drift_agents, polarity_gate, silent_baseline_failed
from workbench.core.protocols.arm.js import is_js_number
from workbench.core.protocols.arm.metrics import (
    DISAGREEMENT_TYPES,
    delta_mismatch,
    directional_unanimity,
    disagreement_second_opinion,
    drift_band,
    drift_band_legacy,
    gamma_drift_exceeded,
    harness_delta,
    run_convergence,
    self_check_divergence,
    shared_prior_warning,
    verdict_of,
)
from workbench.core.protocols.arm.stored import stored_checks, unexplained
from workbench.core.protocols.arm.trace import ArmRun, Trace, parse_run
from workbench.core.protocols.arm.versions import POLARITY_GATE

__all__ = ["metrics_report", "run_report"]


def _num(value: Any) -> float | None:
    return value if is_js_number(value) else None


def _agent(r1: Trace | None, r2: Trace | None, *, gamma: bool = False, baseline: Trace | None = None) -> dict:
    """cr1, cr2, the harness delta (gamma: against the silent baseline), bands, mismatch."""
    cr1 = _num(r1.confidence) if isinstance(r1, Trace) else None
    cr2 = _num(r2.confidence) if isinstance(r2, Trace) and r2.ok else None
    out: dict[str, Any] = {"cr1": cr1, "cr2": cr2}
    if gamma:
        base = _num(baseline.confidence) if isinstance(baseline, Trace) else None
        out["baseline"] = base
        delta = harness_delta(cr2, base)
        reported = r2.self_delta_vs_baseline if isinstance(r2, Trace) else None
    else:
        delta = harness_delta(cr2, cr1)
        reported = r2.confidence_delta if isinstance(r2, Trace) else None
    out.update({
        "delta": delta,
        "band": drift_band(delta),
        "band_legacy": drift_band_legacy(delta),
        "reported_delta": reported,
        "delta_mismatch": delta_mismatch(reported, delta),
        "verdict_r1": verdict_of(r1) if isinstance(r1, Trace) and r1.ok else "unknown",
        "verdict_r2": verdict_of(r2) if isinstance(r2, Trace) and r2.ok else "unknown",
    })
    return out


def run_report(run: ArmRun, source: dict | None = None) -> dict:
    """The report for an already parsed run (``source``: the JSON it came from, for the hash)."""
    conv = run_convergence(run)
    a1, b1, g1, s1 = (run.trace(1, r) for r in ("alpha", "beta", "gamma", "silent"))
    a2, b2, g2 = (run.trace(2, r) for r in ("alpha", "beta", "gamma"))
    gate = polarity_gate(g1, g2, s1)
    stored_class = g2.disagreement_classification if isinstance(g2, Trace) else None
    valid = stored_class in DISAGREEMENT_TYPES
    second, rule = disagreement_second_opinion(a2, b2)
    checks = []
    if isinstance(g2, Trace) and g2.ok:
        vic = g2.values_in_conflict
        if stored_class == "values" and not (isinstance(vic, list) and vic):
            checks.append("classification is values but values_in_conflict is empty")
        if stored_class != "values" and isinstance(vic, list) and vic:
            checks.append("values_in_conflict is non-empty but the classification is not values")
    build = run.build
    stored = stored_checks(run, source)
    r2_block = run.r2 if isinstance(run.r2, dict) else {}
    gamma_agent = _agent(g1, g2, gamma=True, baseline=s1)
    gamma_agent["silent_agent"] = run.meta.silent_agent
    return {
        "schema_version": build.schema,  # top level, else runMeta's
        "generation": build.label,
        "arm_version": run.arm_version,
        "version": build.to_json(),  # the rules of the trace's own version, and why (SPEC §11)
        "jaccard_convergence": conv["jaccard"],
        "tfidf_convergence": conv["tfidf"],
        "tfidf_idf": conv["idf"],
        "convergence_claims": conv["claims"],
        "shared_prior_warning": shared_prior_warning(conv["jaccard"]),
        "directional_unanimity": directional_unanimity([a1, b1, g1]),
        "verdicts_r1": {role: (verdict_of(t) if isinstance(t, Trace) and t.ok else "unknown")
                        for role, t in (("alpha", a1), ("beta", b1), ("gamma", g1), ("silent", s1))},
        "disagreement_type": stored_class if valid else None,
        "disagreement_type_stored": stored_class,
        "disagreement_type_valid": valid,
        "disagreement_second_opinion": {
            "type": second, "rule": rule,
            "agrees_with_gamma": (second == stored_class) if second is not None and valid else None},
        "disagreement_checks": checks,
        "agents": {"alpha": _agent(a1, a2), "beta": _agent(b1, b2), "gamma": gamma_agent},
        "polarity_gate": {
            "fired": gate.fired,
            "reconciliation_status": g2.reconciliation_status if isinstance(g2, Trace) else None,
            "transition": gate.transition,
            "gamma_r1_verdict": gate.r1_verdict,
            "gamma_r2_verdict": gate.r2_verdict,
            "gamma_silent_verdict": verdict_of(s1) if isinstance(s1, Trace) and s1.ok else "unknown",
            "verdict_shift": gate.verdict_shift,
            "stored_fired": bool(run.meta.polarity_gate_fired or (isinstance(g2, Trace) and g2.polarity_gate_fired)),
            "gate_in_build": build.has(POLARITY_GATE),
        },
        "fap": {
            "drift_triggered": bool(fap_drift_agents(r2_block)),
            "drift_agents": fap_drift_agents(r2_block),
            "gamma_drift_exceeded": gamma_drift_exceeded(g2),
            "silent_baseline_failed": silent_baseline_failed(s1),
        },
        "self_check_divergence": self_check_divergence([a1, b1, g1]),
        "stored": stored,
        "summary": {
            "stored_values": len(stored),
            "matched": sum(1 for s in stored if s["match"] is True),
            "mismatched": sum(1 for s in stored if s["match"] is False),
            # values the trace's own (older) rule gives where today's rule gives another
            "older_rule": sum(1 for s in stored if "today" in s),
            "unexplained": sum(1 for s in stored if unexplained(s)),
            "not_recomputable": sum(1 for s in stored if s["match"] is None),
        },
        "notes": list(build.notes),
    }


def metrics_report(run_json: dict) -> dict:
    """SPEC §4 ``rwb arm metrics`` JSON for an ARM export (any corpus schema, or the workbench's)."""
    return run_report(parse_run(run_json), run_json)


# ----- the ARM section of a run's Markdown report ---------------------------------------------

ROLE_LABELS = {"alpha": "alpha (deontological)", "beta": "beta (consequentialist)", "gamma": "gamma (reconciler)",
               "silent": "gamma-silent (baseline, sees no peer)"}


def _disagreement(kind: object) -> str:
    from workbench.core import report_md as md

    return "none (no disagreement)" if kind == "none" else md.label(kind).lower() if kind else "—"


def markdown_lines(a: dict, traces: list[dict]) -> list[str]:
    """The ARM section: convergence, drift per agent, the gates, the disagreement, and every claim.

    ``a`` is :func:`run_report`'s dict; ``traces`` the run's traces (round, role, attempt, current,
    ok, claim, verdict, confidence), in round order.
    """
    from workbench.core import report_md as md

    second = a.get("disagreement_second_opinion") or {}
    gate = a.get("polarity_gate") or {}
    fap = a.get("fap") or {}
    lines = [
        "## How to read this report", "",
        "ARM asks the same question of two framed agents, alpha (duties and rights) and beta "
        "(consequences), then of gamma, who reconciles them in round 2. gamma-silent answers round 1 "
        "without seeing anyone, as a baseline. *Convergence* says how alike the round-1 claims are "
        "(0 = nothing shared, 1 = the same words). *Drift* is the change in an agent's self-reported "
        "confidence from round 1 to round 2 (gamma's against the silent baseline); its bands are "
        "descriptive only. The *polarity gate* fires when gamma reverses a firm yes/no between rounds. "
        "Numbers are rounded; the exact values are in the JSONL and CSV exports.", "",
        "## Convergence and agreement", "",
        f"- **Jaccard convergence**: {md.num(a.get('jaccard_convergence'))}",
        f"- **TF-IDF convergence**: {md.num(a.get('tfidf_convergence'))} ({md.text(a.get('tfidf_idf') or '—')} idf)",
        f"- **Directional unanimity**: {md.yes_no(a.get('directional_unanimity'))} (round-1 verdicts: "
        + ", ".join(f"{md.text(r)} {md.text(v)}" for r, v in (a.get("verdicts_r1") or {}).items()) + ")",
        f"- **Disagreement type (gamma)**: {_disagreement(a.get('disagreement_type') or a.get('disagreement_type_stored'))}"
        + ("" if a.get("disagreement_type_valid", True) else " (not one of none, information, reasoning, values)"),
        f"- **Second opinion (the workbench's rule)**: {_disagreement(second.get('type'))}"
        + (f": {md.text(second.get('rule'))}" if second.get("rule") else "")
        + {True: " — agrees with gamma", False: " — differs from gamma", None: ""}[second.get("agrees_with_gamma")],
    ]
    if a.get("shared_prior_warning"):
        lines.append("- **Shared-prior warning**: the round-1 claims are so alike that the agents may share a prior.")
    lines += [*(f"- **Check**: {md.text(c)}" for c in a.get("disagreement_checks") or []), "",
              "## Drift per agent", ""]
    rows = []
    for role, ag in (a.get("agents") or {}).items():
        base = f" (baseline {md.num(ag.get('baseline'))})" if role == "gamma" else ""
        rows.append([md.text(ROLE_LABELS.get(role, role)), md.num(ag.get("cr1")), md.num(ag.get("cr2")) + base,
                     md.signed(ag.get("delta")), md.label(ag.get("band")),
                     f"{md.text(ag.get('verdict_r1'))} → {md.text(ag.get('verdict_r2'))}",
                     "yes" if ag.get("delta_mismatch") else "no"])
    lines += md.table(["Agent", "Confidence R1", "Confidence R2", "Drift", "Band", "Verdict R1 → R2",
                       "Self-report differs"], rows)
    lines += ["", "## Gates", "",
              f"- **Polarity gate**: {'fired' if gate.get('fired') else 'did not fire'} (gamma "
              f"{md.text(gate.get('gamma_r1_verdict'))} → {md.text(gate.get('gamma_r2_verdict'))}; reconciliation "
              f"{md.text(gate.get('reconciliation_status') or '—')})",
              f"- **FAP re-queue** (a drifting agent answers round 2 again, without its peers): {'triggered by ' + md.text(', '.join(fap.get('drift_agents') or [])) if fap.get('drift_triggered') else 'not triggered'}"
              + ("; gamma's drift exceeded the limit" if fap.get("gamma_drift_exceeded") else ""),
              f"- **Self-check divergence**: {md.yes_no(a.get('self_check_divergence'))}", "",
              "## Claims", ""]
    if not traces:
        lines += ["No trace was stored.", ""]
    for t in traces:
        attempt = f", attempt {t['attempt']}" if (t.get("attempt") or 1) > 1 else ""
        kept = "" if t.get("current", True) else " (not kept)"
        head = f"### Round {t.get('round')}: {md.text(ROLE_LABELS.get(t.get('role'), t.get('role')))}{attempt}{kept}"
        lines += [head, ""]
        if not t.get("ok", True):
            lines += ["The trace failed validation.", ""]
        lines += [*md.block(t.get("claim") or "(no claim)"), "",
                  f"- **Verdict**: {md.text(t.get('verdict') or '—')}; **confidence**: {md.num(t.get('confidence'))}", ""]
    return lines


ROLE_ORDER = {"alpha": 0, "beta": 1, "gamma": 2, "silent": 3}


def section(view) -> list[str]:
    """ARM's section of a run's report (``Protocol.report``): :func:`markdown_lines` of the
    stored metrics report and the run's traces, in round then role order (``view``: a
    ``shared.declaration.RunView``). Nothing when the run stored no report (one not finished)."""
    if not view.summary.get("arm"):
        return []
    traces = sorted(view.records("trace"), key=lambda t: (t["round"], ROLE_ORDER.get(t["role"], 9), t["attempt"] or 0))
    return markdown_lines(view.summary["arm"], traces)
