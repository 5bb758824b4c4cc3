"""Every edit of the project's panel: providers, clusters, agents, and the panel's RCP settings.

The Clusters & Agents panel, scripts and tests make every change to the ``providers``,
``clusters`` and ``agents`` tables through these functions. Each is one short transaction that
returns the :class:`Changes` it made, and checks its input first: a bad value raises an
:class:`InputError` naming the field (``name``, ``theta``, ``weight``, ``tau``, ``id``,
``provider``, ``params.stance``...) and writes nothing. Ranges are the run configuration's
(SPEC §1): theta in (0, 1], tau in (0.5, 1], a weight positive and finite.

Edits are undoable: each has an inverse made of these functions (rename back, move by the
opposite step, restore from a snapshot taken before a delete: :func:`cluster_snapshot`,
:func:`agent_snapshot`, :func:`provider_snapshot`, :func:`panel_snapshot`).

Whatever made the project (the GUI, ``rwb run``, the MCP server), its panel is these three
tables; :func:`import_panel_from_run` copies the panel a run was configured with (its stored
``config_json``) into them, and :func:`apply_run_config` does the same with any run
configuration, such as a template (:mod:`workbench.core.runs.templates`).

The project's tau, default theta and weighting for RCP runs are settings: :data:`TAU_SETTING`
(``rcp.tau``), :data:`THETA_SETTING` (``rcp.theta``, the theta of every cluster that sets none) and
:data:`WEIGHTED_SETTING` (``rcp.weighted``); :func:`panel_settings` reads them. They live here only:
every RCP run configuration made in the project takes them (``core.project.run_configs``,
docs/runs.md "tau, theta and weighting: one place").
"""

from __future__ import annotations

import json
import math
from typing import Any

from workbench.core.errors import InputError
from workbench.core.limits import MAX_NAME_CHARS, MAX_NOTES_CHARS, MAX_PERSONA_CHARS, check_name, too_long
from workbench.core.project import _sql
from workbench.core.project.changes import Changes
from workbench.core.project.store import Store, utc_now

TAU_SETTING = "rcp.tau"
THETA_SETTING = "rcp.theta"
WEIGHTED_SETTING = "rcp.weighted"
_PANEL_SETTINGS = (TAU_SETTING, THETA_SETTING, WEIGHTED_SETTING)
PROJECT_KEYS = ("tau", "theta", "weighted")  # a run configuration's keys the project's settings set
_SETTING_OF = {"tau": TAU_SETTING, "theta": THETA_SETTING, "weighted": WEIGHTED_SETTING}
PROVIDER_COLUMNS = ("name", "model", "api_base", "key_env", "key_keyring", "max_concurrency", "rpm", "timeout_s",
                     "max_retries")


