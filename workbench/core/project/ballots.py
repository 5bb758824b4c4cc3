"""CONS ballots as the conductor reads them before deciding."""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.project import _sql
from workbench.core.project.store import Store


@dataclass(frozen=True)
class BallotRow:
    agent_id: str
    option: str | None
    vote: str | None
    confidence: float | None
    rationale: str | None
    status: str
    invalid_reason: str | None


_LAST_ROUND = """
SELECT b.agent_id, b.option, b.vote, b.confidence, b.rationale, b.status, b.invalid_reason
FROM cons_ballots b JOIN cons_questions q ON q.id = b.question_id
WHERE q.run_id = ? AND b.challenge_round = (SELECT max(challenge_round) FROM cons_ballots WHERE question_id = q.id)
ORDER BY b.agent_id
"""


def last_round_ballots(store: Store, run_id: str) -> list[BallotRow]:
    """The ballots of the run's last challenge round, by agent."""
    return [BallotRow(*row) for row in _sql.tuples(store, _LAST_ROUND, (run_id,))]
