"""`mnemos keys create|list|revoke` (the Typer sub-app): in the memory store by default, in a
keys file with --keys-file."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment
from typer.testing import CliRunner

from cli import common as cli_common
from memory.logging import configure_logging
from memory.models import AgentConfig
from memory.settings import get_settings
from memory.store.sqlite import SQLiteStore
from serve import commands
from serve.commands import keys_app
from serve.keys import ApiKey, JsonFileKeyStore, StoreKeyStore
from tests.cli_lines import one_error_line


@pytest.fixture
def db_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "data" / "mnemos.db"
    monkeypatch.setenv("MNEMOS_STORE__BACKEND", "sqlite")
    monkeypatch.setenv("MNEMOS_STORE__SQLITE_PATH", str(path))
    monkeypatch.delenv("MNEMOS_API_KEYS_FILE", raising=False)
    get_settings.cache_clear()
    yield path
    get_settings.cache_clear()


def _verify_in_store(path: Path, token: str) -> ApiKey | None:
    async def verify() -> ApiKey | None:
        store = SQLiteStore(path)
        try:
            return await StoreKeyStore(store).verify(token)
        finally:
            await store.close()

    return asyncio.run(verify())


def test_create_list_revoke(tmp_path: Path, db_path: Path) -> None:
    _register(db_path, "eve", "bob")  # the agents are checked in the memory store
    path = tmp_path / "api_keys.json"
    runner = CliRunner()
    opts = ["--keys-file", str(path)]
    created = runner.invoke(keys_app, ["create", "-a", "eve", "-a", "bob", "--read-only", *opts])
    assert created.exit_code == 0, created.output
    token = created.stdout.strip().splitlines()[-1]
    assert token.startswith("mk_")
    key = asyncio.run(JsonFileKeyStore(path).verify(token))
    assert key is not None and key.agent_ids == ("eve", "bob") and key.read_only

    listed = runner.invoke(keys_app, ["list", "--json", *opts])
    rows = json.loads(listed.stdout)
    assert [r["key_id"] for r in rows] == [key.key_id]
    assert "secret_sha256" not in rows[0] and token not in listed.stdout

    revoked = runner.invoke(keys_app, ["revoke", key.key_id, *opts])
    assert revoked.exit_code == 0 and "revoked" in revoked.stdout
    assert asyncio.run(JsonFileKeyStore(path).verify(token)) is None
    unknown = runner.invoke(keys_app, ["revoke", "nope", *opts])
    assert unknown.exit_code == 1

    bad = runner.invoke(keys_app, ["create", "-a", "not an id", *opts])
    assert bad.exit_code == 1 and "'not an id' is not a valid id" in bad.stderr


def test_keys_live_in_the_memory_store_by_default(db_path: Path) -> None:
    _register(db_path, "eve")
    runner = CliRunner()
    created = runner.invoke(keys_app, ["create", "-a", "eve", "--name", "ops"])
    assert created.exit_code == 0, created.output
    token = created.stdout.strip().splitlines()[-1]
    key = _verify_in_store(db_path, token)
    assert key is not None and key.agent_ids == ("eve",) and key.name == "ops"
    assert not (db_path.parent / "api_keys.json").exists()

    listed = runner.invoke(keys_app, ["list", "--json"])
    assert [r["key_id"] for r in json.loads(listed.stdout)] == [key.key_id]

    revoked = runner.invoke(keys_app, ["revoke", key.key_id])
    assert revoked.exit_code == 0 and "revoked" in revoked.stdout
    assert _verify_in_store(db_path, token) is None
    assert runner.invoke(keys_app, ["revoke", "nope"]).exit_code == 1


# ---------------------------------------------------------------- bad input: one `error:` line


@pytest.fixture(autouse=True)
def _logging_outside_the_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands point logging at the stderr they see, a buffer under the runner."""
    configure_logging("warning")
    monkeypatch.setattr(cli_common, "configure_logging", lambda level: None)
    monkeypatch.setattr(commands, "configure_logging", lambda level: None)


