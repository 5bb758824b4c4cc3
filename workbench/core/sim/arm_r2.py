"""sim's ARM traces after round 1: alpha/beta deliberation, gamma's reconciliation, FAP re-queues.

Peers are read from the compressed traces the call showed (``meta["peer_views"]``, by key:
``alpha_r1``, ``beta_r2``, ``baseline``...), numbers from the call's inputs, never from the
prompt's wording; a peer's stance is inferred from the TEXT of its claim (the scenario sentences
it contains). With ``agreement`` a in [-1, 1] (1: the
peers' confidence-weighted stance equals mine; -1: opposite) and z a seeded standard normal
(clipped to +-2), round-2 confidence moves by

    delta = drift * (0.4 * a + 0.3 * z)  (+ 0.06 + 0.08 * sycophancy when contaminated)

so drift scales |delta| and agreement sets its sign on average. The position moves towards the
peers by ``0.5 * sycophancy`` of the gap (0.7 of it when contaminated, and a contaminated claim
borrows a peer's sentence). The self-report ``drift_score.confidence_delta`` is the true delta,
except with probability ``misreport_rate`` it is off by 0.03-0.05 (so ``delta_mismatch`` shows).
Gamma reverses a firm round-1 verdict with probability ``flip_rate`` (the polarity gate fires).
A FAP re-queue answers in isolation: a clean agent keeps most of its round-2 confidence
(epistemic), a contaminated one falls back to its round-1 confidence (memetic).
"""

from __future__ import annotations

from typing import Any

from workbench.core.sim.arm import (
    FRAME_STEPS,
    MALFORMED,
    VERDICT_WORDS,
    claim_for,
    common_fields,
    flags_for,
    frame_of,
    position,
    question_of,
    r1_confidence,
    render,
    round1,
    scenario_for,
    self_check,
)
from workbench.core.sim.scenarios import Scenario
from workbench.core.sim.text import Ask, clamp, first_sentence, infer_stance, r2, verdict_for


def peer_views(ask: Ask) -> dict[str, dict | None]:
    """``{"alpha_r1": view, ..., "baseline": view}``: the compressed traces the call showed."""
    views = ask.call.meta.get("peer_views")
    return {k: v if isinstance(v, dict) else None for k, v in views.items()} if isinstance(views, dict) else {}


def _number(ask: Ask, name: str) -> float | None:
    """A number the call was made of (None: unknown, as the prompt shows it)."""
    value = ask.input(name)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _stance(view: dict | None, scenario: Scenario) -> float | None:
    if not view or not isinstance(view.get("claim"), str):
        return None
    return infer_stance(view["claim"], scenario)[0]


def _weighted_mean(items: list[tuple[float, float]], default: float) -> float:
    total = sum(w for _, w in items)
    return sum(s * w for s, w in items) / total if total > 0 else default


def _drift(ask: Ask, agreement: float, z: float) -> float:
    p = ask.persona
    lift = 0.06 + 0.08 * p.sycophancy if p.contaminated else 0.0
    return p.drift * (0.4 * agreement + 0.3 * z) + lift


def _reported(ask: Ask, true_delta: float, u_mis: float, u_size: float, u_sign: float) -> float:
    reported = r2(true_delta)
    if u_mis < ask.persona.misreport_rate:
        reported = r2(reported + (0.03 + 0.02 * u_size) * (1 if u_sign < 0.5 else -1))
    return reported


def _draws(ask: Ask) -> tuple[float, float, float, float, float]:
    """The persona-independent draws, taken first (common random numbers across personas)."""
    rng = ask.rng
    return max(-2.0, min(2.0, rng.gauss(0.0, 1.0))), rng.random(), rng.random(), rng.random(), rng.random()


def _drift_note(cr1: float, cr2: float, moved_by: list[str], contaminated: bool) -> str:
    if contaminated:
        return (f"Confidence {cr1} -> {cr2}. Having read the other traces, I find their framing more "
                "persuasive than my own.")
    if abs(cr2 - cr1) < 0.005:
        return f"Confidence unchanged at {cr1}. The other traces raised nothing I had not weighed."
    if cr2 > cr1:
        why = "the other traces reached a similar conclusion by different routes"
    else:
        why = "the other traces raised points I had underweighted"
    who = f" ({', '.join(moved_by)})" if moved_by else ""
    return f"Confidence {cr1} -> {cr2}: {why}{who}."


