"""Every edit of the project's panel (core.project.panel_edits): each returns the Changes it made,
refuses bad input with an InputError naming the field and writes nothing then, and has an inverse
that puts the panel back (what the GUI's undo relies on). The panel it leaves parses as a run
configuration through panel_document + parse_run_config."""

from __future__ import annotations

import pytest

from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project import panel_edits as pe
from workbench.core.project.changes import Changes
from workbench.core.project.panel import panel_document, panel_rows
from workbench.core.project.panel_check import check_panel
from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "p.rwb")
    yield s
    s.close_connection()


def state(store: Store) -> dict:
    """The panel as stored (for before/after comparisons)."""
    rows = panel_rows(store)
    return {"clusters": rows.clusters, "agents": rows.agents, "providers": rows.providers,
            "settings": pe.panel_settings(store)}


def cluster_id(store: Store, name: str) -> int:
    return next(c["id"] for c in panel_rows(store).clusters if c["name"] == name)


@pytest.fixture
def panel(store):
    """advocate (a1, a2, a3) and critic (c1, c2) on the sim provider."""
    pe.save_provider(store, {"name": "sim", "model": "sim"})
    for name, agents in (("advocate", ("a1", "a2", "a3")), ("critic", ("c1", "c2"))):
        cid = pe.create_cluster(store, name).keys_of("clusters")[0]
        for agent in agents:
            pe.add_agent(store, cid, agent, provider="sim", persona=f"{agent} persona", params={"stance": 0.6})
    return store


def rcp(store: Store, **extra) -> object:
    return parse_run_config({**panel_document(store), "protocol": "rcp", "query": "q", **extra})


def refused(field: str, fn, *args, **kwargs) -> InputError:
    store = args[0]
    before = state(store)
    with pytest.raises(InputError) as info:
        fn(*args, **kwargs)
    assert info.value.field == field, f"{fn.__name__}: {info.value}"
    assert state(store) == before, f"{fn.__name__} wrote something although it refused"
    return info.value


def test_building_a_panel_returns_changes_and_parses_as_a_run(panel):
    cfg = rcp(panel)
    assert [c.name for c in cfg.clusters] == ["advocate", "critic"]
    assert [a.id for a in cfg.agents] == ["a1", "a2", "a3", "c1", "c2"]
    assert cfg.agents[0].params == {"stance": 0.6}


def test_create_cluster(store):
    changes = pe.create_cluster(store, "  advocate ", theta=0.6, weight=2.0, description="for")
    assert isinstance(changes, Changes) and changes.touches("clusters")
    [row] = panel_rows(store).clusters
    assert (row["id"], row["name"], row["theta"], row["weight"], row["position"]) == \
        (changes.keys_of("clusters")[0], "advocate", 0.6, 2.0, 0)
    assert pe.create_cluster(store, "critic").touches("clusters")
    assert [c["position"] for c in panel_rows(store).clusters] == [0, 1]
    refused("name", pe.create_cluster, store, "advocate")
    refused("name", pe.create_cluster, store, "   ")
    refused("name", pe.create_cluster, store, "x" * 201)
    refused("theta", pe.create_cluster, store, "t", theta=0)
    refused("theta", pe.create_cluster, store, "t", theta=1.5)
    refused("weight", pe.create_cluster, store, "t", weight=0)
    refused("weight", pe.create_cluster, store, "t", weight=float("inf"))
    refused("theta", pe.create_cluster, store, "t", theta=True)


def test_rename_cluster_and_back(panel):
    cid = cluster_id(panel, "critic")
    assert pe.rename_cluster(panel, cid, "sceptic").keys_of("clusters") == [cid]
    assert rcp(panel).clusters[1].name == "sceptic"
    pe.rename_cluster(panel, cid, "critic")
    refused("name", pe.rename_cluster, panel, cid, "advocate")
    refused("name", pe.rename_cluster, panel, cid, "")
    refused("cluster", pe.rename_cluster, panel, 999, "x")
    assert pe.rename_cluster(panel, cid, "critic").touches("clusters")  # its own name is not "taken"


