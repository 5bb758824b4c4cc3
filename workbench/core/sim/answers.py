"""sim's answers to a question (SPEC §8): skill, the item's one distractor, and conformity.

The run's known answer reaches sim in each call's ``meta["truth"]`` (set by the run's templates,
never in the prompt: a model is sent only the messages). Everything is deterministic from the
run seed:

- **The agent's own answer** to an item in a round is correct with probability ``skill`` (unset:
  :data:`DEFAULT_SKILL`), drawn from ``Random("<seed>/skill/<agent>/<item>/<round>")``: a later
  call (an RCP vote, a resumed run) recomputes it. A wrong answer is the item's one distractor,
  drawn once per item from ``Random("<seed>/distractor/<item>")``, so wrong agents agree (which is
  what makes a plurality of wrong agents wrong, as Condorcet's jury theorem assumes).
- **Conformity** (debate): in a round after the first, with probability ``conformity`` (drawn from
  ``Random("<seed>/conform/<agent>/<item>/<round>")``) the agent adopts the plurality of its peers'
  previous answers, read from the call's ``peer_answers`` input; otherwise it answers afresh.
- An item whose answer sim cannot write (``regex``: a pattern), or a question with no known
  answer, gets a short stance answer ("Yes.", "No.", "It depends."), from the agent's ``stance``.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable

from workbench.core.scoring import extract, last_number, normalised, number_text, score
from workbench.core.sim.text import Ask, clamp, verdict_for

DEFAULT_SKILL = 0.5  # an answer protocol's agent whose skill is unset
WRITABLE = ("number", "choice", "exact")  # answer types sim can write a right (and a wrong) answer for
CHOICES = "ABCD"  # a wrong choice is another of these (or of A to the right answer's letter)
STANCE_ANSWERS = {"yes": "Yes.", "no": "No.", "conditional": "It depends."}
UNREADABLE = ("I am not sure.", "I cannot tell without more information.")
NUMBER_OPENERS = ("Working through it step by step, the result is {v}.", "Computing it carefully, I get {v}.",
                  "The answer is {v}.", "Following the order of operations, it comes to {v}.")


def truth(ask: Ask) -> dict | None:
    """The run's known answer, when sim can write answers of its type (else None)."""
    found = ask.call.meta.get("truth") if isinstance(ask.call.meta, dict) else None
    if not isinstance(found, dict) or found.get("answer_type") not in WRITABLE:
        return None
    return found


def distractor(seed: int, item: dict) -> str:
    """The item's one wrong answer, the same for every agent of the run."""
    rng = random.Random(f"{seed}/distractor/{item.get('item')}/{item['answer']}")
    kind, answer = item["answer_type"], item["answer"]
    if kind == "number":
        value = last_number(answer) or 0.0
        if value == int(value):
            return number_text(value + rng.choice([d for d in range(-10, 11) if d]))
        return number_text(value * rng.choice((0.5, 0.9, 1.1, 2.0)))
    if kind == "choice":
        right = answer.strip().upper()
        letters = CHOICES if right in CHOICES else "ABCDEFGHIJ"[: "ABCDEFGHIJ".index(right) + 1]
        return rng.choice([c for c in letters if c != right])
    return f"Not {answer}"


def skill_of(ask: Ask) -> float:
    return DEFAULT_SKILL if ask.persona.skill is None else ask.persona.skill


def own_answer(ask: Ask, item: dict, round_no: int, agent: str | None = None) -> tuple[str, bool]:
    """``(answer, correct)``: the agent's own answer to the item in this round."""
    who = agent or ask.call.agent
    u = random.Random(f"{ask.seed}/skill/{who}/{item.get('item')}/{round_no}").random()
    correct = u < skill_of(ask)
    return (item["answer"].strip() if correct else distractor(ask.seed, item)), correct


def conforms(ask: Ask, item_id: object, round_no: int) -> bool:
    u = random.Random(f"{ask.seed}/conform/{ask.call.agent}/{item_id}/{round_no}").random()
    return u < ask.persona.conformity


def same_answer(text: str, answer: str, answer_type: str) -> bool:
    """Whether ``text`` gives ``answer``, as the scorer reads it."""
    return score(text, answer, answer_type).verdict == "correct"


def written(value: str, answer_type: str | None, rng: random.Random) -> str:
    """A reply that gives ``value``, worded as a model might, its answer where the scorer reads it."""
    if answer_type == "number":
        return rng.choice(NUMBER_OPENERS).format(v=value)
    if answer_type == "choice":
        return f"Having weighed the options, the answer is ({value})."
    return value  # exact: the answer alone (the scorer compares the whole reply)


def peer_plurality(peers: Iterable[str], answer_type: str | None) -> str | None:
    """The plurality of the peers' answers as read (the first peer's on a tie), or None."""
    keys = [(extract(p, answer_type) if answer_type in ("number", "choice") else normalised(p)) for p in peers]
    keys = [k for k in keys if k]
    if not keys:
        return None
    counts = Counter(keys)
    top = max(counts.values())
    return next(k for k in keys if counts[k] == top)


def stance_answer(ask: Ask) -> str:
    """A short answer to a question sim cannot score: the agent's stance, as yes, no or it depends."""
    query = str(ask.input("query", ""))
    lean = random.Random(f"{ask.seed}/latent/{ask.call.agent}/{query}/position").gauss(0.0, 0.06)
    return STANCE_ANSWERS[verdict_for(clamp(ask.persona.stance + lean))]


def answer(ask: Ask, round_no: int = 1, peers: list[str] | None = None) -> tuple[str, dict]:
    """An answer protocol's reply (``single``, ``vote``, ``debate``) and what it was based on."""
    if ask.malformed:
        return ask.rng.choice(UNREADABLE), {"malformed": True}
    item = truth(ask)
    answer_type = item["answer_type"] if item is not None else None
    if round_no > 1 and peers and conforms(ask, item.get("item") if item else ask.input("query"), round_no):
        adopted = peer_plurality(peers, answer_type)
        if adopted is not None:
            detail = {"conformed": True, "answer": adopted}
            if item is not None:
                detail["correct"] = same_answer(adopted, item["answer"], answer_type)
                return written(adopted, answer_type, ask.rng), detail
            return {normalised(v): v for v in STANCE_ANSWERS.values()}.get(adopted, adopted), detail
    if item is None:
        return stance_answer(ask), {"scorable": False}
    value, correct = own_answer(ask, item, round_no)
    return written(value, answer_type, ask.rng), {"skill": skill_of(ask), "correct": correct, "answer": value}


__all__ = ["DEFAULT_SKILL", "answer", "distractor", "own_answer", "same_answer", "truth", "written"]