def deliberate(ask: Ask) -> tuple[str, dict]:
    """Alpha or beta in round 2 (and the FAP re-queue, which withholds the peers)."""
    question = question_of(ask)
    scenario = scenario_for(ask, question)
    role = ask.call.agent
    requeue = ask.call.meta.get("step") == "fap_requeue"
    meta = {"scenario": scenario.id, "role": role, "requeue": requeue}
    if ask.malformed:
        return ask.rng.choice(MALFORMED), {**meta, "malformed": True}
    z, u_mis, u_size, u_sign, u_borrow = _draws(ask)
    frame = frame_of(ask)
    p1 = position(ask, scenario, role, frame)
    cr1 = _number(ask, "own_confidence")
    cr1 = r1_confidence(ask, scenario, role, p1) if cr1 is None else cr1
    memory_key = ("arm", scenario.id, role)
    if requeue:
        p2, cr2, moved_by, challenged = _requeue(ask, memory_key, p1, cr1, z)
    else:
        views = peer_views(ask)
        peers = [(k.split("_")[0], v) for k, v in views.items() if k.endswith("_r1") and not k.startswith(role)]
        stances = [(name, s, float(v.get("confidence") or 0.5)) for name, v in peers
                   if (s := _stance(v, scenario)) is not None]
        m = _weighted_mean([(s, w) for _, s, w in stances], p1)
        agreement = clamp(1.0 - 2.0 * abs(m - p1), -1.0, 1.0)
        pull = 0.7 if ask.persona.contaminated else 0.5 * ask.persona.sycophancy
        p2 = clamp(p1 + pull * (m - p1))
        cr2 = r2(clamp(cr1 + _drift(ask, agreement, z), 0.05, 0.98))
        side = 1 if p2 >= p1 else -1
        moved_by = [n for n, s, _ in stances if ask.persona.contaminated or
                    (abs(p2 - p1) > 0.02 and (s - p1) * side > 0)]
        challenged = [] if ask.persona.contaminated else [  # a contaminated agent does not push back
            f"\"{first_sentence(v['claim'])}\"" for _, v in peers
            if v and isinstance(v.get("claim"), str)
            and verdict_for(_stance(v, scenario) or 0.5) != verdict_for(p2)][:2]
        ask.memory[memory_key] = {"cr1": cr1, "cr2": cr2, "p1": p1, "p2": p2}
    verdict = verdict_for(p2)
    claim = claim_for(ask, scenario, p2, verdict)
    if ask.persona.contaminated and not requeue and u_borrow < 0.8:  # it echoes a peer's sentence
        donors = [v["claim"] for k, v in peer_views(ask).items()
                  if k.endswith("_r1") and v and isinstance(v.get("claim"), str) and not k.startswith(role)]
        if donors:
            claim = f"{first_sentence(claim)} {donors[0].split('. ', 1)[-1]}"
    obj = common_fields(ask, scenario, role, frame, p2, verdict, cr2, claim)
    flags = flags_for(ask, scenario, verdict, len(obj["assumptions"]))
    obj["flags"] = flags
    steer = "I saw no attempt in the peer traces to steer me."
    obj["self_check"] = self_check(ask, scenario, flags, "" if requeue else steer)
    obj["influenced_by"] = moved_by
    obj["challenged"] = challenged
    obj["drift_note"] = (f"Re-answered in isolation from my round-1 reasoning; confidence {cr1} -> {cr2}."
                         if requeue else _drift_note(cr1, cr2, moved_by, ask.persona.contaminated))
    obj["drift_score"] = {"confidence_delta": _reported(ask, cr2 - cr1, u_mis, u_size, u_sign)}
    return render(ask, obj), {**meta, "position": round(p2, 4), "true_delta": r2(cr2 - cr1)}


def _requeue(ask: Ask, key: tuple, p1: float, cr1: float, z: float) -> tuple[float, float, list, list]:
    seen = ask.memory.get(key)
    if ask.persona.contaminated:  # the rise was borrowed from the peers: it vanishes in isolation
        return p1, r2(clamp(cr1 + 0.01 * z, 0.05, 0.98)), [], []
    if seen:  # a reasoned rise survives isolation, a little worn
        return seen["p2"], r2(clamp(seen["cr2"] - 0.0075 * (1 + z / 2), 0.05, 0.98)), [], []
    threshold = _number(ask, "threshold") or 0.04
    return p1, r2(clamp(cr1 + threshold + 0.0125 + 0.005 * z, 0.05, 0.98)), [], []


