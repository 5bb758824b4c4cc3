"""ARM (Agent Reasoning Markup), declared (SPEC §7): its settings (under ``arm``), steps,
templates, replies, records, validity, summary and simulated behaviour."""

from __future__ import annotations

from dataclasses import replace

from pydantic import BaseModel, Field, model_validator

from workbench.core.errors import InputError
from workbench.core.protocols.arm.config import ROLES, ArmOptions
from workbench.core.protocols.arm.records import finish, prepare, read, reply_model
from workbench.core.protocols.arm.rehearse import rehearse
from workbench.core.protocols.arm.report import section
from workbench.core.protocols.arm.steps import IDENTITY
from workbench.core.protocols.arm.study_metrics import METRICS as STUDY_METRICS
from workbench.core.protocols.shared.declaration import Prompts, ValidityUnit

STEP_NAMES = frozenset(s.name for s in IDENTITY.steps)


class ArmRunOptions(BaseModel):
    """ARM's part of a run configuration: :class:`ArmOptions` under ``arm``; each role's provider
    defaults to its agent's. Its rules and helpers read the run's shared fields (agents, providers)."""

    arm: ArmOptions = Field(default_factory=ArmOptions)

    @model_validator(mode="after")
    def _roles(self):
        roles = {a.role: a for a in self.agents if a.role}
        for role in ROLES:
            if role not in self.arm.providers and role not in roles:
                raise InputError("clusters", f"no agent has the role {role!r} (an ARM run needs "
                                             f"alpha, beta and gamma; the silent baseline is optional)")
        for where, name in self._arm_providers().items():
            if name not in self.providers:
                raise InputError(where, f"no provider named {name!r} "
                                        f"(providers: {', '.join(sorted(self.providers))})")
        return self

    @model_validator(mode="after")
    def _rehearse_edited_steps(self):
        """Edited steps are rendered once now, in a rehearsal of this run (:mod:`.rehearse`):
        one that passes its checks but cannot be rendered is refused before any call is paid for.
        (The checks themselves ran first, with the shared fields: ``prompts.STEP`` refusals.)"""
        edited = {step: text for step, text in self.prompts.items() if step in STEP_NAMES}
        if edited:
            rehearse(run_config(self), edited)
        return self

    def _arm_providers(self) -> dict[str, str]:
        named = {f"arm.providers.{role}": name for role, name in self.arm.providers.items()}
        if self.arm.silent_provider is not None:
            named["arm.silent_provider"] = self.arm.silent_provider
        return named

    def role_providers(self) -> dict[str, str]:
        """alpha, beta, gamma -> the provider that answers as that role."""
        by_role = {a.role: a.provider for a in self.agents if a.role in ROLES}
        return {role: self.arm.providers.get(role) or by_role[role] for role in ROLES}

    def providers_used(self) -> list[str]:
        """The providers ARM calls: each role's, and the silent baseline's (by default the silent
        agent's, else the provider of the silent draw, one of the roles')."""
        used = list(self.role_providers().values())
        silent = next((a.provider for a in self.agents if a.role == "silent"), None)
        used.append(self.arm.silent_provider or silent or used[0])
        return list(dict.fromkeys(used))

    def in_batch(self, index: int):
        """This configuration as run ``index`` (from 0) of a batch (``core.runs.batch``): the
        provider playing the silent baseline takes turns over the roles' providers, in the
        panel's order (ARM's rotating baseline); the draw stays fixed."""
        from workbench.core.protocols.arm.gates import rotate_silent_baseline

        roles = self.role_providers()
        providers = [roles[a.role] for a in self.agents if a.role in roles]
        silent = rotate_silent_baseline(index, providers, self.arm.silent_draw)
        return self.model_copy(update={"arm": self.arm.model_copy(update={"silent_provider": silent.provider})})


def run_config(cfg):
    """The run generator's configuration (:class:`~.rounds.ArmRunConfig`) for a run configuration."""
    from workbench.core.protocols.arm.rounds import ArmRunConfig

    options = cfg.arm.model_dump(exclude={"providers", "silent_provider", "dispatch"})
    silent = next((a for a in cfg.agents if a.role == "silent"), None)
    return ArmRunConfig(question=cfg.query, providers=cfg.role_providers(),
                        silent_provider=cfg.arm.silent_provider or (silent.provider if silent else None),
                        dispatch=cfg.arm.dispatch or cfg.dispatch, **options)


def generator(cfg, prompts: Prompts):
    from workbench.core.protocols.arm.rounds import run_arm

    return run_arm(run_config(cfg), prompts)


PROTOCOL = replace(
    IDENTITY, config=ArmRunOptions, generator=generator, read=read, reply_model=reply_model, prepare=prepare,
    finish=finish, validity=ValidityUnit("trace", "traces"), report=section, metrics=STUDY_METRICS,
    sim="workbench.core.sim.arm_r2",
)
