"""Ask, critique, revise as a run: a step generator (``workbench.core.protocols.shared.steps``).

1. **answer** (round 1): every agent answers the question alone; each answer is an artifact.
2. **critique** (round 2): each agent critiques one other agent's answer. Who critiques whom is a
   ring over the panel in an order shuffled from the run seed, so every answer gets exactly one
   critic and nobody critiques their own. The reply is JSON (:class:`CritiqueReply`), its words
   capped by the config's ``critique_max_words``.
3. **revise** (round 2): each agent whose answer got a readable critique revises it; the revision
   is an artifact too. An agent without one keeps its first answer (the summary says why).

The generator never sees a reply unread and never reads one twice: whoever drives it reads each
reply once with :func:`read` (the runner does, so its re-ask and the stored records use the same
reading) and the generator takes that reading (:func:`reading`). Every text a model wrote goes on
to the next step as an untrusted variable, fenced by the workbench.
"""

from __future__ import annotations

import random
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from acr_protocol.steps import IDENTITY
from workbench.core.protocols.shared.declaration import Prompts, Record
from workbench.core.protocols.shared.replies import (
    fenced_texts,
    json_object,
    validation_problem,
)
from workbench.core.protocols.shared.steps import (
    AgentCall,
    AgentReply,
    Batch,
    Note,
    Reading,
)

# The critique's reply format: what its parser needs, given to the template as the required
# variable ``reply_format`` (prompts/critique.j2).
CRITIQUE_FORMAT = ('Reply with JSON only: {"issues": ["<one weakness>", ...], "summary": "<one sentence>", '
                   '"severity": "minor" or "major"}')
MAX_ISSUES = 5
# Output caps per step (tokens): the smaller of this and the provider's max_tokens is sent. A
# critique needs about 1.5 tokens a word plus its JSON.
ANSWER_MAX_TOKENS = 512
CRITIQUE_BASE_TOKENS, CRITIQUE_TOKENS_PER_WORD = 64, 2


def _trimmed(value: object) -> object:
    return value.strip() if isinstance(value, str) else value


Text = Annotated[str, BeforeValidator(_trimmed), Field(min_length=1)]


class CritiqueReply(BaseModel):
    """A critique (reply schema ``acr_critique``): the one source of its parser and of the JSON
    schema a model is sent. Fields beyond these are ignored."""

    model_config = ConfigDict(extra="ignore")
    issues: list[Text] = Field(min_length=1, max_length=MAX_ISSUES)
    summary: Text
    severity: Literal["minor", "major"]

    @property
    def words(self) -> int:
        return sum(len(text.split()) for text in (*self.issues, self.summary))


@dataclass(frozen=True)
class AcrAgent:
    id: str
    cluster: str
    persona: str = ""


@dataclass
class AcrResult:
    """What the run produced, for :func:`~acr_protocol.declaration.finish`."""

    answers: dict[str, str] = field(default_factory=dict)  # author -> first answer
    critics: dict[str, str] = field(default_factory=dict)  # author -> the agent that critiqued it
    critiques: dict[str, CritiqueReply] = field(default_factory=dict)  # author -> the critique it got
    revisions: dict[str, str] = field(default_factory=dict)  # author -> revised answer
    agents: tuple[AcrAgent, ...] = ()


def critic_ring(seed: int, agents: list[str]) -> dict[str, str]:
    """author -> critic: a ring over the agents in an order shuffled from the seed."""
    order = sorted(agents)
    random.Random(f"{seed}/acr/ring").shuffle(order)
    return {order[(i + 1) % len(order)]: critic for i, critic in enumerate(order)}


def artifact_key(round_no: int, agent: str) -> str:
    return f"r{round_no}-{agent}"


# ----- reading a reply, once ----------------------------------------------------------------------

def read(call: AgentCall, reply: AgentReply) -> Reading:
    """An ACR reply read once: an answer or a revision (an artifact), or a critique (its own
    record kind, kept by the workbench as JSON in protocol_records)."""
    if not reply.ok:
        return Reading()  # a failed call: nothing to judge, no record
    if call.purpose == "critique":
        return _read_critique(call, reply.text)
    body = reply.text.strip()
    if not body:
        return Reading(None, False, (), "the reply is empty")
    return Reading(body, True, (Record("artifact", {"key": call.meta["artifact"], "author": call.agent,
                                                    "cluster": call.meta.get("cluster"), "content": body}),))