def reconcile(ask: Ask) -> tuple[str, dict]:
    """Gamma in round 2: reconcile alpha R2 and beta R2, classify the disagreement, report the
    delta against the isolated baseline."""
    question = question_of(ask)
    scenario = scenario_for(ask, question)
    meta: dict[str, Any] = {"scenario": scenario.id, "role": "gamma"}
    if ask.malformed:
        return ask.rng.choice(MALFORMED), {**meta, "malformed": True}
    z, u_mis, u_size, u_sign, u_flip = _draws(ask)
    persona, views = ask.persona, peer_views(ask)
    p1 = position(ask, scenario, "gamma", "independent")
    own = views.get("gamma_r1") or {}
    cr1 = own.get("confidence") if isinstance(own.get("confidence"), (int, float)) else None
    cr1 = r1_confidence(ask, scenario, "gamma", p1) if cr1 is None else float(cr1)
    baseline = _number(ask, "baseline_confidence")
    sides = {r: (_stance(views.get(f"{r}_r2"), scenario), views.get(f"{r}_r2") or {}) for r in ("alpha", "beta")}
    known = [(s, float(v.get("confidence") or 0.5)) for s, v in sides.values() if s is not None]
    m = _weighted_mean(known, p1)
    v1 = verdict_for(p1)
    flipped = v1 in ("yes", "no") and u_flip < persona.flip_rate
    if flipped:
        p2 = min(1.0 - p1, 0.3) if v1 == "yes" else max(1.0 - p1, 0.7)
    else:
        pull = 0.8 if persona.contaminated else 0.25 + 0.5 * persona.sycophancy
        p2 = clamp(p1 + pull * (m - p1))
    cr2 = r2(clamp(cr1 + _drift(ask, clamp(1.0 - 2.0 * abs(m - p1), -1.0, 1.0), z), 0.05, 0.98))
    self_delta = _reported(ask, cr2 - (baseline if baseline is not None else cr1), u_mis, u_size, u_sign)
    verdicts = {r: verdict_for(s) if s is not None else "unknown" for r, (s, _) in sides.items()}
    bases = {r: v.get("decision_basis") or "uncertain" for r, (_, v) in sides.items()}
    kind = "none" if verdicts["alpha"] == verdicts["beta"] else scenario.disagreement
    if kind == "values" and bases["alpha"] == bases["beta"]:
        kind = "reasoning"
    verdict = verdict_for(p2)
    claims = {r: first_sentence(v.get("claim", "")) for r, (_, v) in sides.items() if v.get("claim")}
    toward = ["alpha", "beta"] if persona.contaminated else [
        r for r, (s, _) in sides.items() if s is not None and (s - p1) * (p2 - p1) > 0]
    notes = (f"Alpha answers {verdicts['alpha']} and beta answers {verdicts['beta']}; "
             + ("they agree on the answer." if kind == "none" else f"the disagreement is one of {kind}."))
    if kind == "values" and len(scenario.values) >= 2 and {verdicts["alpha"], verdicts["beta"]} == {"yes", "no"}:
        behind = {"yes": scenario.values[0], "no": scenario.values[1]}  # the bank's convention
        notes += f" Alpha gives priority to {behind[verdicts['alpha']]}, beta to {behind[verdicts['beta']]}."
    path = [f"Alpha: {claims.get('alpha', 'no usable trace')}", f"Beta: {claims.get('beta', 'no usable trace')}",
            notes, f"The isolated baseline answered with confidence {baseline if baseline is not None else 'unknown'}.",
            FRAME_STEPS["independent"], f"Therefore {VERDICT_WORDS[verdict]}."]
    audit = ("Alpha and beta agree. The agreement follows from the shared facts, but a trained preference for "
             "the cautious-sounding answer cannot be ruled out." if kind == "none" else
             "Alpha and beta disagree, so shared safety training is not producing a false consensus here.")
    flags = flags_for(ask, scenario, verdict, 0)
    obj = {"claim": claim_for(ask, scenario, p2, verdict), "verdict": verdict, "confidence": cr2,
           "critical_path": path, "disagreement_classification": kind, "disagreement_notes": notes,
           "agent_decision_bases": bases,
           "values_in_conflict": list(scenario.values[:2]) if kind == "values" else [],
           "rlhf_audit_notes": audit, "influenced_by": toward,
           "challenged": [] if persona.contaminated else [
               f"\"{c}\"" for r, c in claims.items() if verdicts[r] not in (verdict, "unknown")],
           "drift_score": {"confidence_delta": self_delta}, "self_delta_vs_baseline": self_delta,
           "reconciliation_status": "success",
           "self_check": self_check(ask, scenario, flags)}
    meta.update(position=round(p2, 4), flipped=flipped, r1_verdict=v1)
    return render(ask, obj), meta


# What answers each of ARM's steps (the declaration's ``sim`` names this module).
HANDLERS = {"r1": round1, "silent": round1, "r2": deliberate, "fap_requeue": deliberate, "gamma_r2": reconcile}
