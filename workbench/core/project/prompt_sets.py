"""Named prompt sets (SPEC §7): the templates a researcher edited, saved in the project under a
name, one row per version. A version is the hash of its templates (step names and texts), so
saving the same templates again adds nothing, and a run names the exact version it used."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

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
    text = json.dumps(dict(sorted(templates.items())), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def save(store: Store, name: str, protocol: str, templates: Mapping[str, str], note: str = "") -> tuple[PromptSet, Changes]:
    """Save ``templates`` as the newest version of the set ``name``. A version already saved is
    not stored twice: saved again (back to an earlier version), it becomes the newest, which the
    next run naming the set uses (its row moves to the end; runs name a version by its hash, so
    none loses it). The templates are checked by the caller (``declaration.check_overrides``)."""
    if not templates:
        raise InputError("prompt_set", "a prompt set holds at least one edited template")
    sha = version_of(templates)
    found = [r for r in _sql.rows(store, "prompt_sets", "name = ?", (name,)) if r["protocol"] != protocol]
    if found:
        raise InputError("prompt_set", f"the name {name!r} is taken by a {found[0]['protocol']} prompt set")
    newest = _sql.query(store, "SELECT id, sha256 FROM prompt_sets WHERE name = ? ORDER BY id DESC LIMIT 1", (name,))
    if newest and newest[0]["sha256"] == sha:
        return latest(store, name), Changes()
    existing = _sql.rows(store, "prompt_sets", "name = ? AND sha256 = ?", (name, sha))
    with _sql.write(store) as tx:
        if existing:
            tx.delete("prompt_sets", existing[0]["id"])
        tx.insert("prompt_sets", {"name": name, "protocol": protocol, "sha256": sha,
                                  "templates_json": dict(templates), "note": note,
                                  "created_at": existing[0]["created_at"] if existing else utc_now()})
    return latest(store, name), tx.changes


def latest(store: Store, name: str, protocol: str | None = None) -> PromptSet:
    """The newest version of the set ``name``; InputError naming ``prompt_set`` when there is none."""
    return pick(all_sets(store), name, protocol)


def pick(sets: Iterable[PromptSet], name: str, protocol: str | None = None) -> PromptSet:
    """The newest version of the set ``name`` among ``sets`` (newest first, as :func:`all_sets`
    gives them), for a run of ``protocol``; InputError naming ``prompt_set`` when there is none, or
    when it is another protocol's (the GUI checks a config with the words ``rwb run`` uses)."""
    sets = list(sets)
    found = next((s for s in sets if s.name == name), None)
    if found is None:
        names = sorted({s.name for s in sets})
        raise InputError("prompt_set", f"no prompt set named {name!r} in this project"
                                       f" (sets: {', '.join(names) if names else 'none saved'})")
    if protocol is not None and found.protocol != protocol:
        raise InputError("prompt_set", f"{name!r} is a prompt set of {found.protocol}, not of {protocol}")
    return found


def all_sets(store: Store) -> list[PromptSet]:
    """Every version of every set, newest first."""
    return [_from_row(_sql.decode(r)) for r in _sql.query(store, "SELECT * FROM prompt_sets ORDER BY id DESC")]


def runs_using(store: Store, name: str) -> list[dict]:
    """The runs made with a version of the set ``name``: id, label, status, version."""
    return _sql.query(store, "SELECT id, label, status, started_at, "
                             "json_extract(provenance_json, '$.prompt_set.sha256') AS sha256 FROM runs "
                             "WHERE json_extract(provenance_json, '$.prompt_set.name') = ? "
                             "ORDER BY started_at", (name,))


def _from_row(row: dict) -> PromptSet:
    templates = row["templates_json"]
    if isinstance(templates, str):
        templates = json.loads(templates)
    return PromptSet(row["name"], row["protocol"], row["sha256"], dict(templates), row.get("note") or "",
                     row["created_at"])


# A run's prompt set, from its provenance (a provenance another program left malformed names none).
_SET_NAME = "CASE WHEN json_valid(provenance_json) THEN json_extract(provenance_json, '$.prompt_set.name') END"
_SET_SHA = "CASE WHEN json_valid(provenance_json) THEN json_extract(provenance_json, '$.prompt_set.sha256') END"


@dataclass(frozen=True)
class SetUse:
    """One version of a prompt set, with the runs made with it (the protocol editor's list)."""

    prompt_set: PromptSet
    runs: tuple[dict, ...]  # id, label, status, started_at, protocol, simulated: oldest first


def with_runs(store: Store) -> list[SetUse]:
    """Every version of every set, newest first, each with every run that named it."""
    used: dict[tuple[str, str], list[dict]] = {}
    for r in _sql.query(store, f"SELECT * FROM (SELECT id, label, status, started_at, protocol, simulated, "
                               f"{_SET_NAME} AS set_name, {_SET_SHA} AS set_sha256 FROM runs) "
                               "WHERE set_name IS NOT NULL ORDER BY started_at, id"):
        used.setdefault((r.pop("set_name"), r.pop("set_sha256")), []).append(r)
    return [SetUse(s, tuple(used.get((s.name, s.sha256), ()))) for s in all_sets(store)]


# ----- which template made a call (Live Run, the Trace Inspector) -----------------------------------
DEFAULT, FROM_SET, FROM_CONFIG = "default", "prompt set", "config"


