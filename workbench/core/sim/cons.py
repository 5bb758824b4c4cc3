"""sim's ballots for the CONS protocol: one option, accept / reject / abstain, a confidence, a
rationale and evidence, as the ballot format asks.

Each option has a utility for the agent (:func:`utilities`): how well the evidence supports it
(the bank's ``support``, weighted more by a strict agent), how close it sits to the agent's
stance, a fixed per-agent taste (seeded, so it does not change between rounds) and, in challenge
rounds, the share of the peers' confidence behind it (the pull grows with sycophancy). With
several options the agent accepts the best one. With a single claim it accepts above a threshold
and otherwise rejects, citing the bank's counter-proof when it finds it (more often when strict).
The human decision (``hitl_decision``) is never answered by sim.

sim reads what the call was made of (the step's values: the question, the options, the peers'
positions), never the prompt's wording, so an edited template changes no simulated ballot.
"""

from __future__ import annotations

import ast
import json
import re

from workbench.core.sim.scenarios import Option, Scenario
from workbench.core.sim.text import Ask, clamp, join_sentences, r2

# A peer's position as the challenge round gives it (cons.run.POSITION_LINE): vote, option (quoted
# as Python writes a string) and confidence; the rationale after it is not read.
_PEER = re.compile(r"^- Agent \d+: (accept|reject|abstain) ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\") "
                   r"\(([0-9.eE+-]+)\): ", re.M)
SINGLE_CLAIM_BAR = 1.5  # + 0.5 * strictness: the utility a single claim needs to be accepted


def peers_of(positions: str) -> list[tuple[str, str, float]]:
    """(vote, option, confidence) of each peer in a challenge round's ``positions``."""
    peers = []
    for m in _PEER.finditer(positions):
        try:
            option, conf = ast.literal_eval(m.group(2)), float(m.group(3))
        except (ValueError, SyntaxError):
            continue
        if isinstance(option, str):
            peers.append((m.group(1), option, conf))
    return peers


def _options_for(ask: Ask, question: str, names: list[str]) -> tuple[Scenario, list[Option]]:
    scenario = ask.bank.find(question, "cons", question=question)
    names = names or ([o.name for o in scenario.options] if scenario else ["The proposal"])
    generic = ask.bank.fill_generic(question, options=names)
    chosen = [(scenario.option(n) if scenario else None) or generic.option(n) for n in names]
    return scenario or generic, [o.model_copy(update={"name": n}) for o, n in zip(chosen, names)]


def utilities(ask: Ask, scenario: Scenario, options: list[Option],
              peers: list[tuple[str, str, float]]) -> list[float]:
    persona = ask.persona
    taste = ask.latent(scenario, what="cons-taste")
    position = clamp(persona.stance + ask.latent(scenario).gauss(0.0, 0.06))
    total = sum(c for v, _, c in peers if v != "abstain") or 1.0
    pull = 0.3 + 1.5 * persona.sycophancy
    out = []
    for o in options:
        u = (1.5 + persona.strictness) * o.support + (1.0 - abs(position - o.stance))
        u += taste.gauss(0.0, 0.25 * (1.0 - 0.5 * persona.strictness))
        share = sum(c if v == "accept" else -c for v, n, c in peers if n == o.name and v != "abstain") / total
        out.append(u + pull * share)
    return out


def _evidence(items: list, k: int, ask: Ask) -> list[dict]:
    picks = ask.rng.sample(items, min(len(items), k))
    return [e.model_dump() for e in picks]


def _confidence(ask: Ask, support: float, margin: float, agreement: float) -> float:
    c = ask.persona.confidence + 0.25 * (support - 0.5) + 0.08 * clamp(margin, -1, 1) + 0.05 * agreement
    return r2(clamp(c + ask.rng.gauss(0.0, 0.04), 0.05, 0.99))


def ballot(ask: Ask) -> tuple[str, dict]:
    question = str(ask.input("question", ""))
    names = [str(o) for o in ask.input("options") or []]
    peers = peers_of(str(ask.input("positions") or ""))
    scenario, options = _options_for(ask, question, names)
    meta = {"scenario": scenario.id, "challenge_round": bool(peers)}
    if ask.malformed:
        first = options[0].name
        forms = ("Maybe.",
                 json.dumps({"option": first, "vote": "maybe", "confidence": 0.6, "rationale": "Not sure."}),
                 json.dumps({"option": first, "vote": "accept", "confidence": 1.3, "rationale": "Certain."}),
                 json.dumps({"option": first, "vote": "accept", "confidence": 0.7}))
        return ask.rng.choice(forms), {**meta, "malformed": True}
    rng, persona = ask.rng, ask.persona
    us = utilities(ask, scenario, options, peers)
    n_reasons = 1 + round(persona.verbosity * 2)
    n_evidence = 1 + (persona.verbosity > 0.6)
    if len(options) == 1:
        (o,), u = options, us[0]
        bar = SINGLE_CLAIM_BAR + 0.5 * persona.strictness
        if u >= bar:
            vote, pool, evidence = "accept", o.reasons, _evidence(o.evidence, n_evidence, ask)
        else:
            vote, pool = "reject", (o.objections or ["The claim is not supported by what I could check."])
            found = o.counter_proof is not None and rng.random() < 0.4 + 0.5 * persona.strictness
            evidence = [o.counter_proof.model_dump()] if found else _evidence(o.evidence, 1, ask)
        option, margin, support = o, abs(u - bar), o.support if vote == "accept" else 1 - o.support
    else:
        ranked = sorted(range(len(options)), key=lambda i: -us[i])
        best, runner = ranked[0], ranked[1]
        margin = us[best] - us[runner]
        option, support = options[best], options[best].support
        if margin < 0.05 and persona.strictness > 0.7:
            vote, pool, evidence = "abstain", ["The options are too close to call on the evidence I have."], []
        else:
            vote, pool, evidence = "accept", option.reasons, _evidence(option.evidence, n_evidence, ask)
    sentences = rng.sample(pool, min(len(pool), n_reasons))
    if vote == "accept" and len(options) > 1 and persona.verbosity > 0.6:
        other = options[runner]
        if other.objections:
            sentences.append(f"Against {other.name}: {rng.choice(other.objections)}")
    agreement = sum(c for v, n, c in peers if v == vote and n == option.name) / (sum(c for *_, c in peers) or 1.0)
    confidence = _confidence(ask, support, margin, agreement)
    ballot_json = {"option": option.name, "vote": vote, "confidence": confidence,
                   "rationale": join_sentences(sentences, rng), "evidence": evidence}
    return json.dumps(ballot_json, ensure_ascii=False), {**meta, "utilities": [round(u, 4) for u in us]}


# What answers each CONS step (the declaration's ``sim`` names this module); the conductor's
# decision has none: a person decides it.
HANDLERS = {"ballot": ballot, "challenge": ballot}