def _register(path: Path, *agent_ids: str) -> None:
    async def register() -> None:
        store = SQLiteStore(path)
        try:
            await store.setup()
            for agent_id in agent_ids:
                await store.upsert_agent(AgentConfig(agent_id=agent_id, name=agent_id))
        finally:
            await store.close()

    asyncio.run(register())


def _keys_in_store(path: Path) -> list[ApiKey]:
    async def listed() -> list[ApiKey]:
        store = SQLiteStore(path)
        try:
            return await StoreKeyStore(store).list()
        finally:
            await store.close()

    return asyncio.run(listed())


def test_a_key_for_an_agent_not_registered_yet_says_so(db_path: Path) -> None:
    """A key is how a backend registers its agent over the API (POST /v1/agents), so a key for
    an agent not registered yet is made; a note names it, where a mistyped id shows."""
    _register(db_path, "eve")
    created = CliRunner().invoke(keys_app, ["create", "-a", "eve", "-a", "nope"])
    assert created.exit_code == 0, created.output
    notes = [line for line in created.stderr.splitlines() if line.startswith("note: ")]
    assert notes == [
        "note: agent 'nope' is not registered yet: register it with this key "
        "(POST /v1/agents), or check the id"
    ]
    assert [k.agent_ids for k in _keys_in_store(db_path)] == [("eve", "nope")]


def test_an_invalid_agent_id_is_one_line_naming_it(db_path: Path) -> None:
    line = one_error_line(CliRunner().invoke(keys_app, ["create", "-a", "a/b"]))
    assert "'a/b' is not a valid id" in line


def test_revoking_an_unknown_key_says_error(db_path: Path) -> None:
    _register(db_path, "eve")
    line = one_error_line(CliRunner().invoke(keys_app, ["revoke", "nope"]))
    assert line == "error: no API key 'nope'"


@pytest.mark.parametrize("command", [["list"], ["revoke", "k1"], ["create", "-a", "eve"]])
def test_a_store_path_that_is_a_directory_is_one_line(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    monkeypatch.setenv("MNEMOS_STORE__SQLITE_PATH", str(db_path.parent.parent))
    line = one_error_line(CliRunner().invoke(keys_app, command))
    assert line.startswith("error: store (sqlite) cannot be reached: unable to open database file")


@pytest.mark.parametrize("command", [["list"], ["revoke", "k1"], ["create", "-a", "eve"]])
def test_a_keys_file_that_is_a_directory_is_one_line(
    db_path: Path, tmp_path: Path, command: list[str]
) -> None:
    _register(db_path, "eve")
    line = one_error_line(CliRunner().invoke(keys_app, [*command, "--keys-file", str(tmp_path)]))
    assert "Is a directory" in line


# ---------------------------------------------------------------- serve and mcp at start


@pytest.fixture
def no_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    """No /metrics endpoint: serve installs it for the process, which is pytest's here."""
    monkeypatch.setenv("MNEMOS_TEMPORAL__METRICS_BIND", "")


def _closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["mcp", "--agent", "eve"]])
def test_serve_and_mcp_without_temporal_are_one_line(
    db_path: Path, no_metrics: None, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("MNEMOS_TEMPORAL__ADDRESS", address)
    app = commands.serve_app if command[0] == "serve" else commands.mcp_app
    line = one_error_line(CliRunner().invoke(app, command[1:]))
    assert f"cannot connect to Temporal at {address}" in line


def test_serve_on_a_port_in_use_is_one_line_before_it_says_where_it_serves(
    db_path: Path, no_metrics: None
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        line = one_error_line(CliRunner().invoke(commands.serve_app, ["--port", str(port)]))
    assert line == f"error: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_mcp_for_an_unregistered_agent_is_one_line(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, dev_env: WorkflowEnvironment
) -> None:
    monkeypatch.setenv("MNEMOS_TEMPORAL__ADDRESS", dev_env.client.service_client.config.target_host)
    line = one_error_line(CliRunner().invoke(commands.mcp_app, ["--agent", "nope"]))
    assert line == "error: agent 'nope' is not registered"