def _read_critique(call: AgentCall, text: str) -> Reading:
    fence = call.meta.get("delimiter")
    # The critic's own words: without the fenced answer, echoes of the prompt, and passages quoted
    # from the answer (an author cannot plant a critique of itself in its answer).
    quoted = fenced_texts(call.messages, fence)
    data, why = json_object(text, fence, call.meta.get("template_pieces") or (), quoted)
    if data is None:
        return Reading(None, False, (), why)
    try:
        critique = CritiqueReply.model_validate(data)
    except ValidationError as exc:
        return Reading(None, False, (), validation_problem(exc))
    cap = int(call.meta.get("max_words") or 0)
    if cap and critique.words > cap:
        return Reading(None, False, (), f"the critique has {critique.words} words; at most {cap}")
    record = Record("critique", {"key": call.meta["artifact"], "agent": call.agent, "data": {
        "author": call.meta["author"], "artifact": call.meta["artifact"], "issues": critique.issues,
        "summary": critique.summary, "severity": critique.severity, "words": critique.words}})
    return Reading(critique, True, (record,))


def reading(call: AgentCall, reply: AgentReply) -> Reading:
    """The reply's reading: the one its driver made, else made now (a driver that does not read)."""
    return reply.reading if reply.reading is not None else read(call, reply)


def reply_model(call: AgentCall):
    return CritiqueReply if call.reply_schema == "acr_critique" else None


# ----- the run --------------------------------------------------------------------------------------

def run_acr(query: str, seed: int, agents: tuple[AcrAgent, ...], critique_max_words: int,
            prompts: Prompts | None = None) -> Generator[Batch | Note, dict[str, AgentReply] | None, AcrResult]:
    prompts = prompts or Prompts(IDENTITY)
    result = AcrResult(agents=agents)
    by_id = {a.id: a for a in agents}

    calls = [prompts.call("answer", key=f"r1/answer/{a.id}", agent=a.id, round_no=1,
                          values={"query": query, "persona": a.persona},
                          meta={"artifact": artifact_key(1, a.id), "cluster": a.cluster,
                                "max_tokens": ANSWER_MAX_TOKENS})
             for a in agents]
    replies = yield Batch(tuple(calls), "Round 1: answer")
    for call in calls:
        got = reading(call, replies[call.key])
        if got.valid:
            result.answers[call.agent] = got.value
        else:
            yield Note("warning", f"{call.agent} gave no answer: {replies[call.key].error or got.problem}")

    pieces = prompts.echo_pieces("critique", (CRITIQUE_FORMAT,))
    result.critics = {author: critic for author, critic in critic_ring(seed, [a.id for a in agents]).items()
                      if author in result.answers}
    calls = [prompts.call("critique", key=f"r2/critique/{critic}/{author}", agent=critic, round_no=2,
                          values={"query": query, "persona": by_id[critic].persona, "answer": result.answers[author],
                                  "max_words": critique_max_words, "reply_format": CRITIQUE_FORMAT},
                          meta={"artifact": artifact_key(1, author), "author": author, "max_words": critique_max_words,
                                "max_tokens": CRITIQUE_BASE_TOKENS + CRITIQUE_TOKENS_PER_WORD * critique_max_words,
                                "template_pieces": pieces})
             for author, critic in result.critics.items()]
    replies = yield Batch(tuple(calls), "Round 2: critique")
    for call in calls:
        got = reading(call, replies[call.key])
        if got.valid:
            result.critiques[call.meta["author"]] = got.value
        else:
            why = replies[call.key].error or got.problem
            yield Note("warning", f"{call.agent}'s critique of {call.meta['author']} could not be read: {why}")

    calls = [prompts.call("revise", key=f"r2/revise/{author}", agent=author, round_no=2,
                          values={"query": query, "persona": by_id[author].persona, "answer": result.answers[author],
                                  "summary": critique.summary, "issues": list(critique.issues)},
                          meta={"artifact": artifact_key(2, author), "revises": artifact_key(1, author),
                                "critic": result.critics[author], "cluster": by_id[author].cluster,
                                "max_tokens": ANSWER_MAX_TOKENS})
             for author, critique in result.critiques.items()]
    if calls:
        replies = yield Batch(tuple(calls), "Round 2: revise")
        for call in calls:
            got = reading(call, replies[call.key])
            if got.valid:
                result.revisions[call.agent] = got.value
            else:
                yield Note("warning", f"{call.agent} gave no revision: {replies[call.key].error or got.problem}")
    return result
