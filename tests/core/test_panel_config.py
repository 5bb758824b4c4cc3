"""Provider configuration keeps keys out: it names where a key lives, never the key."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from workbench.core.project import _sql
from workbench.core.project.store import Store
from workbench.core.runs.providers import ClusterConfig, ProviderConfig

SECRET = "sk-live-THIS-IS-A-SECRET-9f8e7d6c5b4a"


def test_a_pasted_key_is_refused_where_a_variable_name_belongs():
    with pytest.raises(ValidationError, match="must name an environment variable"):
        ProviderConfig(name="openai", model="gpt-4o", api_key_env=SECRET)


def test_there_is_no_field_for_a_key_value():
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        ProviderConfig.model_validate({"name": "openai", "model": "gpt-4o", "api_key": SECRET})


def test_spec_provider_shape_is_accepted():
    local = ProviderConfig.model_validate({
        "name": "local", "model": "openai/any-model", "api_base": "http://127.0.0.1:8011/v1",
        "api_key_env": "LOCAL_LLM_KEY", "max_concurrency": 8, "rpm": 600, "timeout_s": 60, "max_retries": 4})
    assert local.key_env == "LOCAL_LLM_KEY" and not local.simulated
    assert ProviderConfig(name="sim", model="sim").simulated
    with pytest.raises(ValidationError):
        ProviderConfig(name="x", model="m", max_retries=-1)
    assert ProviderConfig(name="x", model="m", max_retries=0).max_retries == 0  # zero retries is allowed


def test_the_key_never_reaches_the_project_file(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCAL_LLM_KEY", SECRET)
    store = Store.create(tmp_path / "p.rwb")
    provider = ProviderConfig(name="local", model="openai/m", api_key_env="LOCAL_LLM_KEY")
    _sql.insert(store, "providers", provider.record())
    store.close_connection()
    data = (tmp_path / "p.rwb").read_bytes()
    assert b"LOCAL_LLM_KEY" in data and SECRET.encode() not in data


def test_cluster_config_validates_theta_and_weight():
    with pytest.raises(ValidationError):
        ClusterConfig(name="c", agents=[], theta=1.5)
    with pytest.raises(ValidationError):
        ClusterConfig(name="c", agents=[], weight=0)
