"""The Resonant Consensus Protocol as a run: generate, vote, classify (the paper's Algorithm 1),
with optional iterative refinement (§11.3). A step generator (see :mod:`.steps`).

Fairness rules every vote prompt keeps:
- artifacts are fenced with a name drawn fresh for each call from a CSPRNG (never from the
  seed), so an artifact cannot close its own fence or pose as instructions; the name and the
  escapes made are stored with the call (``meta["delimiter"]``, ``meta["fence_escapes"]``);
- a vote is read from the voter's own words only: fenced text, echoes of the prompt's template,
  lines starting with ``>`` and passages of the artifacts under vote are removed from the reply
  first (SPEC §1 "Reading a reply", §11), and the JSON vote asked for wins over a loose verdict;
- authorship is hidden: a voter sees only the text;
- the order in which artifacts are presented is shuffled per voter from the run seed;
- authors never vote on their own artifact.
In ballot mode a voter sees every other artifact in one call (m calls instead of m(m-1)).
"""

from __future__ import annotations

import random
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, TypeAdapter, ValidationError, create_model, field_validator

import workbench.core.protocols.rcp.classify as rcp
from workbench.core.protocols.rcp.config import RcpOptions
from workbench.core.protocols.rcp.steps import IDENTITY
from workbench.core.protocols.shared.declaration import Prompts, Record, template_echoes
from workbench.core.protocols.shared.replies import (
    fenced_texts,
    requested_vote,
    said,
    unquoted,
    verdict_at_start,
)
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Batch, Note, Reading

# The reply formats: what the vote's and the ballot's parsers need, given to their templates as the
# required variable ``reply_format`` (prompts/vote.j2, prompts/ballot.j2), so an edited template
# cannot leave them out.
VOTE_FORMAT = ('Reply with JSON only: {"vote": "YES" or "NO", "reason": "<one sentence>"}. '
               "A reply that starts with YES or NO is also accepted.")
BALLOT_FORMAT = 'Reply with JSON only: {"votes": {"A": "YES" or "NO", ...}}'
# Echoes a reply may carry beyond its template's words: the verdicts' wording as the formats give it.
VERDICT_ECHOES = ('"YES" or "NO"', "YES or NO")
_DEFAULTS = RcpOptions()  # every default of a run's options, defined in .config

# Output caps per call kind (tokens): the smaller of this and the provider's (or agent's)
# max_tokens is sent. A vote is a short JSON object with a one-sentence reason; an artifact is
# "one or two short paragraphs"; a ballot is a label and a verdict per artifact.
GENERATE_MAX_TOKENS = 512
VOTE_MAX_TOKENS = 160
BALLOT_BASE_TOKENS, BALLOT_TOKENS_PER_ARTIFACT = 48, 12


def ballot_max_tokens(artifacts: int) -> int:
    return BALLOT_BASE_TOKENS + BALLOT_TOKENS_PER_ARTIFACT * artifacts


@dataclass(frozen=True)
class RcpAgent:
    id: str
    cluster: str
    persona: str = ""


@dataclass(frozen=True)
class RcpRunConfig:
    query: str
    seed: int
    agents: tuple[RcpAgent, ...]
    clusters: tuple[dict, ...]  # the classification panel: [{"name", "agents", "theta"?, "weight"?}]
    reference: str | None = _DEFAULTS.reference
    theta: float = _DEFAULTS.theta
    tau: float = _DEFAULTS.tau
    weighted: bool = _DEFAULTS.weighted
    ballot_mode: bool = _DEFAULTS.ballot_mode
    refinement_rounds: int = _DEFAULTS.refinement_rounds


@dataclass(frozen=True)
class ParsedVote:
    value: int | None  # 1, 0, or None when the reply could not be read as a vote
    status: str  # "valid", "invalid" (unreadable reply) or "failed" (no reply)
    reason: str = ""


@dataclass
class RcpRound:
    index: int
    artifacts: dict[str, dict] = field(default_factory=dict)  # key -> {author, cluster, text}
    votes: dict[str, dict[str, ParsedVote]] = field(default_factory=dict)  # artifact -> voter -> vote
    states: list[dict] = field(default_factory=list)  # resonance states, in result order


def presentation_order(seed: int, round_index: int, voter: str, keys: list[str]) -> list[str]:
    order = sorted(keys)
    random.Random(f"{seed}/order/{round_index}/{voter}").shuffle(order)
    return order


def _verdict(value: object) -> object:
    return value.strip().upper() if isinstance(value, str) else value


