"""CONS's steps: the opening ballot, the challenge rounds' ballot and the conductor's decision, each
with its variables and its default template (``prompts/``), and the protocol's identity. The
declaration (:mod:`.declaration`) adds the rest; the run (:mod:`.run`) renders its calls from these."""

from __future__ import annotations

from workbench.core.protocols.shared.declaration import Protocol
from workbench.core.protocols.shared.templates import Step, Variable

PERSONA = Variable("persona", "the agent's persona, from its config (empty: a default line)")
QUESTION_ID = Variable("question_id", "the question's id, from the config (question_id)")
QUESTION = Variable("question", "the decision question: the run's query")
OPTIONS = Variable("options", "the options voted on, in the config's order (the default template quotes each "
                              "as Python writes a string, so a model can copy it exactly)")
REPLY_FORMAT = Variable("reply_format", "the JSON the ballot's parser reads, with its fields", required=True)

STEPS = (
    Step("ballot", "ballot", "The opening round: each agent votes on the options alone, with its evidence.",
         (PERSONA, QUESTION_ID, QUESTION, OPTIONS, REPLY_FORMAT), "ballot.j2", reply_schema="cons_ballot"),
    Step("challenge", "ballot", "A challenge round: each agent sees the others' positions of the round before, "
                                "anonymised, and votes again.",
         (PERSONA, QUESTION_ID, QUESTION, OPTIONS,
          Variable("positions", "the other agents' ballots of the round before, one line each "
                                "(- Agent N: VOTE 'OPTION' (CONFIDENCE): RATIONALE), written by the models: one "
                                "fenced block; empty when no other agent cast a readable ballot", untrusted=True),
          REPLY_FORMAT),
         "challenge.j2", reply_schema="cons_ballot"),
    Step("decision", "hitl_decision", "The conductor, a person, decides an escalated question: what the GUI shows "
                                      "them (never sent to a model; the simulated panel never answers it).",
         (QUESTION_ID, QUESTION,
          Variable("reasons", "why it was escalated: the engine's reasons, such as contested_verdict or "
                              "suspicious_unanimity")),
         "decision.j2"),
)


IDENTITY = Protocol(
    name="cons", title="CONS", version="1.0",
    package="workbench.core.protocols.cons",
    summary="Agents cast ballots with evidence on a question's options; the tally gives a verdict, "
            "conflicts are detected, and what agents cannot settle is escalated to a human.",
    steps=STEPS,
)
