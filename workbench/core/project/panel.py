"""Run configurations from what a project holds: its providers, its panel, a saved protocol config.

The GUI starts runs this way; the result is the same SPEC §6 document ``rwb run`` reads, so a run
started in the GUI can be repeated headless from its ``runs.config_json``.
"""

from __future__ import annotations

from workbench.core.errors import InputError
from workbench.core.runs.config import RunConfig, parse_run_config
from workbench.core.project.store import Store

# Keys of a provider row that belong in a run configuration's provider entry.
_PROVIDER_KEYS = ("model", "api_base", "key_env", "key_keyring", "max_concurrency", "rpm", "timeout_s", "max_retries")


def panel_document(store: Store) -> dict:
    """The project's providers and clusters, in the run-configuration shape."""
    providers = {p["name"]: {k: p[k] for k in _PROVIDER_KEYS if p[k] is not None} for p in store.rows("providers")}
    clusters = []
    for c in store.rows("clusters", order_by="position, id"):
        agents = [{"id": a["id"], "provider": a["provider"], "persona": a["persona"], "role": a["role"],
                   "params": a["params_json"] or {}}
                  for a in store.rows("agents", "cluster_id = ?", (c["id"],), order_by="position, id")]
        if agents:
            clusters.append({"name": c["name"], "agents": agents,
                             **({"theta": c["theta"]} if c["theta"] is not None else {}),
                             **({"weight": c["weight"]} if c["weight"] != 1.0 else {})})
    reference = next((c["name"] for c in store.rows("clusters", "is_reference = 1")), None)
    return {"providers": providers, "clusters": clusters, **({"reference": reference} if reference else {})}


def run_config_from_project(store: Store, config_id: int, **overrides) -> RunConfig:
    """A saved protocol configuration, completed with the project's panel."""
    saved = store.get("protocol_configs", config_id)
    if saved is None:
        raise InputError("protocol_config", f"no saved configuration {config_id}")
    document = {**panel_document(store), "protocol": saved["protocol"], "label": saved["name"],
                **saved["config_json"], **overrides}
    for provider in document["providers"].values():  # the run config names the key's variable this way
        if "key_env" in provider:
            provider["api_key_env"] = provider.pop("key_env")
    return parse_run_config(document)


def findings_from_run(store: Store, run_id: str, tiers: list[str] | None = None) -> list[dict]:
    """Findings made from another run's artifacts (for an RCP run, optionally only some tiers)."""
    source = store.get("runs", run_id)
    if source is None:
        raise InputError("findings_from_run", f"no run {run_id!r} in this project")
    tier_of = {s["artifact"]: s["tier"] for rnd in (source["summary_json"] or {}).get("rounds", [])
               for s in rnd.get("states", [])}
    findings = []
    for a in store.rows("artifacts", "run_id = ?", (run_id,), order_by="id"):
        if tiers and tier_of.get(a["key"]) not in tiers:
            continue
        findings.append({"id": f"{run_id}:{a['key']}", "claim": a["content"],
                         "context": {"run": run_id, "artifact": a["key"], "author": a["author_agent"],
                                     "tier": tier_of.get(a["key"])}})
    if not findings:
        raise InputError("findings_from_run", f"run {run_id} has no artifacts{' in those tiers' if tiers else ''}")
    return findings
