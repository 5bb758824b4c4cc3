"""Reading JSON input for commands: from a file, or ``-`` for standard input."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from workbench.core.errors import InputError


def read_text(source: str) -> str:
    """The text of ``source`` (a path or ``-``); any problem is an :class:`InputError`."""
    label = "stdin" if source == "-" else source
    try:
        return sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(label, "no such file") from None
    except IsADirectoryError:
        raise InputError(label, "is a directory, not a file") from None
    except UnicodeDecodeError:
        raise InputError(label, "not UTF-8 text") from None
    except OSError as exc:
        raise InputError(label, exc.strerror or str(exc)) from None


def read_json(source: str) -> object:
    """Parse JSON from ``source`` (a path or ``-``); any problem is an :class:`InputError`."""
    label = "stdin" if source == "-" else source
    text = read_text(source)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(label, f"not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None


def print_json(value: object) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
