"""The Consensus Server findings' steps: the one kind of call (an agent's vote on a finding), its
variables and its default template (``prompts/``), and the protocol's identity. The declaration
(:mod:`.declaration`) adds the rest; the run (:mod:`.run`) renders its calls from these."""

from __future__ import annotations

from workbench.core.protocols.shared.declaration import Protocol
from workbench.core.protocols.shared.templates import Step, Variable

STEPS = (
    Step("vote", "finding_vote", "One agent confirms or challenges one finding, with its confidence.",
         (Variable("role", "the agent's role, from its config: scout, auditor, dev (each has its brief in the "
                           "template) or any other name"),
          Variable("persona", "the agent's persona, from its config (empty: none)"),
          Variable("claim", "the finding's claim: written by whoever filed it (a config, an MCP client, "
                            "another run's artifact)", untrusted=True),
          Variable("context", "the finding's context as JSON, from the same source as the claim (empty: none)",
                   untrusted=True),
          Variable("reply_format", "the JSON the reply's parser reads, with its fields", required=True)),
         "vote.j2", reply_schema="finding_vote"),
)


IDENTITY = Protocol(
    name="findings", title="Consensus Server findings", version="1.0",
    package="workbench.core.protocols.findings",
    summary="Agents confirm or challenge findings, each vote weighted by its confidence; a finding "
            "is confirmed when its score reaches its threshold.",
    steps=STEPS, needs_query=False,
)
