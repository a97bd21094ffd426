"""The JSON-file key store: tokens verify, only hashes are stored, revocation sticks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory.errors import InvalidInputError, NotFoundError
from serve.keys import JsonFileKeyStore, split_token


async def test_a_created_key_verifies_and_is_bound_to_its_agents(tmp_path: Path) -> None:
    keys = JsonFileKeyStore(tmp_path / "keys.json")
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


@pytest.mark.parametrize(
    "token",
    ["", "mk_", "mk__secret", "xx_abc_secret", "mk_unknown_secret", "not a key at all"],
)
async def test_malformed_and_unknown_tokens_do_not_verify(tmp_path: Path, token: str) -> None:
    keys = JsonFileKeyStore(tmp_path / "keys.json")
    await keys.create(["eve"])
    assert await keys.verify(token) is None


async def test_a_wrong_secret_does_not_verify(tmp_path: Path) -> None:
    keys = JsonFileKeyStore(tmp_path / "keys.json")
    key, token = await keys.create(["eve"])
    assert await keys.verify(f"mk_{key.key_id}_{'x' * 43}") is None
    assert await keys.verify(token + "x") is None


async def test_revoked_keys_stop_verifying_also_in_another_process_view(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    server, cli = JsonFileKeyStore(path), JsonFileKeyStore(path)
    key, token = await cli.create(["eve"])
    assert await server.verify(token) is not None  # the server has now cached the file
    revoked = await cli.revoke(key.key_id)
    assert revoked.revoked_at is not None
    assert await server.verify(token) is None
    again = await cli.revoke(key.key_id)
    assert again.revoked_at == revoked.revoked_at
    assert [k.key_id for k in await server.list()] == [key.key_id]


async def test_bad_input_is_refused(tmp_path: Path) -> None:
    keys = JsonFileKeyStore(tmp_path / "keys.json")
    with pytest.raises(InvalidInputError, match="agent_ids"):
        await keys.create([])
    with pytest.raises(InvalidInputError, match="agent_ids"):
        await keys.create(["bad id!"])
    with pytest.raises(NotFoundError):
        await keys.revoke("nope")
