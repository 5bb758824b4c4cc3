"""Consensus Server findings run options (SPEC §2): the threshold and the findings voted on.

The default threshold and the threshold's range are defined here once; the engine
(:mod:`.book`), the run generator (:mod:`.run`) and the MCP server take them from here.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from workbench.core.errors import InputError
from workbench.core.limits import MAX_CLAIM_CHARS, MAX_FINDINGS, MAX_LIST_ITEMS, MAX_NAME_CHARS, check_context
from workbench.core.protocols.shared.validation import NameCheck, validate

DEFAULT_THRESHOLD = 0.6  # a finding is confirmed at a score at or above it
THRESHOLD_RANGE = (-1, 1)  # a score's own range: every vote a full challenge .. a full confirm

Threshold = Annotated[float, Field(strict=True, ge=THRESHOLD_RANGE[0], le=THRESHOLD_RANGE[1])]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_NAME_CHARS), NameCheck]
Claim = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_CLAIM_CHARS)]


class FindingSpec(BaseModel):
    """One finding a run puts to its agents; ``threshold`` overrides the run's for this finding."""

    model_config = ConfigDict(strict=True, extra="forbid")

    id: Text
    claim: Claim
    context: dict[str, Any] = Field(default_factory=dict)
    threshold: Threshold | None = None

    @field_validator("context")
    @classmethod
    def _bounded_context(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_context(value, "")  # sent to every voter, like the claim
        return value


class FindingsOptions(BaseModel):
    """A findings run's options. The findings are kept as the plain objects the configuration
    holds (each checked by :class:`FindingSpec`); ``findings_from_run`` takes them from another
    run's artifacts instead, when the run is created."""

    model_config = ConfigDict(strict=True, extra="forbid")

    threshold: Threshold = DEFAULT_THRESHOLD
    findings: list[dict[str, Any]] = Field(default_factory=list, max_length=MAX_FINDINGS)
    findings_from_run: Text | None = None
    findings_tiers: list[Text] = Field(default_factory=list, max_length=MAX_LIST_ITEMS,
                                       description="of an RCP run: only these tiers")

    @model_validator(mode="after")
    def _findings(self) -> FindingsOptions:
        if not self.findings and not self.findings_from_run:
            raise InputError("findings", "at least one finding is required (or findings_from_run)")
        first: dict[str, int] = {}
        for i, finding in enumerate(self.findings):
            spec = validate(FindingSpec, finding, f"findings[{i}]")
            if spec.id in first:
                raise InputError(f"findings[{i}].id",
                                 f"duplicate finding id {spec.id!r} (also findings[{first[spec.id]}])")
            first[spec.id] = i
        return self
