"""Consensus Server findings as a run: scout, auditor and dev agents vote on each finding.

A step generator (see :mod:`..shared.steps`). Each agent judges each finding independently, in one
batch; a reply is read once (:func:`read`) as the structured vote the prompt asks for, and a reply
that cannot be read is kept as an invalid vote with its raw text and the reason, never coerced.

The prompt is the step ``vote``'s template (``prompts/vote.j2``; the agents' role briefs are its
text). The claim and its context are untrusted: they reach the template fenced with a name drawn
fresh for the call (stored in ``meta["delimiter"]``, with ``meta["fence_escapes"]``), and a vote
is read from the agent's own words only (SPEC §11): the fenced text, lines starting with ``>``,
passages of the claim and its context, and echoes of the call's template are removed from the
reply first.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from workbench.core.protocols.findings.book import FindingResult, Vote, consensus
from workbench.core.protocols.findings.config import DEFAULT_THRESHOLD
from workbench.core.protocols.findings.steps import IDENTITY
from workbench.core.protocols.shared.declaration import Prompts, Record, template_echoes
from workbench.core.protocols.shared.replies import fenced_texts, own_words, requested_vote, validation_problem
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Batch, Note, Reading
from workbench.core.protocols.shared.structured import CONFIDENCE_SCHEMA

# The reply format the parser needs, given to the template as its required ``reply_format``.
VOTE_FORMAT = ('Reply with JSON only: {"vote_type": "confirm" | "challenge" | "uncertain", '
               '"confidence": <0.0-1.0, how sure you are>, "reason": "<one sentence>"}')
# Echoes a reply may carry beyond its template's words: the vote types as the format lists them.
FORMAT_ECHOES = (VOTE_FORMAT, '"confirm" | "challenge" | "uncertain"')
VOTE_MAX_TOKENS = 160  # the output cap of a finding vote: a short JSON object, one-sentence reason


def _lower(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


def _text(value: object) -> object:
    return "" if value is None else value if isinstance(value, str) else str(value)


class FindingVoteReply(BaseModel):
    """The structured vote the prompt asks for (reply schema ``finding_vote``); the parser
    validates every reply with it, and its JSON schema is what a model is sent."""

    model_config = ConfigDict(extra="ignore")
    vote_type: Annotated[Literal["confirm", "challenge", "uncertain"], BeforeValidator(_lower)]
    confidence: float = Field(ge=0.0, le=1.0, allow_inf_nan=False, strict=True,  # a number, never "0.8" or true
                              json_schema_extra=CONFIDENCE_SCHEMA)
    reason: Annotated[str, BeforeValidator(_text)] = ""


@dataclass(frozen=True)
class FindingsAgent:
    id: str
    role: str = "scout"
    persona: str = ""


@dataclass(frozen=True)
class FindingsRunConfig:
    seed: int
    agents: tuple[FindingsAgent, ...]
    findings: tuple[dict, ...]  # {"id", "claim", "context"?: dict}
    threshold: float = DEFAULT_THRESHOLD


@dataclass(frozen=True)
class ParsedFindingVote:
    vote: Vote | None  # None when the reply could not be read as a vote
    status: str  # "valid", "invalid" or "failed"
    reason: str = ""


@dataclass
class FindingsOutcome:
    votes: dict[str, dict[str, ParsedFindingVote]] = field(default_factory=dict)  # finding -> agent -> vote
    results: dict[str, FindingResult | None] = field(default_factory=dict)


def under_vote(call: AgentCall) -> tuple[str, ...]:
    """The finding's claim and context as the call showed them (its fenced blocks): a passage of
    them in the reply is quoted, not the agent's (SPEC §11)."""
    return fenced_texts(call.messages, call.meta.get("delimiter"))


@lru_cache(maxsize=1)
def default_pieces() -> tuple[str, ...]:
    """What of the default vote prompt a reply may echo (:func:`~.declaration.template_echoes`):
    for a reply read without its call's own template (a test, a stored reply of an old run)."""
    return template_echoes(IDENTITY.default_template("vote").fixed_text, FORMAT_ECHOES)


def call_pieces(call: AgentCall) -> tuple[str, ...]:
    """The echoes a reply to ``call`` may carry: its own template's words (``meta["template_pieces"]``,
    set when the call was made), else the default prompt's."""
    pieces = call.meta.get("template_pieces")
    return tuple(pieces) if pieces is not None else default_pieces()


