"""The ``single`` control as a run (SPEC §8): the config's first agent answers; its reply is the
run's answer. A step generator (see :mod:`..shared.steps`)."""

from __future__ import annotations

from collections.abc import Generator

from workbench.core.protocols.shared.answers import AnswerAgent, Plurality, answer_call, answer_key, texts
from workbench.core.protocols.shared.declaration import Prompts
from workbench.core.protocols.shared.steps import AgentReply, Batch
from workbench.core.protocols.single.steps import IDENTITY


def run_single(query: str, agent: AnswerAgent, answer_type: str | None, prompts: Prompts | None = None
               ) -> Generator[Batch, dict[str, AgentReply], dict]:
    """Returns ``{"answers": [(agent, text)], "final": Plurality}``: the one answer, as read (its
    reply is the run's answer even when no answer can be read from it: it is then unscorable)."""
    prompts = prompts if prompts is not None else Prompts(IDENTITY)
    call = answer_call(prompts, "answer", agent, 1, {"query": query}, answer_type)
    replies = yield Batch((call,), "Round 1: the agent answers alone")
    answers = texts([call], replies)
    text = answers[0][1]
    key = answer_key(text, answer_type)
    final = Plurality(key, agent.id if text is not None else None, {key: 1} if key is not None else {})
    return {"answers": answers, "final": final}
