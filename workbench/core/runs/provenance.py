"""What made a run (SPEC §7 "Provenance"): the workbench's version, each protocol's, and the
effective template of every step with its hash. Stored with the run (``runs.provenance_json``)
when it is created, read back when it resumes: a resumed run uses its own templates, whatever a
prompt set became since.

A run wrapped in Resonance Echo (its ``echo`` object) also uses Echo's steps: they are keyed
``echo.STEP`` in the config's ``prompts``, in the stored provenance and in the summary, and
carried by :class:`RunPrompts` (``.echo``) to the wrapper."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from workbench import __version__
from workbench.core.protocols.shared.declaration import Prompts

SIM_PROMPTS_WARNING = ("the simulated panel does not read prompts: this run's edited templates are stored "
                       "and sent, but sim's replies are those the default templates would get")
ECHO = "echo"  # the wrapper a run config turns on with its `echo` object
ECHO_PREFIX = ECHO + "."  # its steps' keys in a run's prompts: "echo.context_seed"


class RunPrompts(Prompts):
    """A run's templates: its protocol's (this object is their :class:`Prompts`) and, for a run
    wrapped in Resonance Echo, Echo's (``echo``, None otherwise)."""

    def __init__(self, protocol, overrides: Mapping[str, str] | None = None, echo: Prompts | None = None):
        super().__init__(protocol, overrides)
        self.echo = echo

    @property
    def edited(self) -> bool:
        return super().edited or (self.echo is not None and self.echo.edited)

    def provenance(self) -> dict:
        out = super().provenance()
        if self.echo is not None:
            out.update({ECHO_PREFIX + step: made for step, made in self.echo.provenance().items()})
        return out


def each_step(prompts: Prompts) -> Iterator[tuple[str, Prompts, str]]:
    """``(key, templates, step)`` for every step a run uses: its protocol's, then Echo's as ``echo.STEP``."""
    for s in prompts.protocol.steps:
        yield s.name, prompts, s.name
    echo = prompts.echo if isinstance(prompts, RunPrompts) else None
    for s in echo.protocol.steps if echo is not None else ():
        yield ECHO_PREFIX + s.name, echo, s.name


def split_prompts(overrides: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """A run's template overrides as (its protocol's, Echo's by step name: the ``echo.STEP`` keys)."""
    own = {k: v for k, v in overrides.items() if not k.startswith(ECHO_PREFIX)}
    return own, {k[len(ECHO_PREFIX):]: v for k, v in overrides.items() if k.startswith(ECHO_PREFIX)}


def _run_prompts(cfg, overrides: Mapping[str, str]) -> RunPrompts:
    from workbench.core import registry

    own, echo = split_prompts(overrides)
    wrapped = Prompts(registry.get(ECHO), echo) if cfg.echo is not None else None
    made = RunPrompts(registry.get(cfg.protocol), own, wrapped)
    item = getattr(cfg, "item", None)
    made.truth = item.truth if item is not None else None  # SPEC §8: for sim's skill, in each call's meta
    return made


def prompts_for(cfg, set_templates: Mapping[str, str] | None = None) -> RunPrompts:
    """The templates of a new run: its protocol's defaults, the named prompt set's over them, then
    the config's own ``prompts`` over those (SPEC §7); Echo's too when the run has ``echo``."""
    return _run_prompts(cfg, {**(set_templates or {}), **cfg.prompts})


def provenance(cfg, prompts: Prompts, prompt_set: Mapping[str, str] | None = None) -> dict:
    out = {"workbench_version": __version__,
           "protocols": {prompts.protocol.name: prompts.protocol.version},
           "prompts": prompts.provenance()}
    if cfg.echo is not None:
        from workbench.core import registry

        echo = registry.protocols().get(ECHO)
        if echo is not None:
            out["protocols"]["echo"] = echo.version
    if prompts.protocol.source != "built-in":  # a plugin: which distribution it came from
        out["sources"] = {prompts.protocol.name: prompts.protocol.source}
    if prompt_set:
        out["prompt_set"] = dict(prompt_set)
    return out


def stored_prompts(cfg, stored: Mapping | None) -> RunPrompts:
    """The templates a run was created with (its provenance), or, for a run stored before
    provenance was kept, its config's. (Echo's steps stored before they were templates: the
    defaults, which are the texts Echo sent then.)"""
    steps = (stored or {}).get("prompts")
    if not isinstance(steps, dict):
        return _run_prompts(cfg, cfg.prompts)
    made = _run_prompts(cfg, {})
    known = {key for key, _, _ in each_step(made)}
    return _run_prompts(cfg, {step: p["text"] for step, p in steps.items()
                              if step in known and isinstance(p, dict) and not p.get("default") and "text" in p})


def summary_fields(cfg, prompts: Prompts) -> dict:
    """The run summary's provenance (SPEC §7): the workbench's version, each step's hash and
    whether it is the default; and the warning a simulated run with edited prompts carries."""
    out = {"workbench_version": __version__,
           "prompts": {key: {"sha256": made.template(step).sha256, "default": made.is_default(step)}
                       for key, made, step in each_step(prompts)}}
    warnings = [SIM_PROMPTS_WARNING] if cfg.simulated and prompts.edited else []
    from workbench.core.studies.guardrails import threshold_warnings

    warnings += threshold_warnings(cfg)  # SPEC §9: a threshold the votes meet far from its face value
    if warnings:
        out["warnings"] = warnings
    return out
