"""The project's panel (providers, clusters, agents, saved protocol configurations), and the run
configurations made from it.

The GUI starts runs this way; the result is the same SPEC §6 document ``rwb run`` reads, so a run
started in the GUI can be repeated headless from its ``runs.config_json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project.changes import Changes
from workbench.core.project.store import Store

if TYPE_CHECKING:  # the run-config models are heavy (pydantic): imported when a run is built
    from workbench.core.runs.config import RunConfig

# Keys of a provider row that belong in a run configuration's provider entry.
_PROVIDER_KEYS = ("model", "api_base", "key_env", "key_keyring", "max_concurrency", "rpm", "timeout_s", "max_retries")


def panel_document(store: Store) -> dict:
    """The project's providers and clusters, in the run-configuration shape."""
    return document_from_rows(_sql.rows(store, "providers"), _sql.rows(store, "clusters", order_by="position, id"),
                              _sql.rows(store, "agents", order_by="position, id"))


def document_from_rows(providers: list[dict], clusters: list[dict], agents: list[dict]) -> dict:
    """:func:`panel_document` from rows already read (``providers``, ``clusters`` and ``agents``
    rows; clusters in panel order). Pure: the Clusters & Agents panel checks the panel it shows,
    with the values being typed, through the same document. A cluster with no agents is left
    out (a run has none); a key's variable is named ``api_key_env``, the one spelling a run
    configuration takes (SPEC §6)."""
    docs = {p["name"]: {**{("api_key_env" if k == "key_env" else k): p[k] for k in _PROVIDER_KEYS if p.get(k) is not None},
                        **(p.get("options_json") or {})}  # sampling, structured_output, reask
            for p in providers}
    members: dict[object, list[dict]] = {}
    for a in sorted(agents, key=lambda a: (a.get("position") or 0, str(a["id"]))):
        members.setdefault(a["cluster_id"], []).append(
            {"id": a["id"], "provider": a["provider"], "persona": a["persona"], "role": a["role"],
             "params": {k: v for k, v in (a["params_json"] or {}).items() if k != "sampling"},
             **({"sampling": a["params_json"]["sampling"]} if (a["params_json"] or {}).get("sampling") else {})})
    out = []
    for c in clusters:
        if members.get(c["id"]):
            out.append({"name": c["name"], "agents": members[c["id"]],
                        **({"theta": c["theta"]} if c["theta"] is not None else {}),
                        **({"weight": c["weight"]} if c["weight"] != 1.0 else {})})
    reference = next((c["name"] for c in clusters if c["is_reference"]), None)
    return {"providers": docs, "clusters": out, **({"reference": reference} if reference else {})}


def with_project_settings(store: Store, document: dict) -> dict:
    """``document`` with the project's tau, theta and weighting, when its protocol's configuration
    takes them (RCP's): they are the project's, set in one place (Clusters & Agents; docs/runs.md
    "tau, theta and weighting: one place"). Another protocol has no such keys."""
    from workbench.core.project.panel_edits import panel_settings, project_keys

    own = project_keys(document.get("protocol"))
    if not own:
        return document
    return {**document, **{key: value for key, value in panel_settings(store).items() if key in own}}


def run_config_from_project(store: Store, config_id: int, **overrides) -> RunConfig:
    """A saved protocol configuration, completed with the project's panel."""
    from workbench.core.runs.config import parse_run_config

    saved = _sql.get(store, "protocol_configs", config_id)
    if saved is None:
        raise InputError("protocol_config", f"no saved configuration {config_id}")
    document = with_project_settings(store, {**panel_document(store), "protocol": saved["protocol"],
                                             "label": saved["name"], **saved["config_json"]})
    return parse_run_config({**document, **overrides})


def findings_from_run(store: Store, run_id: str, tiers: list[str] | None = None) -> list[dict]:
    """Findings made from another run's artifacts (for an RCP run, optionally only some tiers)."""
    source = _sql.get(store, "runs", run_id)
    if source is None:
        raise InputError("findings_from_run", f"no run {run_id!r} in this project")
    tier_of = {s["artifact"]: s["tier"] for rnd in (source["summary_json"] or {}).get("rounds", [])
               for s in rnd.get("states", [])}
    findings = []
    for a in _sql.rows(store, "artifacts", "run_id = ?", (run_id,), order_by="id"):
        if tiers and tier_of.get(a["key"]) not in tiers:
            continue
        findings.append({"id": f"{run_id}:{a['key']}", "claim": a["content"],
                         "context": {"run": run_id, "artifact": a["key"], "author": a["author_agent"],
                                     "tier": tier_of.get(a["key"])}})
    if not findings:
        raise InputError("findings_from_run", f"run {run_id} has no artifacts{' in those tiers' if tiers else ''}")
    return findings


# ----- the panel as the Clusters & Agents panel shows it --------------------------------------------
@dataclass(frozen=True)
class PanelRows:
    """The project's clusters, agents (``agents`` rows) and providers (by name), as stored."""

    clusters: list[dict]
    agents: list[dict]
    providers: dict[str, dict]


def panel_rows(store: Store) -> PanelRows:
    return PanelRows(clusters=_sql.rows(store, "clusters", order_by="position, id"),
                     agents=_sql.rows(store, "agents", order_by="cluster_id, position, id"),
                     providers={p["name"]: p for p in _sql.rows(store, "providers", order_by="name")})


def providers(store: Store) -> list[dict]:
    """Every provider row (it names where a key lives, never the key), by name."""
    return _sql.rows(store, "providers", order_by="name")


def set_agent_params(store: Store, agent_id: str, params: dict) -> Changes:
    """Store an agent's simulated-persona parameters."""
    return _sql.update(store, "agents", agent_id, {"params_json": params})


@dataclass(frozen=True)
class SavedConfig:
    id: int
    name: str
    protocol: str


def saved_configs(store: Store) -> list[SavedConfig]:
    """The protocol configurations saved in the project, by name."""
    return [SavedConfig(r["id"], r["name"], r["protocol"])
            for r in _sql.rows(store, "protocol_configs", order_by="name, id")]
