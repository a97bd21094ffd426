"""Contract: purging an ended session's memory moves its scope version, on each backend, so a
cached context (memory.context_cache) holding its reflections and blob is built again."""

from __future__ import annotations

from memory.models import ScopeKey
from memory.store.base import MemoryStore
from tests.store.builders import USER_KEY, Former, at, reflection


async def test_purge_moves_the_scope_version_of_each_purged_session(store: MemoryStore) -> None:
    keys = {s: ScopeKey.session("a1", s) for s in ("s1", "s2")}
    for session_id, key in keys.items():
        former = await Former(store, session_id).start(messages=1)
        await former.form(
            reflections=[
                reflection(key, 1, session_id=session_id),
                reflection(USER_KEY, int(session_id[1:]), session_id=session_id),
            ]
        )
    await store.end_session("s1", "a1", at(100))  # s2 goes on
    watched = [keys["s1"].key, keys["s2"].key, USER_KEY.key]
    before = await store.scope_versions(watched)

    assert await store.purge_ended_sessions(at(200), limit=10) == ["s1"]

    after = await store.scope_versions(watched)
    assert after[keys["s1"].key] > before[keys["s1"].key]
    assert after[keys["s2"].key] == before[keys["s2"].key]  # not purged: cached as it was
    assert after[USER_KEY.key] == before[USER_KEY.key]  # user memory outlives sessions
