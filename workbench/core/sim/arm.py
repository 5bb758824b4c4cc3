"""sim's ARM traces, round 1: alpha, beta, gamma and the silent baseline, each in isolation.

An agent's position on a scenario is its ``stance``, shifted by the scenario's lean for its
frame (``frame_lean``: e.g. a deontologist leans against acting illegally) plus a small fixed
offset seeded from the run seed, the agent and the scenario. Because the offset does not depend
on the call, round 2 and the FAP re-queue recompute the round-1 position exactly. The verdict
is explicit: yes at 0.6 and above, no at 0.4 and below, conditional in between. The silent
baseline shares its draw's position (gamma's by default) with its own small sampling noise.

Round 2, gamma's reconciliation and the FAP re-queue are in :mod:`.arm_r2`, with the ``HANDLERS``
that answer each of ARM's steps. Every handler reads the values the call was made of
(``ask.input``: the question, the frame, the silent draw...), never the prompt's wording.
"""

from __future__ import annotations

import json
from typing import Any

from workbench.core.protocols.arm.config import FRAMES
from workbench.core.protocols.shared.steps import AgentCall
from workbench.core.sim.scenarios import Scenario
from workbench.core.sim.text import Ask, as_clause, clamp, closest, pick_near, r2, verdict_for

FRAME_BASIS = {"deontological": "deontological", "consequentialist": "utilitarian", "independent": "hybrid"}
FRAME_STEPS = {
    "deontological": "Start from the duties and rights at stake, not from the outcomes.",
    "consequentialist": "Start from the outcomes for everyone affected, weighed by how likely they are.",
    "independent": "Weigh the strongest consideration on each side before deciding which one carries the answer.",
}
DISCARD_REASONS = {
    "deontological": ("It judges the act only by its results, which cannot settle what we owe each other.",
                      "It would license any act whenever the stakes look high enough."),
    "consequentialist": ("It ignores how likely each outcome is.",
                         "It protects a rule at a cost that falls on real people."),
    "independent": ("It rests on an assumption I could not confirm.",
                    "The same goal can be reached with fewer costs."),
}
VERDICT_WORDS = {"yes": "the answer is yes", "no": "the answer is no",
                 "conditional": "the answer depends on the conditions named in the claim"}
MALFORMED = ("Maybe.", '{"claim": "It depends.", "verdict": "conditional", "confidence": "high"}',
             '{"claim": "Yes, on balance.", "verdict": "yes", "confidence": 0.')


def question_of(ask: Ask) -> str:
    return str(ask.input("question", "")).strip()


def scenario_for(ask: Ask, question: str) -> Scenario:
    return ask.bank.find(question, "arm", question=question) or ask.bank.fill_generic(question)


def frame_of(ask: Ask) -> str:
    """The frame the agent reasons in; the silent baseline's is its draw's (gamma's: independent)."""
    frame = ask.input("frame")
    if ask.call.agent == "silent" and draw_of(ask.call) not in ("alpha", "beta"):
        return "independent"
    return frame if frame in FRAMES else "independent"


def draw_of(call: AgentCall) -> str:
    """Whose prompt the silent baseline answers (the call's ``draw`` input; gamma by default)."""
    inputs = call.meta.get("inputs") if isinstance(call.meta, dict) else None
    draw = inputs.get("draw") if isinstance(inputs, dict) else None
    return draw if draw in ("alpha", "beta", "gamma") else "gamma"


def position(ask: Ask, scenario: Scenario, role: str, frame: str) -> float:
    """The round-1 position of ``role`` (the silent baseline: its draw's, plus sampling noise)."""
    lean = scenario.frame_lean.get(frame, 0.0)
    if role == "silent":
        draw = draw_of(ask.call)
        base = ask.persona.stance + lean + ask.latent(scenario, draw).gauss(0.0, 0.06)
        return clamp(base + ask.latent(scenario, "silent", "sample").gauss(0.0, 0.04))
    return clamp(ask.persona.stance + lean + ask.latent(scenario, role).gauss(0.0, 0.06))


def r1_confidence(ask: Ask, scenario: Scenario, role: str, pos: float) -> float:
    noise = ask.latent(scenario, role, "confidence").gauss(0.0, 0.03)
    return r2(clamp(ask.persona.confidence + 0.12 * (abs(pos - 0.5) * 2 - 0.5) + noise, 0.05, 0.97))


def claim_for(ask: Ask, scenario: Scenario, pos: float, verdict: str) -> str:
    top = closest(scenario.statements, pos)[:2]
    return f"{ask.rng.choice(scenario.positions[verdict])} {ask.rng.choice(top).text}"


