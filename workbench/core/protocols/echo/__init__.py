"""Resonance Echo (seed: resonance-echo-protocol.md; rules: SPEC §5): the public API.

A safeguard against invisible forgetting: give each agent a unique marker, check now and then
that it can still recite it, and restore it from its session seed when it cannot. The engine is
pure (no Qt, no I/O); the project-file side lives in ``workbench.core.project.echo``.

    from workbench.core.protocols import echo
    summary, notes, issuer = echo.simulate(echo.EchoPlan(agent="a1", queries=[...]), agent)

Modules (import the names from here; the modules are the implementation). The restoration
generator keeps its module's name, ``echo.restore.restore``, so the module stays reachable:
    config      the ``echo`` options of a run configuration, and every Echo default
    markers     marker format, parsing, generation from the template bank, never reused
    quoting     which spans of a reply are quoted data (they never count)
    verify      verification of the 6-hex suffix in the agent's own reply
    footer      ":: SYSTEM :: [Resonance: …] [Role: …] [State: …]" stamp and parse
    models      the anchor and session-seed records (pydantic)
    steps       Echo's steps: the templates of every text it sends (prompts/*.j2)
    inject      the three injection patterns' calls, rendered from the steps, and due_checks()
    context     context budgets, overflow behaviours, and the simulated agent
    restore     the restoration state machine and its generator
    session     one session as a generator: turns, checks, restoration
    checklist   the conductor's checklist and each item's status
    wrap        Echo around any protocol's run
"""

from __future__ import annotations

from workbench.core.protocols.echo.checklist import (
    CHECKLIST,
    ChecklistItem,
    ItemStatus,
    SessionFacts,
    checklist_status,
)
from workbench.core.protocols.echo.config import (
    DEFAULT_INTERVAL,
    DEFAULT_PROJECT,
    EchoOptions,
    check_patterns,
    parse_echo_options,
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
    check_call,
    check_messages,
    due_checks,
    pacemaker_messages,
    recite_prompt,
    restoration_call,
    restoration_messages,
    turn_call,
    turn_messages,
)
from workbench.core.protocols.echo.markers import (
    Marker,
    MarkerIssuer,
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
)
from workbench.core.protocols.echo.session import EchoPlan, EchoSessionSummary, echo_session, simulate
from workbench.core.protocols.echo.verify import VerificationResult, verify_reply
from workbench.core.protocols.echo.wrap import echo_options, pattern_for, strip_echo_trailer, with_echo
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Batch, Note, drive

__all__ = [
    # markers, verification, footers
    "Marker", "MarkerIssuer", "find_markers", "generate_marker", "generate_markers", "load_templates",
    "make_rng", "parse_hex_or_marker", "parse_marker", "Quoting", "own_text", "quoted_spans",
    "VerificationResult", "verify_reply", "STATES", "Footer", "FooterError", "find_footer", "locate_footer",
    "parse_footer", "parse_footer_line", "stamp_footer",
    # records and options
    "AGENT_TYPES", "PATTERNS", "ResonanceAnchor", "SessionSeed", "VerificationEntry", "anchor_key", "seed_key",
    "DEFAULT_INTERVAL", "DEFAULT_PROJECT", "EchoOptions", "check_patterns", "parse_echo_options",
    # injection, context, restoration, sessions
    "check_call", "check_messages", "due_checks", "pacemaker_messages", "recite_prompt", "restoration_call",
    "restoration_messages", "turn_call", "turn_messages",
    "BEHAVIOURS", "AgentContext", "ContextLimitError", "SimulatedAgent", "count_tokens",
    "summary_dropping_everything", "summary_keeping_markers",
    "STEPS", "RestorationContext", "RestorationOutcome", "Transition", "next_step",
    "EchoPlan", "EchoSessionSummary", "echo_session", "simulate",
    "CHECKLIST", "ChecklistItem", "ItemStatus", "SessionFacts", "checklist_status",
    # around a protocol run, and the step protocol every session speaks
    "echo_options", "pattern_for", "strip_echo_trailer", "with_echo",
    "AgentCall", "AgentReply", "Batch", "Note", "drive",
]
