"""Prompt templates (SPEC §7): Jinja2 in a sandbox, with untrusted text that only ever arrives fenced.

A step's template is one Jinja2 text with a block per chat message, in the order sent::

    {% block system %}{{ persona or "You are a careful reviewer." }}{% endblock %}
    {% block user %}Question: {{ query }} ... {{ artifact }} ... {{ reply_format }}{% endblock %}

Text outside the blocks is never sent (a comment may go there). Rules a template is held to, each
refused with the line it is on (:class:`TemplateProblem`):

- its syntax is Jinja2's, and it names only the step's declared variables (undefined ones are
  refused at render time too: ``StrictUndefined``);
- every ``required`` variable appears in it (what the parser needs, such as ``reply_format``, so
  an edited template cannot leave it out);
- it has a ``user`` block.

**Untrusted variables** (anything a model, an MCP client or an imported file wrote) never reach
the template as text. The template sees a placeholder (:class:`_Slot`), a token holding no part
of the text; once the block is rendered, each placeholder is replaced, in one pass, by the text
fenced with the call's fence (:class:`~.fencing.Fence`). Whatever the template does with the
placeholder (slices it, upper-cases it, tests it), the untrusted text is not there to be read,
and what is inserted is always the fenced form. A placeholder the template altered is refused
(:class:`TemplateProblem`): the text would otherwise be silently left out.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, meta, nodes
from jinja2.exceptions import SecurityError, TemplateError, UndefinedError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from workbench.core.protocols.shared.fencing import Fence

ROLES = ("system", "user", "assistant")  # the blocks a template may have, in the order sent
MAX_TEMPLATE_CHARS = 50_000  # a template is a prompt's fixed text: 50,000 characters is ample


@dataclass(frozen=True)
class Variable:
    """A value a step's template may use."""

    name: str
    description: str
    required: bool = False  # the template must use it (what the reply's parser needs)
    untrusted: bool = False  # written by a model, a client or a file: reaches the template fenced
    example: Any = "…"  # a value of its kind, for the trial render that checks an edited template

    def __post_init__(self) -> None:
        if isinstance(self.example, list):  # frozen: keep it hashable
            object.__setattr__(self, "example", tuple(self.example))

    def to_json(self) -> dict:
        return {"name": self.name, "description": self.description, "required": self.required,
                "untrusted": self.untrusted}


class TemplateProblem(ValueError):
    """A template that cannot be used: ``message`` says why, ``line`` where (1-based), if known."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(f"line {line}: {message}" if line else message)
        self.message = message
        self.line = line


MAX_RENDERED_CHARS = 200_000  # a template's own output (untrusted texts aside): a prompt, not a payload
MAX_POWER = 64
# The steps a render's loops may take, all loops together: a prompt's loops run over a few
# responses or positions; nested loops over range(100000) would otherwise run for hours (the
# check's trial render, in `rwb run` or the GUI's editor, never ending).
MAX_LOOP_STEPS = 1_000_000
_LOOP_STEPS: ContextVar[list[int] | None] = ContextVar("template_loop_steps", default=None)


class _PromptEnvironment(ImmutableSandboxedEnvironment):
    """Jinja2's immutable sandbox, with the operators that can build a huge value bounded: a text
    or list repeated (``"x" * 10**8`` built 100 MB in 2.5 s) and a power (``9 ** 9 ** 9``)."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * max(n, 0) > MAX_RENDERED_CHARS:
                    raise SecurityError(f"a repetition of {len(seq) * n:,} items is longer than a prompt may be")
        if operator == "**" and isinstance(right, (int, float)) and abs(right) > MAX_POWER:
            raise SecurityError(f"a power of {right} is larger than a template may compute")
        return super().call_binop(context, operator, left, right)


_ENV = _PromptEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True,
                          trim_blocks=False, lstrip_blocks=False)
_BUDGET_FILTER = "_loop_budget"


def _loop_budget(iterable):
    """Every ``{% for %}`` iterates through this (see :func:`_compile`): each step is counted
    against the render's :data:`MAX_LOOP_STEPS`."""
    steps = _LOOP_STEPS.get()
    for item in iterable:
        if steps is not None:
            steps[0] += 1
            if steps[0] > MAX_LOOP_STEPS:
                raise SecurityError(f"its loops take more than {MAX_LOOP_STEPS:,} steps")
        yield item