# ----- checks ----------------------------------------------------------------------------------
def _name(value: object, field: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(field, f"a {what} needs a name")
    value = value.strip()
    if len(value) > MAX_NAME_CHARS:
        raise InputError(field, too_long(len(value), MAX_NAME_CHARS))
    return _no_controls(value, field)


def _no_controls(value: str, field: str) -> str:
    """SPEC §11: a name typed in the window carries no control character either."""
    try:
        return check_name(value)
    except ValueError as exc:
        raise InputError(field, str(exc)) from None


def _number(value: object, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(field, f"must be a number, got {value!r}")
    return float(value)


def check_theta(value: object, field: str = "theta") -> float:
    """theta in (0, 1] (SPEC §1)."""
    number = _number(value, field)
    if not 0.0 < number <= 1.0:
        raise InputError(field, f"must be greater than 0 and at most 1, got {value!r}")
    return number


def check_tau(value: object, field: str = "tau") -> float:
    """tau in (0.5, 1] (SPEC §1)."""
    number = _number(value, field)
    if not 0.5 < number <= 1.0:
        raise InputError(field, f"must be greater than 0.5 and at most 1, got {value!r}")
    return number


def check_weight(value: object, field: str = "weight") -> float:
    number = _number(value, field)
    if number <= 0.0:
        raise InputError(field, f"must be a positive finite number, got {value!r}")
    return number


def _cluster(store: Store, cluster_id: object) -> dict:
    row = _sql.get(store, "clusters", cluster_id)
    if row is None:
        raise InputError("cluster", f"no cluster {cluster_id!r} in this project")
    return row


def _agent(store: Store, agent_id: object) -> dict:
    row = _sql.get(store, "agents", agent_id) if isinstance(agent_id, str) else None
    if row is None:
        raise InputError("agent", f"no agent {agent_id!r} in this project")
    return row


def _free_cluster_name(store: Store, name: str, field: str = "name", *, but: object = None) -> None:
    for row in _sql.rows(store, "clusters", "name = ?", (name,)):
        if row["id"] != but:
            raise InputError(field, f"a cluster named {name!r} already exists")


def _free_agent_id(store: Store, agent_id: str, field: str = "id") -> None:
    if _sql.get(store, "agents", agent_id) is not None:
        raise InputError(field, f"an agent {agent_id!r} already exists")


def _provider_exists(store: Store, provider: object, field: str = "provider") -> str | None:
    if provider is None:
        return None
    if not isinstance(provider, str) or _sql.get(store, "providers", provider) is None:
        raise InputError(field, f"no provider named {provider!r} in this project")
    return provider


# ----- the panel's RCP settings ------------------------------------------------------------------
def project_keys(protocol: object) -> tuple[str, ...]:
    """The project's settings (:data:`PROJECT_KEYS`) a protocol's run configuration takes: those
    its declared config has as fields (RCP's tau, theta and weighting); none for another, and
    none for a protocol not registered. The declaration says it, never the protocol's name."""
    from workbench.core.runs.config import model_for

    if not isinstance(protocol, str):
        return ()
    try:
        fields = model_for(protocol).model_fields
    except KeyError:
        return ()
    return tuple(k for k in PROJECT_KEYS if k in fields)


def panel_settings(store: Store) -> dict:
    """``{"tau": ..., "theta": ..., "weighted": ...}``: the project's settings for RCP runs (as
    stored; the defaults of RCP's own config when unset)."""
    from workbench.core.project.meta import setting
    from workbench.core.protocols.rcp.config import DEFAULT_TAU, DEFAULT_THETA

    return {"tau": setting(store, TAU_SETTING, DEFAULT_TAU), "theta": setting(store, THETA_SETTING, DEFAULT_THETA),
            "weighted": setting(store, WEIGHTED_SETTING, False)}


def set_theta(store: Store, theta: object) -> Changes:
    """The project's theta: every cluster that sets none of its own uses it."""
    from workbench.core.project.meta import set_setting

    return set_setting(store, THETA_SETTING, check_theta(theta))


def set_tau(store: Store, tau: object) -> Changes:
    from workbench.core.project.meta import set_setting

    return set_setting(store, TAU_SETTING, check_tau(tau))


def set_weighted(store: Store, weighted: object) -> Changes:
    from workbench.core.project.meta import set_setting

    if not isinstance(weighted, bool):
        raise InputError("weighted", f"must be true or false, got {weighted!r}")
    return set_setting(store, WEIGHTED_SETTING, weighted)


# ----- clusters ----------------------------------------------------------------------------------
def create_cluster(store: Store, name: object, *, theta: object = None, weight: object = 1.0,
                   description: str = "", position: int | None = None) -> Changes:
    """A new cluster, last unless ``position`` is given. Its id is ``changes.keys_of("clusters")[0]``."""
    name = _name(name, "name", "cluster")
    theta = None if theta is None else check_theta(theta)
    weight = check_weight(weight)
    if not isinstance(description, str) or len(description) > MAX_NOTES_CHARS:
        raise InputError("description", "must be text of at most %d characters" % MAX_NOTES_CHARS)
    with _sql.write(store) as tx:
        _free_cluster_name(store, name)
        if position is None:
            found = tx.query("SELECT coalesce(max(position) + 1, 0) AS p FROM clusters")
            position = found[0]["p"]
        tx.insert("clusters", {"name": name, "position": position, "theta": theta, "weight": weight,
                               "is_reference": 0, "description": description})
    return tx.changes


def rename_cluster(store: Store, cluster_id: object, name: object) -> Changes:
    name = _name(name, "name", "cluster")
    with _sql.write(store) as tx:
        _cluster(store, cluster_id)
        _free_cluster_name(store, name, but=cluster_id)
        tx.update("clusters", cluster_id, {"name": name})
    return tx.changes


def set_cluster_theta(store: Store, cluster_id: object, theta: object) -> Changes:
    """``theta`` None: the cluster follows the run's global theta."""
    theta = None if theta is None else check_theta(theta)
    with _sql.write(store) as tx:
        _cluster(store, cluster_id)
        tx.update("clusters", cluster_id, {"theta": theta})
    return tx.changes


def set_cluster_weight(store: Store, cluster_id: object, weight: object) -> Changes:
    weight = check_weight(weight)
    with _sql.write(store) as tx:
        _cluster(store, cluster_id)
        tx.update("clusters", cluster_id, {"weight": weight})
    return tx.changes


def set_cluster_description(store: Store, cluster_id: object, description: object) -> Changes:
    if not isinstance(description, str):
        raise InputError("description", "must be text")
    if len(description) > MAX_NOTES_CHARS:
        raise InputError("description", too_long(len(description), MAX_NOTES_CHARS))
    with _sql.write(store) as tx:
        _cluster(store, cluster_id)
        tx.update("clusters", cluster_id, {"description": description})
    return tx.changes


def set_reference(store: Store, cluster_id: object | None) -> Changes:
    """Make ``cluster_id`` the reference cluster (the only one); None: no cluster is marked, and
    an RCP run takes the first cluster."""
    with _sql.write(store) as tx:
        if cluster_id is not None:
            _cluster(store, cluster_id)
        tx.execute("UPDATE clusters SET is_reference = (id IS ?) WHERE is_reference != (id IS ?)",
                   (cluster_id, cluster_id), tables=("clusters",))
    return tx.changes


def reference_cluster(store: Store) -> object | None:
    """The id of the cluster marked as reference, if any."""
    found = _sql.rows(store, "clusters", "is_reference = 1", order_by="position, id", limit=1)
    return found[0]["id"] if found else None


def move_cluster(store: Store, cluster_id: object, delta: int) -> Changes:
    """Move a cluster ``delta`` places (-1: up, 1: down) in the panel's order; the inverse is
    ``move_cluster(store, cluster_id, -delta)``."""
    if isinstance(delta, bool) or not isinstance(delta, int):
        raise InputError("delta", f"must be a whole number, got {delta!r}")
    with _sql.write(store) as tx:
        _cluster(store, cluster_id)
        order = [r["id"] for r in _sql.rows(store, "clusters", order_by="position, id")]
        _reorder(tx, "clusters", order, cluster_id, delta)
    return tx.changes


def _reorder(tx: _sql.Transaction, table: str, order: list, key: object, delta: int) -> None:
    index = order.index(key)
    target = index + delta
    if not 0 <= target < len(order):
        raise InputError("delta", f"cannot move {'up' if delta < 0 else 'down'}: already "
                                  f"{'first' if delta < 0 else 'last'}")
    order.insert(target, order.pop(index))
    for position, pk in enumerate(order):
        tx.update(table, pk, {"position": position})


def cluster_snapshot(store: Store, cluster_id: object) -> dict:
    """A cluster's row and its agents' rows, for :func:`restore_cluster`."""
    return {"cluster": _cluster(store, cluster_id),
            "agents": _sql.rows(store, "agents", "cluster_id = ?", (cluster_id,), order_by="position, id")}


def delete_cluster(store: Store, cluster_id: object) -> Changes:
    """Delete a cluster and its agents (take a :func:`cluster_snapshot` first to undo it)."""
    with _sql.write(store) as tx:
        _cluster(store, cluster_id)
        for agent in _sql.rows(store, "agents", "cluster_id = ?", (cluster_id,)):
            tx.delete("agents", agent["id"])
        tx.delete("clusters", cluster_id)
    return tx.changes


def restore_cluster(store: Store, snapshot: dict) -> Changes:
    """Put back a deleted cluster, under its id, with its agents."""
    cluster = dict(snapshot["cluster"])
    with _sql.write(store) as tx:
        _free_cluster_name(store, cluster["name"])
        if _sql.get(store, "clusters", cluster["id"]) is not None:
            cluster.pop("id")
        if cluster.get("is_reference"):
            tx.execute("UPDATE clusters SET is_reference = 0 WHERE is_reference = 1", tables=("clusters",))
        cluster_id = tx.insert("clusters", cluster)
        for agent in snapshot["agents"]:
            _free_agent_id(store, agent["id"], "id")
            tx.insert("agents", {**agent, "cluster_id": cluster_id})
    return tx.changes


# ----- agents ------------------------------------------------------------------------------------
def next_agent_id(taken: set[str] | list[str], prefix: str = "agent") -> str:
    """The first of ``prefix1``, ``prefix2``... not in ``taken``."""
    taken = set(taken)
    prefix = (prefix or "agent").strip() or "agent"
    n = 1
    while f"{prefix}{n}" in taken:
        n += 1
    return f"{prefix}{n}"


def agent_ids(store: Store) -> list[str]:
    return [r["id"] for r in _sql.rows(store, "agents", order_by="id")]


def _agent_fields(provider: object, persona: object, role: object, params: object) -> dict:
    if not isinstance(persona, str):
        raise InputError("persona", "must be text")
    if len(persona) > MAX_PERSONA_CHARS:
        raise InputError("persona", too_long(len(persona), MAX_PERSONA_CHARS))
    if role is not None:
        role = _name(role, "role", "role") if str(role).strip() else None
    return {"provider": provider, "persona": persona, "role": role, "params_json": check_params(params or {})}


def check_params(params: object, field: str = "params") -> dict:
    """An agent's simulated-persona parameters, as the simulated panel reads them (its
    :class:`~workbench.core.sim.persona.SimPersona`); an unknown or out-of-range one is refused."""
    from workbench.core.sim.persona import SimPersona

    if not isinstance(params, dict):
        raise InputError(field, f"must be an object of persona parameters, got {params!r}")
    persona = {k: v for k, v in params.items() if k != "sampling"}
    SimPersona.from_params(persona, where=field)
    if params.get("sampling"):  # the agent's sampling overrides, kept beside its persona
        return {**persona, "sampling": check_sampling(params["sampling"], f"{field}.sampling")}
    return persona


def check_sampling(sampling: object, field: str = "sampling") -> dict:
    """An agent's ``sampling`` object (temperature, top_p, max_tokens, seed, stop), checked by
    the run configuration's model; only the keys set are kept."""
    from pydantic import ValidationError

    from workbench.core.errors import from_pydantic
    from workbench.core.runs.providers import Sampling

    if not isinstance(sampling, dict):
        raise InputError(field, "must be an object")
    try:
        checked = Sampling.model_validate(sampling)
    except ValidationError as exc:
        err = from_pydantic(exc)
        raise InputError(".".join(p for p in (field, err.field) if p), err.message) from None
    return checked.sampling()


def set_agent_sampling(store: Store, agent_id: object, sampling: object) -> Changes:
    """The agent's sampling overrides (``{}`` or None: the provider's settings apply)."""
    checked = check_sampling(sampling or {})
    with _sql.write(store) as tx:
        row = _agent(store, agent_id)
        params = {k: v for k, v in (row.get("params_json") or {}).items() if k != "sampling"}
        tx.update("agents", agent_id, {"params_json": {**params, **({"sampling": checked} if checked else {})}})
    return tx.changes


def add_agent(store: Store, cluster_id: object, agent_id: object, *, provider: object = None, persona: object = "",
              role: object = None, params: object = None, position: int | None = None) -> Changes:
    """A new agent in ``cluster_id``, last unless ``position`` is given."""
    agent_id = _name(agent_id, "id", "agent")
    fields = _agent_fields(provider, persona, role, params)
    with _sql.write(store) as tx:
        _cluster(store, cluster_id)
        _free_agent_id(store, agent_id)
        _provider_exists(store, provider)
        if position is None:
            found = tx.query("SELECT coalesce(max(position) + 1, 0) AS p FROM agents WHERE cluster_id = ?",
                             (cluster_id,))
            position = found[0]["p"]
        tx.insert("agents", {"id": agent_id, "cluster_id": cluster_id, "position": position, **fields})
    return tx.changes


def duplicate_agent(store: Store, agent_id: object, new_id: object) -> Changes:
    """A copy of an agent (provider, persona, role, parameters) just after it, as ``new_id``."""
    new_id = _name(new_id, "id", "agent")
    with _sql.write(store) as tx:
        source = _agent(store, agent_id)
        _free_agent_id(store, new_id)
        siblings = [r["id"] for r in _sql.rows(store, "agents", "cluster_id = ?", (source["cluster_id"],),
                                               order_by="position, id")]
        tx.insert("agents", {**source, "id": new_id})
        siblings.insert(siblings.index(source["id"]) + 1, new_id)
        for position, pk in enumerate(siblings):
            tx.update("agents", pk, {"position": position})
    return tx.changes


def agent_snapshot(store: Store, agent_id: object) -> dict:
    """An agent's row, for :func:`restore_agent`."""
    return _agent(store, agent_id)


def remove_agent(store: Store, agent_id: object) -> Changes:
    with _sql.write(store) as tx:
        _agent(store, agent_id)
        tx.delete("agents", agent_id)
    return tx.changes


def restore_agent(store: Store, row: dict) -> Changes:
    """Put back a removed agent (its row as :func:`agent_snapshot` took it)."""
    with _sql.write(store) as tx:
        _cluster(store, row["cluster_id"])
        _free_agent_id(store, row["id"])
        if row.get("provider") is not None and _sql.get(store, "providers", row["provider"]) is None:
            row = {**row, "provider": None}
        tx.insert("agents", dict(row))
    return tx.changes


def move_agent(store: Store, agent_id: object, delta: int) -> Changes:
    """Move an agent ``delta`` places within its cluster."""
    if isinstance(delta, bool) or not isinstance(delta, int):
        raise InputError("delta", f"must be a whole number, got {delta!r}")
    with _sql.write(store) as tx:
        agent = _agent(store, agent_id)
        order = [r["id"] for r in _sql.rows(store, "agents", "cluster_id = ?", (agent["cluster_id"],),
                                            order_by="position, id")]
        _reorder(tx, "agents", order, agent_id, delta)
    return tx.changes


def set_agent_cluster(store: Store, agent_id: object, cluster_id: object) -> Changes:
    """Move an agent to the end of another cluster."""
    with _sql.write(store) as tx:
        _agent(store, agent_id)
        _cluster(store, cluster_id)
        found = tx.query("SELECT coalesce(max(position) + 1, 0) AS p FROM agents WHERE cluster_id = ?", (cluster_id,))
        tx.update("agents", agent_id, {"cluster_id": cluster_id, "position": found[0]["p"]})
    return tx.changes


def rename_agent(store: Store, agent_id: object, new_id: object) -> Changes:
    """Give an agent a new id (runs keep the ids they ran with)."""
    new_id = _name(new_id, "id", "agent")
    with _sql.write(store) as tx:
        _agent(store, agent_id)
        if new_id != agent_id:
            _free_agent_id(store, new_id)
            tx.update("agents", agent_id, {"id": new_id})
            tx.touch("agents", new_id)
    return tx.changes


def set_agent_provider(store: Store, agent_id: object, provider: object) -> Changes:
    """``provider`` None: the agent has none (a run refuses it until one is chosen)."""
    with _sql.write(store) as tx:
        _agent(store, agent_id)
        tx.update("agents", agent_id, {"provider": _provider_exists(store, provider)})
    return tx.changes


def set_agent_persona(store: Store, agent_id: object, persona: object) -> Changes:
    """The agent's persona or system prompt (free text, sent in each of its prompts)."""
    if not isinstance(persona, str):
        raise InputError("persona", "must be text")
    if len(persona) > MAX_PERSONA_CHARS:
        raise InputError("persona", too_long(len(persona), MAX_PERSONA_CHARS))
    with _sql.write(store) as tx:
        _agent(store, agent_id)
        tx.update("agents", agent_id, {"persona": persona})
    return tx.changes


def set_agent_role(store: Store, agent_id: object, role: object) -> Changes:
    """ARM's alpha | beta | gamma | silent, the findings crew's scout | auditor | dev; None or
    blank: none."""
    if role is not None and not isinstance(role, str):
        raise InputError("role", f"must be text, got {role!r}")
    role = role.strip() or None if isinstance(role, str) else None
    if role is not None and len(role) > MAX_NAME_CHARS:
        raise InputError("role", too_long(len(role), MAX_NAME_CHARS))
    if role is not None:
        _no_controls(role, "role")
    with _sql.write(store) as tx:
        _agent(store, agent_id)
        tx.update("agents", agent_id, {"role": role})
    return tx.changes


def set_agent_params(store: Store, agent_id: object, params: object) -> Changes:
    """The agent's simulated-persona parameters (stance, strictness, sycophancy, drift, context
    budget...), checked as the simulated panel reads them."""
    params = check_params(params)
    with _sql.write(store) as tx:
        row = _agent(store, agent_id)
        kept = (row.get("params_json") or {}).get("sampling")
        if kept and "sampling" not in params:  # the persona editor never drops the sampling overrides
            params = {**params, "sampling": kept}
        tx.update("agents", agent_id, {"params_json": params})
    return tx.changes


# ----- providers ---------------------------------------------------------------------------------
def check_provider_record(record: dict) -> dict:
    """A provider row (``name``, ``model``, ``api_base``, ``key_env``, ``key_keyring``,
    ``max_concurrency``, ``rpm``, ``timeout_s``, ``max_retries``) checked by the run
    configuration's :class:`~workbench.core.runs.providers.ProviderConfig`; a value that looks
    like a key where a variable's name belongs is refused. Fields are named as in a run
    configuration (``api_key_env``)."""
    from pydantic import ValidationError

    from workbench.core.errors import from_pydantic
    from workbench.core.runs.providers import ProviderConfig

    if not isinstance(record, dict):
        raise InputError("provider", "must be an object")
    from workbench.core.runs.providers import PROVIDER_OPTIONS

    unknown = sorted(set(record) - set(PROVIDER_COLUMNS) - set(PROVIDER_OPTIONS) - {"options_json"})
    if unknown:
        raise InputError(unknown[0], "unknown provider field")
    data = {("api_key_env" if k == "key_env" else k): v for k, v in record.items()
            if v is not None and not (k in ("api_base", "key_env", "key_keyring") and v == "")}
    if isinstance(data.get("name"), str):
        data["name"] = data["name"].strip()
    try:
        config = ProviderConfig.model_validate(data)
    except ValidationError as exc:
        raise from_pydantic(exc) from None
    return config.record()


def provider_users(store: Store, name: str) -> list[str]:
    """The agents that call through provider ``name``."""
    return [r["id"] for r in _sql.rows(store, "agents", "provider = ?", (name,), order_by="id")]


def save_provider(store: Store, record: dict, *, replacing: str | None = None) -> Changes:
    """Add a provider, or change ``replacing`` (renaming it renames it for every agent using
    it). The row names where the key lives (``key_env``, ``key_keyring``), never a key."""
    row = check_provider_record(record)
    with _sql.write(store) as tx:
        if replacing is None:
            if _sql.get(store, "providers", row["name"]) is not None:
                raise InputError("name", f"a provider named {row['name']!r} already exists")
            tx.insert("providers", row)
        else:
            if _sql.get(store, "providers", replacing) is None:
                raise InputError("provider", f"no provider named {replacing!r} in this project")
            if row["name"] != replacing and _sql.get(store, "providers", row["name"]) is not None:
                raise InputError("name", f"a provider named {row['name']!r} already exists")
            tx.update("providers", replacing, row)
            if row["name"] != replacing:
                tx.touch("providers", row["name"])
                tx.touch("agents")  # ON UPDATE CASCADE renamed it for its agents
    return tx.changes


def provider_snapshot(store: Store, name: str) -> dict:
    """A provider's row and the agents using it, for :func:`restore_provider`."""
    row = _sql.get(store, "providers", name)
    if row is None:
        raise InputError("provider", f"no provider named {name!r} in this project")
    return {"provider": row, "users": provider_users(store, name)}


def delete_provider(store: Store, name: str) -> Changes:
    """Delete a provider; agents using it are left with none (take a :func:`provider_snapshot`
    first to undo it)."""
    with _sql.write(store) as tx:
        if _sql.get(store, "providers", name) is None:
            raise InputError("provider", f"no provider named {name!r} in this project")
        users = provider_users(store, name)
        tx.delete("providers", name)
        for agent_id in users:  # ON DELETE SET NULL did it; say so
            tx.touch("agents", agent_id)
    return tx.changes


def restore_provider(store: Store, snapshot: dict) -> Changes:
    row = snapshot["provider"]
    with _sql.write(store) as tx:
        if _sql.get(store, "providers", row["name"]) is not None:
            raise InputError("name", f"a provider named {row['name']!r} already exists")
        tx.insert("providers", dict(row))
        for agent_id in snapshot.get("users", []):
            if _sql.get(store, "agents", agent_id) is not None:
                tx.update("agents", agent_id, {"provider": row["name"]})
    return tx.changes


# ----- the whole panel ---------------------------------------------------------------------------
def panel_snapshot(store: Store, config_name: str | None = None) -> dict:
    """Everything :func:`apply_run_config` replaces, for :func:`restore_panel`: the providers,
    clusters and agents, the panel's settings, and the saved configuration ``config_name``."""
    settings = {key: (row["value_json"] if row else None)
                for key in _PANEL_SETTINGS for row in [_sql.get(store, "settings", key)]}
    saved = None
    if config_name is not None:
        found = _sql.rows(store, "protocol_configs", "name = ?", (config_name,), limit=1)
        saved = found[0] if found else None
    return {"providers": _sql.rows(store, "providers"), "clusters": _sql.rows(store, "clusters"),
            "agents": _sql.rows(store, "agents"), "settings": settings,
            "config_name": config_name, "saved": saved}


def _clear_panel(tx: _sql.Transaction) -> None:
    tx.execute("DELETE FROM agents", tables=("agents",))
    tx.execute("DELETE FROM clusters", tables=("clusters",))
    tx.execute("DELETE FROM providers", tables=("providers",))


def restore_panel(store: Store, snapshot: dict) -> Changes:
    """Put the panel back as :func:`panel_snapshot` took it."""
    with _sql.write(store) as tx:
        _clear_panel(tx)
        for table in ("providers", "clusters", "agents"):
            for row in snapshot[table]:
                tx.insert(table, dict(row))
        for key, value in snapshot["settings"].items():
            _put_setting(tx, key, value)
        name = snapshot.get("config_name")
        if name is not None:
            saved = snapshot.get("saved")
            if saved is None:
                tx.execute("DELETE FROM protocol_configs WHERE name = ?", (name,), tables=("protocol_configs",))
            else:
                _save_config(tx, name, saved["protocol"], saved["config_json"])
    return tx.changes


def _put_setting(tx: _sql.Transaction, key: str, value: object) -> None:
    if value is None:
        tx.execute("DELETE FROM settings WHERE key = ?", (key,), tables=("settings",))
    else:
        tx.execute("INSERT INTO settings (key, value_json) VALUES (?, ?) "
                   "ON CONFLICT (key) DO UPDATE SET value_json = excluded.value_json",
                   (key, json.dumps(value, ensure_ascii=False)), tables=("settings",))


def _save_config(tx: _sql.Transaction, name: str, protocol: str, config: dict) -> None:
    now = utc_now()
    found = tx.query("SELECT id FROM protocol_configs WHERE name = ?", (name,))
    if found:
        tx.update("protocol_configs", found[0]["id"], {"protocol": protocol, "config_json": config, "updated_at": now})
    else:
        tx.insert("protocol_configs", {"name": name, "protocol": protocol, "config_json": config,
                                       "created_at": now, "updated_at": now})


# What a run configuration holds beyond the panel: kept, with save_as, as a saved configuration.
_PANEL_KEYS = ("providers", "clusters", "reference")


def apply_run_config(store: Store, config: Any, *, save_as: str | None = None, stored: bool = False) -> Changes:
    """Replace the project's panel (providers, clusters, agents) by a run configuration's.

    The configuration is checked whole first (:func:`~workbench.core.runs.config.parse_run_config`;
    ``stored``: a run's ``config_json``). For an RCP configuration its tau and weighting become
    the project's (:data:`TAU_SETTING`, :data:`WEIGHTED_SETTING`). ``save_as``: the rest of the
    configuration (protocol, query, options, findings, echo...) is saved under that name as a
    protocol configuration, so the panel can be run as the configuration meant."""
    from workbench.core.runs.config import parse_run_config

    cfg = parse_run_config(config, stored=stored)
    with _sql.write(store) as tx:
        _clear_panel(tx)
        for provider in cfg.providers.values():
            tx.insert("providers", provider.record())
        for position, cluster in enumerate(cfg.clusters):
            cluster_id = tx.insert("clusters", {
                "name": cluster.name, "position": position, "theta": cluster.theta,
                "weight": 1.0 if cluster.weight is None else cluster.weight,
                "is_reference": int(cluster.name == cfg.reference), "description": ""})
            for agent_position, agent in enumerate(cluster.agents):
                tx.insert("agents", {"id": agent.id, "cluster_id": cluster_id, "position": agent_position,
                                     "provider": agent.provider, "role": agent.role, "persona": agent.persona,
                                     "params_json": {**agent.params, **({"sampling": agent.sampling.sampling()}
                                                                        if agent.sampling else {})}})
        own = project_keys(cfg.protocol)
        for key in own:  # the project's from now on, in one place (the saved rest leaves them out)
            _put_setting(tx, _SETTING_OF[key], getattr(cfg, key))
        if save_as is not None:
            dumped = cfg.model_dump(mode="json", by_alias=True, exclude_defaults=True)
            rest = {k: v for k, v in dumped.items() if k not in _PANEL_KEYS and k != "protocol" and k not in own}
            _save_config(tx, _name(save_as, "save_as", "configuration"), cfg.protocol, rest)
    return tx.changes


def import_panel_from_run(store: Store, run_id: str) -> Changes:
    """Copy the panel a run was configured with (its providers, clusters and agents, from its
    stored configuration) into the project's panel, replacing it."""
    run = _sql.get(store, "runs", run_id) if isinstance(run_id, str) else None
    if run is None:
        raise InputError("run", f"no run {run_id!r} in this project")
    config = run["config_json"]
    if not isinstance(config, dict) or not config.get("clusters"):
        raise InputError("run", f"run {run_id} has no panel to import (an imported ARM trace keeps only its "
                                "providers' names)")
    try:
        return apply_run_config(store, config, stored=True)
    except InputError as exc:
        raise InputError("run", f"the configuration of run {run_id} is not valid now: {exc}") from None
