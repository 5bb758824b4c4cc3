"""Option models' errors in plain words: a pydantic error becomes an :class:`InputError` naming its field.

The option models (each protocol's ``config`` module, and the run configuration built from them)
are strict pydantic models whose ranges sit on the fields (``Field(gt=0, le=1)``). pydantic's
own wording ("Input should be less than or equal to 1") is turned here into the workbench's
("must be at most 1, got 1.5"), so every configuration error reads alike wherever it was found.
A validator that raises an :class:`InputError` keeps its own field and message, under the path
of the value it checked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence, Sized
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ValidationError, ValidationInfo

from workbench.core.errors import InputError, field_path
from workbench.core.limits import check_name, too_long, too_many

M = TypeVar("M", bound=BaseModel)


#: Validation context for a model built from names another model has already checked.
NAMES_CHECKED = {"names_checked": True}


def _name(value: str, info: ValidationInfo) -> str:
    """SPEC §11: an id or a name carries no control character (``limits.check_name``). A run
    configuration stored before the rule (validated with ``context={"stored": True}``) still
    resumes; what it shows is escaped on the way out."""
    context = info.context or {}
    if context.get("stored") or context.get("names_checked"):
        return value
    return check_name(value)


#: The check, placed after any ``StringConstraints`` (so a blank is "empty" and a long one "too long" first).
NameCheck = AfterValidator(_name)
#: A string that is an id or a name: ``id: NameStr = Field(min_length=1, max_length=MAX_NAME_CHARS)``.
NameStr = Annotated[str, NameCheck]

_KIND = {
    "float_type": "must be a number", "float_parsing": "must be a number", "finite_number": "must be a finite number",
    "int_type": "must be a whole number", "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "bool_type": "must be true or false", "bool_parsing": "must be true or false",
    "string_type": "must be text",
    "list_type": "must be a list", "tuple_type": "must be a list", "set_type": "must be a list",
    "dict_type": "must be an object", "model_type": "must be an object", "model_attributes_type": "must be an object",
}
_BOUND = {"greater_than": ("gt", "greater than"), "greater_than_equal": ("ge", "at least"),
          "less_than": ("lt", "less than"), "less_than_equal": ("le", "at most")}


def shown(value: object, limit: int = 60) -> str:
    """A value as the user wrote it (JSON), cut short (a huge value is never serialised whole)."""
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit]
    elif isinstance(value, (list, tuple, dict)) and len(value) > 8:
        return f"{'an object' if isinstance(value, dict) else 'a list'} of {len(value):,} items"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plain_message(error: Mapping[str, Any]) -> str:
    """One pydantic error (an item of ``ValidationError.errors()``) in the workbench's words."""
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    got = f", got {shown(error.get('input'))}"
    if kind == "missing":
        return "required"
    if kind == "extra_forbidden":
        return "unknown key (check its spelling)"
    if kind in _KIND:
        return _KIND[kind] + got
    if kind in _BOUND:
        key, words = _BOUND[kind]
        bound = ctx.get(key)
        return f"must be {words} {f'{bound:g}' if isinstance(bound, float) else bound}{got}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}{got}"
    if kind in ("too_short", "string_too_short"):
        least = ctx.get("min_length", 1)
        return "must not be empty" if least == 1 else f"needs at least {least} items{got}"
    if kind == "string_too_long" or (kind == "too_long" and isinstance(error.get("input"), str)):
        text = error.get("input")
        return too_long(len(text), ctx.get("max_length")) if isinstance(text, str) else f"is too long{got}"
    if kind == "too_long":
        actual = ctx.get("actual_length")
        if actual is None and isinstance(error.get("input"), Sized):
            actual = len(error["input"])
        return too_many(actual, ctx.get("max_length")) if actual is not None \
            else f"may hold at most {ctx.get('max_length')} items"
    if kind == "union_tag_invalid":
        return f"must be one of {ctx.get('expected_tags')}, got {shown(ctx.get('tag'))}"
    if kind == "union_tag_not_found":
        return "required"
    return str(error.get("msg", "invalid")).removeprefix("Value error, ").removeprefix("Assertion failed, ")


def input_error(exc: ValidationError, prefix: str = "", *,
                clean: Callable[[Sequence[Any]], Sequence[Any]] | None = None) -> InputError:
    """The first problem of ``exc`` as an :class:`InputError`; ``prefix`` goes before its path
    (``echo`` gives ``echo.interval``); ``clean`` may drop location parts that are not keys
    (such as the tag of a discriminated union)."""
    first = exc.errors()[0]
    # "[key]": pydantic's marker for a bad dict key; the key itself is already in the path.
    loc = [p for p in first.get("loc", ()) if p not in ("function-after", "function-before", "function-wrap", "[key]")]
    if clean is not None:
        loc = list(clean(loc))
    path = field_path(loc)
    original = (first.get("ctx") or {}).get("error")
    if isinstance(original, InputError):  # a validator that named its own field
        path = _join(path, original.field)
        message = original.message
    else:
        message = plain_message(first)
    return InputError(_join(prefix, path), message)


def validate(model: type[M], data: object, prefix: str = "") -> M:
    """``model.model_validate(data)``, any problem as an :class:`InputError` under ``prefix``."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise input_error(exc, prefix) from None


def _join(head: str, tail: str) -> str:
    if not head or not tail:
        return head or tail
    return f"{head}{'' if tail.startswith('[') else '.'}{tail}"
