"""A protocol as one declared unit (SPEC §7): what central code needs to know of it, in one object.

Each protocol package defines one :class:`Protocol` (``PROTOCOL`` in its ``declaration`` module);
the registry (:mod:`workbench.core.registry`) collects the built-in ones and those that other
distributions register under the entry-point group ``resonance_workbench.protocols``. Central
code (the run configuration, the runner, the records, validity, reports, the simulated panel, the
GUI's lists) loops over the registry; it never branches on a protocol's name.

What a declaration holds:

- ``config``: a pydantic model of the protocol's own settings and rules, mixed into the run
  configuration with the fields every run shares (``core.runs.config``). Its methods may use
  those shared fields (``self.agents``, ``self.clusters``...).
- ``steps``: each kind of call, with its variables and its default template (a Jinja2 file in
  the package's ``prompts/`` folder; :mod:`.templates`). :class:`Prompts` renders them, with a
  run's overrides, into :class:`~.steps.AgentCall` requests.
- ``generator(cfg, prompts)``: the step generator (:mod:`.steps`).
- ``reply_model(call)`` and ``read(call, reply)``: the pydantic model a reply is validated with
  (the one source of its parser and of the JSON schema a model is sent) and the reading of a reply,
  done once per reply by whoever drives the generator (:func:`~.steps.read_reply`).
- ``records(call, reply)``, ``prepare(cfg, run_id)`` and ``finish(cfg, run_id, result)``: the
  :class:`Record` values the project layer stores (a protocol never writes SQL).
- ``validity``: which records are the run's votes (SPEC §1); ``report``; ``metrics`` (SPEC §9);
  ``sim``: the module whose ``HANDLERS`` answer each step on the simulated panel.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from typing import Any

from workbench.core.protocols.shared.fencing import Fence, mask_fences
from workbench.core.protocols.shared.steps import AgentCall, AgentReply
from workbench.core.protocols.shared.templates import PromptTemplate, Step, TemplateProblem, sha256

PROMPTS_FOLDER = "prompts"


@dataclass(frozen=True)
class Record:
    """One row a protocol asks the project layer to store; ``kind`` names the table (see
    ``core.project.protocol_records``): ``artifact``, ``vote``, ``finding``, ``finding_vote``,
    ``cons_question``, ``cons_ballot``, ``cons_outcome``, ``trace``, or ``record`` (anything else,
    kept as JSON: what a plugin's own kinds become)."""

    kind: str
    fields: Mapping[str, Any]


@dataclass(frozen=True)
class Finished:
    """What a protocol concluded: the run summary's protocol part, and rows to store."""

    summary: Mapping[str, Any]
    records: tuple[Record, ...] = ()


@dataclass(frozen=True)
class ValidityUnit:
    """A run's votes (SPEC §1): the record kind that holds them, how they are called, and the
    kind of call that carries one each (``core.project.validity`` counts them)."""

    kind: str  # the record kind counted: "vote", "finding_vote", "cons_ballot", "trace", or a plugin's own
    noun: str  # "votes", "ballots", "traces": in the degraded reason
    # The kind of the calls (their step's ``kind``) that carry one unit each: the latest attempt of
    # each such call is cast, abstained, invalid or failed. None: calls of the record kind's own name.
    # RCP's votes are counted per vote (a ballot call carries several), so its step_kind is unused.
    step_kind: str | None = None

    @property
    def calls(self) -> str:
        return self.step_kind or self.kind


class RunView(typing.Protocol):
    """What a protocol's ``report`` reads of one stored run: read-only plain values, made by the
    project layer (``core.project.run_view``), so a protocol never writes or reads SQL.

    ``records(kind)`` gives the run's records of one kind as dicts, in the order they were
    stored: ``artifact``, ``vote``, ``finding``, ``finding_vote``, ``cons_ballot``, ``trace``,
    ``echo_check``, ``echo_restoration``, or a plugin's own kind (from ``protocol_records``: key,
    agent, data). ``docs/protocols/adding.md`` lists each kind's fields."""

    run: Mapping[str, Any]  # id, label, status, started_at, simulated, seed, error
    config: Mapping[str, Any]  # the run's configuration as stored
    summary: Mapping[str, Any]  # the run's summary as stored

    def records(self, kind: str) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class Threshold:
    """A threshold as votes can meet it (SPEC §9's guardrails): its face ``value``, and the
    smallest share at or above it that ``voters`` votes can give (``effective``)."""

    path: str  # where the config sets it: "theta", "clusters[1].theta"
    cluster: str
    value: float
    voters: int
    effective: float


@dataclass(frozen=True)
class Metrics:
    """A protocol's outcome metrics for studies (SPEC §9), and what a study must know of its settings.

    - ``names``: every metric, in the order a report lists them; ``shares``: those that are a share
      of the run's items (0 to 1); ``compute(view)``: one stored run's values by name, from a
      :class:`RunView` (None where a metric is undefined for that run, such as accuracy without a
      known answer). A study's arm reads the mean of its runs' values.
    - ``rules``: the config paths that only classify the stored replies (RCP's θ, τ, weights and
      reference; a findings or CONS threshold), as JSON Pointers, ``*`` standing for any index: an
      arm that changes nothing else re-classifies the calls of the arm it otherwise equals.
    - ``separations``: metrics whose runs' values are compared between arms tagged contaminated and
      clean, as a ROC AUC (ARM's drift).
    - ``thresholds(cfg)``: the config's thresholds as the votes of a full cluster can meet them
      (:class:`Threshold`); ``signature(cfg)``: a value that two configs share exactly when their
      classification of any votes is the same (their effective thresholds are equal everywhere).
    """

    names: tuple[str, ...]
    compute: Callable[[RunView], Mapping[str, float | None]]
    shares: frozenset[str] = frozenset()
    rules: tuple[str, ...] = ()
    separations: tuple[str, ...] = ()
    thresholds: Callable[[Any], Iterable[Threshold]] | None = None
    signature: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class Protocol:
    name: str
    title: str
    version: str
    package: str  # the package holding prompts/ (and, by default, the declaration)
    summary: str  # one sentence: what the protocol measures
    steps: tuple[Step, ...]
    config: type | None = None  # the protocol's settings and rules, mixed into a run config
    generator: Callable[[Any, Prompts], Any] | None = None
    read: Callable[[AgentCall, AgentReply], Any] | None = None
    reply_model: Callable[[AgentCall], Any] | None = None
    records: Callable[[AgentCall, AgentReply], Iterable[Record]] | None = None
    prepare: Callable[[Any, str], Iterable[Record]] | None = None
    finish: Callable[[Any, str, Any], Finished] | None = None
    validity: ValidityUnit | None = None
    # The run report's section (Markdown lines) from the stored run; a wrapper's (``runnable``
    # False) is added to any run whose summary has a part under the wrapper's name.
    report: Callable[[RunView], Iterable[str]] | None = None
    metrics: Metrics | None = None  # its outcome metrics for studies (SPEC §9)
    sim: str | None = None  # "package.module": its HANDLERS map a step name to fn(ask) -> (text, detail)
    needs_query: bool = True
    runnable: bool = True  # False: a wrapper around other protocols (Resonance Echo), not run alone
    source: str = "built-in"  # or the distribution that registered it

    def step(self, name: str) -> Step:
        found = next((s for s in self.steps if s.name == name), None)
        if found is None:
            raise KeyError(f"{self.name} has no step {name!r}")
        return found

    def default_text(self, step: str | Step) -> str:
        """A step's default template, read from the package's ``prompts/`` folder."""
        s = self.step(step) if isinstance(step, str) else step
        return resources.files(self.package).joinpath(PROMPTS_FOLDER, s.template_file).read_text(encoding="utf-8")

    def default_template(self, step: str | Step) -> PromptTemplate:
        s = self.step(step) if isinstance(step, str) else step
        return PromptTemplate(self.default_text(s), s.variables)

    def listing(self) -> dict:
        """``rwb protocols list``'s entry (SPEC §7)."""
        return {"name": self.name, "title": self.title, "version": self.version, "source": self.source,
                "steps": [{"name": s.name, "kind": s.kind, "sha256": sha256(self.default_text(s))} for s in self.steps]}


class Prompts:
    """The templates a run uses: each step's default, or the override a config gives it.

    :meth:`call` renders a step into an :class:`AgentCall`: the messages, the step's name, the
    protocol's, and in ``meta`` the template's hash (``template_sha256``), the fence, and the
    values the call was made of (``inputs``: what the simulated panel reads, never the prompt's
    wording; see :func:`sim_digest`). A run whose question has a known answer (SPEC §8) sets
    ``truth``: every call then carries it in ``meta["truth"]``, for the simulated panel's skill;
    a model is sent only the messages, so it never sees the answer.
    """

    truth: Mapping[str, Any] | None = None

    def __init__(self, protocol: Protocol, overrides: Mapping[str, str] | None = None):
        self.protocol = protocol
        self.overrides = dict(overrides or {})
        for name in self.overrides:
            protocol.step(name)  # KeyError for an unknown step (configs are checked before this)

    @cached_property
    def _templates(self) -> dict[str, PromptTemplate]:
        out = {}
        for step in self.protocol.steps:
            text = self.overrides.get(step.name)
            out[step.name] = (PromptTemplate(text, step.variables) if text is not None
                              else self.protocol.default_template(step)).check()
        return out

    @cached_property
    def _defaults(self) -> dict[str, PromptTemplate]:
        return {s.name: self.protocol.default_template(s) for s in self.protocol.steps}

    def template(self, step: str) -> PromptTemplate:
        return self._templates[step]

    def is_default(self, step: str) -> bool:
        return self._templates[step].text == self._defaults[step].text

    @property
    def edited(self) -> bool:
        return any(not self.is_default(s.name) for s in self.protocol.steps)

    def provenance(self) -> dict:
        """Every step's effective template with its hash (SPEC §7 "Provenance")."""
        return {s.name: {"sha256": self._templates[s.name].sha256, "default": self.is_default(s.name),
                         "text": self._templates[s.name].text} for s in self.protocol.steps}

    def echo_pieces(self, step: str, extra: Iterable[str] = ()) -> tuple[str, ...]:
        """What of the step's template (and the ``extra`` texts it was given, such as the reply
        format) a reply may echo back: removed before the reply is read."""
        return template_echoes(self._templates[step].fixed_text, extra)

    def call(self, step: str, *, key: str, agent: str, values: Mapping[str, Any], round_no: int = 1,
             fence: Fence | None = None, meta: Mapping[str, Any] | None = None,
             reply_schema: str | None = None) -> AgentCall:
        s = self.protocol.step(step)
        template = self._templates[step]
        untrusted = {v.name for v in s.variables if v.untrusted}
        if fence is None and any(values.get(n) for n in untrusted):
            fence = Fence()
        messages = template.render(values, fence)
        call_meta = {**(meta or {}), "step": step, "protocol": self.protocol.name,
                     "template_sha256": template.sha256, "inputs": dict(values)}
        if self.truth is not None:
            call_meta["truth"] = dict(self.truth)
        if fence is not None and any(values.get(n) for n in untrusted):
            call_meta.update(fence.meta())
        if not self.is_default(step):
            # The simulated panel draws from the prompt a default template would have sent, so an
            # edited prompt never changes a simulated reply (sim does not read prompts).
            call_meta["sim_prompt"] = _joined(self._defaults[step].render(values, Fence(fence.name) if fence else None))
        return AgentCall(key=key, agent=agent, purpose=s.kind, messages=messages, round_no=round_no,
                         reply_schema=reply_schema if reply_schema is not None else s.reply_schema,
                         meta=call_meta)


# A template's fragments between its variables can be as short as ":" or "Response ": removing
# those from a reply would cut its JSON apart. Only longer pieces are an echo worth removing.
MIN_ECHO_CHARS = 10


def template_echoes(fixed_text: Iterable[str], extra: Iterable[str] = ()) -> tuple[str, ...]:
    """What of a template's own words (and the ``extra`` texts given it: reply formats) a reply
    may echo: :func:`~.replies.template_pieces` of them, without the template's pieces too short
    to be an echo."""
    from workbench.core.protocols.shared.replies import template_pieces

    own = [p for p in template_pieces(*fixed_text) if len(p.strip()) >= MIN_ECHO_CHARS]
    pieces = set(own) | set(template_pieces(*extra))
    return tuple(sorted(pieces, key=lambda p: (-len(p), p)))


def _joined(messages: Iterable[Mapping[str, Any]]) -> str:
    return "\n".join(str(m.get("content", "")) for m in messages)


def sim_digest_text(call: AgentCall) -> str:
    """The text the simulated panel's draws depend on: the call's prompt, or the prompt its
    step's default template would have made (an edited prompt leaves sim's replies alone)."""
    text = call.meta.get("sim_prompt") if isinstance(call.meta, Mapping) else None
    return mask_fences(text if isinstance(text, str) else _joined(call.messages))


def check_overrides(protocol: Protocol, overrides: Mapping[str, str]) -> None:
    """Each override is a template the step can use; ``ValueError("prompts.STEP: ...")`` else."""
    names = {s.name for s in protocol.steps}
    for step, text in overrides.items():
        if step not in names:
            raise ValueError(f"prompts.{step}: {protocol.name} has no step {step!r} "
                             f"(its steps: {', '.join(s.name for s in protocol.steps)})")
        try:
            PromptTemplate(text, protocol.step(step).variables).trial()
        except TemplateProblem as exc:
            raise ValueError(f"prompts.{step}: {exc}") from None


__all__ = ["Finished", "Metrics", "Prompts", "Protocol", "Record", "RunView", "Threshold", "ValidityUnit",
           "check_overrides", "sim_digest_text", "template_echoes"]
