"""Resonance Echo records (seed: "Memory System Schema"; SPEC §5) as pydantic models.

- :class:`ResonanceAnchor` is ``resonance_anchor_{agent}``: marker, session_id, created_at,
  last_verified and the full verification history ``[{time, success, action}]``, plus what the
  workbench needs besides (the injection pattern, whether the anchor is still active, its run).
- :class:`SessionSeed` is ``session_seed_{agent}``: persona, active_tasks, settled_decisions,
  recent_exchange (the last three messages), resonance_marker and last_checkpoint.

``seed_view()`` gives exactly the seed document's fields, for display and export.
Times are ISO 8601 UTC strings ending in ``Z``, as everywhere in the project file.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from workbench.core.protocols.echo.markers import Marker, parse_marker

InjectionPattern = Literal["stateless", "stateful", "compaction_aware"]
PATTERNS: tuple[str, ...] = get_args(InjectionPattern)
RECENT_EXCHANGE = 3  # messages the session seed keeps

# The seed's three agent types and the overflow behaviour each usually has.
AGENT_TYPES: dict[str, dict[str, str]] = {
    "A": {"pattern": "stateless", "example": "DeepSeek", "overflow": "silent_truncation"},
    "B": {"pattern": "stateful", "example": "Gemini", "overflow": "hard_rejection"},
    "C": {"pattern": "compaction_aware", "example": "Claude", "overflow": "compaction"},
}


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def anchor_key(agent: str) -> str:
    return f"resonance_anchor_{agent}"


def seed_key(agent: str) -> str:
    return f"session_seed_{agent}"


def next_session_id(session_id: str) -> str:
    """``2026-01-31-001`` -> ``2026-01-31-002``; an id without a number gets ``-002``."""
    m = re.fullmatch(r"(.*?)(\d+)", session_id)
    if m and m.group(1).endswith("-"):
        return f"{m.group(1)}{int(m.group(2)) + 1:0{len(m.group(2))}d}"
    return f"{session_id}-002"


class VerificationEntry(BaseModel):
    """One check of an anchor: the seed's ``{time, success, action}`` and where it came from."""

    time: str
    success: bool
    action: str | None = None  # e.g. "restoration_triggered", "escalated"
    turn: int | None = None
    trigger: str | None = None  # why it was due: "boot", "interval", "compaction", ... joined by ","
    reply_excerpt: str | None = None
    id: int | None = None  # the row id once stored

    def seed_view(self) -> dict[str, Any]:
        out: dict[str, Any] = {"time": self.time, "success": self.success}
        if self.action:
            out["action"] = self.action
        return out


class ResonanceAnchor(BaseModel):
    agent: str = Field(min_length=1)
    marker: str
    session_id: str = Field(min_length=1)
    created_at: str = Field(default_factory=utc_now)
    last_verified: str | None = None
    verifications: list[VerificationEntry] = Field(default_factory=list)
    injection: InjectionPattern = "stateful"
    active: bool = True
    run_id: str | None = None
    id: int | None = None

    @field_validator("marker")
    @classmethod
    def _marker(cls, value: str) -> str:
        return str(parse_marker(value))

    @property
    def key(self) -> str:
        return anchor_key(self.agent)

    @property
    def parsed_marker(self) -> Marker:
        return parse_marker(self.marker)

    @property
    def hex(self) -> str:
        return self.parsed_marker.hex

    def seed_view(self) -> dict[str, Any]:
        return {"marker": self.marker, "session_id": self.session_id, "created_at": self.created_at,
                "last_verified": self.last_verified,
                "verifications": [v.seed_view() for v in self.verifications]}


class SessionSeed(BaseModel):
    model_config = ConfigDict(validate_assignment=True)

    agent: str = Field(min_length=1)
    persona: str = ""
    active_tasks: list[str] = Field(default_factory=list)
    settled_decisions: list[str] = Field(default_factory=list)
    recent_exchange: list[str] = Field(default_factory=list)
    resonance_marker: str | None = None
    last_checkpoint: str | None = None
    run_id: str | None = None
    id: int | None = None

    @field_validator("resonance_marker")
    @classmethod
    def _marker(cls, value: str | None) -> str | None:
        return None if value is None else str(parse_marker(value))

    @field_validator("recent_exchange")
    @classmethod
    def _last_three(cls, value: list[str]) -> list[str]:
        return list(value)[-RECENT_EXCHANGE:]

    @property
    def key(self) -> str:
        return seed_key(self.agent)

    @property
    def marker(self) -> Marker | None:
        return parse_marker(self.resonance_marker) if self.resonance_marker else None

    def with_exchange(self, *messages: str) -> SessionSeed:
        return self.model_copy(update={"recent_exchange": (self.recent_exchange + list(messages))[-RECENT_EXCHANGE:]})

    def checkpoint(self, at: str, **changes: Any) -> SessionSeed:
        """A copy with ``last_checkpoint = at`` and the given fields changed (validated)."""
        data = self.model_dump()
        data.update(changes, last_checkpoint=at)
        return SessionSeed.model_validate(data)

    def seed_view(self) -> dict[str, Any]:
        return {"persona": self.persona, "active_tasks": list(self.active_tasks),
                "settled_decisions": list(self.settled_decisions),
                "recent_exchange": list(self.recent_exchange),
                "resonance_marker": self.resonance_marker, "last_checkpoint": self.last_checkpoint}
