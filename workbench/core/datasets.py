"""Datasets of questions with known answers (SPEC §8): JSONL or CSV, one item a line.

An item is ``id``, ``question``, and optionally ``answer`` and ``answer_type`` (``number``,
``choice``, ``exact`` or ``regex``; see :mod:`workbench.core.scoring`). An answer given without a
type is a ``number`` when it is a JSON number, else ``exact``. Every problem is refused with the
file, the line and the field (``items.jsonl: line 3: answer_type: must be one of ...``), before
anything is spent. Files are bounded like every input (docs/limits.md).

The arithmetic preset (:func:`arithmetic`) writes Du et al.'s arithmetic task: ``What is the
result of a+b*c+d-e*f?`` with six integers drawn uniformly from 0–30.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from workbench.core.errors import InputError
from workbench.core.limits import MAX_INPUT_BYTES, MAX_NAME_CHARS, MAX_QUERY_CHARS, check_bytes, check_name, decode_json
from workbench.core.scoring import ANSWER_TYPES, compile_pattern, last_number

MAX_DATASET_ITEMS = 100_000
MAX_ANSWER_CHARS = 2_000
MAX_PATH_CHARS = 4_096  # a dataset's path in a run config (PATH_MAX on Linux)
KEYS = ("id", "question", "answer", "answer_type")


@dataclass(frozen=True)
class Item:
    id: str
    question: str
    answer: str | None = None
    answer_type: str | None = None

    @property
    def scorable(self) -> bool:
        return self.answer is not None

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


def dataset_items(folder: Path, name: str, where: str) -> list[Item]:
    """The items of the dataset ``name`` (a path relative to ``folder``, a config file's); every
    problem names ``where`` (the config's field) first: ``dataset: items.jsonl: line 3: answer``."""
    if not name.strip():
        raise InputError(where, "must not be empty: the path of a JSONL or CSV file")
    if len(name) > MAX_PATH_CHARS:
        raise InputError(where, f"is too long ({len(name):,} characters; at most {MAX_PATH_CHARS:,})")
    try:
        check_name(name)  # a path shown in messages and stored: no control character (SPEC §11)
    except ValueError as exc:
        raise InputError(where, str(exc)) from None
    path = folder / name
    if not path.exists():
        raise InputError(where, f"no such file: {path}")
    try:
        return read_dataset(path)
    except InputError as exc:
        raise InputError(f"{where}: {exc.field}" if exc.field else where, exc.message) from None


def read_dataset(path: Path | str) -> list[Item]:
    """The items of a JSONL (``.jsonl``, ``.ndjson``) or CSV (``.csv``) file, validated."""
    path = Path(path)
    name = path.name
    try:
        if not path.is_file():
            raise InputError(name, "no such file" if not path.exists() else "is not a regular file")
        check_bytes(path.stat().st_size, name, MAX_INPUT_BYTES)
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(name, f"not UTF-8 text (byte {exc.start})") from None
    return parse_dataset(text, name, "csv" if path.suffix.lower() == ".csv" else "jsonl")


def parse_dataset(text: str, name: str, form: str) -> list[Item]:
    rows = _csv_rows(text, name) if form == "csv" else _jsonl_rows(text, name)
    items: list[Item] = []
    seen: dict[str, int] = {}
    for line, row in rows:
        if len(items) >= MAX_DATASET_ITEMS:
            raise InputError(name, f"has more than {MAX_DATASET_ITEMS:,} items")
        item = item_from(row, f"{name}: line {line}")
        if item.id in seen:
            raise InputError(f"{name}: line {line}: id", f"{item.id!r} is already the id of line {seen[item.id]}")
        seen[item.id] = line
        items.append(item)
    if not items:
        raise InputError(name, "holds no items")
    return items


def _jsonl_rows(text: str, name: str):
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = decode_json(line, f"{name}: line {n}")
        except json.JSONDecodeError as exc:
            raise InputError(f"{name}: line {n}", f"not valid JSON: column {exc.colno}: {exc.msg}") from None
        if not isinstance(row, dict):
            raise InputError(f"{name}: line {n}", "an item is a JSON object with id and question")
        yield n, row


def _csv_rows(text: str, name: str):
    reader = csv.DictReader(io.StringIO(text))
    header = _csv_read(reader, name, lambda: reader.fieldnames) or []
    unknown = [h for h in header if h not in KEYS]
    if unknown:
        raise InputError(f"{name}: line 1", f"unknown column {unknown[0]!r} (columns: {', '.join(KEYS)})")
    while (row := _csv_read(reader, name, lambda: next(reader, None))) is not None:
        if None in row:  # more cells than the header names
            raise InputError(f"{name}: line {reader.line_num}", "has more cells than the header")
        yield reader.line_num, {k: v for k, v in row.items() if v not in (None, "") or k in ("id", "question")}


def _csv_read(reader, name: str, read):
    """``read()`` of the CSV reader, its errors (a cell past the csv module's 131,072 characters, a
    NUL byte) named with their line instead of escaping as an internal error."""
    try:
        return read()
    except csv.Error as exc:
        raise InputError(f"{name}: line {reader.line_num + 1}", f"not valid CSV: {exc}") from None  # the line it stopped in


def item_from(row: dict, where: str = "", join: str = ": ") -> Item:
    """An item from its keys, checked; a problem is an :class:`InputError` naming the field after
    ``where`` (``items.jsonl: line 3: answer_type``; with ``join="."``, ``item.answer_type``)."""

    def at(name: str) -> str:
        return f"{where}{join}{name}" if where else name

    unknown = [k for k in row if k not in KEYS]
    if unknown:
        raise InputError(at(unknown[0]), f"unknown key (an item has {', '.join(KEYS)})")
    ident = row.get("id")
    if isinstance(ident, int) and not isinstance(ident, bool):
        ident = str(ident)
    if not isinstance(ident, str) or not ident.strip():
        raise InputError(at("id"), "required: a text or a whole number")
    if len(ident) > MAX_NAME_CHARS:
        raise InputError(at("id"), f"is too long ({len(ident):,} characters; at most {MAX_NAME_CHARS})")
    try:
        check_name(ident)
    except ValueError as exc:
        raise InputError(at("id"), str(exc)) from None
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise InputError(at("question"), "required: the question's text")
    if len(question) > MAX_QUERY_CHARS:
        raise InputError(at("question"), f"is too long ({len(question):,} characters; at most {MAX_QUERY_CHARS:,})")
    answer, kind = row.get("answer"), row.get("answer_type")
    if kind is not None and kind not in ANSWER_TYPES:
        raise InputError(at("answer_type"), f"must be one of {', '.join(ANSWER_TYPES)}, got {kind!r}")
    if answer is None:
        if kind is not None:
            raise InputError(at("answer"), f"required with answer_type {kind!r}")
        return Item(ident, question)
    if isinstance(answer, bool) or not isinstance(answer, (str, int, float)):
        raise InputError(at("answer"), "must be a text or a number")
    if kind is None:
        kind = "number" if isinstance(answer, (int, float)) else "exact"
    answer = answer if isinstance(answer, str) else json.dumps(answer)
    if len(answer) > MAX_ANSWER_CHARS:
        raise InputError(at("answer"), f"is too long ({len(answer):,} characters; at most {MAX_ANSWER_CHARS:,})")
    _check_answer(answer, kind, at("answer"))
    return Item(ident, question, answer, kind)


def _check_answer(answer: str, kind: str, field: str) -> None:
    if kind == "number" and last_number(answer) is None:
        raise InputError(field, f"must hold a number for answer_type number, got {answer!r}")
    if kind == "choice" and not re.fullmatch(r"\s*[A-Ja-j]\s*", answer):
        raise InputError(field, f"must be one letter A-J for answer_type choice, got {answer!r}")
    if kind == "regex":
        import regex

        try:
            compile_pattern(answer)  # as the scorer will search it
        except (regex.error, re.error) as exc:
            raise InputError(field, f"is not a valid regular expression: {exc}") from None


def find_item(items: list[Item], ident: str, dataset: str) -> Item:
    for item in items:
        if item.id == ident:
            return item
    raise InputError("item", f"no item {ident!r} in {dataset} ({len(items):,} items)")


# ----- the arithmetic preset (Du et al. 2023) ---------------------------------------------------
def arithmetic(n: int, seed: int) -> list[Item]:
    """``n`` items of ``What is the result of a+b*c+d-e*f?``, six integers uniform in 0..30 drawn
    from ``random.Random(seed)``; the answer computed exactly."""
    rng = random.Random(f"arithmetic/{seed}")
    items = []
    width = len(str(n))
    for i in range(n):
        a, b, c, d, e, f = (rng.randint(0, 30) for _ in range(6))
        items.append(Item(f"arith-{i + 1:0{width}d}", f"What is the result of {a}+{b}*{c}+{d}-{e}*{f}?",
                          str(a + b * c + d - e * f), "number"))
    return items


def to_jsonl(items: list[Item]) -> str:
    return "".join(json.dumps(item.to_json(), ensure_ascii=False) + "\n" for item in items)