# A vote's verdict: YES or NO, any case, surrounding spaces ignored.
Verdict = Annotated[Literal["YES", "NO"], BeforeValidator(_verdict)]
_VERDICT = TypeAdapter(Verdict)


class VoteReply(BaseModel):
    """The structured vote the prompt asks for (reply schema ``rcp_vote``); anything else in the
    object is ignored. Its JSON schema is what a model is sent (``shared.structured``)."""

    model_config = ConfigDict(extra="ignore")
    vote: Verdict
    reason: str = ""

    @field_validator("reason", mode="before")
    @classmethod
    def _text(cls, value: object) -> str:
        return "" if value is None else str(value)


@lru_cache(maxsize=64)
def ballot_model(labels: tuple[str, ...]) -> type[BaseModel]:
    """The ballot reply ``{"votes": {"A": "YES", ...}}`` for these labels (reply schema
    ``rcp_ballot``): one :data:`Verdict` per label."""
    votes = create_model("BallotVotes", __config__=ConfigDict(extra="ignore"),
                         **{label: (Verdict, ...) for label in labels})
    return create_model("BallotReply", __config__=ConfigDict(extra="ignore"), votes=(votes, ...))


def under_vote(call: AgentCall) -> tuple[str, ...]:
    """The artifacts a vote or ballot call showed, as the voter saw them (its fenced blocks): a
    passage of them in the reply is quoted, not the voter's (SPEC §11)."""
    return fenced_texts(call.messages, call.meta.get("delimiter"))


@lru_cache(maxsize=1)
def default_pieces() -> tuple[str, ...]:
    """What of the default vote and ballot prompts a reply may echo (:func:`template_pieces`):
    for a reply read without its call's own template (a test, a stored reply of an old run)."""
    texts = [t for step in ("vote", "ballot") for t in IDENTITY.default_template(step).fixed_text]
    return template_echoes(texts, (VOTE_FORMAT, BALLOT_FORMAT, *VERDICT_ECHOES))


def call_pieces(call: AgentCall) -> tuple[str, ...]:
    """The echoes a reply to ``call`` may carry: its own template's words (``meta["template_pieces"]``,
    set when the call was made), else the default prompts'."""
    pieces = call.meta.get("template_pieces")
    return tuple(pieces) if pieces is not None else default_pieces()


def parse_vote(text: str | None, fence: str | None = None, quoted: Sequence[str] = (),
               template: Sequence[str] | None = None) -> ParsedVote:
    """The vote in the voter's own words (``own_words``: the call's ``fence`` and any fenced
    block, lines starting with ``>``, passages of the ``quoted`` artifacts and echoes of the
    prompt's template removed first): the JSON vote asked for (alone, inside prose, or written
    twice alike), else a reply that starts with YES or NO (the paper's §10.1)."""
    if text is None:
        return ParsedVote(None, "invalid", "no reply")
    return _read_vote(text, said(text, fence, default_pieces() if template is None else template), quoted)


def _vote_of(data: object) -> ParsedVote:
    try:
        reply = VoteReply.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        if first.get("loc") == ("vote",):
            got = data.get("vote") if isinstance(data, dict) else None
            return ParsedVote(None, "invalid", f"'vote' must be YES or NO, got {str(got or '').strip() or 'nothing'!r}")
        return ParsedVote(None, "invalid", first["msg"].removeprefix("Value error, "))
    return ParsedVote(1 if reply.vote == "YES" else 0, "valid", reply.reason.strip())


def _json_vote(data: dict) -> tuple[ParsedVote | None, str]:
    vote = _vote_of(data)
    return (vote, "") if vote.status == "valid" else (None, vote.reason)


def _read_vote(reply: str, written: str, quoted: Sequence[str]) -> ParsedVote:
    """The JSON vote first; then a leading YES or NO; else why neither was found. ``written`` is
    what the voter wrote in ``reply`` outside marked quotes (``said``); its own words are that
    without the passages of ``quoted``. A loose verdict's reason is the rest of ``written``: the
    voter may quote the artifact in its reason."""
    own = unquoted(written, quoted)
    found = requested_vote(own, _json_vote, same=lambda v: v.value)
    if found.vote is not None:
        return found.vote
    if found.ambiguous:
        return ParsedVote(None, "invalid", found.problem or "")
    verdict, end = verdict_at_start(own)  # offsets in own are offsets in written
    if verdict is not None:
        return ParsedVote(1 if verdict == "YES" else 0, "valid", written[end:].strip())
    if found.held_json:
        return ParsedVote(None, "invalid", found.problem or "")
    if not own.strip() and reply.strip():
        return ParsedVote(None, "invalid", "reply holds no words of the voter's own: all of it is quoted "
                                           "(a fenced block, lines starting with >, the artifact's words) or "
                                           "the prompt echoed")
    return ParsedVote(None, "invalid", "reply neither starts with YES or NO nor is the JSON vote asked for")