def test_theta_weight_description(panel):
    cid = cluster_id(panel, "critic")
    assert pe.set_cluster_theta(panel, cid, 0.75).touches("clusters")
    assert pe.set_cluster_weight(panel, cid, 3.0).touches("clusters")
    assert pe.set_cluster_description(panel, cid, "looks for costs").touches("clusters")
    cfg = rcp(panel)
    assert (cfg.clusters[1].theta, cfg.clusters[1].weight) == (0.75, 3.0)
    assert pe.set_cluster_theta(panel, cid, None).touches("clusters")  # back to the global theta
    assert rcp(panel).clusters[1].theta is None
    for bad in (0, -0.1, 1.01, "0.5", float("nan")):
        refused("theta", pe.set_cluster_theta, panel, cid, bad)
    for bad in (0, -1, "2", None):
        refused("weight", pe.set_cluster_weight, panel, cid, bad)
    refused("description", pe.set_cluster_description, panel, cid, 5)
    refused("cluster", pe.set_cluster_theta, panel, 999, 0.5)


def test_reference_is_one_cluster_or_none(panel):
    advocate, critic = cluster_id(panel, "advocate"), cluster_id(panel, "critic")
    assert pe.set_reference(panel, critic).touches("clusters")
    assert pe.reference_cluster(panel) == critic and rcp(panel).reference == "critic"
    pe.set_reference(panel, advocate)
    assert [c["is_reference"] for c in panel_rows(panel).clusters] == [1, 0]
    assert pe.set_reference(panel, None).touches("clusters")
    assert pe.reference_cluster(panel) is None and rcp(panel).reference is None
    refused("cluster", pe.set_reference, panel, 999)


def test_move_cluster_and_its_inverse(panel):
    critic = cluster_id(panel, "critic")
    pe.create_cluster(panel, "safety")
    assert pe.move_cluster(panel, critic, -1).touches("clusters")
    assert [c.name for c in rcp(panel).clusters] == ["critic", "advocate"]  # safety has no agents
    assert [c["name"] for c in panel_rows(panel).clusters] == ["critic", "advocate", "safety"]
    pe.move_cluster(panel, critic, 1)  # the inverse
    assert [c["name"] for c in panel_rows(panel).clusters] == ["advocate", "critic", "safety"]
    refused("delta", pe.move_cluster, panel, cluster_id(panel, "advocate"), -1)
    refused("delta", pe.move_cluster, panel, cluster_id(panel, "safety"), 1)
    refused("delta", pe.move_cluster, panel, critic, True)
    refused("cluster", pe.move_cluster, panel, 999, 1)


def test_delete_cluster_and_restore_it(panel):
    cid = cluster_id(panel, "advocate")
    pe.set_reference(panel, cid)
    before = state(panel)
    snapshot = pe.cluster_snapshot(panel, cid)
    changes = pe.delete_cluster(panel, cid)
    assert changes.touches("clusters", "agents") and ("agents", "a1") in changes.keys
    assert [a.id for a in rcp(panel).agents] == ["c1", "c2"]
    assert pe.restore_cluster(panel, snapshot).touches("clusters", "agents")
    assert state(panel) == before
    refused("cluster", pe.delete_cluster, panel, 999)
    refused("name", pe.restore_cluster, panel, snapshot)  # it is back: its name is taken


def test_add_duplicate_remove_restore_agents(panel):
    cid = cluster_id(panel, "critic")
    changes = pe.add_agent(panel, cid, "c3", provider="sim", persona="Commuter.\nNo transit.", role="scout",
                           params={"stance": 0.2, "context_budget": 4000})
    assert changes.keys_of("agents") == ["c3"]
    agent = next(a for a in rcp(panel).agents if a.id == "c3")
    assert (agent.persona, agent.role, agent.params["context_budget"]) == ("Commuter.\nNo transit.", "scout", 4000)
    refused("id", pe.add_agent, panel, cid, "a1")
    refused("id", pe.add_agent, panel, cid, " ")
    refused("cluster", pe.add_agent, panel, 999, "x1")
    refused("provider", pe.add_agent, panel, cid, "x1", provider="nowhere")
    refused("params.stance", pe.add_agent, panel, cid, "x1", params={"stance": 2})
    refused("params.temprature", pe.add_agent, panel, cid, "x1", params={"temprature": 0.3})
    refused("persona", pe.add_agent, panel, cid, "x1", persona="x" * 20_001)

    assert pe.duplicate_agent(panel, "c1", "c1b").touches("agents")
    assert [a.id for a in rcp(panel).clusters[1].agents] == ["c1", "c1b", "c2", "c3"]  # just after its source
    copy = next(a for a in panel_rows(panel).agents if a["id"] == "c1b")
    assert (copy["persona"], copy["params_json"]) == ("c1 persona", {"stance": 0.6})
    refused("id", pe.duplicate_agent, panel, "c1", "c2")
    refused("agent", pe.duplicate_agent, panel, "nobody", "x")

    before = state(panel)
    row = pe.agent_snapshot(panel, "c1b")
    assert pe.remove_agent(panel, "c1b").keys_of("agents") == ["c1b"]
    assert "c1b" not in [a.id for a in rcp(panel).agents]
    assert pe.restore_agent(panel, row).touches("agents")
    assert state(panel) == before
    refused("agent", pe.remove_agent, panel, "nobody")
    refused("id", pe.restore_agent, panel, row)


