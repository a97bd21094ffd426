"""Contract: API keys kept in the store (both backends): hashed records, one id each, revocation
that keeps its first date."""

from __future__ import annotations

import pytest

from memory.api_keys import ApiKey, digest, new_key
from memory.errors import ConflictError, NotFoundError
from memory.store.base import MemoryStore
from tests.store.builders import at


def _key(key_id: str, seconds: float, *agents: str, read_only: bool = False) -> ApiKey:
    return ApiKey(
        key_id=key_id,
        name=f"key {key_id}",
        agent_ids=agents or ("a1",),
        read_only=read_only,
        secret_sha256=digest(f"secret of {key_id}"),
        created_at=at(seconds),
    )


async def test_a_created_key_reads_back_as_given(store: MemoryStore) -> None:
    key = _key("k1", 0, "a1", "a2", read_only=True)

    assert await store.create_api_key(key) == key

    assert await store.get_api_key("k1") == key
    assert await store.get_api_key("k2") is None


async def test_a_minted_key_keeps_its_exact_creation_time(store: MemoryStore) -> None:
    key, token = new_key(["a1"], read_only=False, name="", now=at(0.123456))
    await store.create_api_key(key)

    stored = await store.get_api_key(key.key_id)
    assert stored == key and stored.created_at == at(0.123456)
    assert token.split("_", 2)[2] not in stored.model_dump_json()


async def test_a_taken_id_is_refused_and_the_first_key_kept(store: MemoryStore) -> None:
    first = _key("k1", 0, "a1")
    await store.create_api_key(first)

    with pytest.raises(ConflictError):
        await store.create_api_key(_key("k1", 5, "a2"))
    assert await store.get_api_key("k1") == first


async def test_keys_list_oldest_first_revoked_ones_included(store: MemoryStore) -> None:
    assert await store.list_api_keys() == []
    for key_id, seconds in (("kb", 20), ("kc", 10), ("ka", 20)):
        await store.create_api_key(_key(key_id, seconds))
    await store.revoke_api_key("kb", at=at(30))

    listed = await store.list_api_keys()

    assert [(k.key_id, k.revoked_at) for k in listed] == [
        ("kc", None),
        ("ka", None),
        ("kb", at(30)),
    ]


async def test_revoking_keeps_the_first_date(store: MemoryStore) -> None:
    key = _key("k1", 0)
    await store.create_api_key(key)

    revoked = await store.revoke_api_key("k1", at=at(10))
    again = await store.revoke_api_key("k1", at=at(20))

    assert revoked == key.model_copy(update={"revoked_at": at(10)})
    assert again == revoked
    assert await store.get_api_key("k1") == revoked


async def test_revoking_an_unknown_key_is_not_found(store: MemoryStore) -> None:
    with pytest.raises(NotFoundError):
        await store.revoke_api_key("nope", at=at(0))
    assert await store.list_api_keys() == []
