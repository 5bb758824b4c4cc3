"""Testing a provider's connection (services.llm.probe) and keeping keys in the keyring
(services.llm.keystore). Every call goes to the loopback fake server or to a dead port."""

from __future__ import annotations

import socket

import pytest

from tests.support.fake_keyring import fail_keyring, memory_keyring
from tests.support.fake_llm_server import FakeLLMServer, Reply
from workbench.services.llm import keystore
from workbench.services.llm.probe import PROBE_MAX_TOKENS, key_problem, probe_provider


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_local_server_that_answers_is_ok_in_one_short_call():
    with FakeLLMServer(default=Reply(text="OK", latency_s=0.02)) as server:
        result = probe_provider({"name": "local", "model": "openai/fake-model", "api_base": server.base_url,
                                 "max_retries": 5})
        assert result.ok and result.reply == "OK"
        assert result.message.startswith("OK: replied in ") and result.message.endswith(" ms")
        assert result.latency_ms >= 20
        [request] = server.requests  # one call, no retry
        assert request.body["max_tokens"] == PROBE_MAX_TOKENS and request.body["model"] == "fake-model"


def test_a_dead_port_gives_the_providers_own_error_after_one_attempt():
    base = f"http://127.0.0.1:{dead_port()}/v1"
    result = probe_provider({"name": "local", "model": "openai/fake-model", "api_base": base, "max_retries": 3})
    assert not result.ok and result.error_kind == "connection"
    assert "Connection error" in result.message or "refused" in result.message.lower()


def test_an_http_error_is_shown_as_the_server_said_it():
    with FakeLLMServer(default=Reply(status=401, error_message="Incorrect API key provided")) as server:
        result = probe_provider({"name": "local", "model": "openai/fake-model", "api_base": server.base_url})
    assert not result.ok and "401" in result.message and "Incorrect API key provided" in result.message


def test_a_typed_key_is_sent_and_never_shown():
    key = "sk-typed-but-not-stored-0123456789"
    with FakeLLMServer(default=Reply(status=403, error_message=f"key {key} is not allowed")) as server:
        result = probe_provider({"name": "local", "model": "openai/fake-model", "api_base": server.base_url},
                                api_key=key)
        assert server.requests[0].headers["authorization"] == f"Bearer {key}"
    assert key not in result.message and "[REDACTED]" in result.message


def test_sim_and_a_bad_provider_need_no_network():
    assert probe_provider({"name": "sim", "model": "sim"}).ok
    bad = probe_provider({"name": "x", "model": "openai/x", "key_env": "sk-this-is-a-key-not-a-name"})
    assert not bad.ok and "api_key_env" in bad.message


def test_key_problem_is_the_preflights_check_without_the_network(monkeypatch):
    from workbench.services.runs import preflight

    monkeypatch.setattr(preflight, "probe", lambda *a, **k: pytest.fail("the key check probed the network"))
    monkeypatch.delenv("RWB_PROBE_TEST_KEY", raising=False)
    provider = {"name": "gpt", "model": "openai/gpt-4o-mini", "key_env": "RWB_PROBE_TEST_KEY",
                "api_base": "http://127.0.0.1:9/v1"}
    assert "RWB_PROBE_TEST_KEY is not set" in key_problem(provider)
    monkeypatch.setenv("RWB_PROBE_TEST_KEY", "sk-from-the-environment")
    assert key_problem(provider) is None
    assert key_problem({"name": "sim", "model": "sim"}) is None
    assert key_problem({"name": "local", "model": "openai/x", "api_base": "http://127.0.0.1:9/v1"}) is None


def test_the_keyring_stores_a_key_under_the_workbench_service():
    with memory_keyring() as backend:
        status = keystore.keyring_status()
        assert status.available and "MemoryKeyring" in status.backend
        assert keystore.store_key("openai", "sk-secret-0123456789") == "openai"
        assert backend.passwords == {("resonance-workbench", "openai"): "sk-secret-0123456789"}
        assert keystore.has_key("openai") and not keystore.has_key("other")
        assert key_problem({"name": "openai", "model": "openai/gpt-4o-mini", "key_keyring": "openai"}) is None


def test_without_a_keyring_backend_the_status_says_so():
    with fail_keyring():
        status = keystore.keyring_status()
        assert not status.available and "fail" in status.backend and "no OS keyring" in status.reason
        with pytest.raises(RuntimeError, match="refused"):
            keystore.store_key("openai", "sk-secret-0123456789")
        assert not keystore.has_key("openai")


def test_the_key_variables_known_without_litellm_are_litellms_own(monkeypatch):
    """probe.KEY_VARIABLES says "no key" at once without importing litellm: it must name the very
    variables litellm reads (checked against the pinned release)."""
    import os

    import litellm

    from workbench.services.llm.probe import KEY_VARIABLES, key_variables

    for name in {n for names in KEY_VARIABLES.values() for n in names}:
        monkeypatch.delenv(name, raising=False)
    for prefix, names in KEY_VARIABLES.items():
        found = litellm.validate_environment(model=f"{prefix}/some-model")
        assert sorted(found["missing_keys"]) == sorted(names), prefix
    assert key_variables("gpt-4o-mini") == ("OPENAI_API_KEY",) and key_variables("ollama/llama3") == ()
    assert os.environ.get("OPENAI_API_KEY") is None


def test_missing_credentials_are_found_without_the_network(monkeypatch):
    from workbench.services.llm.probe import missing_credentials

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("RWB_TEST_KEY", raising=False)
    cloud = {"name": "gpt", "model": "openai/gpt-4o-mini"}
    assert "OPENAI_API_KEY, which is not set" in missing_credentials(cloud)
    assert missing_credentials(cloud, api_key="sk-typed-0123456789") is None  # a key typed in the dialog
    named = {**cloud, "key_env": "RWB_TEST_KEY"}
    assert "RWB_TEST_KEY is not set" in missing_credentials(named)
    monkeypatch.setenv("RWB_TEST_KEY", "sk-test-0123456789")
    assert missing_credentials(named) is None
    assert missing_credentials({"name": "local", "model": "openai/m", "api_base": "http://127.0.0.1:1/v1"}) is None
    assert missing_credentials({"name": "sim", "model": "sim"}) is None
    assert missing_credentials({"name": "x", "model": "somecloud/m"}) is None  # not known here: the probe decides
    assert missing_credentials({**cloud, "key_keyring": "gpt"}, keyring=False) is None  # left to the worker
