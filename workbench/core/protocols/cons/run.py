"""The CONS protocol as a run: ballots, challenge rounds, the verdict, and a human's decision
where an escalation requires one. A step generator (see :mod:`..shared.steps`).

Each call is a step's template rendered (``prompts/``): ``ballot`` for the opening round,
``challenge`` for each challenge round, ``decision`` for the human. A human decision is asked of
the agent ``conductor`` with purpose ``hitl_decision``: the driver routes it to the person (the
GUI's manual agent, or a decisions file on the command line).

In a challenge round the peers' positions (their rationales and options are the models' words)
reach the template fenced with a name drawn fresh for the call (``meta["delimiter"]``,
``meta["fence_escapes"]``), and a ballot is read once (:func:`read`) from the agent's own words only
(SPEC §11): fenced text, lines starting with ``>``, passages of what the ballot was shown (its
whole prompt: question, options, peers' positions) and echoes of the call's template are removed
from the reply first.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model

from workbench.core.protocols.cons.config import (
    DEFAULT_CONSENSUS_THRESHOLD,
    DEFAULT_COUNT_THRESHOLD,
    DEFAULT_MAX_CHALLENGE_ROUNDS,
    DEFAULT_MIN_VOTERS,
)
from workbench.core.protocols.cons.models import Ballot
from workbench.core.protocols.cons.outcome import ConsOutcome
from workbench.core.protocols.cons.steps import IDENTITY
from workbench.core.protocols.cons.tally import apply_challenge_round, open_state
from workbench.core.protocols.shared.declaration import Prompts, Record, template_echoes
from workbench.core.protocols.shared.replies import own_words, requested_vote, validation_problem
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Batch, Note, Reading
from workbench.core.protocols.shared.structured import CONFIDENCE_SCHEMA

CONDUCTOR = "conductor"
# The ballot's reply format, given to the templates as their required ``reply_format``. The fields
# in words, with no example value to copy: small models fill a JSON example's placeholders with the
# placeholders themselves ("rationale": "<why, required>"), which is no rationale at all.
BALLOT_FORMAT = (
    'Reply with one JSON object only, with these keys: "option" (one of the options, exactly as '
    'written), "vote" ("accept", "reject" or "abstain"), "confidence" (a number from 0 to 1: how sure '
    'you are), "rationale" (why you vote so, in your own words; required) and "evidence" (a list of '
    'citations, each with "type" ("code", "doc", "test" or "counter-proof"), "file" and "section").'
)
# Echoes a reply may carry beyond its template's words: the format and its phrases.
FORMAT_ECHOES = (BALLOT_FORMAT, "why you vote so, in your own words; required", "how sure you are",
                 "one of the options, exactly as written")
# A peer's position as the challenge round shows it, inside the fenced block: data, not wording.
POSITION_LINE = "- Agent {n}: {vote} {option!r} ({confidence}): {rationale}"
BALLOT_MAX_TOKENS = 320  # the output cap of a ballot: option, vote, confidence, a rationale, a few citations
EVIDENCE_TYPES = ("code", "doc", "test", "counter-proof")


def _lower(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


def _none_empty(value: object) -> object:
    return [] if value is None else value


class EvidenceReply(BaseModel):
    """One citation in a ballot reply. The schema offers the four types the prompt names; the
    parser keeps any type (CONS-004 is judged, not enforced)."""

    model_config = ConfigDict(extra="ignore")
    type: str = Field(json_schema_extra={"enum": list(EVIDENCE_TYPES)})
    file: str | None = None
    section: str | None = None


class BallotReply(BaseModel):
    """The ballot the prompt asks for (reply schema ``cons_ballot``). The parser validates every
    reply with it, then with the engine's own :class:`~.models.Ballot` (CONS-001..003)."""

    model_config = ConfigDict(extra="ignore")
    option: str
    vote: Annotated[Literal["accept", "reject", "abstain"], BeforeValidator(_lower)]
    confidence: float = Field(ge=0.0, le=1.0, allow_inf_nan=False, strict=True, json_schema_extra=CONFIDENCE_SCHEMA)
    rationale: str
    evidence: Annotated[list[EvidenceReply], BeforeValidator(_none_empty)] = []


@lru_cache(maxsize=64)
def ballot_reply_model(options: tuple[str, ...]) -> type[BaseModel]:
    """:class:`BallotReply` whose ``option`` is one of ``options``: the schema a ballot call sends."""
    if not options:
        return BallotReply
    return create_model("BallotReply", __base__=BallotReply, option=(Literal[options], ...))


