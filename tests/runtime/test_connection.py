"""Where a mnemos process connects: MNEMOS_TEMPORAL__ADDRESS / NAMESPACE when set, else Temporal's
environment configuration (TEMPORAL_* variables, a profile of a TOML file), else mnemos' defaults;
API keys and TLS from Temporal's configuration. No server needed but for the last test."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.service import TLSConfig
from temporalio.testing import WorkflowEnvironment

from memory.settings import Settings, TemporalSettings
from runtime.connection import TemporalConfigError, connect, connect_config

CLOUD = {
    "TEMPORAL_ADDRESS": "acme.a1b2c.tmprl.cloud:7233",
    "TEMPORAL_NAMESPACE": "acme.a1b2c",
    "TEMPORAL_API_KEY": "secret-key",
}
PROFILES = """
[profile.default]
address = "default.example:7233"

[profile.prod]
address = "prod.example:7233"
namespace = "prod"
[profile.prod.tls]
server_name = "prod.internal"
"""


@pytest.fixture
def no_file(tmp_path: Path) -> dict[str, str]:
    """An environment without Temporal's variables, whose config file does not exist."""
    return {"TEMPORAL_CONFIG_FILE": str(tmp_path / "absent.toml")}


@pytest.fixture
def profiles(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "temporal.toml"
    path.write_text(PROFILES)
    return {"TEMPORAL_CONFIG_FILE": str(path)}


def test_nothing_configured_means_mnemos_defaults(no_file: dict[str, str]) -> None:
    config = connect_config(TemporalSettings(), env=no_file)
    assert config == {"target_host": "127.0.0.1:7233", "namespace": "default"}


def test_temporal_variables_fill_in_what_mnemos_settings_leave_unset(
    no_file: dict[str, str],
) -> None:
    config = connect_config(TemporalSettings(), env={**no_file, **CLOUD})
    assert config["target_host"] == "acme.a1b2c.tmprl.cloud:7233"
    assert config["namespace"] == "acme.a1b2c"
    assert config["api_key"] == "secret-key"
    assert config["tls"] is True  # an API key turns TLS on: Temporal Cloud


def test_mnemos_settings_that_are_set_win_and_keep_the_api_key(
    no_file: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMOS_TEMPORAL__ADDRESS", "temporal.internal:7233")
    monkeypatch.setenv("MNEMOS_TEMPORAL__NAMESPACE", "mnemos")
    config = connect_config(Settings().temporal, env={**no_file, **CLOUD})
    assert config["target_host"] == "temporal.internal:7233"
    assert config["namespace"] == "mnemos"
    assert config["api_key"] == "secret-key" and config["tls"] is True


def test_a_mnemos_setting_equal_to_its_default_still_counts_as_set(
    no_file: dict[str, str],
) -> None:
    config = connect_config(TemporalSettings(address="127.0.0.1:7233"), env={**no_file, **CLOUD})
    assert config["target_host"] == "127.0.0.1:7233"
    assert config["namespace"] == "acme.a1b2c"  # not set on our side: Temporal's


def test_a_profile_of_the_config_file_gives_address_namespace_and_tls(
    profiles: dict[str, str],
) -> None:
    assert connect_config(TemporalSettings(), env=profiles)["target_host"] == (
        "default.example:7233"
    )
    config = connect_config(TemporalSettings(), env={**profiles, "TEMPORAL_PROFILE": "prod"})
    assert config["target_host"] == "prod.example:7233"
    assert config["namespace"] == "prod"
    tls = config["tls"]
    assert isinstance(tls, TLSConfig) and tls.domain == "prod.internal"
    # Temporal's variables override the profile, as in every Temporal SDK.
    env = {**profiles, "TEMPORAL_PROFILE": "prod", "TEMPORAL_NAMESPACE": "other"}
    assert connect_config(TemporalSettings(), env=env)["namespace"] == "other"


def test_a_missing_profile_is_one_clear_error(profiles: dict[str, str]) -> None:
    with pytest.raises(TemporalConfigError, match="Profile 'staging' not found"):
        connect_config(TemporalSettings(), env={**profiles, "TEMPORAL_PROFILE": "staging"})


def test_the_local_stack_ignores_temporal_configuration() -> None:
    cfg = TemporalSettings(address="127.0.0.1:7299")
    config = connect_config(cfg, env={**CLOUD, "TEMPORAL_PROFILE": "absent"}, local=True)
    assert config == {"target_host": "127.0.0.1:7299", "namespace": "default"}


async def test_a_worker_reaches_the_server_that_temporal_address_names(
    dev_env: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = dev_env.client.service_client.config.target_host
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(tmp_path / "absent.toml"))
    monkeypatch.setenv("TEMPORAL_ADDRESS", target)
    monkeypatch.delenv("MNEMOS_TEMPORAL__ADDRESS", raising=False)
    client = await connect(Settings().temporal)
    assert client.service_client.config.target_host == target
    assert await client.service_client.check_health()