def parse_ballot(text: str | None, labels: list[str], fence: str | None = None,
                 quoted: Sequence[str] = (), template: Sequence[str] | None = None) -> dict[str, ParsedVote]:
    """A ballot reply ``{"votes": {"A": "YES", ...}}`` (possibly inside prose), read from the
    voter's own words only (as :func:`parse_vote`, ``quoted`` being every artifact shown); each
    label's verdict is validated with :func:`ballot_model`'s type (a verdict followed by words,
    "YES, because...", is read too, from the voter's own words); a label left out is an invalid
    vote. Two ballots that differ are ambiguous: every label is invalid."""
    if text is None:
        return {label: ParsedVote(None, "failed", "the ballot call failed") for label in labels}

    def read(data: dict) -> tuple[dict[str, ParsedVote] | None, str]:
        votes = data.get("votes")
        if not isinstance(votes, dict):
            return None, "ballot reply is not the JSON asked for"
        return {label: _ballot_verdict(votes[label], quoted) if label in votes
                else ParsedVote(None, "invalid", "no vote for this artifact in the ballot") for label in labels}, ""

    found = requested_vote(unquoted(said(text, fence, default_pieces() if template is None else template), quoted), read,
                           same=lambda votes: tuple((v.value, v.status) for v in votes.values()))
    if found.vote is not None:
        return found.vote
    why = found.problem if found.ambiguous else "ballot reply is not the JSON asked for"
    return {label: ParsedVote(None, "invalid", why) for label in labels}


def _ballot_verdict(value: object, quoted: Sequence[str]) -> ParsedVote:
    try:
        verdict = _VERDICT.validate_python(value)
    except ValidationError:
        return _read_vote(str(value), said(str(value)), quoted)
    return ParsedVote(1 if verdict == "YES" else 0, "valid", "")


def _generate_call(cfg: RcpRunConfig, prompts: Prompts, r: int, agent: RcpAgent, context: list[str]) -> AgentCall:
    return prompts.call("generate", key=f"r{r}/generate/{agent.id}", agent=agent.id, round_no=r,
                        values={"query": cfg.query, "persona": agent.persona, "common_ground": context},
                        meta={"artifact": f"r{r}-{agent.id}", "author": agent.id, "cluster": agent.cluster,
                              "query": cfg.query, "max_tokens": GENERATE_MAX_TOKENS})


def _vote_calls(cfg: RcpRunConfig, prompts: Prompts, rnd: RcpRound, voter: RcpAgent) -> list[AgentCall]:
    others = [k for k, a in rnd.artifacts.items() if a["author"] != voter.id]
    order = presentation_order(cfg.seed, rnd.index, voter.id, others)
    if cfg.ballot_mode:
        labels = [chr(ord("A") + i) if i < 26 else f"A{i}" for i in range(len(order))]
        return [prompts.call("ballot", key=f"r{rnd.index}/ballot/{voter.id}", agent=voter.id, round_no=rnd.index,
                             values={"query": cfg.query, "persona": voter.persona, "labels": labels,
                                     "responses": [rnd.artifacts[k]["text"] for k in order],
                                     "reply_format": BALLOT_FORMAT},
                             meta={"voter": voter.id, "labels": dict(zip(labels, order)),
                                   "max_tokens": ballot_max_tokens(len(order)),
                                   "template_pieces": _pieces(prompts, "ballot")})]
    return [prompts.call("vote", key=f"r{rnd.index}/vote/{k}/{voter.id}", agent=voter.id, round_no=rnd.index,
                         values={"query": cfg.query, "persona": voter.persona, "artifact": rnd.artifacts[k]["text"],
                                 "reply_format": VOTE_FORMAT},
                         meta={"artifact": k, "voter": voter.id, "presentation_index": position,
                               "max_tokens": VOTE_MAX_TOKENS, "template_pieces": _pieces(prompts, "vote")})
            for position, k in enumerate(order)]


def _pieces(prompts: Prompts, step: str) -> tuple[str, ...]:
    """What a reply to this step may echo: its template's words, the formats, the verdicts."""
    return prompts.echo_pieces(step, (VOTE_FORMAT, BALLOT_FORMAT, *VERDICT_ECHOES))


