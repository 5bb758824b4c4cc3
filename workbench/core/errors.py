"""Errors that reach a user: each names what is wrong in words a user can act on."""

from __future__ import annotations

from collections.abc import Iterable


class WorkbenchError(Exception):
    """Base class for every error the workbench reports to a user instead of a traceback."""


class InputError(WorkbenchError, ValueError):
    """Invalid user input. ``field`` is a path such as ``clusters[1].agents``."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)


def field_path(loc: Iterable[object]) -> str:
    """Format a location tuple, e.g. ``("clusters", 1, "agents")`` -> ``clusters[1].agents``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def from_pydantic(exc: object) -> InputError:
    """Turn the first error of a pydantic ``ValidationError`` into an :class:`InputError`."""
    first = exc.errors()[0]  # type: ignore[attr-defined]
    loc = [p for p in first.get("loc", ()) if p not in ("function-after", "function-before")]
    msg = first.get("msg", "invalid")
    # pydantic prefixes custom ValueError messages with "Value error, ".
    msg = msg.removeprefix("Value error, ")
    return InputError(field_path(loc), msg)