_ENV.filters[_BUDGET_FILTER] = _loop_budget


@lru_cache(maxsize=256)
def _parse(text: str) -> nodes.Template:
    """A template's syntax tree; an unknown filter or test is found when compiling, not parsing,
    so it is compiled too. Cached by text: a run makes many calls of each step (and a batch or a
    study many runs), and compiling costs milliseconds."""
    try:
        ast = _ENV.parse(text)
        _compile(text)
    except TemplateSyntaxError as exc:
        raise TemplateProblem(f"syntax error: {exc.message}", exc.lineno) from None
    return ast


@lru_cache(maxsize=256)
def _compile(text: str):
    ast = _ENV.parse(text)
    for loop in ast.find_all(nodes.For):  # each loop's steps counted (_loop_budget)
        loop.iter = nodes.Filter(loop.iter, _BUDGET_FILTER, [], [], None, None, lineno=loop.iter.lineno)
    return _ENV.from_string(ast)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class PromptTemplate:
    """One step's template text, checked against the step's variables (:meth:`check`)."""

    text: str
    variables: tuple[Variable, ...]

    @cached_property
    def sha256(self) -> str:
        return sha256(self.text)

    @cached_property
    def _parsed(self) -> nodes.Template:
        if len(self.text) > MAX_TEMPLATE_CHARS:
            raise TemplateProblem(f"is too long ({len(self.text):,} characters; at most {MAX_TEMPLATE_CHARS:,})")
        return _parse(self.text)

    @cached_property
    def _compiled(self):
        self.check()
        return _compile(self.text)

    def trial(self) -> PromptTemplate:
        """:meth:`check`, then a render with each variable's example value: what fails only when
        rendered (``{{ 1/0 }}``, an attribute of a text) is refused before any call is made."""
        self.check()
        self.render({v.name: list(v.example) if isinstance(v.example, tuple) else v.example
                     for v in self.variables}, Fence())
        return self

    def check(self) -> PromptTemplate:
        """The template as it may be used, or :class:`TemplateProblem` naming the first fault."""
        ast = self._parsed
        declared = {v.name for v in self.variables}
        used = meta.find_undeclared_variables(ast)
        for name in sorted(used - declared, key=lambda n: _line_of(ast, n)):
            known = ", ".join(sorted(declared)) or "none"
            raise TemplateProblem(f"unknown variable {name!r} (this step's variables: {known})", _line_of(ast, name))
        blocks = {b.name: b for b in ast.find_all(nodes.Block)}
        for name, block in blocks.items():
            if name not in ROLES:
                raise TemplateProblem(f"unknown block {name!r}: a block is a message, one of {', '.join(ROLES)}",
                                      block.lineno)
        if "user" not in blocks:
            raise TemplateProblem("has no {% block user %}: the message that asks the agent")
        for var in self.variables:
            if var.required and var.name not in used:
                raise TemplateProblem(f"leaves out the required variable {var.name!r} ({var.description})")
        return self

    @cached_property
    def fixed_text(self) -> tuple[str, ...]:
        """The template's own words (its literal text and string constants), which a reply may echo
        back: what the echo stripper removes before a reply is read."""
        out = []
        for node in self._parsed.find_all((nodes.TemplateData, nodes.Const)):
            value = node.data if isinstance(node, nodes.TemplateData) else node.value
            if isinstance(value, str) and value.strip():
                out.append(value)
        return tuple(out)

    def used(self) -> frozenset[str]:
        return frozenset(meta.find_undeclared_variables(self._parsed))

    def render(self, values: Mapping[str, Any], fence: Fence | None = None) -> tuple[dict[str, str], ...]:
        """The chat messages of the blocks, in the order of :data:`ROLES`, each rendered with
        ``values``. Untrusted values (see :class:`Variable`) are fenced with ``fence``."""
        template = self._compiled
        untrusted = {v.name for v in self.variables if v.untrusted}
        slots = _Slots()
        context_values = {}
        for name, value in values.items():
            context_values[name] = slots.hold(value) if name in untrusted else value
        if fence is None and any(values.get(n) for n in untrusted):
            raise ValueError("a template with untrusted values needs the call's fence")
        budget = _LOOP_STEPS.set([0])
        try:
            context = template.new_context(context_values)
            messages = []
            for role in ROLES:
                if role in template.blocks:
                    text = "".join(template.blocks[role](context))
                    if len(text) > MAX_RENDERED_CHARS:
                        raise TemplateProblem(f"renders {len(text):,} characters of its own (at most {MAX_RENDERED_CHARS:,})")
                    messages.append({"role": role, "content": slots.fill(text, fence)})
            slots.check_placed()
        except UndefinedError as exc:
            raise TemplateProblem(f"undefined value: {exc.message}") from None
        except SecurityError as exc:
            raise TemplateProblem(f"not allowed in a template: {exc}") from None
        except TemplateProblem:
            raise
        except (TemplateError, ArithmeticError, RecursionError, MemoryError, TypeError, ValueError, LookupError,
                AttributeError) as exc:
            raise TemplateProblem(f"could not be rendered: {type(exc).__name__}: {exc}") from None
        finally:
            _LOOP_STEPS.reset(budget)
        return tuple(messages)


