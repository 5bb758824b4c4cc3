"""A rehearsal of an ARM run with edited templates, before any call (SPEC §7 "Overrides").

Round 2, gamma's reconciliation and the FAP re-queue are rendered only once round 1 has been paid
for, and a template can pass every check yet fail when rendered (``{{ peer_traces[:20] }}``
slices an untrusted text, which the template engine refuses; ``{{ own_confidence + 1 }}`` fails
on a failed trace's ``none``). So a configuration that edits ARM's steps is run once in memory,
with its own question, frames, silent draw and gates, against canned replies, every step the run
can reach rendered with the values it will have: once with every trace readable (the FAP re-queue
triggered), once with round 1's visible traces unreadable (their views null, their confidence
none). A step that cannot be rendered is refused with the configuration (:class:`InputError`
``prompts.STEP``), before the run exists. A rehearsal that passed is remembered, so the runs of
a batch that share a question and options are rehearsed once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from functools import lru_cache

from workbench.core.protocols.shared.steps import AgentCall, AgentReply, drive

# A readable trace that reports a rise past any threshold (at most 1), so the re-queue is rendered too.
_TRACE = json.dumps({"claim": "An example claim.", "verdict": "yes", "confidence": 0.5,
                     "drift_score": {"confidence_delta": 2}, "self_delta_vs_baseline": 0.0})
_UNREADABLE = "not a trace"
_VISIBLE_R1 = ("r1/alpha", "r1/beta", "r1/gamma")


def rehearse(run, edited: Mapping[str, str]) -> None:
    """Drive ``run`` (an :class:`~.rounds.ArmRunConfig`) with the ``edited`` templates against
    canned replies; an :class:`InputError` ``prompts.STEP`` for the first step that cannot be
    rendered (see :func:`~.rounds._call`)."""
    _rehearse(json.dumps(asdict(run), sort_keys=True), tuple(sorted(edited.items())))


@lru_cache(maxsize=64)
def _rehearse(run_json: str, edited: tuple[tuple[str, str], ...]) -> None:
    from workbench.core.protocols.arm.records import read
    from workbench.core.protocols.arm.rounds import ArmRunConfig, run_arm
    from workbench.core.protocols.arm.steps import IDENTITY
    from workbench.core.protocols.shared.declaration import Prompts

    run, prompts = ArmRunConfig(**json.loads(run_json)), Prompts(IDENTITY, dict(edited))
    for unreadable in ((), _VISIBLE_R1):
        def answer(call: AgentCall, unreadable=unreadable) -> AgentReply:
            return AgentReply(call.key, _UNREADABLE if call.key in unreadable else _TRACE)

        drive(run_arm(run, prompts), answer, read=read)
