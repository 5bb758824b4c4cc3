"""An arm's changes as rows of form fields (a setting's path, its value) and as the arm's JSON,
each made from the other (the study design view keeps them in sync both ways).

- A path that does not pass through a list goes into the arm's ``set`` (a JSON Merge Patch):
  ``/theta`` -> ``{"theta": 0.67}``. A merge patch replaces a list whole, so a path through one
  (``/clusters/1/agents/0/params/strictness``) becomes a JSON Patch op in ``patch``: ``replace``
  when the base has the setting, ``add`` when it does not.
- Read back, every leaf of ``set`` and every ``replace``/``add`` op is a row; other ops (``remove``,
  ``move``, an append at ``-``) are kept as they are and shown in the JSON only.
- A value is typed as the base's value at that path is: a number stays a number, ``true``/``false``
  a boolean, a string the text as typed; where the base has no value (or an object), JSON, else text.
"""

from __future__ import annotations

import json
from typing import Any

from workbench.core.studies.paths import pointer, split

ROW_OPS = ("replace", "add")
MISSING = object()


def leaf_paths(document: object, at: tuple = ()) -> list[str]:
    """Every setting of ``document`` a change can name, as JSON Pointers (the design's picker)."""
    if isinstance(document, dict) and document:
        return [p for key, value in document.items() for p in leaf_paths(value, (*at, key))]
    if isinstance(document, list) and document:
        return [p for i, value in enumerate(document) for p in leaf_paths(value, (*at, i))]
    return [pointer(at)] if at else []


def value_at(document: object, path: str) -> object:
    for part in split(path):
        try:
            document = document[int(part)] if isinstance(document, list) else document[part]
        except (KeyError, IndexError, ValueError, TypeError):
            return MISSING
    return document


def through_list(document: object, path: str) -> bool:
    """Whether ``path`` passes through a list of ``document`` (then only a JSON Patch reaches it)."""
    for part in split(path)[:-1]:
        if isinstance(document, list):
            return True
        if not isinstance(document, dict) or part not in document:
            return False
        document = document[part]
    return isinstance(document, list)


def rows_of(arm: dict) -> tuple[list[tuple[str, Any]], list]:
    """The arm's changes as (path, value) rows, and the patch ops no row shows (kept whole)."""
    rows: list[tuple[str, Any]] = []

    def flatten(value: object, at: tuple) -> None:
        if isinstance(value, dict) and value:
            for key, inner in value.items():
                flatten(inner, (*at, key))
        else:
            rows.append((pointer(at), value))

    if isinstance(arm.get("set"), dict):
        flatten(arm["set"], ())
    kept = []
    for op in arm.get("patch") or []:
        if (isinstance(op, dict) and op.get("op") in ROW_OPS and "value" in op and isinstance(op.get("path"), str)
                and not op["path"].endswith("/-")):
            rows.append((op["path"], op["value"]))
        else:
            kept.append(op)
    return rows, kept


def arm_with_rows(arm: dict, rows: list[tuple[str, Any]], kept: list, base: dict) -> dict:
    """``arm`` with its ``set`` and ``patch`` made from ``rows`` (and the ops ``kept``)."""
    merge: dict = {}
    ops: list = []
    for path, value in rows:
        if not path:
            continue
        if through_list(base, path):
            ops.append({"op": "add" if value_at(base, path) is MISSING else "replace", "path": path, "value": value})
            continue
        node = merge
        parts = split(path)
        for part in parts[:-1]:
            node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else node
        node[parts[-1]] = value
    out = {k: v for k, v in arm.items() if k not in ("set", "patch")}
    if merge:
        out["set"] = merge
    if ops or kept:
        out["patch"] = [*ops, *kept]
    return _ordered(out)


def summary(arm: dict) -> str:
    """The paths an arm writes, for its row in the arms' table (an op kept whole by its op and path)."""
    rows, kept = rows_of(arm)
    written = [p for p, _v in rows] + [f"{op.get('op')} {op.get('path')}" if isinstance(op, dict) else "?"
                                        for op in kept]
    return ", ".join(written) or "(the base)"


def _ordered(arm: dict) -> dict:
    order = ("name", "set", "patch", "tags", "notes")
    return {**{k: arm[k] for k in order if k in arm}, **{k: v for k, v in arm.items() if k not in order}}


def shown(value: object) -> str:
    """A value in its form field: text as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def parsed(text: str, base: dict, path: str) -> Any:
    """The value typed in a row's field, of the type the base's setting has (ValueError: it is not)."""
    before = value_at(base, path)
    text = text.strip()
    if isinstance(before, bool):
        if text.lower() not in ("true", "false"):
            raise ValueError(f"{path}: true or false expected, got {text!r}")
        return text.lower() == "true"
    if isinstance(before, (int, float)):
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"{path}: a number expected, got {text!r}") from None
        return int(number) if isinstance(before, int) and number.is_integer() and "." not in text else number
    if isinstance(before, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text
