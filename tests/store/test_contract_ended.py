"""The ended sessions the cold job finishes, on each backend: ended before the cut, with unformed
messages or unabsorbed session reflections."""

from __future__ import annotations

from memory.models import ScopeKey
from memory.store.base import MemoryStore
from tests.store.builders import Former, at, msg, record, reflection


async def test_unfinished_ended_sessions(store: MemoryStore) -> None:
    await Former(store, "s1").start(2)  # never formed
    buffered = await Former(store, "s2").start(1)
    key = ScopeKey.session("a1", "s2")
    await buffered.form(reflections=[reflection(key, 1, session_id="s2")])
    finished = await Former(store, "s3").start(1)
    await finished.form()
    await Former(store, "s4").start(1)  # ended after the cut
    for session in ("s1", "s2", "s3"):
        await store.end_session(session, "a1", at(50))
    await store.end_session("s4", "a1", at(500))

    found = await store.list_unfinished_ended_sessions(ended_before=at(100), after=None, limit=10)
    assert found == [("s1", "a1"), ("s2", "a1")]
    page = await store.list_unfinished_ended_sessions(
        ended_before=at(100), after=("s1", "a1"), limit=10
    )
    assert page == [("s2", "a1")]
    assert await store.list_unfinished_ended_sessions(
        ended_before=at(100), after=None, limit=1
    ) == [("s1", "a1")]


async def test_a_resumed_ended_session_is_not_unfinished_while_it_is_hot(
    store: MemoryStore,
) -> None:
    """Recording into an ended session leaves it ended: resumed after the cut, it is a session
    talked in, not an end to finish, until it goes quiet past a later cut."""
    await Former(store, "s1").start(1)
    await store.end_session("s1", "a1", at(50))
    await record(store, "s1", "a1", [msg("s1-again", seconds=200)], now_seconds=200)

    assert (
        await store.list_unfinished_ended_sessions(ended_before=at(100), after=None, limit=10) == []
    )
    assert await store.list_unfinished_ended_sessions(
        ended_before=at(200), after=None, limit=10
    ) == [("s1", "a1")]
