"""sim's replies for the Resonant Consensus Protocol: artifacts, single votes and ballots.

- ``generate``: a one- or two-paragraph answer that opens with a position sentence and draws
  statements near the author's position (its stance plus a small per-scenario offset). With
  common ground shown from a previous round, the position moves towards it (more for a
  sycophantic author).
- ``vote`` / ``ballot``: the voter reads the artifact's stance from its TEXT (the scenario
  sentences it contains), never from who wrote it, and approves with
  :func:`approval_probability`.
- On a question with a known answer (SPEC §8) and an agent whose ``skill`` is set, the author
  answers it instead (:mod:`.answers`: right with probability ``skill``, else the item's
  distractor), and a voter approves an artifact exactly when it gives the voter's own answer.
"""

from __future__ import annotations

import json
import math

from workbench.core.sim import answers
from workbench.core.sim.persona import SimPersona
from workbench.core.sim.scenarios import Scenario
from workbench.core.sim.text import (
    Ask,
    as_clause,
    clamp,
    closest,
    infer_stance,
    join_sentences,
    pick_near,
    verdict_for,
)

MALFORMED_VOTES = ("Maybe.", "I am not sure; it depends on details the response leaves out.",
                   '{"vote": "MAYBE", "reason": "It depends."}', '{"vote": "YES", "reason": "Sound')
MALFORMED_BALLOTS = ("Maybe.", '{"votes": "they all look reasonable"}', '{"votes": {"A": "YES"')


def approval_probability(artifact_stance: float, voter_stance: float, persona: SimPersona) -> float:
    """Closeness ``c = 1 - |artifact - voter|`` through a logistic whose threshold rises with
    strictness (0.45 .. 0.85); sycophancy then closes part of the gap to 1."""
    c = 1.0 - abs(artifact_stance - voter_stance)
    threshold = 0.45 + 0.4 * persona.strictness
    p = 1.0 / (1.0 + math.exp(-10.0 * (c - threshold)))
    p += persona.sycophancy * (1.0 - p) * 0.6
    return clamp(p, 0.01, 0.99)


def _query(ask: Ask) -> str:
    return str(ask.input("query", ""))


def scenario_for(ask: Ask, query: str) -> Scenario:
    return ask.bank.find(query, "rcp", question=query) or ask.bank.fill_generic(query)


def home_position(ask: Ask, scenario: Scenario, agent: str | None = None) -> float:
    """The agent's own position on the scenario: its stance plus a small, fixed offset."""
    return clamp(ask.persona.stance + ask.latent(scenario, agent).gauss(0.0, 0.06))


def _skilled(ask: Ask) -> dict | None:
    """The known answer, when this agent answers by skill (its ``skill`` set, a writable item)."""
    return answers.truth(ask) if ask.persona.skill is not None else None


def generate(ask: Ask) -> tuple[str, dict]:
    item = _skilled(ask)
    if item is not None:  # the author answers the question: right with its skill, else the distractor
        value, correct = answers.own_answer(ask, item, 1)
        return answers.written(value, item["answer_type"], ask.rng), {"answer": value, "correct": correct,
                                                                      "skill": ask.persona.skill}
    query = _query(ask)
    scenario = scenario_for(ask, query)
    p = home_position(ask, scenario)
    shared = list(ask.input("common_ground") or [])
    if shared:  # refinement: the common ground of the last round pulls the author towards it
        ground = sum(infer_stance(t, scenario)[0] for t in shared) / len(shared)
        p = clamp(p + (0.15 + 0.6 * ask.persona.sycophancy) * (ground - p))
    rng, verdict = ask.rng, verdict_for(p)
    opener = rng.choice(scenario.positions[verdict])
    k = 2 + round(ask.persona.verbosity * 3)
    chosen = pick_near(scenario.statements, p, k, rng, width=0.3 if verdict == "conditional" else 0.2)
    sentences = [opener] + [s.text for s in chosen]
    if len(sentences) >= 4 and ask.persona.verbosity >= 0.4:
        cut = (len(sentences) + 1) // 2
        text = join_sentences(sentences[:cut], rng) + "\n\n" + join_sentences(sentences[cut:], rng)
    else:
        text = join_sentences(sentences, rng)
    return text, {"scenario": scenario.id, "position": round(p, 4), "verdict": verdict}


