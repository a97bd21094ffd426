"""Contract: the edges of the rules written once for every backend (memory.store.base's paged
reads, shared_reads, snapshots_lifecycle), with rows present so a backend that let them through
would show it: a page of no rows (limit 0, or below: a negative LIMIT means none in SQLite) is
empty; get_facts answers
in the order asked, each fact once, whatever order the backend reads them in; buffered counts hold
each key asked, 0 without any, whatever the repeats."""

from __future__ import annotations

from typing import cast

import numpy as np
import pytest

from memory.models import SessionAgentState
from memory.store.base import MemoryStore
from memory.store.shared_reads import SharedReads
from tests.store.builders import (
    AGENT_KEY,
    USER_KEY,
    Former,
    add,
    at,
    reflection,
    unit,
    user_filter,
)
from tests.store.test_contract_degraded import formed, window


async def _cold(store: MemoryStore, limit: int) -> list[SessionAgentState]:
    return await store.list_cold_sessions(
        idle_before=at(10_000), min_messages=1, min_weighted_tokens=0.0, after=None, limit=limit
    )


@pytest.mark.parametrize("limit", [0, -1])
async def test_a_page_of_no_rows_is_empty_on_every_listing(store: MemoryStore, limit: int) -> None:
    await formed(store, "s9", 2, degraded=[window(0, session_id="s9")])
    former = await Former(store).start()
    await former.form(
        add("f1", "Rides a bike", unit(1, 0)),
        add("f2", "Rides a horse", unit(0, 1)),
        reflections=[reflection(USER_KEY, 0)],
    )
    query, since = np.asarray(unit(1, 0), dtype=np.float32), at(-10_000)
    # Every listing has rows to give with a positive limit.
    assert await store.list_degraded(limit=10)
    assert await store.list_agent_users("a1", limit=10)
    assert await store.list_agent_sessions("a1", limit=10)
    assert await store.reembed_pending("other-model", 4, limit=10)
    assert await _cold(store, 10)
    assert await store.text_search("rides", user_filter(), limit=10)
    assert await store.vector_search(query, user_filter(), limit=10)
    assert await store.recent_facts(user_filter(), since=since, limit=10)
    assert await store.list_facts(user_filter(), limit=10)
    assert await store.unabsorbed_reflections(USER_KEY, limit=10)
    assert await store.list_reflections(USER_KEY, limit=10)

    assert await store.list_degraded(limit=limit) == []
    assert await store.list_degraded(include_reformed=True, limit=limit) == []
    assert await store.list_agent_users("a1", limit=limit) == []
    assert await store.list_agent_sessions("a1", limit=limit) == []
    assert await store.list_agent_sessions("a1", user_id="u1", limit=limit) == []
    assert await store.reembed_pending("other-model", 4, limit=limit) == []
    assert await _cold(store, limit) == []
    assert await store.text_search("rides", user_filter(), limit=limit) == []
    assert await store.vector_search(query, user_filter(), limit=limit) == []
    assert await store.vector_searches([query, query], user_filter(), limit=limit) == [[], []]
    assert await store.recent_facts(user_filter(), since=since, limit=limit) == []
    assert await store.list_facts(user_filter(), limit=limit) == []
    assert await store.unabsorbed_reflections(USER_KEY, limit=limit) == []
    assert await store.list_reflections(USER_KEY, limit=limit) == []


async def test_get_facts_in_the_order_asked_each_once(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(
        add("f1", "Rides a bike", unit(1, 0)),
        add("f2", "Plays chess", unit(0, 1)),
        add("f3", "Likes tea", unit(1, 1)),
    )

    found = await store.get_facts(["f3", "nope", "f1", "f3", "f2", "f1"])

    assert [f.fact_id for f in found] == ["f3", "f1", "f2"]


async def test_buffered_counts_hold_every_key_asked_once(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(reflections=[reflection(USER_KEY, 0), reflection(USER_KEY, 1)])
    keys = [USER_KEY.key, AGENT_KEY.key, USER_KEY.key, AGENT_KEY.key]

    counts = await cast(SharedReads, store)._read_once(lambda reads: reads.buffered_counts(keys))

    assert counts == {USER_KEY.key: 2, AGENT_KEY.key: 0}
    assert list(counts) == [USER_KEY.key, AGENT_KEY.key]
