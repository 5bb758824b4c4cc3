"""The bundled demo project, built from ``sample_runs/demo_project.json``.

``make run`` opens it. It is rebuilt whenever the spec is newer than the built file, so the
demo always matches the repository; edit a copy (File > Save As) to keep changes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from workbench.core.runs.providers import ClusterConfig, ProviderConfig
from workbench.core.project.store import Store, utc_now
from workbench.core.project import _sql

REPO_ROOT = Path(__file__).resolve().parents[3]
DEMO_SPEC = REPO_ROOT / "sample_runs" / "demo_project.json"


def demo_path() -> Path:
    """Where the built demo lives: ``$RWB_DEMO_PATH``, else ``.demo/demo.rwb`` in the repo."""
    return Path(os.environ.get("RWB_DEMO_PATH") or REPO_ROOT / ".demo" / "demo.rwb")


def ensure_demo(dest: Path, spec: Path = DEMO_SPEC) -> Path:
    """Build the demo unless an up-to-date build already exists."""
    if dest.exists() and dest.stat().st_mtime >= spec.stat().st_mtime:
        return dest
    return build_demo(dest, spec)


def build_demo(dest: Path, spec: Path = DEMO_SPEC) -> Path:
    data = json.loads(spec.read_text(encoding="utf-8"))
    providers = [ProviderConfig.model_validate(p) for p in data["providers"]]
    clusters = [ClusterConfig.model_validate(c) for c in data["clusters"]]
    dest.parent.mkdir(parents=True, exist_ok=True)
    store = Store.create(dest, data["name"], overwrite=True)
    try:
        now = utc_now()
        with _sql.write(store) as tx:
            tx.update("project", 1, {"description": data.get("description", "")})
            for provider in providers:
                tx.insert("providers", provider.record())
            for position, cluster in enumerate(clusters):
                cluster_id = tx.insert("clusters", {
                    "name": cluster.name, "position": position, "theta": cluster.theta,
                    "weight": cluster.weight, "is_reference": int(cluster.reference),
                    "description": cluster.description,
                })
                for agent_position, agent in enumerate(cluster.agents):
                    tx.insert("agents", {
                        "id": agent.id, "cluster_id": cluster_id, "position": agent_position,
                        "provider": agent.provider, "role": agent.role, "persona": agent.persona,
                        "params_json": agent.params,
                    })
            for config in data.get("protocol_configs", []):
                tx.insert("protocol_configs", {
                    "name": config["name"], "protocol": config["protocol"],
                    "config_json": config["config"], "created_at": now, "updated_at": now,
                })
            for key, value in data.get("settings", {}).items():
                tx.upsert("settings", {"key": key, "value_json": value})
    finally:
        store.close_connection()
    return dest
