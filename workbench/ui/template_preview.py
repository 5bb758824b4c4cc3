"""What the protocol editor checks and previews, without Qt (the panel runs it on its Reader).

- :func:`check_template`: an edited template checked as ``rwb run`` checks a config's
  ``prompts`` (``declaration.check_overrides``), with the same words: ``prompts.STEP: line N: …``
  (``prompts.echo.STEP`` for a step of a wrapper such as Resonance Echo, as a config keys it).
- :func:`render_preview`: the first call of one step that a real run would send with the edited
  templates, made by the protocol's own generator and ``Prompts.call`` (so what is shown is the
  fenced text exactly as sent). The run is the project's newest run of the protocol (its stored
  configuration: real agents, personas, query), driven again with its stored replies (real
  artifacts and answers), each call its replay has no reply for answered by the simulated
  panel; nothing is written and no model is called. A project with no such run gives the
  project's own panel (Clusters & Agents), answered by the simulated panel; one whose panel
  cannot run the protocol, or a run that never makes a call of the step, gives the step's
  example values, rendered by ``Prompts.call`` alone, and says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workbench.core.errors import InputError

_NO_CALL: dict[tuple, bool] = {}  # (protocol, run or panel, step) of runs that make no call of the step
MAX_PREVIEW_CALLS = 5_000  # calls a preview's replay answers before it gives up on finding the step
PREVIEW_QUERY = "What should the team decide, and why?"  # a panel config's question when no run has one


def override_key(protocol, step: str) -> str:
    """How a config's ``prompts`` names ``step``: ``STEP``, or ``NAME.STEP`` for a wrapper's step
    (``provenance.ECHO_PREFIX``: Resonance Echo's are ``echo.STEP``)."""
    return step if protocol.runnable else f"{protocol.name}.{step}"


def check_template(protocol, step: str, text: str) -> str | None:
    """The CLI's one line for a template ``step`` cannot use (None: it can)."""
    from workbench.core.protocols.shared.declaration import check_overrides

    try:
        check_overrides(protocol, {step: text})
    except ValueError as exc:
        message = str(exc)
        if not protocol.runnable:
            message = message.replace("prompts.", f"prompts.{protocol.name}.", 1)
        return message
    return None


def check_and_preview(store, protocol_name: str, step: str,
                      texts: Mapping[str, str]) -> tuple[str | None, Preview | None]:
    """(the CLI's message for ``step``'s template or None, the preview): what the editor's Reader
    computes off the GUI thread after each pause in typing."""
    from workbench.core import registry
    from workbench.core.project import prompt_sets

    protocol = registry.get(protocol_name)
    problem = check_template(protocol, step, texts[step])
    if problem:
        return problem, None
    source = prompt_sets.preview_source(store, protocol_name)
    panel, why = None, ""
    if source.config is None and protocol.runnable:
        from workbench.core.project.run_configs import panel_config

        try:
            panel = panel_config(store, protocol_name, label="preview", query=PREVIEW_QUERY)
        except InputError as exc:
            why = f"the project's panel cannot make a {protocol_name} run: {exc}"
    return None, render_preview(protocol_name, step, texts, source if source.config is not None else None,
                                panel, why)


def edited(protocol, texts: Mapping[str, str]) -> dict[str, str]:
    """The steps whose text differs from the default, with their text (what a prompt set holds)."""
    return {s.name: texts[s.name] for s in protocol.steps
            if s.name in texts and texts[s.name] != protocol.default_text(s)}


@dataclass(frozen=True)
class Preview:
    messages: tuple[dict, ...]  # the call's messages, fenced, as sent
    fence: dict | None  # {"delimiter", "escapes"}: the call's fence (None: nothing fenced)
    agent: str
    key: str
    sha256: str  # the template that made it
    source: str  # in words: which run (or panel) and which replies it was rendered from
    problem: str = ""  # why no preview could be made ("" when there is one); a config's refusal


def render_preview(protocol_name: str, step: str, texts: Mapping[str, str], source=None,
                   panel_config: dict | None = None, panel_problem: str = "") -> Preview:
    """The first ``step`` call of a run with ``texts`` (each step's template text, edited or not).

    ``source``: ``prompt_sets.PreviewSource`` (the project's newest run of the protocol); else
    ``panel_config``, a run config of the project's panel (``run_configs.panel_config``), or
    ``panel_problem``, why the panel cannot make one."""
    from workbench.core import registry

    protocol = registry.get(protocol_name)
    overrides = {override_key(protocol, s): t for s, t in edited(protocol, texts).items()}
    base, replies, where = None, {}, ""
    if source is not None and source.config is not None:
        base, replies = dict(source.config), source.replies
        where = f"run {source.label!r} ({source.run_id}): its agents and its stored replies"
    elif panel_config is not None:
        base = dict(panel_config)
        where = "the project's panel (Clusters & Agents), answered by the simulated panel: no run of it yet"
    if base is None:
        why = panel_problem or ("it wraps another protocol's run, and no run in this project used it"
                                if not protocol.runnable else "the project has no run of it")
        return _from_examples(protocol, step, texts, f"the step's example values ({why})")
    doc = {k: v for k, v in base.items() if k not in ("prompt_set", "prompts", "label")}
    doc["prompts"] = overrides
    try:
        from workbench.core.runs.config import parse_run_config

        cfg = parse_run_config(doc, stored=source is not None and source.config is not None)
    except InputError as exc:
        if exc.field.startswith("prompts"):  # the edited templates themselves: the config's refusal
            return Preview((), None, "", "", "", where, str(exc))
        return _from_examples(protocol, step, texts, f"the step's example values (the {where.split(':')[0]} "
                                                      f"is not a valid {protocol_name} run: {exc})")
    # A run that never makes a call of the step (RCP's ballot without ballot mode) is replayed
    # whole to learn it, which takes seconds: remembered, so typing does not replay it again.
    # (Which calls a run makes does not depend on the templates' words: sim reads the defaults'.)
    made_from = source.run_id if source is not None else json.dumps(base, sort_keys=True, default=str)
    never = (protocol_name, made_from, step)
    try:
        call = None if never in _NO_CALL else _first_call(cfg, protocol, step, replies)
    except Exception as exc:  # noqa: BLE001 - a protocol's generator (a plugin's) may raise anything: shown, not fatal
        return _from_examples(protocol, step, texts, f"the step's example values (the protocol's run could not be "
                                                     f"replayed: {type(exc).__name__}: {exc})")
    if call is None:
        _NO_CALL[never] = True
        while len(_NO_CALL) > 64:
            _NO_CALL.pop(next(iter(_NO_CALL)))
        return _from_examples(protocol, step, texts, f"the step's example values ({where.split(':')[0]} "
                                                     f"makes no {step} call)")
    return Preview(tuple(call.messages), _fence(call), call.agent, call.key, call.meta.get("template_sha256", ""),
                   where)


def _first_call(cfg, protocol, step: str, replies: Mapping[str, tuple[str | None, dict]]):
    """The generator driven until it asks for a call of ``step`` (of ``protocol``); None if it ends first."""
    from workbench.core import registry
    from workbench.core.protocols.shared.steps import AgentReply, Batch, read_reply
    from workbench.core.runs.config import protocol_generator
    from workbench.core.sim import SimPanel

    sim = SimPanel.for_config(cfg)  # a real model's agent may carry parameters sim does not read
    gen = protocol_generator(cfg, run_id="preview")
    answered = 0
    reply: Any = None
    try:
        while answered < MAX_PREVIEW_CALLS:
            item = gen.send(reply)
            if not isinstance(item, Batch):
                reply = None
                continue
            for call in item.calls:
                if call.meta.get("protocol") == protocol.name and call.meta.get("step") == step:
                    return call
            reply = {}
            for call in item.calls:
                stored = replies.get(call.key)
                made = AgentReply(call.key, stored[0], None, stored[1]) if stored is not None else sim.answer(call)
                found = registry.step_of(call)
                reply[call.key] = read_reply(call, made, found[0].read if found else None)
                answered += 1
    except StopIteration:
        return None
    finally:
        gen.close()
    return None


def _from_examples(protocol, step: str, texts: Mapping[str, str], where: str) -> Preview:
    """The step rendered by ``Prompts.call`` with its variables' example values."""
    from workbench.core.protocols.shared.declaration import Prompts
    from workbench.core.protocols.shared.templates import TemplateProblem

    s = protocol.step(step)
    values = {v.name: list(v.example) if isinstance(v.example, tuple) else v.example for v in s.variables}
    try:
        prompts = Prompts(protocol, edited(protocol, texts))
        call = prompts.call(step, key=f"preview/{step}", agent="agent", values=values)
    except (TemplateProblem, ValueError, KeyError) as exc:
        return Preview((), None, "", "", "", where, f"prompts.{override_key(protocol, step)}: {exc}")
    return Preview(tuple(call.messages), _fence(call), call.agent, call.key, call.meta.get("template_sha256", ""),
                   where)


def _fence(call) -> dict | None:
    delimiter = call.meta.get("delimiter")
    return {"delimiter": delimiter, "escapes": call.meta.get("fence_escapes", 0)} if delimiter else None