def test_move_agents_within_and_between_clusters(panel):
    assert pe.move_agent(panel, "a3", -2).touches("agents")
    assert [a.id for a in rcp(panel).clusters[0].agents] == ["a3", "a1", "a2"]
    pe.move_agent(panel, "a3", 2)
    assert [a.id for a in rcp(panel).clusters[0].agents] == ["a1", "a2", "a3"]
    refused("delta", pe.move_agent, panel, "a1", -1)
    refused("agent", pe.move_agent, panel, "nobody", 1)
    critic = cluster_id(panel, "critic")
    assert pe.set_agent_cluster(panel, "a3", critic).touches("agents")
    assert [a.id for a in rcp(panel).clusters[1].agents] == ["c1", "c2", "a3"]
    refused("cluster", pe.set_agent_cluster, panel, "a3", 999)


def test_agent_fields(panel):
    pe.save_provider(panel, {"name": "local", "model": "ollama/llama3.1", "api_base": "http://127.0.0.1:11434"})
    assert pe.rename_agent(panel, "a1", "planner").touches("agents")
    assert rcp(panel).agents[0].id == "planner"
    refused("id", pe.rename_agent, panel, "planner", "a2")
    refused("id", pe.rename_agent, panel, "planner", "")
    pe.rename_agent(panel, "planner", "a1")
    assert pe.set_agent_provider(panel, "a1", "local").touches("agents")
    assert rcp(panel).agents[0].provider == "local"
    refused("provider", pe.set_agent_provider, panel, "a1", "nowhere")
    assert pe.set_agent_provider(panel, "a1", None).touches("agents")
    with pytest.raises(InputError, match="clusters\\[0\\].agents\\[0\\].provider"):  # a run refuses it
        rcp(panel)
    pe.set_agent_provider(panel, "a1", "sim")
    assert pe.set_agent_persona(panel, "a1", "Line one.\nLine two.").touches("agents")
    assert rcp(panel).agents[0].persona == "Line one.\nLine two."
    refused("persona", pe.set_agent_persona, panel, "a1", None)
    assert pe.set_agent_role(panel, "a1", " gamma ").touches("agents")
    assert rcp(panel).agents[0].role == "gamma"
    pe.set_agent_role(panel, "a1", "")
    assert rcp(panel).agents[0].role is None
    refused("role", pe.set_agent_role, panel, "a1", 3)
    assert pe.set_agent_params(panel, "a1", {"stance": 0.9, "drift": 0.2, "context_budget": 500}).touches("agents")
    assert rcp(panel).agents[0].params == {"stance": 0.9, "drift": 0.2, "context_budget": 500}
    refused("params.drift", pe.set_agent_params, panel, "a1", {"drift": -0.1})
    refused("params.context_budget", pe.set_agent_params, panel, "a1", {"context_budget": 0})
    refused("params", pe.set_agent_params, panel, "a1", [1])
    refused("agent", pe.set_agent_persona, panel, "nobody", "x")


def test_settings_tau_theta_and_weighting(store):
    assert pe.panel_settings(store) == {"tau": 0.6, "theta": 0.5, "weighted": False}  # RCP's defaults
    assert pe.set_tau(store, 0.75).touches("settings")
    assert pe.set_theta(store, 0.6).touches("settings")
    assert pe.set_weighted(store, True).touches("settings")
    assert pe.panel_settings(store) == {"tau": 0.75, "theta": 0.6, "weighted": True}
    for bad in (0.5, 0.3, 1.01, "0.7", None, True):
        refused("tau", pe.set_tau, store, bad)
    for bad in (0, -0.1, 1.01, "0.7", None):
        refused("theta", pe.set_theta, store, bad)
    refused("weighted", pe.set_weighted, store, 1)


