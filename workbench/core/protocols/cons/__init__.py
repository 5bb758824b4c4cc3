"""The CONS consensus protocol (SPEC §3; seed: consensus-protocol-cons.md): the public API.

    from workbench.core.protocols import cons
    outcome = cons.evaluate(payload)            # verdict, nextAction, conflicts, escalations
    text = cons.render_markdown(outcome, date="2026-01-31")

Modules: ``config`` (run options and every default), ``models`` (ballots and the question,
CONS-001..003), ``conflicts`` (conflicts and escalations), ``tally`` (the engine: the tally, the
verdict steps, challenge rounds), ``outcome`` (what an evaluation concludes), ``report`` (the
voting structure, the Markdown report, the manifest entry) and ``run`` (the protocol as a run).
The tally function keeps its module's name: ``cons.tally.tally(question)``.
"""

from __future__ import annotations

from workbench.core.protocols.cons.config import (
    DEFAULT_CONSENSUS_THRESHOLD,
    DEFAULT_COUNT_THRESHOLD,
    DEFAULT_MAX_CHALLENGE_ROUNDS,
    DEFAULT_MIN_VOTERS,
    ConsOptions,
)
from workbench.core.protocols.cons.conflicts import Conflict, Escalation, conflict_id, near_duplicates
from workbench.core.protocols.cons.models import Ballot, ConsQuestion, Evidence, parse_ballots, parse_question
from workbench.core.protocols.cons.outcome import ConsOutcome, Opposition, OptionTally, Tally
from workbench.core.protocols.cons.report import (
    manifest_entry,
    outcome_json,
    render_markdown,
    report_status,
    voting_structure,
)
from workbench.core.protocols.cons.run import ConsAgent, ConsRunConfig, run_cons
from workbench.core.protocols.cons.tally import (
    ConsState,
    apply_challenge_round,
    classify_payload,
    decide,
    evaluate,
    open_state,
    run_rounds,
)

__all__ = [
    "Ballot", "Evidence", "ConsQuestion", "Conflict", "Escalation", "OptionTally", "Opposition",
    "Tally", "ConsOutcome", "ConsState", "parse_question", "parse_ballots", "decide",
    "evaluate", "open_state", "apply_challenge_round", "run_rounds", "classify_payload",
    "voting_structure", "outcome_json", "render_markdown", "manifest_entry", "report_status",
    "conflict_id", "near_duplicates",
    "ConsOptions", "DEFAULT_CONSENSUS_THRESHOLD", "DEFAULT_COUNT_THRESHOLD", "DEFAULT_MIN_VOTERS",
    "DEFAULT_MAX_CHALLENGE_ROUNDS", "ConsAgent", "ConsRunConfig", "run_cons",
]
