"""JSON Merge Patch (RFC 7396): an arm's ``set``, applied over the base configuration.

A patch object's members replace the target's, recursively; ``null`` removes a member; any value
that is not an object (a list, a number) replaces the target whole. The target is never changed:
the result is a new value sharing nothing with either.
"""

from __future__ import annotations

import copy


def merge_patch(target: object, patch: object) -> object:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = {k: copy.deepcopy(v) for k, v in target.items()} if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
