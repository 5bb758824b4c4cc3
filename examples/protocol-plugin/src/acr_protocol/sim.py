"""How the workbench's simulated panel (``sim``) answers ACR's steps: ``HANDLERS`` maps each step
to ``fn(ask) -> (reply text, detail)``. The declaration names this module (``sim=``).

A handler reads the values the call was made of (``ask.input``), never the prompt's wording, so an
edited template leaves sim's replies alone. Every draw comes from ``ask.rng`` (seeded from the run
seed, the call and the default prompt) or ``ask.latent`` (the run seed, the agent and the
scenario): the same seed gives the same run.

- ``answer``: an opening position and a few of the scenario's statements near the agent's stance.
- ``critique``: reads the answer's stance from its text (never its author), names the statements
  the critic rejects and the points it misses, fitted to the word cap; ``severity`` follows the
  distance between the two stances. A persona's ``malformed_rate`` gives unreadable critiques.
- ``revise``: moves the agent's position towards the points the critique raised (more for a
  sycophantic agent, less for a strict one) and writes the answer again from there.
"""

from __future__ import annotations

import json

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

MALFORMED_CRITIQUES = ("It seems fine to me.", '{"issues": "none really"}', '{"issues": ["The answer is vague"')
MAJOR_GAP = 0.3  # stances this far apart make a major critique


def _scenario(ask: Ask):
    query = str(ask.input("query", ""))
    return ask.bank.find(query, "rcp", question=query) or ask.bank.fill_generic(query)


def _home(ask: Ask, scenario) -> float:
    """The agent's own position on the scenario: its stance plus a small, fixed offset."""
    return clamp(ask.persona.stance + ask.latent(scenario, what="acr-position").gauss(0.0, 0.06))


def _write(ask: Ask, scenario, position: float, must: tuple[str, ...] = (), avoid: tuple[str, ...] = ()) -> str:
    """An opening position and statements near ``position``: ``must`` first, never ``avoid``."""
    rng, verdict = ask.rng, verdict_for(position)
    opener = rng.choice(scenario.positions[verdict])
    k = 2 + round(ask.persona.verbosity * 3)
    pool = [s for s in scenario.statements if s.text not in must and s.text not in avoid]
    chosen = [s.text for s in pick_near(pool, position, k, rng)]
    return join_sentences([opener, *must, *chosen][: k + 1], rng)


def answer(ask: Ask) -> tuple[str, dict]:
    scenario = _scenario(ask)
    p = _home(ask, scenario)
    return _write(ask, scenario, p), {"scenario": scenario.id, "position": round(p, 4)}


def critique(ask: Ask) -> tuple[str, dict]:
    scenario = _scenario(ask)
    if ask.malformed:
        return ask.rng.choice(MALFORMED_CRITIQUES), {"scenario": scenario.id, "malformed": True}
    text = str(ask.input("answer", ""))
    mine = _home(ask, scenario)
    stance, found = infer_stance(text, scenario)
    statements = {s.text for s in scenario.statements}
    rejected = sorted((t for t, s in found if t in statements and abs(s - mine) > 0.25),
                      key=lambda t: -abs(dict(found)[t] - mine))
    missing = [s.text for s in closest(scenario.statements, mine) if s.text.lower().rstrip(".") not in text.lower()]
    issues = [f"It leans on the claim that {as_clause(t)}, which does not hold." for t in rejected[:2]]
    issues += [f"It passes over the point that {as_clause(t)}." for t in missing[: 3 - len(issues)]]
    issues = issues or ["Its reasons are stated but not weighed against each other."]
    gap = abs(stance - mine)
    severity = "major" if gap > MAJOR_GAP else "minor"
    summary = ("The answer reaches the wrong conclusion for the reasons it gives." if severity == "major"
               else "The answer holds up, but leaves points out.")
    cap = int(ask.input("max_words", 0) or 0)
    while cap and len(issues) > 1 and sum(len(t.split()) for t in (*issues, summary)) > cap:
        issues.pop()  # a well-behaved critic fits the cap; one issue that does not fit stays over it
    reply = json.dumps({"issues": issues, "summary": summary, "severity": severity}, ensure_ascii=False)
    return reply, {"scenario": scenario.id, "position": round(mine, 4), "inferred_stance": round(stance, 4)}


def revise(ask: Ask) -> tuple[str, dict]:
    scenario = _scenario(ask)
    p = _home(ask, scenario)
    raised = " ".join([str(ask.input("summary", "")), *(str(t) for t in ask.input("issues") or [])])
    pull, found = infer_stance(raised, scenario)
    weight = clamp(0.15 + 0.6 * ask.persona.sycophancy - 0.2 * ask.persona.strictness, 0.0, 0.9)
    moved = clamp(p + weight * (pull - p))
    # The points the critique raised: those near the agent's new position it takes up, the others
    # (the claims the critique says do not hold) it drops.
    adopted = tuple(t for t, s in found if abs(s - moved) <= 0.35)[:2]
    dropped = tuple(t for t, s in found if abs(s - moved) > 0.35)
    detail = {"scenario": scenario.id, "position": round(p, 4), "revised_position": round(moved, 4),
              "adopted": len(adopted), "dropped": len(dropped)}
    return _write(ask, scenario, moved, adopted, dropped), detail


# What answers each ACR step on the simulated panel.
HANDLERS = {"answer": answer, "critique": critique, "revise": revise}
