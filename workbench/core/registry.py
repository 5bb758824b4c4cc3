"""The registered protocols (SPEC §7): the built-in ones, and those other distributions register.

A protocol package declares one :class:`~workbench.core.protocols.shared.declaration.Protocol`
(``PROTOCOL`` in its ``declaration`` module). Built-in protocols are listed here by module; a
plugin names its declaration under the entry-point group ``resonance_workbench.protocols``::

    [project.entry-points."resonance_workbench.protocols"]
    acr = "acr_protocol.declaration:PROTOCOL"

A plugin that fails to load (an import error, not a :class:`Protocol`, a name already taken) is
listed in :func:`failures` with its error; it never stops the workbench. Everything is read once,
on first use, and kept for the process.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import threading
from dataclasses import dataclass, replace
from importlib import metadata

from workbench.core.limits import printable
from workbench.core.protocols.shared.declaration import Protocol
from workbench.core.protocols.shared.templates import Step

ENTRY_POINT_GROUP = "resonance_workbench.protocols"
BUILT_IN = (
    "workbench.core.protocols.rcp.declaration",
    "workbench.core.protocols.arm.declaration",
    "workbench.core.protocols.findings.declaration",
    "workbench.core.protocols.cons.declaration",
    "workbench.core.protocols.echo.declaration",
    "workbench.core.protocols.single.declaration",
    "workbench.core.protocols.vote.declaration",
    "workbench.core.protocols.debate.declaration",
)
_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")


@dataclass(frozen=True)
class LoadFailure:
    """A plugin that could not be loaded: where it came from and why (one line)."""

    name: str  # the entry point's name
    source: str  # the distribution, or the entry point's value
    error: str

    def to_json(self) -> dict:
        return {"name": self.name, "source": self.source, "error": self.error}


_lock = threading.Lock()
_loaded: tuple[dict[str, Protocol], tuple[LoadFailure, ...]] | None = None


def _load() -> tuple[dict[str, Protocol], tuple[LoadFailure, ...]]:
    global _loaded
    with _lock:
        if _loaded is None:
            found: dict[str, Protocol] = {}
            for module in BUILT_IN:
                protocol = importlib.import_module(module).PROTOCOL
                found[protocol.name] = protocol
            failures = []
            for ep in _entry_points():
                protocol, error = _from_entry_point(ep, found)
                if protocol is not None:
                    found[protocol.name] = protocol
                else:
                    failures.append(LoadFailure(ep.name, _distribution(ep), error))
            _loaded = (found, tuple(failures))
        return _loaded


def _entry_points():
    try:
        return sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: (ep.name, ep.value))
    except Exception:  # a broken installed distribution's metadata: no plugins, never a crash
        return []


def _distribution(ep) -> str:
    dist = getattr(ep, "dist", None)
    return getattr(dist, "name", None) or ep.value


def _from_entry_point(ep, found: dict[str, Protocol]) -> tuple[Protocol | None, str]:
    try:
        # A plugin that prints while it is imported must not corrupt a command's output
        # (``rwb run`` prints the run id, ``--json`` a document): what it prints is dropped.
        with contextlib.redirect_stdout(io.StringIO()):
            value = ep.load()
    except BaseException as exc:  # noqa: BLE001 - a plugin's import may raise anything, even SystemExit
        if isinstance(exc, KeyboardInterrupt):
            raise
        first = str(exc).splitlines()[0] if str(exc).strip() else ""
        if isinstance(exc, (AttributeError, ValueError)) and ":" not in ep.value:
            return None, f"its entry point {ep.value!r} does not name an object (module:object)"
        return None, printable(f"could not be imported: {type(exc).__name__}: {first}".rstrip(": "))[:300]
    if not isinstance(value, Protocol):
        return None, f"{ep.value} is a {type(value).__name__}, not a Protocol declaration"
    if not _NAME.fullmatch(value.name):
        return None, f"its name {value.name!r} is not a protocol name (lower-case letters, digits and _, from a letter)"
    if value.name in found:
        return None, f"the name {value.name!r} is already taken by the {found[value.name].source} protocol"
    problems = _check(value)
    if problems:
        return None, problems
    return replace(value, source=_distribution(ep)), ""


def _check(protocol: Protocol) -> str:
    """A plugin's declaration holds what a run needs: a generator, a config model and a reader;
    default templates that pass their own checks; and, when it names a simulated panel module,
    one whose ``HANDLERS`` answer every step (else every simulated call would fail at run time)."""
    if protocol.runnable and (protocol.generator is None or protocol.config is None or protocol.read is None):
        return "it declares no generator, config model or reader (read)"
    for step in protocol.steps:
        try:
            protocol.default_template(step).trial()
        except Exception as exc:  # noqa: BLE001 - a missing file, a template fault: the plugin's, reported
            return printable(f"step {step.name!r}: {exc}")[:300]
    if protocol.sim:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                handlers = getattr(importlib.import_module(protocol.sim), "HANDLERS", None)
        except Exception as exc:  # noqa: BLE001 - the plugin's module, reported
            return printable(f"its simulated panel module {protocol.sim!r} could not be imported: "
                             f"{type(exc).__name__}: {exc}")[:300]
        missing = [s.name for s in protocol.steps if not isinstance(handlers, dict) or s.name not in handlers]
        if missing:
            return f"its simulated panel module {protocol.sim!r} has no HANDLERS for {', '.join(missing)}"
    return ""


def protocols() -> dict[str, Protocol]:
    """Every loaded protocol by name, built-in first."""
    return _load()[0]


def runnable() -> dict[str, Protocol]:
    """The protocols a run config may name (not the wrappers, such as Resonance Echo)."""
    return {n: p for n, p in protocols().items() if p.runnable}


def get(name: str) -> Protocol:
    """The protocol ``name``; KeyError when none is registered under it."""
    return protocols()[name]


def failures() -> tuple[LoadFailure, ...]:
    return _load()[1]


def step_of(call) -> tuple[Protocol, Step] | None:
    """The declared protocol and step that made ``call`` (an ``AgentCall``): those its meta names
    (``protocol``, ``step``: every call ``Prompts.call`` renders); for a call made without them (by
    hand, in a test or a driver), the one step of a registered protocol whose kind is the call's
    purpose (and whose reply schema is the call's, when it has one). None when nothing, or more
    than one step, fits."""
    meta = call.meta if isinstance(call.meta, dict) else {}
    named = protocols().get(meta.get("protocol") or "")
    if named is not None:
        step = next((s for s in named.steps if s.name == meta.get("step")), None)
        return (named, step) if step is not None else None
    fits = [(p, s) for p in protocols().values() for s in p.steps if s.kind == call.purpose
            and (call.reply_schema is None or s.reply_schema == call.reply_schema)]
    return fits[0] if len(fits) == 1 else None


def reset_for_tests() -> None:
    """Forget what was loaded (a test that installs a plugin reads the entry points again)."""
    global _loaded
    with _lock:
        _loaded = None