def _line_of(ast: nodes.Template, name: str) -> int | None:
    for node in ast.find_all(nodes.Name):
        if node.name == name:
            return node.lineno
    return None


class _Slot:
    """An untrusted text as the template sees it: a token with no part of the text in it. Taking
    it as text (``{{ x }}``, ``x|string``) is noted, so a token written but then cut or altered is
    found (:meth:`_Slots.check_placed`)."""

    __slots__ = ("_token", "_taken")

    def __init__(self, token: str, taken: set[str]):
        self._token = token
        self._taken = taken

    def __str__(self) -> str:
        self._taken.add(self._token)
        return self._token

    __html__ = __str__

    def __bool__(self) -> bool:
        return True


class _Slots:
    """The placeholders of one render and the texts they stand for: a token is a nonce and a
    number between two U+001E. A token taken as text must come back whole, or the render is
    refused: its text would otherwise be silently left out."""

    def __init__(self):
        self.nonce = f"{secrets.randbelow(10 ** 16):016d}"
        self.texts: dict[str, str] = {}
        self.taken: set[str] = set()
        self.placed: set[str] = set()
        self._pattern = re.compile(f"\x1e{self.nonce}:(\\d+)\x1e")

    def hold(self, value: Any) -> Any:
        """``value`` with every string in it (a text, or a list or tuple of texts) made a slot."""
        if isinstance(value, str):
            token = f"\x1e{self.nonce}:{len(self.texts)}\x1e"
            self.texts[token] = value
            return _Slot(token, self.taken)
        if isinstance(value, (list, tuple)):
            return [self.hold(v) for v in value]
        if value is None:
            return None
        raise TypeError(f"an untrusted value is a text or a list of texts, got {type(value).__name__}")

    def fill(self, text: str, fence: Fence | None) -> str:
        if not self.texts:
            return text

        def put(m: re.Match) -> str:
            self.placed.add(m.group(0))
            return fence.wrap(self.texts[m.group(0)])

        return self._pattern.sub(put, text)

    def check_placed(self) -> None:
        if self.taken - self.placed:
            raise TemplateProblem("an untrusted variable was cut or altered; write it whole, as {{ name }}")


def template_pieces_of(templates: Sequence[PromptTemplate], extra: Iterable[str] = ()) -> tuple[str, ...]:
    """What of these templates a reply may echo: each literal line and sentence, and each
    ``<placeholder>``, longest first (see :func:`~.replies.template_pieces`)."""
    from workbench.core.protocols.shared.replies import template_pieces

    texts = [piece for t in templates for piece in t.fixed_text]
    return template_pieces(*texts, *extra)


@dataclass(frozen=True)
class Step:
    """One kind of call a protocol makes: its name (what ``prompts.STEP`` overrides), the call's
    purpose (``kind``), its variables, its default template (a file in the protocol package's
    ``prompts/`` folder) and its reply's schema name (None: free text)."""

    name: str
    kind: str
    description: str
    variables: tuple[Variable, ...]
    template_file: str
    reply_schema: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    def variable(self, name: str) -> Variable | None:
        return next((v for v in self.variables if v.name == name), None)
