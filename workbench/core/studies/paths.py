"""Where two configurations differ, as JSON Pointers (RFC 6901): the paths an arm changes.

Objects are compared member by member, lists of the same length item by item; an item only one
list has is a path of its own (``/clusters/0/agents/3`` added), and a value whose type changed is
one path. ``~`` and ``/`` inside a key are written ``~0`` and ``~1``, as RFC 6901 has it.
"""

from __future__ import annotations

from collections.abc import Iterator

ANY = "*"  # a rule's pattern: any index of a list, any key of an object


def pointer(parts: tuple) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def split(path: str) -> tuple[str, ...]:
    """``/clusters/0/theta`` -> ``("clusters", "0", "theta")``; ``""`` is the whole document."""
    if not path:
        return ()
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:])


def changed_paths(before: object, after: object) -> list[str]:
    return [pointer(p) for p in _diff(before, after, ())]


def _diff(a: object, b: object, at: tuple) -> Iterator[tuple]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            if key not in b or key not in a:
                yield (*at, key)
            else:
                yield from _diff(a[key], b[key], (*at, key))
    elif isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            if i >= len(a) or i >= len(b):
                yield (*at, i)
            else:
                yield from _diff(a[i], b[i], (*at, i))
    elif a != b or type(a) is not type(b) and not (_number(a) and _number(b)):
        yield at


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def matches(path: str, pattern: str) -> bool:
    """``path`` is ``pattern`` or inside it, ``*`` in the pattern standing for any one part."""
    parts, wanted = split(path), split(pattern)
    return len(parts) >= len(wanted) and all(w == ANY or w == p for w, p in zip(wanted, parts))


def without(document: object, patterns: tuple[str, ...]) -> object:
    """``document`` with every member a pattern names taken out (a rule-only arm's comparison)."""
    def strip(value: object, at: tuple) -> object:
        if isinstance(value, dict):
            return {k: strip(v, (*at, k)) for k, v in value.items()
                    if not any(matches(pointer((*at, k)), p) and len(split(p)) == len(at) + 1 for p in patterns)}
        if isinstance(value, list):
            return [strip(v, (*at, i)) for i, v in enumerate(value)]
        return value

    return strip(document, ())
