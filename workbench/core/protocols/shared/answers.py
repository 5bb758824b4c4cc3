"""What the answer protocols share (SPEC §8): the controls ``single`` and ``vote``, and ``debate``.
Each agent answers a question; the run's answer is one agent's, or the plurality of several.

- **The panel.** ``agents``, a flat list, or an RCP config's ``clusters``, flattened in order (so
  the same agents answer under every protocol of a study): :class:`AnswerPanel`, mixed into each
  protocol's run configuration. The agents' order is the config's: it breaks ties.
- **An answer** is an artifact (the record kind RCP's answers are too): the project layer scores it
  against the run's known answer when it stores it (never the protocol).
- **The plurality** (:func:`plurality`) compares the answers as the scorer reads them: the last
  number, the last choice letter; an answer nothing could be read from takes no part. Over a query
  with no ``answer_type``, and over ``exact`` and ``regex`` items, it compares whitespace- and
  case-normalised texts (a pattern reads nothing out of a wrong answer, so it cannot group
  answers). Ties go to the answer of the agent that comes first in the config.
- **The reply format** (:func:`answer_format`) is what the reader needs: how to end the reply, by
  answer type; it is each step's required variable ``answer_format``, given by the code.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from workbench.core import report_md as md
from workbench.core.errors import InputError
from workbench.core.protocols.shared.declaration import Prompts, Record, ValidityUnit
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Reading
from workbench.core.protocols.shared.templates import Variable
from workbench.core.protocols.shared.truth import accuracy_text, tally
from workbench.core.scoring import extract, normalised

# The output cap of an answer (tokens): Du et al.'s answers reason before they answer.
ANSWER_MAX_TOKENS = 512
FLAT_CLUSTER = "agents"  # the one cluster a flat ``agents`` list makes
# What a run's validity counts, for every answer protocol: its answers.
ANSWER_VALIDITY = ValidityUnit("artifact", "answers", step_kind="answer")

QUERY = Variable("query", "the question the run puts to its agents (a dataset item's question)")
PERSONA = Variable("persona", "the agent's persona, from its config (empty: a default line)")
ANSWER_FORMAT = Variable("answer_format", "how the reply must end so its answer can be read (by the item's "
                                          "answer type)", required=True)

# How a reply must end so its answer is read (the scorer's rules, docs/protocols.md).
FORMATS = {
    "number": "Make sure to state your answer at the end of the response, as a number in digits.",
    "choice": "Make sure to state your answer at the end of the response, as the letter of one option, "
              "such as (A).",
    "exact": "Reply with the answer only, without any explanation.",
    "regex": "State your answer briefly.",
    None: "State your answer briefly.",
}


def answer_format(answer_type: str | None) -> str:
    return FORMATS.get(answer_type, FORMATS[None])


# ----- the panel ---------------------------------------------------------------------------------
class AnswerPanel(BaseModel):
    """The panel of an answer protocol's run configuration: a flat ``agents`` list (made one
    cluster, ``agents``) or RCP's ``clusters``, flattened in order. RCP's own settings (a
    cluster's theta or weight, the reference cluster) are refused: a config written by hand stays
    strict."""

    model_config = ConfigDict(strict=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _flat_agents(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "agents" not in data:
            return data
        if "clusters" in data:
            raise InputError("agents", "give the agents as a flat list or as clusters, not both")
        agents = data["agents"]
        rest = {k: v for k, v in data.items() if k != "agents"}
        return {**rest, "clusters": [{"name": FLAT_CLUSTER, "agents": agents}]}

    @model_validator(mode="after")
    def _no_rcp_settings(self):
        protocol = getattr(self, "protocol", "this protocol")
        for i, cluster in enumerate(getattr(self, "clusters", ())):
            for key in ("theta", "weight"):
                if getattr(cluster, key, None) is not None:
                    raise InputError(f"clusters[{i}].{key}", f"a {protocol} run takes no {key}: it is an RCP setting")
        if getattr(self, "reference", None) is not None:
            raise InputError("reference", f"a {protocol} run has no reference cluster: it is an RCP setting")
        return self


@dataclass(frozen=True)
class AnswerAgent:
    id: str
    cluster: str
    persona: str = ""


def agents_of(cfg) -> tuple[AnswerAgent, ...]:
    """The run's agents in the config's order (clusters flattened)."""
    return tuple(AnswerAgent(a.id, c.name, a.persona) for c in cfg.clusters for a in c.agents)


def answer_type_of(cfg) -> str | None:
    item = getattr(cfg, "item", None)
    return item.answer_type if item is not None and item.answer is not None else None


# ----- the calls and their reading ---------------------------------------------------------------
def artifact_key(round_no: int, agent: str) -> str:
    return f"r{round_no}-{agent}"


def _round_of(key: object) -> int:
    head = str(key).split("-", 1)[0].removeprefix("r")
    return int(head) if head.isdigit() else 0


def answer_call(prompts: Prompts, step: str, agent: AnswerAgent, round_no: int, values: dict,
                answer_type: str | None) -> AgentCall:
    """One agent's answer in round ``round_no``: the step's template with the query, the persona,
    the reply format and ``values`` (a debate's peers)."""
    fmt = answer_format(answer_type)
    return prompts.call(step, key=f"r{round_no}/{step}/{agent.id}", agent=agent.id, round_no=round_no,
                        values={"query": values.pop("query"), "persona": agent.persona, "answer_format": fmt, **values},
                        meta={"artifact": artifact_key(round_no, agent.id), "author": agent.id,
                              "cluster": agent.cluster, "answer_type": answer_type, "max_tokens": ANSWER_MAX_TOKENS})


def read(call: AgentCall, reply: AgentReply) -> Reading:
    """An answer, read once (SPEC §7): its text (the generator's value), and the artifact the
    project stores (and scores). An empty reply or a failed call is no answer."""
    text = reply.text.strip() if reply.ok and reply.text else ""
    if not text:
        return Reading(None, False if reply.ok else None, (), "the reply is empty" if reply.ok else None)
    return Reading(text, True, (Record("artifact", {"key": call.meta["artifact"], "author": call.meta["author"],
                                                    "cluster": call.meta.get("cluster"), "content": text}),))


def reading(call: AgentCall, reply: AgentReply) -> Reading:
    """The reply's reading: the one its driver made (:func:`~.steps.read_reply`), else made now."""
    return reply.reading if reply.reading is not None else read(call, reply)


def texts(calls: Iterable[AgentCall], replies: dict[str, AgentReply]) -> list[tuple[str, str | None]]:
    """``(agent, answer text or None)`` for each call, in the calls' order: the reply as the
    driver hands it over (a wrapper such as Resonance Echo removes its own lines first), read as
    :func:`read` reads it."""
    out = []
    for call in calls:
        reply = replies[call.key]
        text = reply.text.strip() if reply.ok and reply.text else ""
        out.append((call.agent, text or None))
    return out


# ----- the plurality -----------------------------------------------------------------------------
def answer_key(text: str | None, answer_type: str | None) -> str | None:
    """What a plurality compares of an answer (see the module's rules); None: it takes no part."""
    if text is None or not text.strip():
        return None
    if answer_type in ("number", "choice"):
        return extract(text, answer_type)
    return normalised(text) or None


@dataclass(frozen=True)
class Plurality:
    answer: str | None  # the answer most agents gave (as compared), None when no answer could be read
    agent: str | None  # the first agent (in the config's order) that gave it: its reply is the run's answer
    counts: dict[str, int] = field(default_factory=dict)  # each answer given, and by how many agents
    tied: tuple[str, ...] = ()  # the answers tied at the top, when more than one (the tie broken by order)

    def to_json(self) -> dict:
        return {"answer": self.answer, "agent": self.agent, "counts": dict(self.counts), "tied": list(self.tied)}


def plurality(answers: Sequence[tuple[str, str | None]], answer_type: str | None) -> Plurality:
    """The plurality of ``answers`` (``(agent, text)`` in the config's order): the answer most
    agents gave; a tie goes to the answer of the agent that comes first."""
    keyed = [(agent, answer_key(text, answer_type)) for agent, text in answers]
    counts = Counter(key for _agent, key in keyed if key is not None)
    if not counts:
        return Plurality(None, None)
    top = max(counts.values())
    tied = {key for key, n in counts.items() if n == top}
    agent, key = next((agent, key) for agent, key in keyed if key in tied)
    ordered = [k for _a, k in keyed if k in tied]
    return Plurality(key, agent, dict(counts), tuple(dict.fromkeys(ordered)) if len(tied) > 1 else ())


def final_answer(found: Plurality, answers: Sequence[tuple[str, str | None]]) -> Record:
    """The run's answer as the project stores it (kind ``answer``: scored there): the reply of the
    agent whose answer won, and the tally."""
    text = dict(answers).get(found.agent) if found.agent is not None else None
    return Record("answer", {"key": "final", "text": text, "agent": found.agent, "extracted": found.answer,
                             "detail": found.to_json()})


# ----- the report --------------------------------------------------------------------------------
SCORE_LABELS = {"correct": "correct", "incorrect": "incorrect", "unscorable": "unscorable (no answer read)"}


def report_lines(view, *, how: str) -> list[str]:
    """An answer protocol's section of a run's report: how it works (``how``), the question and its
    known answer, each agent's answer (each round's), and the run's answer with its verdict."""
    item = view.config.get("item") or {}
    lines = ["## How to read this report", "", how, ""]
    if item.get("answer") is not None:
        lines += [f"- **Item**: `{md.text(item.get('id'))}`, a question with a known answer: "
                  f"**{md.text(item['answer'])}** (answer type {md.text(item.get('answer_type'))})", ""]
    arts = view.records("artifact")
    answers = view.records("answer")
    lines += ["## The run's answer", ""]
    if not answers:
        lines += ["No answer was reached (the run did not finish).", ""]
    for a in answers:
        detail = a.get("detail") or {}
        said = md.cell(a.get("text")) if a.get("text") else "none: no agent's answer could be read"
        lines.append(f"- **Answer**: {said}")
        if a.get("extracted") is not None:
            lines.append(f"- **Read as**: {md.text(a['extracted'])}")
        if a.get("agent"):
            lines.append(f"- **Given by**: {md.text(a['agent'])}")
        counts = detail.get("counts") or {}
        if len(counts) > 0 and sum(counts.values()) > 1:
            lines.append("- **Answers counted**: " + ", ".join(f"{md.text(k)} ({n})" for k, n in counts.items())
                         + (f"; a tie between {', '.join(md.text(t) for t in detail['tied'])}, broken by the "
                            "agents' order" if detail.get("tied") else ""))
        if a.get("score") is not None:
            lines.append(f"- **Verdict**: {SCORE_LABELS.get(a['score'], md.text(a['score']))}")
        lines.append("")
    if arts:
        scored = any(x.get("score") is not None for x in arts)
        header = ["Round", "Agent", "Answer", *(["Read as", "Verdict"] if scored else [])]
        # By round, then in the config's order (calls of a round are stored as they complete).
        order = {a.get("id"): i for i, a in enumerate(a for c in view.config.get("clusters") or []
                                                      for a in c.get("agents") or [])}
        rows = []
        for x in sorted(arts, key=lambda x: (_round_of(x["key"]), order.get(x.get("author"), len(order)))):
            rnd = _round_of(x["key"])
            rows.append([str(rnd), md.text(x.get("author")), md.cell(x.get("text")),
                         *([md.text(x.get("extracted") or "—"), md.text(x.get("score") or "—")] if scored else [])])
        lines += ["## Each agent's answers", "", *md.table(header, rows), ""]
        if scored:
            lines += [f"- **Accuracy of every answer**: {accuracy_text(tally(x.get('score') for x in arts))}", ""]
    return lines


__all__ = ["ANSWER_FORMAT", "ANSWER_MAX_TOKENS", "AnswerAgent", "AnswerPanel", "PERSONA", "Plurality", "QUERY",
           "agents_of", "answer_call", "answer_format", "answer_key", "answer_type_of", "artifact_key", "final_answer",
           "plurality", "read", "reading", "report_lines", "texts"]
