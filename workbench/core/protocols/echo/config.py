"""Resonance Echo's options (SPEC §5): the ``echo`` object of a run configuration.

Every Echo default is defined here, once: the wrapper (:mod:`.wrap`), the session (:mod:`.session`)
and the prompts (:mod:`.inject`) take theirs from these constants. Which agents a pattern may name
depends on the panel, so that rule is checked where the panel is known (:func:`check_patterns`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from workbench.core.errors import InputError
from workbench.core.limits import MAX_ECHO_INTERVAL, MAX_LIST_ITEMS, MAX_NAME_CHARS, MAX_RATIONALE_CHARS, MAX_RUN_AGENTS
from workbench.core.protocols.echo.models import InjectionPattern
from workbench.core.protocols.shared.validation import NameCheck, validate

DEFAULT_INTERVAL = 10  # turns between two checks ("about every 10 turns")
DEFAULT_PROJECT = "Resonance Workbench"  # the project an anchor message names
RECITAL_MAX_TOKENS = 256  # the output cap of a resonance check: the marker, persona, decisions and tasks recited
ANY_AGENT = "*"

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_NAME_CHARS), NameCheck]
Decision = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_RATIONALE_CHARS)]
AgentName = Annotated[str, StringConstraints(max_length=MAX_NAME_CHARS), NameCheck]


class EchoOptions(BaseModel):
    """``patterns`` maps agent ids, roles or ``"*"`` (every other agent) to an injection pattern;
    an agent left out gets the pattern its provider can keep (see :func:`.wrap.pattern_for`)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    patterns: dict[AgentName, InjectionPattern] = Field(default_factory=dict, max_length=MAX_RUN_AGENTS + 1)
    interval: int = Field(DEFAULT_INTERVAL, ge=1, le=MAX_ECHO_INTERVAL, description="turns between two checks")
    project: Text = DEFAULT_PROJECT
    check_token: bool = Field(True, description="stateless agents: end each request with the check token")
    decisions: list[Decision] = Field(default_factory=list, max_length=MAX_LIST_ITEMS,
                                      description="settled decisions the session seed keeps")


def parse_echo_options(raw: object) -> EchoOptions:
    """``echo`` as written in a configuration; an :class:`InputError` names the field (``echo.interval``)."""
    if isinstance(raw, EchoOptions):
        return raw
    if not isinstance(raw, dict):
        raise InputError("echo", f"must be an object with some of {', '.join(EchoOptions.model_fields)}")
    return validate(EchoOptions, raw, "echo")


def check_patterns(options: EchoOptions, agents: Iterable[tuple[str, str | None]], where: str = "echo") -> None:
    """Every name in ``patterns`` is an agent id, an agent's role or ``"*"``; ``agents`` are (id, role)."""
    agents = list(agents)
    known = {a for a, _ in agents} | {r for _, r in agents if r}
    for name in options.patterns:
        if name != ANY_AGENT and name not in known:
            raise InputError(f"{where}.patterns.{name}",
                             f"no such agent (agents: {', '.join(a for a, _ in agents)})")
