"""Contract: forgotten_session_memory says, outside a transaction, which session memory an import
refuses as forgotten (a dry run's read): that of a session tombstone a forget left, whole session
or one agent's of a session that stays, unless the file knows of the tombstone; that of a session
whose people (the file's and the store's) were all forgotten. Other memory is never named."""

from __future__ import annotations

from memory.models import ScopeKey
from memory.store.base import MemoryStore
from tests.store.builders import USER_KEY, at, msg, record, reflection
from tests.store.test_contract_forget_session_scopes import _sessions

S1_A1, S1_A2 = ScopeKey.session("a1", "s1"), ScopeKey.session("a2", "s1")
S2_A1, S3_A1 = ScopeKey.session("a1", "s2"), ScopeKey.session("a1", "s3")
KEYS = [S1_A1, S1_A2, S2_A1, S3_A1, USER_KEY]


async def test_the_session_memory_a_forget_deleted_is_named_as_the_import_refuses_it(
    store: MemoryStore,
) -> None:
    """forget_user(u1, a1): s2 goes whole, a1's memory of s1 (kept for a2) goes; a2's of s1,
    and s3 (u2's too), stay."""
    await _sessions(store)
    await store.forget_user("u1", agent_id="a1", at=at(100))

    named = await store.forgotten_session_memory(KEYS)

    assert named == {S1_A1.key, S2_A1.key}
    # The import refuses the same session memory (the user's own memory goes by its epoch).
    counts = await store.import_reflections([reflection(k, 1) for k in KEYS if k != USER_KEY])
    assert (counts.forgotten, counts.inserted) == (2, 2)


async def test_a_tombstone_the_file_knows_of_names_nothing(store: MemoryStore) -> None:
    await _sessions(store)
    await store.forget_user("u1", agent_id="a1", at=at(100))
    known = ((S1_A1.key, "u1", 1, at(100)),)  # the file carries s1's tombstone, as stored

    assert await store.forgotten_session_memory(KEYS, known=known) == {S2_A1.key}


async def test_a_session_whose_people_were_all_forgotten_is_named_without_a_tombstone(
    store: MemoryStore,
) -> None:
    """u9 forgotten for every agent before any session of theirs is stored: s9's memory has no
    tombstone, but the file's people of s9 (u9 with a1) say the forget took it."""
    await store.forget_user("u9", agent_id=None, at=at(100))
    key = ScopeKey.session("a1", "s9")
    people = [("s9", ("a1",), ("u9",))]

    assert await store.forgotten_session_memory([key]) == frozenset()
    assert await store.forgotten_session_memory([key], sessions=people) == {key.key}
    other = ScopeKey.session("a1", "s8")  # people of another session judge none of s8's
    assert await store.forgotten_session_memory([other], sessions=people) == frozenset()


async def test_no_session_memory_names_nothing(store: MemoryStore) -> None:
    await record(store, "s1", "a1", [msg("m1", "Hi", seconds=1)])
    await store.forget_user("u1", agent_id="a1", at=at(100))

    assert await store.forgotten_session_memory([]) == frozenset()
    assert await store.forgotten_session_memory([USER_KEY]) == frozenset()
