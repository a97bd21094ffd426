"""Key stores: tokens verify, only hashes are stored, revocation sticks, across processes.

The common behaviour runs on both: keys in the memory store (the default) and in a JSON file
(``--keys-file``)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from memory.errors import InvalidInputError, NotFoundError
from memory.store.sqlite import SQLiteStore
from serve.keys import ApiKeyStore, JsonFileKeyStore, StoreKeyStore, split_token

# Opens a key store on the given directory; two calls on one directory are two processes' views.
Opener = Callable[[Path], ApiKeyStore]


@pytest.fixture(params=["store", "file"])
async def opener(request: pytest.FixtureRequest) -> AsyncIterator[Opener]:
    opened: list[SQLiteStore] = []

    def open_keys(folder: Path) -> ApiKeyStore:
        if request.param == "file":
            return JsonFileKeyStore(folder / "keys.json")
        store = SQLiteStore(folder / "mnemos.db")
        opened.append(store)
        return StoreKeyStore(store)

    yield open_keys
    for store in opened:
        await store.close()


async def _setup(keys: ApiKeyStore) -> ApiKeyStore:
    if isinstance(keys, StoreKeyStore):
        await keys.store.setup()
    return keys


async def test_a_created_key_verifies_and_is_bound_to_its_agents(
    tmp_path: Path, opener: Opener
) -> None:
    keys = await _setup(opener(tmp_path))
    key, token = await keys.create(["eve", "bob", "eve"], read_only=True, name="ops")
    assert token.startswith(f"mk_{key.key_id}_")
    found = await keys.verify(token)
    assert found is not None and found.key_id == key.key_id
    assert found.agent_ids == ("eve", "bob") and found.read_only
    assert found.allows("eve", write=False) and not found.allows("eve", write=True)
    assert not found.allows("carol", write=False)


async def test_only_the_hash_of_the_secret_is_stored(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    keys = JsonFileKeyStore(path)
    _, token = await keys.create(["eve"])
    parts = split_token(token)
    assert parts is not None
    text = path.read_text()
    assert parts[1] not in text and token not in text
    assert json.loads(text)[0]["secret_sha256"]
    assert path.stat().st_mode & 0o077 == 0
    assert [p.name for p in tmp_path.iterdir()] == ["keys.json"]  # no temp file left behind


async def test_the_store_keeps_only_the_hash_of_the_secret(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    try:
        key, token = await StoreKeyStore(store).create(["eve"])
    finally:
        await store.close()
    parts = split_token(token)
    assert parts is not None
    with sqlite3.connect(tmp_path / "mnemos.db") as db:
        rows = db.execute("SELECT key_id, record FROM api_keys").fetchall()
        dump = "\n".join(db.iterdump())
    assert [r[0] for r in rows] == [key.key_id]
    assert json.loads(rows[0][1])["secret_sha256"] == key.secret_sha256
    assert parts[1] not in dump and token not in dump


@pytest.mark.parametrize(
    "token",
    ["", "mk_", "mk__secret", "xx_abc_secret", "mk_unknown_secret", "not a key at all"],
)
async def test_malformed_and_unknown_tokens_do_not_verify(
    tmp_path: Path, opener: Opener, token: str
) -> None:
    keys = await _setup(opener(tmp_path))
    await keys.create(["eve"])
    assert await keys.verify(token) is None


async def test_a_wrong_secret_does_not_verify(tmp_path: Path, opener: Opener) -> None:
    keys = await _setup(opener(tmp_path))
    key, token = await keys.create(["eve"])
    assert await keys.verify(f"mk_{key.key_id}_{'x' * 43}") is None
    assert await keys.verify(token + "x") is None


async def test_revoked_keys_stop_verifying_also_in_another_process_view(
    tmp_path: Path, opener: Opener
) -> None:
    # Two views of one place: a server (or another replica) and the CLI.
    server, cli = await _setup(opener(tmp_path)), opener(tmp_path)
    key, token = await cli.create(["eve"])
    assert await server.verify(token) is not None  # the server has now read the key
    revoked = await cli.revoke(key.key_id)
    assert revoked.revoked_at is not None
    assert await server.verify(token) is None
    again = await cli.revoke(key.key_id)
    assert again.revoked_at == revoked.revoked_at
    assert [k.key_id for k in await server.list()] == [key.key_id]


async def test_bad_input_is_refused(tmp_path: Path, opener: Opener) -> None:
    keys = await _setup(opener(tmp_path))
    with pytest.raises(InvalidInputError, match="agent_ids"):
        await keys.create([])
    with pytest.raises(InvalidInputError, match="agent_ids"):
        await keys.create(["bad id!"])
    with pytest.raises(NotFoundError):
        await keys.revoke("nope")
    assert await keys.list() == []
