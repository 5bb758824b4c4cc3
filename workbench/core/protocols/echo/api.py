"""Resonance Echo (seed: resonance-echo-protocol.md; rules: SPEC §5): the public API.

A safeguard against invisible forgetting: give each agent a unique marker, check now and then
that it can still recite it, and restore it from its session seed when it cannot. The engine is
pure (no Qt, no I/O); the project-file side lives in ``workbench.core.project.echo``.

Modules:
    echo_markers    marker format, parsing, generation from the template bank, never reused
    echo_quoting    which spans of a reply are quoted data (they never count)
    echo_verify     verification of the 6-hex suffix in the agent's own reply
    echo_footer     ":: SYSTEM :: [Resonance: …] [Role: …] [State: …]" stamp and parse
    echo_models     the anchor and session-seed records (pydantic)
    echo_inject     the three injection patterns' messages, and due_checks()
    echo_context    context budgets, overflow behaviours, and the simulated agent
    echo_restore    the restoration state machine and its generator
    echo_session    one session as a generator: turns, checks, restoration
    echo_checklist  the conductor's checklist and each item's status
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from typing import Any

from workbench.core.protocols.echo.checklist import (
    CHECKLIST,
    ChecklistItem,
    ItemStatus,
    SessionFacts,
    checklist_status,
)
from workbench.core.protocols.echo.context import (
    BEHAVIOURS,
    AgentContext,
    ContextLimitError,
    SimulatedAgent,
    count_tokens,
    summary_dropping_everything,
    summary_keeping_markers,
)
from workbench.core.protocols.echo.footer import (
    STATES,
    Footer,
    FooterError,
    find_footer,
    locate_footer,
    parse_footer,
    parse_footer_line,
    stamp_footer,
)
from workbench.core.protocols.echo.inject import (
    DEFAULT_INTERVAL,
    anchor_messages,
    check_messages,
    compaction_aware_messages,
    context_seed_block,
    due_checks,
    pacemaker_messages,
    recite_prompt,
    restoration_messages,
    session_start_messages,
    turn_messages,
)
from workbench.core.protocols.echo.markers import (
    Marker,
    find_markers,
    generate_marker,
    generate_markers,
    load_templates,
    make_rng,
    parse_hex_or_marker,
    parse_marker,
)
from workbench.core.protocols.echo.models import (
    AGENT_TYPES,
    PATTERNS,
    ResonanceAnchor,
    SessionSeed,
    VerificationEntry,
    anchor_key,
    seed_key,
)
from workbench.core.protocols.echo.quoting import Quoting, own_text, quoted_spans
from workbench.core.protocols.echo.restore import (
    STEPS,
    RestorationContext,
    RestorationOutcome,
    Transition,
    next_step,
    restore,
)
from workbench.core.protocols.echo.session import EchoPlan, EchoSessionSummary, echo_session
from workbench.core.protocols.echo.verify import VerificationResult, verify_reply
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Batch, Note

__all__ = [
    "AGENT_TYPES", "BEHAVIOURS", "CHECKLIST", "DEFAULT_INTERVAL", "PATTERNS", "STATES", "STEPS",
    "AgentContext", "ChecklistItem", "ContextLimitError", "EchoPlan", "EchoSessionSummary", "Footer",
    "FooterError", "ItemStatus", "Marker", "MarkerIssuer", "Quoting", "ResonanceAnchor",
    "RestorationContext", "RestorationOutcome", "SessionFacts", "SessionSeed", "SimulatedAgent",
    "Transition", "VerificationEntry", "VerificationResult",
    "anchor_key", "anchor_messages", "check_messages", "checklist_status", "compaction_aware_messages",
    "context_seed_block", "count_tokens", "drive", "due_checks", "echo_session", "find_footer",
    "find_markers", "generate_marker", "generate_markers", "load_templates", "locate_footer",
    "make_rng", "next_step", "own_text", "pacemaker_messages", "parse_footer", "parse_footer_line",
    "parse_hex_or_marker", "parse_marker", "quoted_spans", "recite_prompt", "restoration_messages",
    "restore", "seed_key", "session_start_messages", "simulate", "stamp_footer",
    "summary_dropping_everything", "summary_keeping_markers", "turn_messages", "verify_reply",
]


class MarkerIssuer:
    """Issues markers never issued before by this issuer (an in-memory stand-in for a project;
    ``echo_records.issue_marker`` is the project-file version)."""

    def __init__(self, rng: random.Random | None = None, issued: set[str] | None = None):
        self.rng = rng or make_rng()
        self.issued: set[str] = set(issued or ())
        self.markers: list[Marker] = []

    def __call__(self) -> Marker:
        marker = generate_marker(self.issued, rng=self.rng)
        self.issued.add(marker.hex)
        self.markers.append(marker)
        return marker


def drive(gen: Generator[Batch | Note, Any, Any], answer: Callable[[AgentCall], AgentReply],
          on_note: Callable[[Note], None] | None = None) -> Any:
    """Run a step-protocol generator sequentially: ``answer`` each call, pass each Note to
    ``on_note``; returns the generator's result. (The background runner does the same, concurrently.)"""
    try:
        item = next(gen)
        while True:
            if isinstance(item, Batch):
                item = gen.send({call.key: answer(call) for call in item.calls})
            else:
                if on_note is not None:
                    on_note(item)
                item = gen.send(None)
    except StopIteration as stop:
        return stop.value


def simulate(plan: EchoPlan, agent: SimulatedAgent, *, seed: int = 0,
             now: Callable[[], str] | None = None) -> tuple[EchoSessionSummary, list[Note], MarkerIssuer]:
    """A whole session against a simulated agent, with no project file: (summary, notes, issuer)."""
    issuer = MarkerIssuer(random.Random(seed))
    notes: list[Note] = []
    kwargs = {"now": now} if now else {}
    summary = drive(echo_session(plan, issuer(), new_marker=issuer, **kwargs), agent.answer, notes.append)
    return summary, notes, issuer
