"""What a CONS evaluation concludes (SPEC §3): the tally behind the verdict, and the outcome.

Result shapes only, no rules: :mod:`.tally` computes them and :mod:`.report` renders them, so the
report needs no part of the engine.
"""

from __future__ import annotations

from workbench.core.protocols.cons.conflicts import Conflict, Escalation
from workbench.core.protocols.cons.models import ConsQuestion, NextAction, Verdict, _Model


class OptionTally(_Model):
    option: str
    accept_count: int
    accept_weight: float
    reject_count: int
    reject_weight: float
    abstain_count: int
    evidenced_accepts: int
    evidenced_rejects: int


class Opposition(_Model):
    """One agent's contribution to B: its weight and where the weight came from."""

    agent_id: str
    weight: float
    basis: str  # "reject <leading>", "accept <other option>", or "none"


class Tally(_Model):
    options: tuple[str, ...]
    agents: tuple[str, ...]  # every agent, first seen first
    voters: tuple[str, ...]  # agents with at least one accept or reject
    leading_option: str | None
    accept_count: int  # voters accepting the leading option
    accept_share: float | None  # accept_count / len(voters)
    accept_weight: float  # A
    oppose_weight: float  # B
    actual_consensus: float | None  # A / (A + B); None when A + B = 0
    per_option: tuple[OptionTally, ...]
    opposition: tuple[Opposition, ...]


class ConsOutcome(_Model):
    question: ConsQuestion
    single_claim: bool
    tally: Tally
    verdict: Verdict | None
    verdict_rule: int  # which SPEC §3 verdict step decided (1..5)
    verdict_reason: str
    next_action: NextAction
    conflicts: tuple[Conflict, ...]
    escalations: tuple[Escalation, ...]

    @property
    def leading_option(self) -> str | None:
        return self.tally.leading_option

    @property
    def actual_consensus(self) -> float | None:
        return self.tally.actual_consensus
