"""Named prompt sets (SPEC §7): the templates a researcher edited, saved in the project under a
name, one row per version. A version is the hash of its templates (step names and texts), so
saving the same templates again adds nothing, and a run names the exact version it used."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project.changes import Changes
from workbench.core.project.store import Store, utc_now


@dataclass(frozen=True)
class PromptSet:
    name: str
    protocol: str
    sha256: str  # the version: over the steps' names and templates
    templates: dict[str, str]  # step -> template text
    note: str
    created_at: str

    def short(self) -> str:
        return f"{self.name} @{self.sha256[:8]}"


def version_of(templates: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(dict(sorted(templates.items())), ensure_ascii=False).encode("utf-8")).hexdigest()


def save(store: Store, name: str, protocol: str, templates: Mapping[str, str], note: str = "") -> tuple[PromptSet, Changes]:
    """Save ``templates`` as the newest version of the set ``name`` (a version already saved is
    not saved again). The templates are checked by the caller (``declaration.check_overrides``)."""
    if not templates:
        raise InputError("prompt_set", "a prompt set holds at least one edited template")
    sha = version_of(templates)
    found = [r for r in _sql.rows(store, "prompt_sets", "name = ?", (name,)) if r["protocol"] != protocol]
    if found:
        raise InputError("prompt_set", f"the name {name!r} is taken by a {found[0]['protocol']} prompt set")
    existing = _sql.rows(store, "prompt_sets", "name = ? AND sha256 = ?", (name, sha))
    if existing:
        return _from_row(existing[0]), Changes()
    with _sql.write(store) as tx:
        tx.insert("prompt_sets", {"name": name, "protocol": protocol, "sha256": sha,
                                  "templates_json": dict(templates), "note": note, "created_at": utc_now()})
    return latest(store, name), tx.changes


def latest(store: Store, name: str, protocol: str | None = None) -> PromptSet:
    """The newest version of the set ``name``; InputError naming ``prompt_set`` when there is none."""
    rows = _sql.query(store, "SELECT * FROM prompt_sets WHERE name = ? ORDER BY id DESC LIMIT 1", (name,))
    if not rows:
        names = sorted({r["name"] for r in _sql.query(store, "SELECT DISTINCT name FROM prompt_sets")})
        raise InputError("prompt_set", f"no prompt set named {name!r} in this project"
                                       f" (sets: {', '.join(names) if names else 'none saved'})")
    found = _from_row(_sql.decode(rows[0]))
    if protocol is not None and found.protocol != protocol:
        raise InputError("prompt_set", f"{name!r} is a prompt set of {found.protocol}, not of {protocol}")
    return found


def all_sets(store: Store) -> list[PromptSet]:
    """Every version of every set, newest first."""
    return [_from_row(_sql.decode(r)) for r in _sql.query(store, "SELECT * FROM prompt_sets ORDER BY id DESC")]


def runs_using(store: Store, name: str) -> list[dict]:
    """The runs made with a version of the set ``name``: id, label, status, version."""
    return _sql.query(store, "SELECT id, label, status, started_at, json_extract(provenance_json, '$.prompt_set.sha256') "
                             "AS sha256 FROM runs WHERE json_extract(provenance_json, '$.prompt_set.name') = ? "
                             "ORDER BY started_at", (name,))


def _from_row(row: dict) -> PromptSet:
    templates = row["templates_json"]
    if isinstance(templates, str):
        templates = json.loads(templates)
    return PromptSet(row["name"], row["protocol"], row["sha256"], dict(templates), row.get("note") or "",
                     row["created_at"])
