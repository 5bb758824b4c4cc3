"""Shared helpers of the simulated panel: the per-call context, seeded randomness, reading a
stance out of a text, and putting sentences together.

All randomness comes from :class:`random.Random` instances seeded with strings built from the run
seed (``random`` hashes a string seed with SHA-512, so the draws are the same in every process
whatever ``PYTHONHASHSEED`` is). Nothing here touches the global ``random`` state.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.core.protocols.shared.declaration import sim_digest_text
from workbench.core.protocols.shared.steps import AgentCall
from workbench.core.sim.persona import SimPersona
from workbench.core.sim.scenarios import Scenario, ScenarioBank, Statement, norm

# Capitalised words that must keep their capital after a connector ("Also, Ghent ...").
PROPER = frozenset("""I Pontevedra Ghent Iceland Britain England Europe America March Monday Alpha Beta
Gamma Scout Auditor Dev Architect Reviewer Researcher""".split())
CONNECTORS = ("Also, ", "Moreover, ", "In addition, ", "Beyond that, ", "On top of this, ")
YES_VERDICT_AT = 0.6  # a position at or above this answers yes
NO_VERDICT_AT = 0.4  # at or below this, no; in between, conditional

_PRO = re.compile(r"\b(yes|should|support|benefit|benefits|endorse|recommend|favou?r|worth|gain|improve)\w*", re.I)
_CON = re.compile(r"\b(no|not|never|oppose|risk|risks|harm|against|reject|cannot|costly|danger)\w*", re.I)


def clamp(x: float, low: float = 0.0, high: float = 1.0) -> float:
    return max(low, min(high, x))


def r2(x: float) -> float:
    return round(x + 0.0, 2)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def verdict_for(position: float) -> str:
    if position >= YES_VERDICT_AT - 1e-12:
        return "yes"
    if position <= NO_VERDICT_AT + 1e-12:
        return "no"
    return "conditional"


@dataclass
class Ask:
    """One call as sim sees it: the call, the agent's persona, and a generator seeded from
    ``seed/key/agent/purpose/prompt`` (the prompt with its fence names masked). The first draw
    is always the malformed-reply draw, so the knob never shifts the other draws (a persona
    change only moves thresholds)."""

    call: AgentCall
    persona: SimPersona
    seed: int
    bank: ScenarioBank
    memory: dict[Any, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Fence names are fresh per call (never from the seed): the draws must not depend on them.
        # An edited template leaves the draws alone: they hang on the prompt the step's default
        # template makes (sim reads a call's values, never its prompt's wording).
        self.rng = random.Random(f"{self.seed}/{self.call.key}/{self.call.agent}/{self.call.purpose}/"
                                 f"{digest(sim_digest_text(self.call))}")
        self._malformed_draw = self.rng.random()

    @property
    def prompt(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.call.messages)

    @property
    def user(self) -> str:
        users = [m.get("content", "") for m in self.call.messages if m.get("role") == "user"]
        return users[-1] if users else (self.call.messages[-1].get("content", "") if self.call.messages else "")

    def input(self, name: str, default: Any = None) -> Any:
        """A value the call's prompt was made of (``meta["inputs"]``): what sim reads, never the
        prompt's wording."""
        inputs = self.call.meta.get("inputs") if isinstance(self.call.meta, dict) else None
        return inputs.get(name, default) if isinstance(inputs, dict) else default

    @property
    def system(self) -> str:
        return next((m.get("content", "") for m in self.call.messages if m.get("role") == "system"), "")

    @property
    def malformed(self) -> bool:
        return self._malformed_draw < self.persona.malformed_rate

    def latent(self, scenario: Scenario, agent: str | None = None, what: str = "position") -> random.Random:
        """A generator that depends only on the run seed, the agent and the scenario, so a later
        call (round 2, a re-queue, a resumed run) can recompute the agent's earlier position."""
        return random.Random(f"{self.seed}/latent/{agent or self.call.agent}/{scenario.id}/{what}")


def lexical_stance(text: str) -> float:
    """A rough stance for a text sim did not write: pro words against con words, 0.5 if neither."""
    pro, con = len(_PRO.findall(text)), len(_CON.findall(text))
    return clamp(0.5 + 0.35 * (pro - con) / (pro + con + 1))


def infer_stance(text: str, scenario: Scenario) -> tuple[float, list[tuple[str, float]]]:
    """The stance of ``text``, read from the scenario sentences it contains (authorship is never
    used); a text with none of them gets :func:`lexical_stance`. Returns (stance, recognised)."""
    hay = norm(text)
    found = [(t, s) for t, s in scenario.phrases() if norm(t) and norm(t) in hay]
    if found:
        return sum(s for _, s in found) / len(found), found
    return lexical_stance(text), []


def near_weights(items: Sequence[Statement], target: float, width: float = 0.2) -> list[float]:
    return [math.exp(-((s.stance - target) / width) ** 2) + 0.02 for s in items]


def pick_near(items: Sequence[Statement], target: float, k: int, rng: random.Random,
              width: float = 0.2) -> list[Statement]:
    """``k`` distinct items drawn with weight falling off with distance from ``target``."""
    pool, out = list(items), []
    while pool and len(out) < k:
        weights = near_weights(pool, target, width)
        choice = rng.choices(range(len(pool)), weights=weights)[0]
        out.append(pool.pop(choice))
    return out


def closest(items: Sequence[Statement], target: float) -> list[Statement]:
    return sorted(items, key=lambda s: (abs(s.stance - target), s.text))


def lower_first(sentence: str) -> str | None:
    """The sentence with its first word lowercased, when that is safe (a common word), else None."""
    first = sentence.split(" ", 1)[0]
    if first == "A" or (first.isalpha() and len(first) > 1 and first[0].isupper() and first[1:].islower()
                        and first not in PROPER):
        return first.lower() + sentence[len(first):]
    return None


def join_sentences(sentences: Sequence[str], rng: random.Random, *, connect: float = 0.4) -> str:
    """Sentences in order, some joined with a connector where the next one allows it."""
    out = []
    for i, s in enumerate(sentences):
        s = s.strip()
        if s and s[-1] not in ".!?":
            s += "."
        low = lower_first(s)
        if i > 0 and low is not None and rng.random() < connect:
            s = rng.choice(CONNECTORS) + low
        out.append(s)
    return " ".join(out)


def as_clause(sentence: str) -> str:
    """A sentence used inside another one: no final stop, first word lowercased where safe."""
    s = sentence.strip().rstrip(".")
    return lower_first(s) or s


def first_sentence(text: str, limit: int = 200) -> str:
    m = re.match(r"(.+?[.!?])(\s|$)", text.strip(), re.S)
    s = m.group(1) if m else text.strip()
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


def count_words(text: str | None) -> int:
    return len(text.split()) if text else 0
