"""Run configurations as the Live Run panel edits them: the saved ones (``protocol_configs``),
completed with the project's panel, a new one made from the project's clusters, saving one, and
which batch each run belongs to.

A document here is the SPEC §6 dict ``rwb run`` reads (a batch too: with its ``batch`` section),
not yet validated: the editor validates it through ``core.runs.config`` as the user types.

tau, the default theta and weighting live in one place, the project's settings (Clusters & Agents;
``panel_edits.panel_settings``): every RCP document made here takes them (``panel.with_project_settings``),
a saved configuration keeps none of its own, and a file opened in Live Run keeps its own values
(docs/runs.md, "tau, theta and weighting: one place").
"""

from __future__ import annotations

from collections.abc import Iterable

from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project.changes import Changes
from workbench.core.project.panel import panel_document, with_project_settings
from workbench.core.project.panel_edits import project_keys
from workbench.core.project.store import Store, utc_now


def _check_protocol(protocol: object) -> str:
    """A protocol a run configuration may name: any registered runnable one (a plugin's too)."""
    from workbench.core import registry

    runnable = registry.runnable()
    if not isinstance(protocol, str) or protocol not in runnable:
        raise InputError("protocol", f"must be one of {', '.join(runnable)}, got {protocol!r}")
    return protocol


def _run_shape(panel: dict) -> dict:
    """The project's panel with each provider's key named the way a run configuration names it."""
    providers = {}
    for name, provider in panel.get("providers", {}).items():
        provider = dict(provider)
        if "key_env" in provider:
            provider["api_key_env"] = provider.pop("key_env")
        providers[name] = provider
    clusters = [{**c, "agents": [{k: v for k, v in a.items() if v not in (None, {}, "") or k in ("id", "provider")}
                                 for a in c["agents"]]} for c in panel.get("clusters", [])]
    return {**panel, "providers": providers, "clusters": clusters}


def saved_config_document(store: Store, config_id: int) -> dict:
    """A saved configuration as the run it starts: the project's panel, then the saved keys
    (a saved configuration that carries its own providers and clusters keeps them), then the
    project's tau, theta and weighting."""
    saved = _sql.get(store, "protocol_configs", config_id)
    if saved is None:
        raise InputError("protocol_config", f"no saved configuration {config_id}")
    document = {"protocol": saved["protocol"], "label": saved["name"],
                **_run_shape(panel_document(store)), **(saved["config_json"] or {})}
    document["protocol"] = saved["protocol"]
    return with_project_settings(store, document)


def panel_config(store: Store, protocol: str = "rcp", **keys) -> dict:
    """A new run configuration over the project's current providers, clusters and settings."""
    _check_protocol(protocol)
    return with_project_settings(store, {"protocol": protocol, **keys, **_run_shape(panel_document(store))})


def save_config(store: Store, name: str, document: dict) -> tuple[int, Changes]:
    """Save ``document`` in the project under ``name`` (replacing a configuration of that name).
    The whole document is kept, its panel included, so it runs as it was saved."""
    name = name.strip()
    if not name:
        raise InputError("name", "a saved configuration needs a name")
    protocol = _check_protocol(document.get("protocol"))
    # The project's tau, theta and weighting are the project's: a saved configuration keeps none.
    own = project_keys(protocol)
    body = {k: v for k, v in document.items() if k != "protocol" and k not in own}
    now = utc_now()
    with _sql.write(store) as tx:
        found = tx.query("SELECT id FROM protocol_configs WHERE name = ?", (name,))
        if found:
            config_id = found[0]["id"]
            tx.update("protocol_configs", config_id, {"protocol": protocol, "config_json": body, "updated_at": now})
        else:
            config_id = tx.insert("protocol_configs", {"name": name, "protocol": protocol, "config_json": body,
                                                       "created_at": now, "updated_at": now})
    return int(config_id), tx.changes


def batch_ids(store: Store, run_ids: Iterable[str]) -> dict[str, str]:
    """Run id -> the batch it belongs to, for those of ``run_ids`` that are in a batch."""
    ids = list(dict.fromkeys(run_ids))
    out: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        sql = f"SELECT id, batch_id FROM runs WHERE batch_id IS NOT NULL AND id IN ({', '.join('?' * len(chunk))})"
        out.update(dict(_sql.tuples(store, sql, chunk)))
    return out
