"""Run configurations (SPEC §6): one model per protocol, validated whole, defaults defined once.

Also the shape the protocol packages keep: no package imports a sibling, and no import cycle.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
import json
from pathlib import Path

import pytest

from workbench.core.errors import InputError
from workbench.core.protocols.arm.config import ArmOptions
from workbench.core.protocols.arm.rounds import ArmRunConfig
from workbench.core.protocols.cons.config import ConsOptions
from workbench.core.protocols.cons.models import ConsQuestion
from workbench.core.protocols.cons.run import ConsRunConfig
from workbench.core.protocols.echo.config import EchoOptions
from workbench.core.protocols.echo.session import EchoPlan
from workbench.core.protocols.findings.book import FindingsBook, FindingsPayload
from workbench.core.protocols.findings.config import FindingsOptions
from workbench.core.protocols.findings.run import FindingsRunConfig
from workbench.core.protocols.rcp.classify import classify_arrays
from workbench.core.protocols.rcp.config import RcpConfig, RcpOptions
from workbench.core.protocols.rcp.run import RcpRunConfig
from workbench.core.runs.batch import expand_batch, is_batch
from workbench.core.runs.config import (
    RunConfigArm,
    RunConfigCons,
    RunConfigFindings,
    RunConfigRcp,
    parse_run_config,
    protocol_generator,
)

REPO = Path(__file__).resolve().parents[2]
# Every run configuration shipped: not the demo's panel, the samples' manifest, or the files of the
# human steps a sample takes (a conductor's decisions, a reviewer's findings review, audit notes).
NOT_CONFIGS = ("demo_project.json", "samples.json", ".decisions.json", ".review.json", ".notes.json")
# Study files and their bases (a base may leave the query to the study's items) are checked whole
# in tests/core/test_study_file.py.
SAMPLES = sorted(p for p in (REPO / "sample_runs").glob("*.json")
                 if not p.name.endswith(NOT_CONFIGS) and not p.name.startswith("study-"))
PROTOCOLS = REPO / "workbench" / "core" / "protocols"


def rcp(**extra) -> dict:
    return {"protocol": "rcp", "query": "Close the centre to cars?", "seed": 3,
            "providers": {"sim": {"model": "sim"}, "local": {"model": "openai/m", "api_base": "http://127.0.0.1:9/v1"}},
            "clusters": [{"name": "advocate", "agents": [{"id": "a1", "provider": "sim"}, {"id": "a2", "provider": "sim"}]},
                         {"name": "critic", "agents": [{"id": "c1", "provider": "sim"}, {"id": "c2", "provider": "local"}]}],
            **extra}


def panel(*roles: str) -> list[dict]:
    return [{"name": "panel", "agents": [{"id": r, "provider": "sim", "role": r} for r in roles]}]


def other(protocol: str, **extra) -> dict:
    base = {"protocol": protocol, "query": "Single file or split?", "providers": {"sim": {"model": "sim"}}}
    if protocol == "arm":
        return {**base, "clusters": panel("alpha", "beta", "gamma", "silent"), **extra}
    base["clusters"] = panel("scout", "auditor", "dev")
    if protocol == "cons":
        return {**base, "options": ["single", "split"], **extra}
    return {**base, "findings": [{"id": "f1", "claim": "The map is one file."}], **extra}


def refused(data: dict) -> InputError:
    with pytest.raises(InputError) as err:
        parse_run_config(data)
    return err.value


# ----- every configuration we ship or store parses, and parses back ------------------------------
@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_configs_parse_and_round_trip(path):
    from workbench.core.runs.config import read_config_file

    data = read_config_file(path)  # as rwb run reads it: a dataset or a template file beside it read
    configs = [r.config for r in expand_batch(data)[1]] if is_batch(data) else [parse_run_config(data)]
    for cfg in configs:
        stored = json.loads(json.dumps(cfg.model_dump(mode="json", by_alias=True)))  # runs.config_json
        assert parse_run_config(stored) == cfg
        assert parse_run_config(stored, stored=True) == cfg


@pytest.mark.parametrize("data, kind", [(rcp(), RunConfigRcp), (other("arm"), RunConfigArm),
                                        (other("cons"), RunConfigCons), (other("findings"), RunConfigFindings)])
def test_each_protocol_has_its_own_model_and_round_trips(data, kind):
    data = {**data, "notes": "Free text goes here.", "echo": {"interval": 4}}
    cfg = parse_run_config(data)
    assert type(cfg) is kind and cfg.notes == "Free text goes here." and cfg.echo.interval == 4
    stored = cfg.model_dump(mode="json", by_alias=True)
    assert stored["protocol"] == data["protocol"] and "notes" in stored
    assert parse_run_config(json.loads(json.dumps(stored))) == cfg
    next(protocol_generator(cfg))  # and it makes the protocol's generator


def test_attribute_names_downstream_code_reads():
    cfg = parse_run_config(rcp(theta=0.7, tau=1, reference="critic"))
    assert (cfg.theta, cfg.tau, cfg.reference, cfg.weighted, cfg.ballot_mode, cfg.refinement_rounds) == \
        (0.7, 1.0, "critic", False, False, 0)
    assert [a.id for a in cfg.agents] == ["a1", "a2", "c1", "c2"] and cfg.agent("c2").provider == "local"
    assert not cfg.simulated and cfg.dispatch == "concurrent" and cfg.cache is False and cfg.echo is None
    cons = parse_run_config(other("cons", consensus_threshold=1, min_voters=2))
    assert (cons.question_id, cons.options, cons.consensus_threshold, cons.count_threshold, cons.min_voters,
            cons.max_challenge_rounds) == ("CONS-001", ["single", "split"], 1.0, 0.8, 2, 2)
    findings = parse_run_config(other("findings", threshold=-0.5))
    assert (findings.threshold, findings.findings_from_run, findings.findings_tiers) == (-0.5, None, [])
    assert findings.findings == [{"id": "f1", "claim": "The map is one file."}]
    arm = parse_run_config(other("arm", arm={"fap_max_attempts": 3, "budgets": {"r1": 100}}))
    assert arm.arm.fap_max_attempts == 3 and arm.arm["fap_max_attempts"] == 3
    assert arm.arm.budgets.r1 == 100 and arm.arm.budgets.r2 == ArmOptions().budgets.r2
    assert arm.role_providers() == {"alpha": "sim", "beta": "sim", "gamma": "sim"}


def test_a_json_integer_is_a_number_but_a_boolean_or_a_string_is_not():
    assert parse_run_config(rcp(tau=1, theta=1)).tau == 1.0
    assert refused(rcp(theta=True)).field == "theta"
    assert refused(rcp(tau="0.7")).field == "tau"
    assert refused(other("cons", min_voters=True)).field == "min_voters"
    assert refused(other("cons", min_voters=2.0)).field == "min_voters"
    assert refused(other("findings", threshold=False)).field == "threshold"
    assert refused(rcp(seed=True)).field == "seed"
    err = refused(rcp(providers={"sim": {"model": "sim", "max_concurrency": True}}))
    assert err.field == "providers.sim.max_concurrency"


# ----- unknown keys: refused with their path ---------------------------------------------------
@pytest.mark.parametrize("change, field", [
    (lambda d: d.update(temprature=0.2), "temprature"),
    (lambda d: d["providers"]["local"].update(temprature=0.2), "providers.local.temprature"),
    (lambda d: d["clusters"][1]["agents"][0].update(temprature=0.2), "clusters[1].agents[0].temprature"),
    (lambda d: d["clusters"][0].update(temprature=0.2), "clusters[0].temprature"),
    (lambda d: d.update(echo={"temprature": 0.2}), "echo.temprature"),
    (lambda d: d.update(threshold=0.6), "threshold"),  # a findings option in an RCP run
])
def test_an_unknown_key_is_refused_with_its_path(change, field):
    data = rcp()
    change(data)
    err = refused(data)
    assert err.field == field and "unknown key" in err.message


def test_the_panels_reference_cluster_goes_with_any_protocol():
    """A project's panel marks its reference cluster; a saved CONS configuration run on that panel keeps it."""
    cfg = parse_run_config(other("cons", reference="panel"))
    assert cfg.reference == "panel"
    assert str(refused(other("cons", reference="judge"))) == "reference: no cluster named 'judge'"