@dataclass(frozen=True)
class ConsAgent:
    id: str
    persona: str = ""


@dataclass(frozen=True)
class ConsRunConfig:
    seed: int
    question_id: str
    question: str
    options: tuple[str, ...]
    agents: tuple[ConsAgent, ...]
    consensus_threshold: float = DEFAULT_CONSENSUS_THRESHOLD
    count_threshold: float = DEFAULT_COUNT_THRESHOLD
    min_voters: int = DEFAULT_MIN_VOTERS
    max_challenge_rounds: int = DEFAULT_MAX_CHALLENGE_ROUNDS
    ask_human: bool = True  # wait for the conductor where an escalation requires a human


@dataclass(frozen=True)
class ParsedBallot:
    ballot: dict | None  # the ballot as CONS input, or None when the reply could not be read
    status: str  # "valid", "invalid" or "failed"
    reason: str = ""
    raw: str | None = None


@dataclass
class ConsRunResult:
    outcome: ConsOutcome
    rounds: list[dict[str, ParsedBallot]] = field(default_factory=list)  # per round: agent -> ballot
    human_decision: str | None = None


def under_vote(call: AgentCall) -> tuple[str, ...]:
    """What a ballot call showed the agent: its prompt (the question, the options and, in a
    challenge round, the peers' positions). A JSON object wholly copied from it is quoted, not the
    agent's ballot (SPEC §11); an agent's own ballot that repeats its words stays whole."""
    return tuple(str(m.get("content") or "") for m in call.messages if m.get("role") == "user")


@lru_cache(maxsize=1)
def default_pieces() -> tuple[str, ...]:
    """What of the default ballot prompts a reply may echo (:func:`~.declaration.template_echoes`):
    for a reply read without its call's own template (a test, a stored reply of an old run)."""
    texts = [t for step in ("ballot", "challenge") for t in IDENTITY.default_template(step).fixed_text]
    return template_echoes(texts, FORMAT_ECHOES)


def call_pieces(call: AgentCall) -> tuple[str, ...]:
    """The echoes a reply to ``call`` may carry: its own template's words (``meta["template_pieces"]``,
    set when the call was made), else the default prompts'."""
    pieces = call.meta.get("template_pieces")
    return tuple(pieces) if pieces is not None else default_pieces()


def parse_ballot_reply(agent: str, text: str | None, fence: str | None = None,
                       quoted: Sequence[str] = (), template: Sequence[str] | None = None) -> ParsedBallot:
    """Read one agent's ballot from its own words (``fence``'s blocks, lines starting with ``>``,
    passages of the ``quoted`` prompt and echoes of the ``template``, by default the default
    prompts', removed); the engine's own validation (CONS-001..003) decides validity. Objects that
    are no ballot are passed over; ballots that disagree (option, vote or confidence) are none."""
    if text is None:
        return ParsedBallot(None, "failed", "no reply")
    pieces = default_pieces() if template is None else template
    found = requested_vote(own_words(text, fence, pieces, quoted), lambda data: _ballot_of(agent, data),
                           same=lambda b: (b["option"], str(b["vote"]).strip().lower(), b["confidence"]))
    if found.vote is None:
        return ParsedBallot(None, "invalid", found.problem or "", text)
    return ParsedBallot(found.vote, "valid", raw=text)


def _ballot_of(agent: str, data: dict) -> tuple[dict | None, str]:
    try:
        BallotReply.model_validate(data)
    except ValidationError as exc:
        return None, validation_problem(exc)
    ballot = {"agentId": agent, "option": data.get("option"), "vote": data.get("vote"),
              "confidence": data.get("confidence"), "rationale": data.get("rationale"),
              "evidence": data.get("evidence") or []}
    try:
        Ballot.model_validate({"agent_id": agent, **{k: v for k, v in ballot.items() if k != "agentId"}})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return None, f"{where}: {first['msg'].removeprefix('Value error, ')}"
    return ballot, ""


def _ballot_call(cfg: ConsRunConfig, prompts: Prompts, agent: ConsAgent, round_no: int, positions: str) -> AgentCall:
    step = "ballot" if round_no == 0 else "challenge"
    values = {"persona": agent.persona, "question_id": cfg.question_id, "question": cfg.question,
              "options": list(cfg.options), "reply_format": BALLOT_FORMAT}
    if step == "challenge":
        values["positions"] = positions or None
    return prompts.call(step, key=f"cons/{round_no}/{agent.id}", agent=agent.id, round_no=round_no, values=values,
                        meta={"question": cfg.question_id, "challenge_round": round_no, "options": list(cfg.options),
                              "max_tokens": BALLOT_MAX_TOKENS,
                              "template_pieces": prompts.echo_pieces(step, FORMAT_ECHOES)})