def _reason(approve: bool, artifact: str, found: list[tuple[str, float]], voter: float,
            scenario: Scenario, ask: Ask) -> str:
    rng = ask.rng
    statements = {s.text for s in scenario.statements}
    found = [f for f in found if f[0] in statements]  # cite reasons, not the position sentence
    if approve:
        if not found:
            return "The reasoning is sound and I would endorse it."
        best = min(found, key=lambda f: (abs(f[1] - voter), f[0]))[0]
        return rng.choice(("It rests on a point I accept: {c}.",
                           "The argument holds together, and it is right that {c}.",
                           "I endorse it, mainly because {c}.")).format(c=as_clause(best))
    if found and rng.random() < 0.5:
        worst = max(found, key=lambda f: (abs(f[1] - voter), f[0]))[0]
        return f"It leans on the claim that {as_clause(worst)}, which I do not accept."
    shown = artifact.lower()
    missing = [s for s in closest(scenario.statements, voter) if s.text.lower().rstrip(".") not in shown]
    if missing:
        return f"It passes over the point that {as_clause(missing[0].text)}."
    return "The conclusion does not follow from the reasons given."


def _judge(ask: Ask, scenario: Scenario, artifact: str, voter: float, u: float) -> tuple[bool, str, dict]:
    """``u`` is drawn before anything that depends on the persona, so two personas answering the
    same call share it and differ only through the probability (common random numbers)."""
    stance, found = infer_stance(artifact, scenario)
    p = approval_probability(stance, voter, ask.persona)
    approve = u < p
    reason = _reason(approve, artifact, found, voter, scenario, ask)
    return approve, reason, {"inferred_stance": round(stance, 4), "p_approve": round(p, 4),
                             "recognised": len(found)}


def _by_answer(ask: Ask, item: dict, artifact: str) -> tuple[bool, str, dict]:
    """A skilled voter's verdict: approve exactly when the artifact gives the voter's own answer."""
    own, _correct = answers.own_answer(ask, item, 1)
    agrees = answers.same_answer(artifact, own, item["answer_type"])
    reason = (f"It reaches the answer I reach, {own}." if agrees
              else f"It does not reach the answer I reach, {own}.")
    return agrees, reason, {"own_answer": own, "agrees": agrees}


def vote(ask: Ask) -> tuple[str, dict]:
    item = _skilled(ask)
    if item is not None:
        if ask.malformed:
            return ask.rng.choice(MALFORMED_VOTES), {"malformed": True}
        approve, reason, detail = _by_answer(ask, item, str(ask.input("artifact", "")))
        return json.dumps({"vote": "YES" if approve else "NO", "reason": reason}, ensure_ascii=False), detail
    query = _query(ask)
    scenario = scenario_for(ask, query)
    if ask.malformed:
        return ask.rng.choice(MALFORMED_VOTES), {"scenario": scenario.id, "malformed": True}
    artifact = str(ask.input("artifact", ""))
    voter = home_position(ask, scenario)
    approve, reason, detail = _judge(ask, scenario, artifact, voter, ask.rng.random())
    word = "YES" if approve else "NO"
    if ask.rng.random() < 0.2 * (1.0 - ask.persona.verbosity):  # the paper's plain elicitation
        text = f"{word}. {reason}"
    else:
        text = json.dumps({"vote": word, "reason": reason}, ensure_ascii=False)
    return text, {"scenario": scenario.id, **detail}


def ballot(ask: Ask) -> tuple[str, dict]:
    item = _skilled(ask)
    if item is not None:
        if ask.malformed:
            return ask.rng.choice(MALFORMED_BALLOTS), {"malformed": True}
        blocks = list(zip(ask.input("labels") or [], ask.input("responses") or []))
        judged = {label: _by_answer(ask, item, str(text)) for label, text in blocks}
        return (json.dumps({"votes": {label: "YES" if j[0] else "NO" for label, j in judged.items()}}),
                {"ballot": {label: j[2] for label, j in judged.items()}})
    query = _query(ask)
    scenario = scenario_for(ask, query)
    if ask.malformed:
        return ask.rng.choice(MALFORMED_BALLOTS), {"scenario": scenario.id, "malformed": True}
    voter = home_position(ask, scenario)
    votes, details = {}, {}
    blocks = list(zip(ask.input("labels") or [], ask.input("responses") or []))
    draws = [ask.rng.random() for _ in blocks]
    for (label, artifact), u in zip(blocks, draws):
        approve, _reason_text, detail = _judge(ask, scenario, artifact, voter, u)
        votes[label] = "YES" if approve else "NO"
        details[label] = detail
    return json.dumps({"votes": votes}, ensure_ascii=False), {"scenario": scenario.id, "ballot": details}


# What answers each RCP step (the declaration's ``sim`` names this module).
HANDLERS = {"generate": generate, "vote": vote, "ballot": ballot}