def test_unknown_keys_in_the_other_protocols():
    assert refused(other("arm", arm={"temprature": 1})).field == "arm.temprature"
    assert refused(other("cons", tau=0.6)).field == "tau"
    assert refused(other("findings", findings=[{"id": "f", "claim": "c", "temprature": 1}])).field == \
        "findings[0].temprature"


# ----- the rules, each found before any call ----------------------------------------------------
@pytest.mark.parametrize("data, message", [
    (rcp(tau=0.4), "tau: must be greater than 0.5 and at most 1, got 0.4"),
    (rcp(tau=1.2), "tau: must be greater than 0.5 and at most 1, got 1.2"),
    (rcp(theta=0), "theta: must be greater than 0 and at most 1, got 0"),
    (rcp(reference="judge"), "reference: no cluster named 'judge'"),
    (rcp(refinement_rounds=6), "refinement_rounds: must be at most 5, got 6"),
    (other("cons", consensus_threshold=1.5), "consensus_threshold: must be at most 1, got 1.5"),
    (other("cons", count_threshold=0), "count_threshold: must be greater than 0, got 0"),
    (other("cons", min_voters=0), "min_voters: must be at least 1, got 0"),
    (other("cons", max_challenge_rounds=-1), "max_challenge_rounds: must be at least 0, got -1"),
    (other("cons", options=[]), "options: must not be empty"),
    (other("cons", options=["a", "a"]), "options[1]: duplicate option 'a' (also options[0])"),
    (other("cons", query=" "), "query: required: the question a CONS run puts to its agents"),
    (other("findings", threshold=2), "threshold: must be at most 1, got 2"),
    (other("findings", findings=[]), "findings: at least one finding is required (or findings_from_run)"),
    (other("findings", findings=[{"id": "f", "claim": "x"}, {"id": "f", "claim": "y"}]),
     "findings[1].id: duplicate finding id 'f' (also findings[0])"),
    (other("findings", findings=[{"id": "f", "claim": "x", "threshold": -3}]),
     "findings[0].threshold: must be at least -1, got -3"),
    (other("findings", findings_from_run="r1", findings=[], findings_tiers=["loud"]), "findings_tiers[0]: must be one of"),
    (other("arm", clusters=panel("alpha", "beta")), "clusters: no agent has the role 'gamma'"),
    (other("arm", arm={"silent_provider": "nowhere"}), "arm.silent_provider: no provider named 'nowhere'"),
    (other("arm", arm={"dispatch": "parallel"}), "arm.dispatch: must be one of 'sequential' or 'concurrent'"),
    (other("arm", arm={"fap_max_attempts": 0}), "arm.fap_max_attempts: must be at least 1, got 0"),
    (rcp(echo={"patterns": {"a9": "stateless"}}), "echo.patterns.a9: no such agent"),
    (rcp(echo={"interval": 0}), "echo.interval: must be at least 1, got 0"),
    ({"query": "q", "providers": {}, "clusters": []}, "protocol: must be one of rcp, arm, findings, cons"),
    ({**rcp(), "protocol": "raft"}, "protocol: must be one of rcp, arm, findings, cons, single, vote, debate, got \"raft\""),
])
def test_each_rule_names_its_field(data, message):
    assert str(refused(data)).startswith(message)


