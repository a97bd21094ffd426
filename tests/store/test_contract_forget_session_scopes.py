"""Contract: forget_user names the session memory it deleted (ForgetCounts.session_scopes, the
keys of its session tombstones), so that the caller deletes those sessions' runs from Temporal
(runtime.erasure): a session scope's consolidation run is tagged with no user. A session another
user shares is not named, nor are the ids in the counts' JSON, the tombstone's audit record."""

from __future__ import annotations

from memory.store.base import MemoryStore
from tests.store.builders import at, msg, record


async def _sessions(store: MemoryStore) -> None:
    """u1 alone in s1 (with a1 and a2), alone in s2 (a1's only), with u2 in s3."""
    await record(store, "s1", "a1", [msg("m1", "I was diagnosed with asthma", seconds=1)])
    await record(store, "s1", "a2", [msg("m2", "It is getting better", seconds=2)])
    await record(store, "s2", "a1", [msg("m3", "My knee hurts", seconds=3)])
    await record(store, "s3", "a1", [msg("m4", "Hi all", seconds=4)])
    await record(store, "s3", "a1", [msg("m5", "Hello", user_id="u2", seconds=5)])


async def test_forget_of_one_agent_names_its_session_memory_it_deleted(
    store: MemoryStore,
) -> None:
    await _sessions(store)

    [counts] = await store.forget_user("u1", agent_id="a1", at=at(100))

    # s2 went whole; of s1, kept for a2, a1's memory went; s3 stays for u2.
    assert counts.sessions == 1
    assert counts.session_scopes == ("session:a1:s1", "session:a1:s2")
    assert "session_scopes" not in counts.model_dump_json()


async def test_forget_of_every_agent_names_each_agents_session_memory(
    store: MemoryStore,
) -> None:
    await _sessions(store)

    counts = await store.forget_user("u1", agent_id=None, at=at(100))

    scopes = sorted(key for c in counts for key in c.session_scopes)
    assert scopes == ["session:a1:s1", "session:a1:s2", "session:a2:s1"]