def test_providers_never_hold_a_key(panel):
    changes = pe.save_provider(panel, {"name": "gpt", "model": "openai/gpt-4o-mini", "key_env": "OPENAI_API_KEY",
                                       "max_concurrency": 2, "rpm": 60, "timeout_s": 30.0, "max_retries": 1})
    assert changes.keys_of("providers") == ["gpt"]
    assert rcp(panel).providers["gpt"].key_env == "OPENAI_API_KEY"  # named the run config's way
    assert panel_document(panel)["providers"]["gpt"]["api_key_env"] == "OPENAI_API_KEY"
    error = refused("api_key_env", pe.save_provider, panel,
                    {"name": "leak", "model": "openai/x", "key_env": "sk-proj-abcdefghijklmnop"})
    assert "not hold the key itself" in error.message
    refused("name", pe.save_provider, panel, {"name": "gpt", "model": "openai/x"})
    refused("model", pe.save_provider, panel, {"name": "x", "model": ""})
    refused("max_concurrency", pe.save_provider, panel, {"name": "x", "model": "sim", "max_concurrency": 0})
    refused("rpm", pe.save_provider, panel, {"name": "x", "model": "sim", "rpm": 0})
    refused("timeout_s", pe.save_provider, panel, {"name": "x", "model": "sim", "timeout_s": -1.0})
    refused("api_key", pe.save_provider, panel, {"name": "x", "model": "sim", "api_key": "sk-123"})


def test_edit_rename_and_delete_provider_follow_its_agents(panel):
    old = dict(panel_rows(panel).providers["sim"])
    assert pe.save_provider(panel, {"name": "offline", "model": "sim"}, replacing="sim").touches("providers",
                                                                                                 "agents")
    assert {a.provider for a in rcp(panel).agents} == {"offline"}  # renamed for every agent
    refused("provider", pe.save_provider, panel, {"name": "x", "model": "sim"}, replacing="nowhere")
    pe.save_provider(panel, {"name": "other", "model": "sim"})
    refused("name", pe.save_provider, panel, {"name": "other", "model": "sim"}, replacing="offline")
    pe.delete_provider(panel, "other")
    pe.save_provider(panel, {k: old[k] for k in pe.PROVIDER_COLUMNS}, replacing="offline")  # the inverse
    assert {a.provider for a in rcp(panel).agents} == {"sim"}

    before = state(panel)
    snapshot = pe.provider_snapshot(panel, "sim")
    assert snapshot["users"] == ["a1", "a2", "a3", "c1", "c2"] == pe.provider_users(panel, "sim")
    changes = pe.delete_provider(panel, "sim")
    assert changes.touches("providers", "agents")
    assert {a["provider"] for a in panel_rows(panel).agents} == {None}
    assert pe.restore_provider(panel, snapshot).touches("providers", "agents")
    assert state(panel) == before
    refused("provider", pe.delete_provider, panel, "nowhere")
    refused("name", pe.restore_provider, panel, snapshot)


def test_apply_a_run_config_and_restore_the_panel(panel):
    from workbench.core.runs.templates import TEMPLATES

    pe.set_tau(panel, 0.8)
    before = state(panel)
    snapshot = pe.panel_snapshot(panel, "Template: ARM")
    changes = pe.apply_run_config(panel, TEMPLATES["arm-mesh"].run_config(), save_as="Template: ARM")
    assert changes.touches("providers", "clusters", "agents", "protocol_configs")
    assert [a.role for a in rcp(panel).agents] == ["alpha", "beta", "gamma", "silent"]
    [saved] = _sql.rows(panel, "protocol_configs", "name = ?", ("Template: ARM",))
    assert saved["protocol"] == "arm" and "clusters" not in saved["config_json"]
    assert pe.restore_panel(panel, snapshot).touches("providers", "clusters", "agents")
    assert state(panel) == before
    assert _sql.count(panel, "protocol_configs", "name = ?", ("Template: ARM",)) == 0
    refused("clusters[0].agents[0].provider", pe.apply_run_config, panel,
            {**TEMPLATES["rcp-advocate-critic"].run_config(), "providers": {"other": {"model": "sim"}}})


