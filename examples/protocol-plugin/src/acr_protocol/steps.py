"""Ask, critique, revise: the protocol's identity and its three steps, each with its variables and
its default template (``prompts/NAME.j2``). The declaration (:mod:`.declaration`) adds the rest.

Which variables are ``untrusted``: every text another model wrote (an answer, a critique's summary
and issues). The template sees them only as placeholders; the workbench fences them after the
template is rendered, so no template, edited or not, can show them unfenced. ``reply_format`` and
``max_words`` are ``required``: the critique's parser reads that JSON and counts those words, so
an edited template may reword everything else but cannot leave them out.
"""

from __future__ import annotations

from workbench.core.protocols.shared.declaration import Protocol
from workbench.core.protocols.shared.templates import Step, Variable

PERSONA = Variable("persona", "the agent's persona, from its config (empty: a default line)")
QUERY = Variable("query", "the question the run puts to its agents")

STEPS = (
    Step("answer", "answer", "Each agent answers the question alone (round 1).",
         (QUERY, PERSONA), "answer.j2"),
    Step("critique", "critique", "One agent critiques another agent's answer (round 2), as JSON.",
         (QUERY, PERSONA,
          Variable("answer", "the answer under critique: another agent's, fenced", untrusted=True),
          Variable("max_words", "the most words the critique may use (the config's critique_max_words)",
                   required=True, example=80),
          Variable("reply_format", "the JSON the critique's parser reads, with its fields", required=True)),
         "critique.j2", reply_schema="acr_critique"),
    Step("revise", "revise", "Each agent revises its own answer given the critique it received (round 2).",
         (QUERY, PERSONA,
          Variable("answer", "the agent's own earlier answer, fenced", untrusted=True),
          Variable("summary", "the critique's one-sentence summary, fenced", untrusted=True),
          Variable("issues", "the critique's issues, each fenced", untrusted=True,
                   example=["The second claim has no source."])),
         "revise.j2"),
)

IDENTITY = Protocol(
    name="acr", title="Ask, critique, revise", version="0.1.0",
    package="acr_protocol",
    summary="Each agent answers, critiques another agent's answer, then revises its own answer given "
            "the critique it received; the run reports how far each answer moved.",
    steps=STEPS,
)
