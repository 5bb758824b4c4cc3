"""The Resonant Consensus Protocol's steps: each kind of call, its variables and its default
template (``prompts/``), and the protocol's identity. The declaration (:mod:`.declaration`) adds
the rest; the run (:mod:`.run`) renders its calls from these."""

from __future__ import annotations

from workbench.core.protocols.shared.declaration import Protocol
from workbench.core.protocols.shared.templates import Step, Variable

PERSONA = Variable("persona", "the agent's persona, from its config (empty: a default line)")
QUERY = Variable("query", "the question the run puts to its agents")
REPLY_FORMAT = Variable("reply_format", "the JSON the reply's parser reads, with its fields", required=True)

STEPS = (
    Step("generate", "generate", "Each agent answers the question alone (an artifact).",
         (QUERY, PERSONA,
          Variable("common_ground", "refinement rounds: the positions every cluster endorsed in the round "
                                    "before, each fenced (empty in round 1)", untrusted=True,
                   example=["A position both clusters endorsed."])),
         "generate.j2"),
    Step("vote", "vote", "One voter judges one artifact: YES or NO.",
         (QUERY, PERSONA, Variable("artifact", "the artifact under vote: another agent's answer", untrusted=True),
          REPLY_FORMAT),
         "vote.j2", reply_schema="rcp_vote"),
    Step("ballot", "ballot", "Ballot mode: one voter judges every other artifact in one call.",
         (QUERY, PERSONA, Variable("labels", "each response's label (A, B, ...), in the order shown",
                                   example=["A", "B"]),
          Variable("responses", "the artifacts under vote, in the order of labels, each fenced", untrusted=True,
                   example=["One answer.", "Another answer."]),
          REPLY_FORMAT),
         "ballot.j2", reply_schema="rcp_ballot"),
)


IDENTITY = Protocol(
    name="rcp", title="Resonant Consensus Protocol", version="1.0",
    package="workbench.core.protocols.rcp",
    summary="Clusters of agents answer and vote on each other's answers; each answer's cross-cluster "
            "resonance places it in one of four tiers.",
    steps=STEPS,
)
