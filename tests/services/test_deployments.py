"""A provider's ``deployments`` (SPEC §6): several servers behind one provider name, served by
litellm's Router through the gateway. Two loopback servers stand in for two machines."""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.runs.test_runner_loopback import model_reply
from tests.support.fake_llm_server import FakeLLMServer, Reply
from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config
from workbench.core.runs.providers import ProviderConfig
from workbench.services.llm.gateway import Gateway
from workbench.services.llm.limits import Backoff
from workbench.services.runs.runner import Runner

KEY_A = "sk-deployment-A-0123456789abcdef"
KEY_B = "sk-deployment-B-fedcba9876543210"


def _config(a, b, *, per_deployment=2, **provider):
    agents = lambda c: [{"id": f"{c}{i}", "provider": "local", "persona": f"{c} {i}."} for i in range(3)]
    return parse_run_config({
        "protocol": "rcp", "query": "Should the city close its downtown to private cars?", "seed": 7,
        "dispatch": "concurrent",
        "providers": {"local": {"model": "openai/fake-model", "max_concurrency": 4, "timeout_s": 10,
                                "max_retries": 3, **provider,
                                "deployments": [
                                    {"api_base": a.base_url, "api_key_env": "DEP_KEY_A",
                                     "max_concurrency": per_deployment},
                                    {"api_base": b.base_url, "api_key_env": "DEP_KEY_B",
                                     "max_concurrency": per_deployment}]}},
        "clusters": [{"name": "advocate", "agents": agents("a")}, {"name": "critic", "agents": agents("c")}]})


@pytest.fixture
def servers(monkeypatch):
    monkeypatch.setenv("DEP_KEY_A", KEY_A)
    monkeypatch.setenv("DEP_KEY_B", KEY_B)
    with FakeLLMServer(default=Reply(text=model_reply, latency_s=0.1)) as a, \
            FakeLLMServer(default=Reply(text=model_reply, latency_s=0.1)) as b:
        yield a, b


def _run(tmp_path, cfg):
    store = Store.create(tmp_path / "p.rwb")
    try:
        runner = Runner(store)
        run_id = runner.create(cfg)
        summary = runner.execute(run_id)
        calls = _sql.rows(store, "llm_calls", "run_id = ?", (run_id,))
        return summary, calls
    finally:
        store.close_connection()


def _request(call: dict) -> dict:
    value = call["request_json"]
    return json.loads(value) if isinstance(value, str) else value


# -- configuration -----------------------------------------------------------------------------

def _error(deployments, **provider):
    with pytest.raises(InputError) as caught:
        parse_run_config({"protocol": "rcp", "query": "q", "seed": 1,
                          "providers": {"local": {"model": "openai/m", **provider, "deployments": deployments}},
                          "clusters": [{"name": "c", "agents": [{"id": "a", "provider": "local"}]}]})
    return caught.value


def test_deployments_are_validated_with_their_path():
    e = _error([{"api_base": "http://10.0.0.1:8000/v1"}, {"model": "openai/other"}])
    assert e.field == "providers.local.deployments[1].api_base"
    assert _error([{"api_base": "ftp://x"}]).field == "providers.local.deployments[0].api_base"
    assert _error([{"api_base": "http://x/v1", "tpm": 0}]).field == "providers.local.deployments[0].tpm"
    assert _error([{"api_base": "http://x/v1", "max_concurrency": 0}]).field.endswith("deployments[0].max_concurrency")
    assert _error([{"api_base": "http://x/v1", "colour": "red"}]).field.endswith("deployments[0].colour")
    pasted = _error([{"api_base": "http://x/v1", "api_key_env": "sk-pasted-key"}])
    assert pasted.field.endswith("deployments[0].api_key_env") and "sk-pasted-key" not in pasted.message
    assert _error([{"api_base": "http://x/v1"}], model="sim").field == "providers.local.deployments"
    assert _error([{"api_base": "http://x/v1"}], api_base="http://y/v1").field == "providers.local.api_base"


def test_deployments_default_to_the_provider_and_are_stored_with_it():
    p = ProviderConfig.model_validate({"name": "local", "model": "openai/m", "timeout_s": 30.0, "deployments": [
        {"api_base": "http://a:1/v1", "api_key_env": "K", "rpm": 5}, {"api_base": "http://b:1/v1", "model": "openai/n"}]})
    assert p.deployments[0].model is None and p.deployments[1].model == "openai/n"
    assert p.options()["deployments"] == [{"api_base": "http://a:1/v1", "api_key_env": "K", "rpm": 5},
                                          {"api_base": "http://b:1/v1", "model": "openai/n"}]
    assert "deployments" not in ProviderConfig(name="x", model="openai/m").options()  # none: nothing stored