def parse_finding_vote(agent: str, text: str | None, fence: str | None = None,
                       quoted: Sequence[str] = (), template: Sequence[str] | None = None) -> ParsedFindingVote:
    """The JSON vote in the agent's own words (``fence``'s blocks, lines starting with ``>``,
    passages of the ``quoted`` claim and context, and echoes of the ``template``, by default the
    default prompt's, removed; see :func:`~..shared.replies.requested_vote`: objects that are no
    vote are passed over, votes that disagree are none)."""
    if text is None:
        return ParsedFindingVote(None, "failed", "no reply")
    pieces = default_pieces() if template is None else template
    found = requested_vote(own_words(text, fence, pieces, quoted), lambda data: _vote_of(agent, data),
                           same=lambda v: (v.vote.vote_type, v.vote.confidence))
    return found.vote or ParsedFindingVote(None, "invalid", found.problem or "")


def _vote_of(agent: str, data: dict) -> tuple[ParsedFindingVote | None, str]:
    try:
        reply = FindingVoteReply.model_validate(data)
    except ValidationError as exc:
        return None, validation_problem(exc)
    try:
        vote = Vote(agent=agent, vote_type=reply.vote_type, confidence=reply.confidence, reason=reply.reason)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return None, f"{where}: {first['msg'].removeprefix('Value error, ')}"
    return ParsedFindingVote(vote, "valid", vote.reason), ""


def _call(prompts: Prompts, agent: FindingsAgent, finding: dict) -> AgentCall:
    context = finding.get("context") or {}
    return prompts.call("vote", key=f"finding/{finding['id']}/{agent.id}", agent=agent.id, values={
        "role": agent.role, "persona": agent.persona, "claim": finding["claim"],
        # The context is shown as the JSON it was given as: one fenced block, none when empty.
        "context": json.dumps(context, ensure_ascii=False) if context else None,
        "reply_format": VOTE_FORMAT},
        meta={"finding": finding["id"], "role": agent.role, "max_tokens": VOTE_MAX_TOKENS,
              "template_pieces": prompts.echo_pieces("vote", FORMAT_ECHOES)})


def read(call: AgentCall, reply: AgentReply) -> Reading:
    """A finding vote, read once (SPEC §7): the :class:`ParsedFindingVote` the generator counts,
    and the ``finding_vote`` record the project stores (none for a failed call: no vote was cast)."""
    if not reply.ok:
        return Reading(ParsedFindingVote(None, "failed", reply.error or "call failed"))
    parsed = parse_finding_vote(call.agent, reply.text, call.meta.get("delimiter"), under_vote(call),
                                call_pieces(call))
    vote = parsed.vote
    record = Record("finding_vote", {
        "finding": call.meta["finding"], "agent": call.agent, "vote_type": vote.vote_type.value if vote else None,
        "confidence": vote.confidence if vote else None, "reason": vote.reason if vote else "",
        "status": "valid" if vote else "invalid", "invalid_reason": None if vote else parsed.reason,
        "raw": reply.text})
    return Reading(parsed, vote is not None, (record,), None if vote else parsed.reason or "unreadable vote")


def reading(call: AgentCall, reply: AgentReply) -> Reading:
    """The reply's reading: the one its driver made (:func:`~..shared.steps.read_reply`), else made now."""
    return reply.reading if reply.reading is not None else read(call, reply)


def run_findings(cfg: FindingsRunConfig, prompts: Prompts | None = None
                 ) -> Generator[Batch | Note, dict[str, AgentReply] | None, FindingsOutcome]:
    prompts = prompts if prompts is not None else Prompts(IDENTITY)
    calls = [_call(prompts, agent, f) for f in cfg.findings for agent in cfg.agents]
    replies = yield Batch(tuple(calls), "Agents vote on the findings")
    outcome = FindingsOutcome()
    for call in calls:
        outcome.votes.setdefault(call.meta["finding"], {})[call.agent] = reading(call, replies[call.key]).value
    for finding in cfg.findings:
        valid = [p.vote for p in outcome.votes.get(finding["id"], {}).values() if p.vote is not None]
        threshold = finding.get("threshold", cfg.threshold)
        result = consensus(valid, threshold)
        outcome.results[finding["id"]] = FindingResult(id=finding["id"], claim=finding["claim"], **dict(result))
        yield Note("result", f"{finding['id']}: {result.status}", {"finding": finding["id"], "status": result.status,
                                                                    "consensus_score": result.consensus_score})
    return outcome
