"""Panel templates: each is a whole run configuration on the simulated panel that parse_run_config
accepts, applied to a project its panel parses again, and its stated shape holds."""

from __future__ import annotations

import pytest

from workbench.core.project import panel_edits as pe
from workbench.core.project.panel import panel_document, run_config_from_project, saved_configs
from workbench.core.project.store import Store
from workbench.core.protocols.rcp.config import config_warnings, reachable_tiers
from workbench.core.runs.config import parse_run_config
from workbench.core.runs.templates import TEMPLATES, Template

EXPECTED = {"rcp-advocate-critic": "rcp", "rcp-weighted-3": "rcp", "arm-mesh": "arm", "findings-crew": "findings",
            "cons-five": "cons", "rcp-echo": "rcp"}


def rcp_panel(cfg) -> dict:
    return {"clusters": cfg.classification_panel(), "reference": cfg.reference, "theta": cfg.theta, "tau": cfg.tau,
            "weighted": cfg.weighted}


def test_the_templates_and_their_api():
    assert set(EXPECTED) <= set(TEMPLATES)
    for key, template in TEMPLATES.items():
        assert isinstance(template, Template) and template.key == key
        assert template.name and template.description and template.protocol == EXPECTED.get(key, template.protocol)
        first = template.run_config()
        first["clusters"].clear()  # a copy: changing it changes nothing
        assert template.run_config()["clusters"]


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_each_template_is_a_valid_simulated_run(key):
    cfg = parse_run_config(TEMPLATES[key].run_config())
    assert cfg.protocol == EXPECTED[key]
    assert cfg.simulated and set(cfg.providers) == {"sim"}
    again = parse_run_config(cfg.model_dump(mode="json", by_alias=True), stored=True)  # stored, read back
    assert again == cfg
    if cfg.protocol == "rcp":
        assert config_warnings(rcp_panel(cfg)) == []  # no doubtful setting in a template


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_applied_to_a_project_the_panel_parses_and_the_saved_config_runs(tmp_path, key):
    store = Store.create(tmp_path / "p.rwb")
    try:
        template = TEMPLATES[key]
        pe.apply_run_config(store, template.run_config(), save_as=f"Template: {template.name}")
        parse_run_config({**panel_document(store), "protocol": "rcp", "query": "q"})
        [saved] = saved_configs(store)
        cfg = run_config_from_project(store, saved.id)
        assert cfg == parse_run_config(template.run_config())  # the panel and the saved options: the template
    finally:
        store.close_connection()


def test_the_rcp_panel_is_three_advocates_and_three_critics():
    cfg = parse_run_config(TEMPLATES["rcp-advocate-critic"].run_config())
    assert [(c.name, len(c.agents)) for c in cfg.clusters] == [("advocate", 3), ("critic", 3)]
    assert (cfg.reference, cfg.theta, cfg.tau) == ("advocate", 0.5, 0.6)


def test_the_weighted_template_can_show_reference_dissent_and_both_polar_tiers():
    cfg = parse_run_config(TEMPLATES["rcp-weighted-3"].run_config())
    assert cfg.weighted and [c.weight or 1.0 for c in cfg.clusters] == [2.0, 1.0, 1.0]
    assert cfg.reference == "safety" and len(cfg.clusters) == 3
    assert reachable_tiers(parse_config(cfg)) == {"positive_consensus", "positive_polar", "negative_polar",
                                                  "negative_consensus"}
    # the two clusters outside the reference reach tau without it: a positive consensus with reference dissent
    others = sum(c.weight or 1.0 for c in cfg.clusters if c.name != cfg.reference)
    assert others / sum(c.weight or 1.0 for c in cfg.clusters) >= cfg.tau


def parse_config(cfg):
    from workbench.core.protocols.rcp.config import parse_config as parse

    return parse(rcp_panel(cfg))


def test_the_arm_mesh_has_each_role_once_and_the_silent_baseline():
    cfg = parse_run_config(TEMPLATES["arm-mesh"].run_config())
    assert [a.role for a in cfg.agents] == ["alpha", "beta", "gamma", "silent"]
    assert cfg.dispatch == "sequential"


def test_the_findings_crew_and_the_cons_panel():
    findings = parse_run_config(TEMPLATES["findings-crew"].run_config())
    assert [a.role for a in findings.agents] == ["scout", "auditor", "dev"]
    assert 2 <= len(findings.findings) <= 3
    cons = parse_run_config(TEMPLATES["cons-five"].run_config())
    assert len(cons.agents) == 5 and len(cons.options) >= 2


def test_the_echo_template_is_the_rcp_panel_wrapped_in_echo():
    echo = parse_run_config(TEMPLATES["rcp-echo"].run_config())
    plain = parse_run_config(TEMPLATES["rcp-advocate-critic"].run_config())
    assert echo.echo is not None and plain.echo is None
    assert [a.id for a in echo.agents] == [a.id for a in plain.agents]
    assert {a.params.get("overflow") for a in echo.agents} >= {"compaction", "hard_rejection", "silent_truncation"}
