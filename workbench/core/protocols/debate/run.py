"""Multi-agent debate as a run (Du et al. 2023; SPEC §8). A step generator (see :mod:`..shared.steps`).

Round 1: every agent answers alone (step ``answer``). Then, for ``rounds`` rounds (default 2),
every agent gets the question again with the answers the OTHER agents gave in the round before
(step ``debate``: ``peer_answers``, each fenced, in the config's order; an agent whose answer could
not be read is left out) and answers again. Each round is one batch, so the agents of a round
answer independently. The run's answer is the plurality of the last round (see
:func:`~..shared.answers.plurality`: ties go to the agent that comes first in the config).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence

from workbench.core.protocols.debate.steps import IDENTITY
from workbench.core.protocols.shared.answers import AnswerAgent, answer_call, plurality, texts
from workbench.core.protocols.shared.declaration import Prompts
from workbench.core.protocols.shared.steps import AgentReply, Batch, Note

DEFAULT_ROUNDS = 2
MAX_ROUNDS = 10


def run_debate(query: str, agents: Sequence[AnswerAgent], answer_type: str | None, rounds: int = DEFAULT_ROUNDS,
               prompts: Prompts | None = None) -> Generator[Batch | Note, dict[str, AgentReply] | None, dict]:
    """Returns ``{"answers": [(agent, text)] of the last round, "rounds": [[(agent, text)], ...],
    "final": Plurality}``."""
    prompts = prompts if prompts is not None else Prompts(IDENTITY)
    calls = [answer_call(prompts, "answer", a, 1, {"query": query}, answer_type) for a in agents]
    replies = yield Batch(tuple(calls), "Round 1: each agent answers alone")
    history = [texts(calls, replies)]
    for r in range(2, rounds + 2):
        before = dict(history[-1])
        calls = [answer_call(prompts, "debate", a, r, {
            "query": query, "own_answer": before.get(a.id),
            "peer_answers": [before[p.id] for p in agents if p.id != a.id and before.get(p.id) is not None]},
            answer_type) for a in agents]
        replies = yield Batch(tuple(calls), f"Round {r}: each agent reads the others' answers")
        history.append(texts(calls, replies))
        found = plurality(history[-1], answer_type)
        yield Note("progress", f"round {r}: the plurality answer is {found.answer if found.answer is not None else 'none'}",
                   {"round": r, **found.to_json()})
    final = plurality(history[-1], answer_type)
    return {"answers": history[-1], "rounds": history, "final": final}