@dataclass(frozen=True)
class TemplateOrigin:
    """The template that made one call: its hash, the step it is the template of (as the run's
    provenance keys it: ``STEP``, or ``echo.STEP`` for a wrapper's step; None when the run's
    provenance does not name it), and where it came from: the step's default, the run's prompt
    set (``prompt_set``: name and version), or the config's own ``prompts``."""

    sha256: str
    step: str | None
    source: str | None  # DEFAULT, FROM_SET, FROM_CONFIG; None: not in the run's provenance
    prompt_set: dict | None = None  # {"name", "sha256"} of the run's set, when the template is the set's

    def text(self) -> str:
        """``vote @1a2b3c4d · prompt set strict @9f8e7d6c``: as a call's detail names it."""
        head = f"{self.step or 'template'} @{self.sha256[:8]}"
        if self.source == FROM_SET and self.prompt_set:
            return f"{head} · prompt set {self.prompt_set.get('name')} @{str(self.prompt_set.get('sha256', ''))[:8]}"
        if self.source == FROM_CONFIG:
            return f"{head} · edited in the config"
        if self.source == DEFAULT:
            return f"{head} · default"
        return f"{head} · not in the run's provenance"


@dataclass(frozen=True)
class RunTemplates:
    """A run's templates, as its provenance stored them, and the set version it named."""

    steps: dict[str, dict]  # key (STEP or echo.STEP) -> {"sha256", "default", "text"}
    prompt_set: dict | None  # {"name", "sha256"}, or None
    set_templates: dict[str, str]  # that version's templates (empty: no set, or one no longer in the project)
    calls: dict[int, str] = field(default_factory=dict)  # call id -> its template's hash (when asked for)

    def origin(self, sha256: str | None) -> TemplateOrigin | None:
        if not sha256:
            return None
        step = next((k for k, p in self.steps.items() if p.get("sha256") == sha256), None)
        if step is None:
            return TemplateOrigin(sha256, None, None)
        made = self.steps[step]
        if made.get("default"):
            return TemplateOrigin(sha256, step, DEFAULT)
        if self.prompt_set and self.set_templates.get(step) == made.get("text"):
            return TemplateOrigin(sha256, step, FROM_SET, dict(self.prompt_set))
        return TemplateOrigin(sha256, step, FROM_CONFIG)

    def call_origin(self, call_id: int) -> TemplateOrigin | None:
        return self.origin(self.calls.get(call_id))

    def set_text(self) -> str:
        """``prompt set strict @9f8e7d6c`` (or ""), for a run's heading."""
        if not self.prompt_set:
            return ""
        return f"prompt set {self.prompt_set.get('name')} @{str(self.prompt_set.get('sha256', ''))[:8]}"


def run_templates(store: Store, run_id: str, *, with_calls: bool = False) -> RunTemplates:
    """The templates ``run_id`` was made with (its provenance), the prompt set version it named,
    and, ``with_calls``, each of its calls' template hash (``llm_calls.template_sha256``)."""
    found = _sql.query(store, "SELECT provenance_json FROM runs WHERE id = ?", (run_id,))
    provenance = found[0]["provenance_json"] if found else None
    provenance = provenance if isinstance(provenance, dict) else {}
    steps = {k: p for k, p in (provenance.get("prompts") or {}).items() if isinstance(p, dict)} \
        if isinstance(provenance.get("prompts"), dict) else {}
    named = provenance.get("prompt_set") if isinstance(provenance.get("prompt_set"), dict) else None
    templates: dict[str, str] = {}
    if named:
        rows = _sql.query(store, "SELECT templates_json FROM prompt_sets WHERE name = ? AND sha256 = ?",
                          (named.get("name"), named.get("sha256")))
        if rows and isinstance(rows[0]["templates_json"], dict):
            templates = dict(rows[0]["templates_json"])
    calls = {}
    if with_calls:
        calls = dict(_sql.tuples(store, "SELECT id, template_sha256 FROM llm_calls WHERE run_id = ? "
                                        "AND template_sha256 IS NOT NULL", (run_id,)))
    return RunTemplates(steps, named, templates, calls)


def call_origin(store: Store, call_id: int) -> TemplateOrigin | None:
    """The template that made the call ``call_id`` (None: a call made before templates were
    hashed, or none recorded), as its run's provenance and prompt set name it."""
    found = _sql.tuples(store, "SELECT run_id, template_sha256 FROM llm_calls WHERE id = ?", (call_id,))
    if not found or not found[0][1]:
        return None
    return run_templates(store, found[0][0]).origin(found[0][1])


# ----- what the protocol editor's preview renders from ---------------------------------------------
@dataclass(frozen=True)
class PreviewSource:
    """A run of the project to render a preview from: its stored configuration (real agents,
    personas, query) and its stored replies by call key (real artifacts). ``run_id`` None: the
    project has no such run; ``config`` then is None too."""

    run_id: str | None
    label: str
    config: dict | None
    replies: dict[str, tuple[str | None, dict]]  # call key -> (reply text, reply meta)


def preview_source(store: Store, protocol: str) -> PreviewSource:
    """The newest run of ``protocol`` (or, for a wrapper such as Resonance Echo, the newest run
    that used it: its provenance names the protocol) that has answered calls."""
    from workbench.core.project.calls import completed_replies

    used = "CASE WHEN json_valid(provenance_json) THEN json_extract(provenance_json, '$.protocols.' || ?) END"
    rows = _sql.query(store, f"SELECT id, label, config_json FROM runs r WHERE (protocol = ? OR {used} IS NOT NULL) "
                             "AND EXISTS "
                             "(SELECT 1 FROM llm_calls c WHERE c.run_id = r.id AND c.status IN ('ok', 'invalid')) "
                             "ORDER BY started_at DESC, id DESC LIMIT 1", (protocol, protocol))
    if not rows or not isinstance(rows[0]["config_json"], dict):
        return PreviewSource(None, "", None, {})
    row = rows[0]
    replies = {r.step_key: (r.text, dict(r.meta)) for r in completed_replies(store, row["id"])}
    return PreviewSource(row["id"], row["label"] or row["id"], dict(row["config_json"]), replies)
