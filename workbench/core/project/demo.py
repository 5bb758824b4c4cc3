"""The bundled demo project, built from ``sample_runs/demo_project.json``.

``make run`` opens it. It is rebuilt whenever the spec is newer than the built file, so the
demo always matches the shipped spec; edit a copy (File > Save As) to keep changes.

The demo is built under a temporary name beside its destination and moved into place once
complete, so an interrupted build never leaves half a demo under the real name. An existing
file is replaced only when the caller says so (``rwb demo --out FILE --force``); the default
demo path is the workbench's own and is rebuilt, but only over a workbench project.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.core import paths
from workbench.core.project import _sql
from workbench.core.project.files import ProjectError, check_destination, publish, read_header, temporary_beside
from workbench.core.project.schema import APPLICATION_ID
from workbench.core.project.store import Store, utc_now

if TYPE_CHECKING:  # the models come with a build, not with the window's first open of the demo
    from workbench.core.runs.providers import ClusterConfig, ProviderConfig

# Kept for services/runs/demo_runs.py until it asks core.paths.samples_dir(): the repository's
# root in a checkout, but not a place to look for shipped files in an installed package.
REPO_ROOT = paths.REPO_ROOT
DEMO_SPEC = paths.samples_dir() / "demo_project.json"


def demo_path() -> Path:
    """Where the built demo lives: ``$RWB_DEMO_PATH``, else ``demo.rwb`` in the application's
    data folder (``core.paths.app_data_dir()``, where the GUI looks too)."""
    override = os.environ.get("RWB_DEMO_PATH")
    return Path(override).expanduser() if override else paths.app_data_dir() / "demo.rwb"


# What fills the demo with runs once its panel is in (the services' sample runs); core cannot run.
Populate = Callable[[Store], None]


def ensure_demo(dest: Path, spec: Path = DEMO_SPEC, populate: Populate | None = None) -> Path:
    """Build the demo unless an up-to-date build already exists."""
    if dest.exists() and dest.stat().st_mtime >= spec.stat().st_mtime:
        return dest
    return build_default_demo(dest, spec, populate)


def build_default_demo(dest: Path, spec: Path = DEMO_SPEC, populate: Populate | None = None) -> Path:
    """(Re)build the demo at the workbench's own demo path: its folder is made if missing, and an
    earlier build is replaced, but a file there that is not a workbench project never is."""
    if os.path.lexists(dest):
        try:
            ours = read_header(dest, check_size=False).application_id == APPLICATION_ID
        except ProjectError:
            ours = False
        if not ours:
            raise ProjectError("exists", dest, f"{dest} is not a workbench project, so the demo does not "
                                               "replace it; give another path with --out.")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ProjectError("io", dest, f"{dest.parent} cannot be made: {exc.strerror or exc}.") from None
    return build_demo(dest, spec, overwrite=True, populate=populate)


def build_demo(dest: Path, spec: Path = DEMO_SPEC, *, overwrite: bool = False,
               populate: Populate | None = None) -> Path:
    """Build the demo into ``dest``; an existing ``dest`` is replaced only with ``overwrite``.
    ``populate(store)`` runs on the finished panel before the file is published."""
    from workbench.core.runs.providers import ClusterConfig, ProviderConfig

    data = json.loads(spec.read_text(encoding="utf-8"))
    providers = [ProviderConfig.model_validate(p) for p in data["providers"]]
    clusters = [ClusterConfig.model_validate(c) for c in data["clusters"]]
    dest = Path(dest).absolute()
    check_destination(dest, overwrite=overwrite)
    tmp = temporary_beside(dest, "building")
    try:
        try:
            store = Store.create(tmp, data["name"])
        except ProjectError as exc:  # named after the destination, not the temporary file
            raise ProjectError(exc.kind, dest, str(exc).replace(tmp.name, str(dest), 1)) from None
        _fill(store, data, providers, clusters)
        if populate is not None:
            store = Store.open(tmp)
            try:
                populate(store)
            finally:
                store.close_connection()
        publish(tmp, dest, overwrite=overwrite)
    except OSError as exc:
        raise ProjectError("io", dest, f"{dest} cannot be written: {exc.strerror or exc}.") from None
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def _fill(store: Store, data: dict, providers: list[ProviderConfig], clusters: list[ClusterConfig]) -> None:
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
