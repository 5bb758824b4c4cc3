"""The ``vote`` control as a run (SPEC §8): every agent answers alone, in one batch; the run's
answer is the plurality of the answers as the scorer reads them (unscorable ones take no part; a
tie goes to the agent that comes first in the config). A step generator (see :mod:`..shared.steps`)."""

from __future__ import annotations

from collections.abc import Generator, Sequence

from workbench.core.protocols.shared.answers import AnswerAgent, answer_call, plurality, texts
from workbench.core.protocols.shared.declaration import Prompts
from workbench.core.protocols.shared.steps import AgentReply, Batch, Note
from workbench.core.protocols.vote.steps import IDENTITY


def run_vote(query: str, agents: Sequence[AnswerAgent], answer_type: str | None, prompts: Prompts | None = None
             ) -> Generator[Batch | Note, dict[str, AgentReply] | None, dict]:
    """Returns ``{"answers": [(agent, text)], "final": Plurality}``."""
    prompts = prompts if prompts is not None else Prompts(IDENTITY)
    calls = [answer_call(prompts, "answer", agent, 1, {"query": query}, answer_type) for agent in agents]
    replies = yield Batch(tuple(calls), "Round 1: each agent answers alone")
    answers = texts(calls, replies)
    found = plurality(answers, answer_type)
    yield Note("result", f"the plurality answer: {found.answer if found.answer is not None else 'none'}",
               found.to_json())
    return {"answers": answers, "final": found}