def test_import_the_panel_of_a_run(panel, tmp_path):
    from workbench.core.project.runs import create_run
    from workbench.core.runs.templates import TEMPLATES

    config = parse_run_config(TEMPLATES["rcp-weighted-3"].run_config()).model_dump(mode="json", by_alias=True)
    create_run(panel, run_id="r1", protocol="rcp", label="weighted", config=config, seed=11, dispatch="concurrent",
               simulated=True)
    changes = pe.import_panel_from_run(panel, "r1")
    assert changes.touches("clusters", "agents", "providers")
    cfg = rcp(panel, tau=pe.panel_settings(panel)["tau"], weighted=True)
    assert [c.name for c in cfg.clusters] == ["clinicians", "patients", "safety"]
    assert [c.weight for c in cfg.clusters] == [2.0, None, None] and cfg.reference == "safety"
    assert pe.panel_settings(panel) == {"tau": 0.7, "theta": 0.5, "weighted": True}
    refused("run", pe.import_panel_from_run, panel, "r404")
    create_run(panel, run_id="arm-import", protocol="arm", label="imported", config={"question": "q"},
               seed=None, dispatch=None, simulated=False)
    assert "no panel" in refused("run", pe.import_panel_from_run, panel, "arm-import").message


def test_next_agent_id():
    assert pe.next_agent_id(set(), "a") == "a1"
    assert pe.next_agent_id({"a1", "a2", "a4"}, "a") == "a3"
    assert pe.next_agent_id({"cluster1"}, "cluster") == "cluster2"
    assert pe.next_agent_id([], "") == "agent1"


# ----- the check the GUI runs as the user types -------------------------------------------------
def rows_of(store: Store) -> tuple[list, list, list]:
    rows = panel_rows(store)
    return rows.clusters, rows.agents, list(rows.providers.values())


def test_check_panel_names_every_field_at_fault(panel):
    clusters, agents, providers = rows_of(panel)
    assert check_panel(clusters, agents, providers, tau=0.6) == []
    clusters[1] = {**clusters[1], "name": "advocate", "theta": 1.5}
    agents[0] = {**agents[0], "provider": None}
    found = {(i.level, i.kind, i.key, i.field) for i in check_panel(clusters, agents, providers, tau=0.5)}
    advocate, critic = clusters[0]["id"], clusters[1]["id"]
    assert {("error", "tau", None, "tau"), ("error", "cluster", critic, "theta"),
            ("error", "cluster", critic, "name"), ("error", "cluster", advocate, "name"),
            ("error", "agent", "a1", "provider")} <= found


def test_check_panel_warnings(panel):
    clusters, agents, providers = rows_of(panel)
    pe.create_cluster(panel, "empty")
    clusters = panel_rows(panel).clusters
    agents = [a for a in agents if a["id"] != "c2"]  # critic keeps one agent
    issues = check_panel(clusters, agents, providers, tau=0.6)
    by = {(i.kind, i.key): i for i in issues}
    assert all(i.level == "warning" for i in issues)
    assert "no agents" in by[("cluster", clusters[2]["id"])].message
    assert "1 agent" in by[("cluster", clusters[1]["id"])].message
    assert ("tau", None) not in by  # two clusters: 1/2 always lies in the polar band
    agents.append({**agents[0], "id": "e1", "cluster_id": clusters[2]["id"]})
    agents.append({**agents[0], "id": "e2", "cluster_id": clusters[2]["id"]})
    by = {(i.kind, i.key): i for i in check_panel(clusters, agents, providers, tau=0.6)}
    assert "polar tiers empty" in by[("tau", None)].message  # 3 clusters, tau 0.6: ratios 1/3, 2/3 outside
    assert ("tau", None) not in {(i.kind, i.key) for i in check_panel(clusters, agents, providers, tau=0.7)}
    renamed = [{**a, "key": a["id"], "id": "a2"} if a["id"] == "a1" else a for a in agents]
    dup = [i for i in check_panel(clusters, renamed, providers, tau=0.6) if i.field == "id"]
    assert {i.key for i in dup} == {"a1", "a2"}  # the agent being retyped is named by its stored id


def test_check_panel_names_a_duplicate_among_empty_clusters_too(store):
    for name in ("advocate", "fresh"):
        pe.create_cluster(store, name)
    clusters = panel_rows(store).clusters
    clusters[1] = {**clusters[1], "name": "advocate"}  # being typed: the new, empty cluster
    dup = [i for i in check_panel(clusters, [], [], tau=0.6) if i.field == "name"]
    assert {(i.level, i.key) for i in dup} == {("error", clusters[0]["id"]), ("error", clusters[1]["id"])}
