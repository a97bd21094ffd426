"""`mnemos keys create|list|revoke` (the Typer sub-app): in the memory store by default, in a
keys file with --keys-file."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory.settings import get_settings
from memory.store.sqlite import SQLiteStore
from serve.commands import keys_app
from serve.keys import ApiKey, JsonFileKeyStore, StoreKeyStore


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


def test_create_list_revoke(tmp_path: Path) -> None:
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
    assert bad.exit_code != 0 and "agent_ids" in bad.output


def test_keys_live_in_the_memory_store_by_default(db_path: Path) -> None:
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