def positions_shown(ballots: dict[str, ParsedBallot], exclude: str) -> str:
    """The other agents' readable ballots, one :data:`POSITION_LINE` each, numbered by the agent's
    place in the panel (sorted by id): what a challenge round shows ``exclude``, as one text."""
    lines = []
    for i, (agent, parsed) in enumerate(sorted(ballots.items())):
        if agent != exclude and parsed.ballot:
            b = parsed.ballot
            lines.append(POSITION_LINE.format(n=i + 1, vote=b["vote"], option=b["option"],
                                              confidence=b["confidence"], rationale=b["rationale"]))
    return "\n".join(lines)


def read(call: AgentCall, reply: AgentReply) -> Reading:
    """A CONS reply, read once (SPEC §7): a ballot (a :class:`ParsedBallot` and its ``cons_ballot``
    record; none for a failed call), or the conductor's decision (its text; nothing to store here:
    the decision is stored with the outcome)."""
    if call.purpose == "hitl_decision":
        return Reading(reply.text if reply.ok else None)
    if not reply.ok:
        return Reading(ParsedBallot(None, "failed", reply.error or "call failed"))
    parsed = parse_ballot_reply(call.agent, reply.text, call.meta.get("delimiter"), under_vote(call),
                                call_pieces(call))
    b = parsed.ballot or {}
    record = Record("cons_ballot", {
        "question": call.meta["question"], "challenge_round": call.meta.get("challenge_round", 0),
        "agent": call.agent, "option": b.get("option"), "vote": b.get("vote"), "confidence": b.get("confidence"),
        "rationale": b.get("rationale"), "evidence": b.get("evidence") or [], "status": parsed.status,
        "invalid_reason": parsed.reason or None, "raw": reply.text})
    valid = parsed.ballot is not None
    return Reading(parsed, valid, (record,), None if valid else parsed.reason or "unreadable ballot")


def reading(call: AgentCall, reply: AgentReply) -> Reading:
    """The reply's reading: the one its driver made (:func:`~..shared.steps.read_reply`), else made now."""
    return reply.reading if reply.reading is not None else read(call, reply)


def _ask(cfg: ConsRunConfig, prompts: Prompts, round_no: int, previous: dict[str, ParsedBallot]):
    calls = [_ballot_call(cfg, prompts, a, round_no, positions_shown(previous, a.id)) for a in cfg.agents]
    label = "Ballots" if round_no == 0 else f"Challenge round {round_no}"
    replies = yield Batch(tuple(calls), label)
    return {call.agent: reading(call, replies[call.key]).value for call in calls}


def run_cons(cfg: ConsRunConfig, prompts: Prompts | None = None
             ) -> Generator[Batch | Note, dict[str, AgentReply] | None, ConsRunResult]:
    prompts = prompts if prompts is not None else Prompts(IDENTITY)
    opening = yield from _ask(cfg, prompts, 0, {})
    rounds = [opening]
    state = open_state({
        "questionId": cfg.question_id, "question": cfg.question, "options": list(cfg.options),
        "consensusThreshold": cfg.consensus_threshold, "countThreshold": cfg.count_threshold,
        "minVoters": cfg.min_voters,
        "challengeRounds": 0, "maxChallengeRounds": cfg.max_challenge_rounds,
        "votes": [p.ballot for p in opening.values() if p.ballot],
    })
    outcome = state.evaluate()
    while outcome.next_action == "challenge_round":
        yield Note("phase", f"No verdict yet: challenge round {state.question.challenge_rounds + 1}")
        latest = yield from _ask(cfg, prompts, state.question.challenge_rounds + 1, rounds[-1])
        rounds.append(latest)
        state = apply_challenge_round(state, [p.ballot for p in latest.values() if p.ballot])
        outcome = state.evaluate()
    yield Note("result", f"Verdict: {outcome.verdict}", {"verdict": outcome.verdict, "next_action": outcome.next_action})

    result = ConsRunResult(outcome=outcome, rounds=rounds)
    if cfg.ask_human and outcome.escalations:
        reasons = [e.reason for e in outcome.escalations]
        call = prompts.call("decision", key="cons/hitl", agent=CONDUCTOR,
                            values={"question_id": cfg.question_id, "question": cfg.question, "reasons": reasons},
                            meta={"question": cfg.question_id, "reasons": reasons})
        replies = yield Batch((call,), "Waiting for a human decision")
        result.human_decision = reading(call, replies[call.key]).value
    return result