def test_panel_rules_every_protocol_keeps():
    data = rcp()
    data["clusters"][1]["name"] = "advocate"
    assert str(refused(data)) == "clusters[1].name: duplicate cluster name 'advocate' (also clusters[0])"
    data = rcp()
    data["clusters"][1]["agents"][0]["id"] = "a1"
    assert str(refused(data)) == "clusters[1].agents[0]: agent 'a1' is already in cluster 'advocate'"
    data = other("cons")
    data["clusters"][0]["agents"][2]["id"] = "scout"
    assert str(refused(data)) == "clusters[0].agents[2]: agent 'scout' is listed twice"
    data = rcp()
    data["clusters"][1]["agents"][1]["provider"] = "openai"
    assert str(refused(data)) == "clusters[1].agents[1].provider: no provider named 'openai' (providers: local, sim)"
    data = rcp()
    data["clusters"][0]["agents"][0]["params"] = {"stance": 3}
    assert refused(data).field == "clusters[0].agents[0].params.stance"  # the simulated panel's persona
    data = rcp()
    data["clusters"][1]["theta"] = 1.5
    assert str(refused(data)).startswith("clusters[1].theta: must be greater than 0 and at most 1")


# ----- stored configurations -------------------------------------------------------------------
def test_a_configuration_stored_by_the_earlier_single_model_still_resumes():
    """Before each protocol had its own model, one model held (and dumped) every protocol's fields."""
    old = {**rcp(), "theta": 0.5, "tau": 0.6, "weighted": False, "reference": None, "ballot_mode": False,
           "refinement_rounds": 0, "findings": [], "findings_from_run": None, "findings_tiers": [],
           "threshold": 0.6, "question_id": "CONS-001", "options": [], "consensus_threshold": 0.8,
           "min_voters": 3, "max_challenge_rounds": 2, "arm": {}, "label": "", "cache": False, "echo": None}
    assert refused(copy.deepcopy(old)).field in ("findings", "findings_from_run", "findings_tiers", "threshold",
                                                 "question_id", "options", "consensus_threshold", "min_voters",
                                                 "max_challenge_rounds", "arm")
    assert parse_run_config(old, stored=True) == parse_run_config(rcp())
    assert refused({**old, "temprature": 1}).field  # only the old model's own keys are forgiven


