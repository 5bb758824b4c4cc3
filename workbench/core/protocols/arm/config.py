"""ARM's run options (SPEC §4): the ``arm`` object of a run configuration, each default defined once.

:class:`ArmOptions` is the one place these defaults live; the run generator's
:class:`~workbench.core.protocols.arm.rounds.ArmRunConfig` takes its defaults from it and
validates its options with it. The question, and the provider playing each role, come from the
run configuration (its query, and its agents' roles).
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from workbench.core.limits import MAX_ATTEMPTS, MAX_NAME_CHARS, MAX_TOKEN_BUDGET
from workbench.core.protocols.arm.fields import SCHEMA_V12, SCHEMA_V13
from workbench.core.protocols.arm.metrics import DRIFT_UP_THRESHOLD
from workbench.core.protocols.shared.validation import NameCheck

Role = Literal["alpha", "beta", "gamma"]
Frame = Literal["deontological", "consequentialist", "independent"]
Dispatch = Literal["sequential", "concurrent"]
GammaContext = Literal["arm", "arm+r1"]
SilentDraw = Literal["gamma", "alpha", "beta"]
SchemaVersion = Literal[SCHEMA_V12, SCHEMA_V13]  # noqa: F821 - the two version strings

ROLES: tuple[str, ...] = get_args(Role)
FRAMES: tuple[str, ...] = get_args(Frame)
DISPATCH_MODES: tuple[str, ...] = get_args(Dispatch)
GAMMA_CONTEXTS: tuple[str, ...] = get_args(GammaContext)
SILENT_DRAWS: tuple[str, ...] = get_args(SilentDraw)
ARM_DISPATCH: Dispatch = "sequential"  # ARM's own choice, to avoid rate-limit collisions
ProviderName = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS), NameCheck]
Budget = Annotated[int, Field(ge=1, le=MAX_TOKEN_BUDGET)]


class _Options(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class ArmFrames(_Options):
    """The ethical frame each debater reasons in (``role_injection`` off: both independent)."""

    alpha: Frame = "deontological"
    beta: Frame = "consequentialist"


class ArmBudgets(_Options):
    """Output tokens each kind of call may use (ARM v0.9's budgets)."""

    r1: Budget = 5000
    r2: Budget = 6500
    gamma_r2: Budget = 8000


class ArmOptions(_Options):
    """Everything an ARM run can change; every field has its default."""

    providers: dict[Role, ProviderName] = Field(default_factory=dict,
                                       description="role -> provider; a role left out: its agent's provider")
    frames: ArmFrames = Field(default_factory=ArmFrames)
    role_injection: bool = Field(True, description="off: both frames become 'independent'")
    silent_draw: SilentDraw = Field("gamma", description="whose prompt the silent baseline answers")
    silent_provider: ProviderName | None = Field(None, description="default: the provider of the silent draw")
    dispatch: Dispatch | None = Field(None, description="None: the run's own dispatch")
    gamma_context: GammaContext = Field("arm+r1", description="arm+r1: gamma sees all round-1 traces")
    fap_threshold: float = Field(DRIFT_UP_THRESHOLD, ge=-1, le=1, allow_inf_nan=False,
                                 description="a self-reported drift above it triggers FAP")
    fap_requeue: bool = True
    fap_max_attempts: int = Field(2, ge=1, le=MAX_ATTEMPTS)
    schema_version: SchemaVersion = SCHEMA_V13
    budgets: ArmBudgets = Field(default_factory=ArmBudgets)

    def __getitem__(self, name: str) -> object:
        """``options["silent_provider"]``: read like the plain object a configuration holds."""
        if name not in type(self).model_fields:
            raise KeyError(name)
        return getattr(self, name)


#: The defaults, for code that needs one of them (``DEFAULTS.fap_max_attempts``).
DEFAULTS = ArmOptions()