# -- routing and failover ----------------------------------------------------------------------

def test_a_run_is_spread_over_both_deployments_with_their_own_keys_and_limits(tmp_path, servers):
    a, b = servers
    summary, calls = _run(tmp_path, _config(a, b))
    assert summary["status"] == "completed" and summary["calls"] == 36 and summary["failed_calls"] == 0
    assert len(calls) == 36 and all(c["status"] == "ok" for c in calls)  # 0 lost
    served_a, served_b = len(a.chat_requests), len(b.chat_requests)
    assert served_a > 0 and served_b > 0 and served_a + served_b == 36
    assert a.max_in_flight <= 2 and b.max_in_flight <= 2  # each deployment's own max_concurrency
    # each deployment's key went to its own server only
    assert {r.headers["authorization"] for r in a.chat_requests} == {f"Bearer {KEY_A}"}
    assert {r.headers["authorization"] for r in b.chat_requests} == {f"Bearer {KEY_B}"}
    # each stored call names the deployment that answered
    bases = [_request(c)["api_base"] for c in calls]
    assert bases.count(a.base_url) == served_a and bases.count(b.base_url) == served_b
    project = (tmp_path / "p.rwb").read_bytes()
    assert KEY_A.encode() not in project and KEY_B.encode() not in project


def test_a_deployment_stopped_mid_run_loses_no_call(tmp_path, servers):
    a, b = servers
    stopped = threading.Event()

    def stop_b_after_a_few() -> None:
        while len(b.chat_requests) < 4:
            time.sleep(0.01)
        b.stop()
        stopped.set()

    killer = threading.Thread(target=stop_b_after_a_few, daemon=True)
    killer.start()
    summary, calls = _run(tmp_path, _config(a, b))
    killer.join(5)
    assert stopped.is_set()
    assert summary["status"] == "completed" and summary["failed_calls"] == 0, summary
    assert len(calls) == 36 and all(c["status"] == "ok" for c in calls)  # retried on the other deployment
    assert len(a.chat_requests) >= 36 - len(b.chat_requests)
    retried = [c for c in calls if c["attempts"] > 1]
    assert all(_request(c)["api_base"] == a.base_url for c in retried)


def test_a_provider_without_deployments_builds_no_router(servers):
    a, _ = servers
    gw = Gateway({"one": {"model": "openai/fake-model", "api_base": a.base_url}}, backoff=Backoff(0.01, 0.05))
    result = gw.call("one", [{"role": "user", "content": "hello"}])
    assert result.ok and result.deployment is None and "deployment" not in result.meta()
    assert gw._deployments == {}


def test_the_gateway_names_the_deployment_and_skips_one_that_failed(servers):
    a, b = servers
    b.default = Reply(status=503, error_message="overloaded")
    gw = Gateway({"local": {"model": "openai/fake-model", "max_retries": 2, "deployments": [
        {"api_base": a.base_url, "api_key_env": "DEP_KEY_A"}, {"api_base": b.base_url, "api_key_env": "DEP_KEY_B"}]}},
        backoff=Backoff(0.01, 0.05))
    results = [gw.call("local", [{"role": "user", "content": f"hello {i}"}]) for i in range(8)]
    assert all(r.ok and r.api_base == a.base_url and r.deployment == 0 for r in results)
    assert all(r.key_source == "env:DEP_KEY_A" for r in results)
    assert len(b.chat_requests) <= 1  # one failure, then it cools down and every retry lands on a
    assert KEY_A not in str([r.to_dict() for r in results]) and KEY_B not in str([r.to_dict() for r in results])


def test_a_router_leaves_an_unpriced_model_unknown_not_free():
    """litellm's Router registers its deployments' models in the global price map with no price,
    which would make every later call of that model cost $0; the gateway puts the map back."""
    from workbench.services.llm import prices
    from workbench.services.llm.gateway import _load

    litellm = _load()
    before = dict(litellm.model_cost)
    gw = Gateway({"p": {"model": "openai/unpriced-test-model", "max_retries": 0, "timeout_s": 2, "deployments": [
        {"api_base": "http://127.0.0.1:9/v1"}, {"api_base": "http://127.0.0.1:10/v1"}]}})
    gw.call("p", [{"role": "user", "content": "hi"}], max_tokens=1)  # builds the Router; refused at once
    assert litellm.model_cost == before
    assert prices.cost("openai/unpriced-test-model", 10, 10) is None
