"""ContextCache: hits within the TTL, misses after it, and invalidation by any process's commit."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memory.context_cache import ContextCache
from memory.models import AgentConfig, SessionInfo
from memory.settings import Settings
from memory.store.base import MemoryStore
from memory.store.sqlite import SQLiteStore
from tests.rag.builders import (
    CountingStore,
    MemoryWriter,
    agent,
    agent_key,
    at,
    session,
    session_key,
    user_key,
)

SETTINGS = Settings()
NOW = at(days=1)


async def cached(
    cache: ContextCache,
    store: MemoryStore,
    *,
    now: datetime = NOW,
    who: AgentConfig | None = None,
    where: SessionInfo | None = None,
    user_id: str | None = "u1",
) -> str:
    return await cache.get(
        store,
        SETTINGS,
        agent=who or agent(),
        session=where or session("s1", "u1"),
        user_id=user_id,
        now=now,
    )


async def some_memory(store: MemoryStore) -> None:
    w = MemoryWriter(store)
    await w.blob(agent_key(), "VERSION: 1\nThe agent's blob")
    await w.facts(("f1", "user", "u1", "Alice likes sailing"))


@pytest.fixture
async def second_process(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    """Another store on the sqlite_store fixture's file, as another worker process would have."""
    other = SQLiteStore(tmp_path / "mnemos.db")
    try:
        yield other
    finally:
        await other.close()


async def test_a_second_read_is_a_hit_that_costs_one_version_check(
    sqlite_store: MemoryStore,
) -> None:
    await some_memory(sqlite_store)
    counting = CountingStore(sqlite_store)
    cache = ContextCache()

    first = await cached(cache, counting.as_store())
    counting.calls.clear()
    second = await cached(cache, counting.as_store(), now=NOW + timedelta(seconds=10))

    assert second == first and "Alice likes sailing" in first
    assert (cache.hits, cache.misses) == (1, 1)
    assert counting.calls == {"scope_versions": 1}


async def test_an_entry_expires_after_the_ttl(sqlite_store: MemoryStore) -> None:
    await some_memory(sqlite_store)
    cache = ContextCache()

    await cached(cache, sqlite_store)
    await cached(cache, sqlite_store, now=NOW + timedelta(seconds=299))
    assert (cache.hits, cache.misses) == (1, 1)

    await cached(cache, sqlite_store, now=NOW + timedelta(seconds=300))

    assert (cache.hits, cache.misses) == (1, 2)
    await cached(cache, sqlite_store, now=NOW + timedelta(seconds=301))
    assert (cache.hits, cache.misses) == (2, 2)


async def _add_fact(w: MemoryWriter) -> str:
    await w.facts(("f2", "agent", None, "The office moved to Porto"), when=NOW)
    return "The office moved to Porto"


async def _add_session_reflection(w: MemoryWriter) -> str:
    await w.reflections(session_key("s1"), "The user is in a hurry today", start=NOW)
    return "The user is in a hurry today"


async def _consolidate_user_blob(w: MemoryWriter) -> str:
    await w.blob(user_key("u1"), "VERSION: 1\nPrefers short answers", when=NOW)
    return "Prefers short answers"


async def _invalidate_fact(w: MemoryWriter) -> str:
    await w.replace("f1", ("f1b", "user", "u1", "Alice likes rowing"), when=NOW)
    return "Alice likes rowing"


@pytest.mark.parametrize(
    "change", [_add_fact, _add_session_reflection, _consolidate_user_blob, _invalidate_fact]
)
async def test_a_commit_from_another_process_invalidates_at_once(
    sqlite_store: MemoryStore,
    second_process: SQLiteStore,
    change: Callable[[MemoryWriter], Awaitable[str]],
) -> None:
    await some_memory(sqlite_store)
    cache = ContextCache()
    before = await cached(cache, sqlite_store)

    shown = await change(MemoryWriter(second_process))
    after = await cached(cache, sqlite_store, now=NOW + timedelta(seconds=1))

    assert shown not in before and shown in after
    assert (cache.hits, cache.misses) == (0, 2)


async def test_writes_the_context_does_not_show_keep_the_entry(
    sqlite_store: MemoryStore, second_process: SQLiteStore
) -> None:
    await some_memory(sqlite_store)
    cache = ContextCache()
    await cached(cache, sqlite_store)

    w = MemoryWriter(second_process)
    await w.facts(("b1", "user", "u2", "Bob likes chess"))  # another user
    await w.reflections(session_key("s2"), "another session")
    await MemoryWriter(second_process, "a2").facts(("g1", "agent", None, "another agent"))
    await cached(cache, sqlite_store, now=NOW + timedelta(seconds=1))

    assert (cache.hits, cache.misses) == (1, 1)


async def test_entries_are_per_agent_user_session_and_visible_scopes(
    sqlite_store: MemoryStore,
) -> None:
    await some_memory(sqlite_store)
    cache = ContextCache()

    alone = await cached(cache, sqlite_store)
    group = await cached(cache, sqlite_store, where=session("s1", "u1", "u2"))
    no_user_memory = await cached(cache, sqlite_store, who=agent(user_memory=False))
    other_user = await cached(cache, sqlite_store, where=session("s1", "u2"), user_id="u2")

    assert "Alice likes sailing" in alone
    assert all("Alice likes sailing" not in xml for xml in (group, no_user_memory, other_user))
    # A group chat and user memory switched off show the same scopes: one entry serves both.
    assert no_user_memory == group
    assert (cache.hits, cache.misses, len(cache)) == (1, 3, 3)


async def test_the_least_recently_used_entry_goes_first(sqlite_store: MemoryStore) -> None:
    cache = ContextCache(max_entries=2)

    for session_id in ("s1", "s2", "s1", "s3", "s1", "s2"):
        await cached(cache, sqlite_store, where=session(session_id, "u1"))

    # s1 miss, s2 miss, s1 hit, s3 miss (drops s2), s1 hit, s2 miss again (drops s3).
    assert (cache.hits, cache.misses, len(cache)) == (2, 4, 2)
