"""ARM's steps: each kind of trace call, its variables and its default template (``prompts/``), and
the protocol's identity. The declaration (:mod:`.declaration`) adds the rest; the run
(:mod:`.rounds`) renders its calls from these.

Every step has a system and a user block. What the trace parser needs (the JSON schema of the
trace) is the required ``reply_format`` (:mod:`.formats`). The peer traces (and a re-queue's own
round-1 trace) are untrusted: a model wrote them, so they reach the template already fenced, as
one block each (:mod:`.peers` builds the block: each compressed trace as JSON under its label).
"""

from __future__ import annotations

from workbench.core.protocols.shared.declaration import Protocol
from workbench.core.protocols.shared.templates import Step, Variable

# Each example is a value of the variable's kind, for the trial render of an edited template; a
# rehearsal of the run (.rehearse) renders it with the run's own values too, none among them.
QUESTION = Variable("question", "the question the run puts to its agents (shown tagged as <arm:question>)",
                    example="Should the agent act?")
ROLE = Variable("role", "the agent's role: alpha, beta or gamma", example="alpha")
FRAME = Variable("frame", "the ethical frame the agent reasons in: deontological, consequentialist or independent",
                 example="deontological")
OWN_CONFIDENCE = Variable("own_confidence", "the agent's round-1 confidence (none when its round-1 trace failed)",
                          example=0.7)
REPLY_FORMAT = Variable("reply_format", "the JSON trace the parser reads, with its fields", required=True)
_VIEW = '{\n  "claim": "An example claim.",\n  "confidence": 0.7\n}'

STEPS = (
    Step("r1", "trace", "Round 1: alpha, beta or gamma answers the question alone.",
         (QUESTION, ROLE, FRAME, REPLY_FORMAT), "r1.j2", reply_schema="arm_trace_r1"),
    Step("silent", "trace", "The silent baseline answers the question alone, as a draw of one role; its "
                            "answer is never shown to alpha or beta.",
         (QUESTION, Variable("draw", "whose prompt the baseline answers: alpha, beta or gamma", example="gamma"),
          Variable("frame", "the draw's frame (none for a gamma draw: the independent lens)", example=None),
          REPLY_FORMAT),
         "silent.j2", reply_schema="arm_trace_r1"),
    Step("r2", "trace", "Round 2: alpha or beta deliberates over the compressed round-1 traces.",
         (QUESTION, ROLE, FRAME, OWN_CONFIDENCE,
          Variable("peer_traces", "the compressed round-1 traces of alpha, beta and gamma, each as JSON under "
                                  "its label (null for a failed trace), in one fenced block", untrusted=True,
                   example=f"ALPHA R1 (compressed):\n{_VIEW}"),
          REPLY_FORMAT),
         "r2.j2", reply_schema="arm_trace_r2"),
    Step("gamma_r2", "trace", "Round 2: gamma reconciles alpha's and beta's round-2 traces against the "
                              "isolated baseline.",
         (QUESTION, Variable("baseline_confidence", "the silent baseline's confidence", example=0.75),
          Variable("peer_traces", "the compressed round-2 traces of alpha and beta and the baseline (and, with "
                                  "gamma_context arm+r1, the round-1 traces), each as JSON under its label, in "
                                  "one fenced block", untrusted=True, example=f"ALPHA R2 (compressed):\n{_VIEW}"),
          REPLY_FORMAT),
         "gamma_r2.j2", reply_schema="arm_trace_gamma_r2"),
    Step("fap_requeue", "trace", "FAP re-queue: alpha or beta, whose round-2 confidence rose past the threshold, "
                                 "answers again in isolation from its own round-1 trace.",
         (QUESTION, ROLE, FRAME, OWN_CONFIDENCE,
          Variable("threshold", "the FAP threshold the self-reported rise exceeded", example=0.04),
          Variable("own_trace", "the agent's own compressed round-1 trace, as JSON (null when it failed), "
                                "fenced", untrusted=True, example=_VIEW),
          REPLY_FORMAT),
         "fap_requeue.j2", reply_schema="arm_trace_r2"),
)


IDENTITY = Protocol(
    name="arm", title="ARM (Agent Reasoning Markup)", version="1.0",
    package="workbench.core.protocols.arm",
    summary="Agents reason in isolation, then deliberate over each other's compressed traces; "
            "confidence drift, convergence and the polarity gate show what deliberation changed.",
    steps=STEPS,
)