# ----- each default defined once: everything else takes it from the protocol's config model ------
def dataclass_defaults(cls) -> dict:
    out = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def test_rcp_defaults_come_from_its_options_model():
    options = RcpOptions().model_dump()
    assert dataclass_defaults(RcpRunConfig) == options
    assert {k: RcpConfig.model_fields[k].default for k in ("theta", "tau", "weighted", "reference")} == \
        {k: options[k] for k in ("theta", "tau", "weighted", "reference")}
    params = inspect.signature(classify_arrays).parameters
    assert (params["thetas"].default, params["tau"].default) == (options["theta"], options["tau"])


def test_cons_defaults_come_from_its_options_model():
    options = ConsOptions.model_fields
    run = dataclass_defaults(ConsRunConfig)
    question = ConsQuestion.model_fields
    for name in ("consensus_threshold", "count_threshold", "min_voters", "max_challenge_rounds"):
        assert run[name] == question[name].default == options[name].default, name


def test_findings_defaults_come_from_its_options_model():
    default = FindingsOptions.model_fields["threshold"].default
    assert dataclass_defaults(FindingsRunConfig)["threshold"] == default
    assert FindingsPayload.model_fields["threshold"].default == default
    assert FindingsBook().threshold == default


def test_arm_defaults_come_from_its_options_model():
    defaults = ArmOptions().model_dump()
    run = dataclass_defaults(ArmRunConfig)
    for name, value in run.items():
        if name != "dispatch":  # the generator's own default is ARM's sequential dispatch
            assert value == defaults[name], name
    assert run["dispatch"] == "sequential" and defaults["dispatch"] is None  # None: the run's dispatch
    assert ArmRunConfig("q", {"alpha": "a", "beta": "b", "gamma": "c"}, budgets={"r1": 9}).budgets == \
        {**defaults["budgets"], "r1": 9}


def test_echo_defaults_come_from_its_options_model():
    options = EchoOptions()
    assert EchoPlan.model_fields["interval"].default == options.interval
    assert EchoPlan.model_fields["project"].default == options.project


# ----- the protocol packages ---------------------------------------------------------------------
def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def protocol_modules() -> dict[str, Path]:
    return {module_name(p): p for p in PROTOCOLS.rglob("*.py")}


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """Every module ``path`` imports, at any depth (inside functions and TYPE_CHECKING too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in known)
    return {m for m in found if m in known}


def test_protocols_do_not_import_each_other():
    known = protocol_modules()
    for name, path in known.items():
        parts = name.split(".")
        if len(parts) < 4 or parts[3] == "shared":
            continue
        package = ".".join(parts[:4])
        strays = {m for m in imports(path, known)
                  if len(m.split(".")) >= 4 and not m.startswith((package, "workbench.core.protocols.shared"))}
        assert not strays, f"{name} imports {sorted(strays)}"


def test_no_import_cycle_in_the_protocols():
    known = protocol_modules()
    graph = {name: imports(path, known) - {name} for name, path in known.items()}
    done: set[str] = set()

    def visit(node: str, trail: list[str]) -> None:
        if node in trail:
            pytest.fail("import cycle: " + " -> ".join(trail[trail.index(node):] + [node]))
        if node in done:
            return
        for nxt in sorted(graph[node]):
            visit(nxt, [*trail, node])
        done.add(node)

    for name in sorted(graph):
        visit(name, [])