def read(call: AgentCall, reply: AgentReply) -> Reading:
    """An RCP reply, read once (SPEC §7): an artifact's text, or the votes of a vote or a ballot
    (:func:`parse_vote`, :func:`parse_ballot`), with the records the project stores for it."""
    text = reply.text if reply.ok else None
    if call.purpose == "generate":
        body = text.strip() if text else ""
        if not body:
            return Reading()
        return Reading(body, True, (Record("artifact", {"key": call.meta["artifact"], "author": call.meta["author"],
                                                         "cluster": call.meta.get("cluster"), "content": body}),))
    if call.purpose == "vote":
        vote = (parse_vote(text, call.meta.get("delimiter"), under_vote(call), call_pieces(call)) if reply.ok
                else ParsedVote(None, "failed", reply.error or ""))
        votes = {call.meta["artifact"]: vote}
        positions = {call.meta["artifact"]: call.meta.get("presentation_index")}
    else:
        labels = call.meta["labels"]
        parsed = parse_ballot(text, list(labels), call.meta.get("delimiter"), under_vote(call), call_pieces(call))
        votes = {labels[label]: v for label, v in parsed.items()}
        positions = {key: i for i, key in enumerate(labels.values())}
    records = tuple(Record("vote", {"artifact": artifact, "voter": call.agent, "value": v.value, "status": v.status,
                                    "reason": v.reason, "raw": text, "ballot_mode": call.purpose == "ballot",
                                    "presentation_index": positions.get(artifact)})
                    for artifact, v in votes.items())
    valid = all(v.status == "valid" for v in votes.values()) if reply.ok else None
    bad = [(artifact, v.reason) for artifact, v in votes.items() if v.status != "valid"]
    problem = None
    if valid is False:
        labels = {k: label for label, k in (call.meta.get("labels") or {}).items()}
        problem = (bad[0][1] or "unreadable vote" if call.purpose == "vote"
                   else "; ".join(f"{labels.get(a, a)}: {why}" for a, why in bad[:3]))
    return Reading(votes, valid, records, problem)


def classify_round(cfg: RcpRunConfig, rnd: RcpRound) -> list[dict]:
    payload = {
        "clusters": list(cfg.clusters), "reference": cfg.reference, "theta": cfg.theta, "tau": cfg.tau,
        "weighted": cfg.weighted,
        "artifacts": [{"id": k, "author": a["author"],
                       "votes": {v: pv.value for v, pv in rnd.votes.get(k, {}).items()}}
                      for k, a in rnd.artifacts.items()],
    }
    if payload["reference"] is None:
        del payload["reference"]
    return rcp.classify_payload(payload)


def run_rcp(cfg: RcpRunConfig, prompts: Prompts | None = None) -> Generator[Batch | Note, dict[str, AgentReply] | None, list[RcpRound]]:
    if prompts is None:
        prompts = Prompts(IDENTITY)
    rounds: list[RcpRound] = []
    context: list[str] = []
    for r in range(1, cfg.refinement_rounds + 2):
        rnd = RcpRound(index=r)
        replies = yield Batch(tuple(_generate_call(cfg, prompts, r, a, context) for a in cfg.agents), f"Round {r}: generate")
        for agent in cfg.agents:
            key = f"r{r}/generate/{agent.id}"
            reply = replies[key]
            if reply.ok and reply.text.strip():
                rnd.artifacts[f"r{r}-{agent.id}"] = {"author": agent.id, "cluster": agent.cluster, "text": reply.text.strip()}
            else:
                yield Note("warning", f"{agent.id} produced no artifact in round {r}: {reply.error or 'empty reply'}")

        calls = [c for voter in cfg.agents for c in _vote_calls(cfg, prompts, rnd, voter)]
        replies = yield Batch(tuple(calls), f"Round {r}: vote")
        for call in calls:
            for artifact, vote in reading(call, replies[call.key]).value.items():
                rnd.votes.setdefault(artifact, {})[call.agent] = vote

        rnd.states = classify_round(cfg, rnd)
        yield Note("result", f"Round {r}: {len(rnd.states)} artifacts classified", {"round": r, "states": rnd.states})
        rounds.append(rnd)
        context = [rnd.artifacts[s["artifact"]]["text"] for s in rnd.states if s["tier"] == "positive_consensus"]
    return rounds


def reading(call: AgentCall, reply: AgentReply) -> Reading:
    """The reply's reading: the one its driver made (:func:`~.steps.read_reply`), else made now."""
    return reply.reading if reply.reading is not None else read(call, reply)
