"""A configuration that cannot work is refused before anything is spent (SPEC §6: exit 2, nothing spent).

Each refusal is checked three ways: ``rwb run`` exits 2 with one line naming the field, the
loopback provider received no request at all, and the project file holds no run and no call.
The same check guards ``rwb resume``, batches, the GUI's start and a direct :class:`Runner` user.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.support.fake_llm_server import FakeLLMServer, Reply
from workbench.cli import main
from workbench.core.errors import InputError
from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config
from workbench.services.runs.preflight import preflight
from workbench.services.runs.runner import Runner

KEY = "RWB_PREFLIGHT_TEST_KEY"
SECRET = "sk-preflight-SECRET-0123456789abcdef"


@pytest.fixture
def server():
    with FakeLLMServer(default=Reply(text='{"vote": "YES", "reason": "fine"}')) as s:
        yield s


@pytest.fixture
def env(monkeypatch):
    """The key is set; no ambient cloud key can make a refusal pass."""
    monkeypatch.setenv(KEY, SECRET)
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def project(tmp_path) -> Path:
    path = tmp_path / "study.rwb"
    Store.create(path).close_connection()
    return path


def counts(path: Path) -> dict[str, int]:
    """Rows in the project file, read the way another process would."""
    with sqlite3.connect(path) as db:
        return {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("runs", "llm_calls", "batches")}


NOTHING = {"runs": 0, "llm_calls": 0, "batches": 0}


def rcp(base_url: str, **extra) -> dict:
    agents = lambda p: [{"id": f"{p}{i}", "provider": "local", "persona": f"Agent {p}{i}."} for i in (1, 2)]
    return {"protocol": "rcp", "query": "Close the centre to cars?", "seed": 3,
            "providers": {"local": {"model": "openai/fake-model", "api_base": base_url, "api_key_env": KEY,
                                    "timeout_s": 10, "max_retries": 0}},
            "clusters": [{"name": "advocate", "agents": agents("a")}, {"name": "critic", "agents": agents("c")}],
            **extra}


def cons(base_url: str, **extra) -> dict:
    data = {**rcp(base_url), "protocol": "cons", "options": ["close", "keep open"], **extra}
    data["clusters"] = [{"name": "panel", "agents": [a for c in data["clusters"] for a in c["agents"]]}]
    return data


def findings(base_url: str, **extra) -> dict:
    data = {**cons(base_url), "protocol": "findings", "findings": [{"id": "f1", "claim": "Traffic falls."}], **extra}
    del data["options"]
    return data


def rwb(capsys, tmp_path: Path, *args: str, config: dict | None = None) -> tuple[int, str, str]:
    argv = list(args)
    if config is not None:
        path = tmp_path / "run.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        argv[1:1] = [str(path)]
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def mutate(fn):
    def make(base_url: str) -> dict:
        data = rcp(base_url)
        fn(data)
        return data
    return make


def set_path(path: tuple, value):
    def fn(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return mutate(fn)


def with_cloud_provider(data):
    data["providers"]["openai"] = {"model": "openai/gpt-4o-mini"}  # no key named, no api_base
    data["clusters"][1]["agents"][1]["provider"] = "openai"


REFUSED = [
    (set_path(("tau",), 0.4), "tau: must be greater than 0.5 and at most 1, got 0.4"),
    (set_path(("theta",), 1.5), "theta: must be greater than 0 and at most 1, got 1.5"),
    (set_path(("clusters", 1, "name"), "advocate"),
     "clusters[1].name: duplicate cluster name 'advocate' (also clusters[0])"),
    (set_path(("clusters", 1, "agents", 0, "id"), "a1"),
     "clusters[1].agents[0]: agent 'a1' is already in cluster 'advocate'"),
    (set_path(("reference",), "judge"), "reference: no cluster named 'judge'"),
    (set_path(("clusters", 1, "agents", 0, "provider"), "nowhere"),
     "clusters[1].agents[0].provider: no provider named 'nowhere' (providers: local)"),
    (set_path(("temprature",), 0.2), "temprature: unknown key"),
    (set_path(("providers", "local", "temprature"), 0.2), "providers.local.temprature: unknown key"),
    (lambda url: cons(url, consensus_threshold=1.5), "consensus_threshold: must be at most 1, got 1.5"),
    (lambda url: cons(url, min_voters=0), "min_voters: must be at least 1, got 0"),
    (lambda url: findings(url, threshold=2), "threshold: must be at most 1, got 2"),
    # preflight: the providers cannot be called
    (set_path(("providers", "local", "api_key_env"), "RWB_NOT_SET_ANYWHERE"),
     "providers.local.api_key_env: the environment variable RWB_NOT_SET_ANYWHERE is not set"),
    (set_path(("providers", "local", "model"), "fake-model"),
     "providers.local.model: litellm does not know which provider serves 'fake-model'"),
    (mutate(with_cloud_provider), "providers.openai.api_key_env: no key is named for 'openai/gpt-4o-mini' "
                                  "and OPENAI_API_KEY, which litellm would read, is not set"),
]


@pytest.mark.parametrize("make, message", REFUSED, ids=[m.split(":")[0] + "-" + str(i) for i, (_, m) in enumerate(REFUSED)])
def test_a_refused_run_exits_2_naming_the_field_and_spends_nothing(capsys, tmp_path, server, env, project,
                                                                   make, message):
    code, out, err = rwb(capsys, tmp_path, "run", "--project", str(project), "--quiet", config=make(server.base_url))
    assert code == 2
    assert err.startswith(f"rwb run: error: {message}") and err.count("\n") == 1, err
    assert out == ""  # no run id: there is no run
    assert server.requests == []  # not one request reached the provider
    assert counts(project) == NOTHING


def test_a_refused_run_does_not_even_create_the_project(capsys, tmp_path, server, env):
    path = tmp_path / "new.rwb"
    code, _, err = rwb(capsys, tmp_path, "run", "--project", str(path), config=rcp(server.base_url, tau=0.5))
    assert code == 2 and "tau:" in err and not path.exists()


def test_a_local_server_needs_no_key_and_the_run_goes(capsys, tmp_path, server, env, project):
    data = rcp(server.base_url)
    del data["providers"]["local"]["api_key_env"]  # no key named, an api_base on loopback
    code, out, err = rwb(capsys, tmp_path, "run", "--project", str(project), "--quiet", config=data)
    assert code == 0, err
    assert json.loads(out.splitlines()[-1])["status"] == "completed"
    assert len(server.chat_requests) == 4 + 4 * 3 and counts(project)["runs"] == 1
    assert all(r.headers["authorization"] == "Bearer no-key" for r in server.chat_requests)


def test_a_keyring_entry_that_cannot_be_read_is_refused(capsys, tmp_path, server, env, project):
    import keyring
    from keyring.backends.fail import Keyring as NoKeyring

    previous = keyring.get_keyring()
    keyring.set_keyring(NoKeyring())
    try:
        data = rcp(server.base_url)
        data["providers"]["local"]["key_keyring"] = data["providers"]["local"].pop("api_key_env")
        code, _, err = rwb(capsys, tmp_path, "run", "--project", str(project), config=data)
    finally:
        keyring.set_keyring(previous)
    assert code == 2 and err.startswith("rwb run: error: providers.local.key_keyring: the keyring entry ")
    assert server.requests == [] and counts(project) == NOTHING


def test_every_run_of_a_batch_is_checked_before_the_first_starts(capsys, tmp_path, server, env, project):
    data = rcp(server.base_url)
    with_cloud_provider(data)
    data["clusters"][1]["agents"][1]["provider"] = "local"
    data["batch"] = {"name": "mixes", "replicates": 2, "provider_mixes": [
        {"name": "local", "providers": {"*": "local"}},
        {"name": "cloud critic", "providers": {"c2": "openai", "*": "local"}}]}  # only the later runs
    code, out, err = rwb(capsys, tmp_path, "run", "--project", str(project), "--quiet", config=data)
    assert code == 2 and err.startswith("rwb run: error: providers.openai.api_key_env: ") and out == ""
    assert server.requests == [] and counts(project) == NOTHING

    data["batch"]["provider_mixes"][1]["providers"]["c2"] = "nowhere"  # invalid, not just uncallable
    code, _, err = rwb(capsys, tmp_path, "run", "--project", str(project), config=data)
    assert code == 2 and "provider: no provider named 'nowhere'" in err
    assert server.requests == [] and counts(project) == NOTHING


def test_resume_checks_the_stored_configuration_first(capsys, tmp_path, server, env, project):
    store = Store.open(project)
    try:
        run_id = Runner(store).create(parse_run_config(rcp(server.base_url)))  # created, never started
    finally:
        store.close_connection()
    env.delenv(KEY)
    code, out, err = rwb(capsys, tmp_path, "resume", run_id, "--project", str(project))
    assert code == 2 and err == (f"rwb resume: error: providers.local.api_key_env: the environment "
                                 f"variable {KEY} is not set\n") and out == ""
    assert server.requests == [] and counts(project)["llm_calls"] == 0
    with sqlite3.connect(project) as db:
        assert db.execute("SELECT status, owner_json FROM runs").fetchall() == [("interrupted", None)]


def test_a_direct_runner_user_is_refused_before_the_run_goes_running(tmp_path, server, env, project):
    store = Store.open(project)
    try:
        runner = Runner(store)
        run_id = runner.create(parse_run_config(rcp(server.base_url)))
        env.delenv(KEY)
        with pytest.raises(InputError) as err:
            runner.execute(run_id)
        assert err.value.field == "providers.local.api_key_env"
    finally:
        store.close_connection()
    assert server.requests == [] and counts(project)["llm_calls"] == 0
    with sqlite3.connect(project) as db:
        assert db.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]


def test_the_simulated_panel_and_a_person_need_no_check():
    cfg = parse_run_config({"protocol": "cons", "query": "q?", "options": ["a", "b"],
                            "providers": {"sim": {"model": "sim"}, "person": {"model": "manual"}},
                            "clusters": [{"name": "p", "agents": [{"id": "s", "provider": "sim"},
                                                                  {"id": "m", "provider": "person"}]}]})
    preflight(cfg)  # nothing to check, and nothing imported to check it


def test_only_the_providers_a_run_calls_are_checked(server, env):
    data = rcp(server.base_url)
    data["providers"]["unused"] = {"model": "no-such-model", "api_key_env": "RWB_NOT_SET_ANYWHERE"}
    preflight(parse_run_config(data))
    arm = {"protocol": "arm", "query": "q?", "providers": {**data["providers"], "sim": {"model": "sim"}},
           "clusters": [{"name": "arm", "agents": [{"id": r, "provider": "sim", "role": r}
                                                   for r in ("alpha", "beta", "gamma", "silent")]}],
           "arm": {"silent_provider": "unused"}}  # the silent baseline calls it
    with pytest.raises(InputError) as err:
        preflight(parse_run_config(arm))
    assert err.value.field == "providers.unused.model"


# ----- the GUI's start ---------------------------------------------------------------------------
def test_the_gui_refuses_through_failed_before_the_run_exists(qtbot, tmp_path, server, env, project):
    from workbench.services.project_model import ProjectModel
    from workbench.services.runs.service import RunService

    model = ProjectModel()
    service = RunService(model)
    try:
        with qtbot.waitSignal(model.opened, timeout=15_000):
            model.open(project)
        env.delenv(KEY)
        with qtbot.waitSignal(service.failed, timeout=15_000) as failed:
            assert service.start_config(parse_run_config(rcp(server.base_url)))
        assert failed.args[0] == (f"The run could not start: providers.local.api_key_env: the environment "
                                  f"variable {KEY} is not set")
        qtbot.waitUntil(lambda: not service.running, timeout=15_000)
    finally:
        service.shutdown()
        model.shutdown()
    assert server.requests == [] and counts(project) == NOTHING
