"""sim's votes for the Consensus Server findings: confirm, challenge or uncertain, with a
confidence and a one-sentence reason.

A finding the bank knows carries its ground truth: a simulated agent judges it correctly most of
the time (:func:`confirm_probability`), an Auditor challenges more readily, a Scout confirms more
readily and a Dev is the most accurate. A finding the bank does not know has no ground truth:
the agent's stance then acts as its prior that such claims hold. A draw close to the decision
boundary gives "uncertain". Votes are independent (nobody sees a peer), so sycophancy has no
effect here.

sim reads what the call was made of (the step's values: the claim, the agent's role), never the
prompt's wording, so an edited template changes no simulated vote.
"""

from __future__ import annotations

import json

from workbench.core.sim.persona import SimPersona
from workbench.core.sim.text import Ask, as_clause, clamp, r2

ROLE_BIAS = {"scout": 0.05, "auditor": -0.08, "dev": 0.0}
ROLE_ACCURACY = {"dev": 0.05}
UNCERTAIN_BAND = 0.06
MALFORMED = ("Maybe.", '{"vote_type": "probably", "confidence": 0.6, "reason": "Looks plausible."}',
             '{"vote_type": "confirm", "confidence": 1.4, "reason": "Certain."}',
             '{"vote_type": "confirm", "confidence": "high", "reason": "Checked."}')


def confirm_probability(truth: bool | None, role: str, persona: SimPersona) -> float:
    bias, skill = ROLE_BIAS.get(role, 0.0), ROLE_ACCURACY.get(role, 0.0)
    if truth is True:
        p = 0.97 - 0.25 * persona.strictness + bias + skill
    elif truth is False:
        p = 0.30 - 0.35 * persona.strictness + bias - skill
    else:
        p = 0.25 + 0.5 * persona.stance - 0.2 * persona.strictness + bias
    return clamp(p, 0.02, 0.98)


def _role(ask: Ask) -> str:
    role = ask.input("role")
    return role.lower() if isinstance(role, str) and role else "scout"


def finding_vote(ask: Ask) -> tuple[str, dict]:
    claim = str(ask.input("claim") or "").strip()
    hit = ask.bank.find_finding(claim)
    if hit:
        scenario, item = hit
    else:
        scenario = ask.bank.fill_generic(claim, claim=claim)
        item = scenario.findings[0]
    meta = {"scenario": scenario.id, "finding": item.id, "truth": item.truth}
    if ask.malformed:
        return ask.rng.choice(MALFORMED), {**meta, "malformed": True}
    rng, persona, role = ask.rng, ask.persona, _role(ask)
    u, noise = rng.random(), rng.gauss(0.0, 0.05)
    p = confirm_probability(item.truth, role, persona)
    if abs(u - p) < UNCERTAIN_BAND:
        vote_type = "uncertain"
    else:
        vote_type = "confirm" if u < p else "challenge"
    correct = item.truth is None or (vote_type == "confirm") == item.truth
    if vote_type == "uncertain":
        confidence = clamp(persona.confidence * 0.6 + noise, 0.05, 0.95)
        doubt = rng.choice(item.against_reasons)
        reason = f"I could not settle it: {rng.choice(item.for_reasons).rstrip('.')}, but {as_clause(doubt)}."
    else:
        confidence = clamp(persona.confidence + (0.08 if correct else -0.08) + noise, 0.05, 0.99)
        pool = item.for_reasons if vote_type == "confirm" else item.against_reasons
        picks = rng.sample(pool, min(len(pool), 2 if persona.verbosity > 0.6 else 1))
        reason = " ".join(picks)
    text = json.dumps({"vote_type": vote_type, "confidence": r2(confidence), "reason": reason}, ensure_ascii=False)
    return text, {**meta, "role": role, "p_confirm": round(p, 4)}


# What answers each findings step (the declaration's ``sim`` names this module).
HANDLERS = {"vote": finding_vote}