def flags_for(ask: Ask, scenario: Scenario, verdict: str, n_assumptions: int) -> list[str]:
    rng, flags = ask.rng, []
    draws = [rng.random() for _ in range(3)]
    if scenario.values and (scenario.disagreement == "values" or verdict == "conditional") and draws[0] < 0.7:
        flags.append("values_conflict")
    if scenario.disagreement == "values" and draws[1] < 0.3:
        flags.append("contested_domain")
    if scenario.disagreement == "information" and draws[2] < 0.6:
        flags.append("incomplete_data")
    if n_assumptions >= 5:
        flags.append("assumption_heavy")
    return flags


def self_check(ask: Ask, scenario: Scenario, flags: list[str], extra: str = "") -> dict[str, str]:
    warn = bool(flags) and ask.rng.random() < 0.5
    if "values_conflict" in flags and len(scenario.values) >= 2:
        notes = (f"The answer trades {scenario.values[0]} against {scenario.values[1]}, "
                 "and I cannot fully reconcile them.")
    elif "incomplete_data" in flags:
        notes = "The answer rests on facts I cannot check from here."
    else:
        notes = "No strong tension in my own reasoning."
    return {"status": "warning" if warn else "clean", "notes": (notes + " " + extra).strip()}


def frame_fields(role: str, frame: str) -> dict[str, str]:
    """``reasoning_frame`` appears in the schema of alpha and beta only."""
    return {"reasoning_frame": frame} if role in ("alpha", "beta") else {}


def common_fields(ask: Ask, scenario: Scenario, role: str, frame: str, pos: float, verdict: str,
                  confidence: float, claim: str) -> dict[str, Any]:
    """claim .. challenge_surface, in the schema's order."""
    n = 3 + round(ask.persona.verbosity * 3)
    assumptions = [a.text for a in closest(scenario.assumptions, pos)[: max(3, n - 1)]]
    steps = [s.text for s in pick_near(scenario.statements, pos, n - 1, ask.rng)]
    path = [FRAME_STEPS[frame], *steps, f"Therefore {VERDICT_WORDS[verdict]}."]
    far = sorted(scenario.challenges, key=lambda c: (-abs(c.stance - pos), c.text))
    return {"claim": claim, "verdict": verdict, "confidence": confidence, **frame_fields(role, frame),
            "decision_basis": FRAME_BASIS[frame], "assumptions": assumptions, "critical_path": path,
            "challenge_surface": [c.text for c in far[: 2 + (ask.persona.verbosity > 0.5)]]}


def render(ask: Ask, obj: dict[str, Any]) -> str:
    """The JSON reply; now and then inside a Markdown fence, as models do (ARM strips it)."""
    text = json.dumps(obj, ensure_ascii=False, indent=2 if ask.persona.verbosity > 0.5 else None)
    return f"```json\n{text}\n```" if ask.rng.random() < 0.1 else text


def round1(ask: Ask) -> tuple[str, dict]:
    question = question_of(ask)
    scenario = scenario_for(ask, question)
    role = ask.call.agent if ask.call.agent in ("alpha", "beta", "gamma", "silent") else "gamma"
    meta = {"scenario": scenario.id, "role": role}
    if ask.malformed:
        return ask.rng.choice(MALFORMED), {**meta, "malformed": True}
    frame = frame_of(ask)
    pos = position(ask, scenario, role, frame)
    verdict, confidence = verdict_for(pos), r1_confidence(ask, scenario, role, pos)
    obj = common_fields(ask, scenario, role, frame, pos, verdict, confidence,
                        claim_for(ask, scenario, pos, verdict))
    used = {s for s in obj["critical_path"]}
    opposite = [s for s in scenario.statements if s.text not in used]
    discarded = pick_near(opposite, 1.0 - pos, 1 + (ask.persona.verbosity > 0.5), ask.rng)
    obj["discarded_paths"] = [{"path": f"Perhaps {as_clause(s.text)}.",
                               "reason": ask.rng.choice(DISCARD_REASONS[frame])} for s in discarded]
    flags = flags_for(ask, scenario, verdict, len(obj["assumptions"]))
    obj["challenge_surface"] = obj.pop("challenge_surface")  # the schema puts it after discarded_paths
    obj["flags"] = flags
    obj["self_check"] = self_check(ask, scenario, flags)
    return render(ask, obj), {**meta, "position": round(pos, 4), "frame": frame}
