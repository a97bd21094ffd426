"""Contract: an agent's users and sessions, as the memory page lists them (both backends)."""

from __future__ import annotations

from memory.store.base import MemoryStore
from tests.store.builders import at, msg, record


async def _sessions(store: MemoryStore) -> None:
    """s1..s5 with activity at 10, 30, 20, 40 and 5 s; a2 joins s3 and has s4 alone."""
    await record(store, "s1", "a1", [msg("s1-m1", user_id="u1", seconds=10)], now_seconds=10)
    await record(
        store,
        "s2",
        "a1",
        [msg("s2-m1", user_id="u2", seconds=29), msg("s2-m2", user_id="u1", seconds=30)],
        now_seconds=30,
    )
    await record(store, "s3", "a1", [msg("s3-m1", user_id="u3", seconds=20)], now_seconds=20)
    await record(store, "s3", "a2", [msg("s3-m2", role="agent", seconds=20)], now_seconds=21)
    await record(store, "s4", "a2", [msg("s4-m1", user_id="u4", seconds=40)], now_seconds=40)
    await record(store, "s5", "a1", [msg("s5-m1", role="agent", seconds=5)], now_seconds=5)


async def test_an_agents_users_most_recently_active_first(store: MemoryStore) -> None:
    await _sessions(store)

    users = await store.list_agent_users("a1")

    assert [(u.user_id, u.sessions, u.last_active_at) for u in users] == [
        ("u1", 2, at(30)),  # s1 and s2; a tie with u2 at 30 s goes by user id
        ("u2", 1, at(30)),
        ("u3", 1, at(20)),
    ]
    # u3 spoke in s3 before a2 joined it: a2's participants are its own (isolation).
    assert [u.user_id for u in await store.list_agent_users("a2")] == ["u4"]
    assert [u.user_id for u in await store.list_agent_users("a1", limit=1)] == ["u1"]
    assert await store.list_agent_users("nobody") == []


async def test_an_agents_sessions_most_recently_active_first(store: MemoryStore) -> None:
    await _sessions(store)

    sessions = await store.list_agent_sessions("a1")

    assert [s.session_id for s in sessions] == ["s2", "s3", "s1", "s5"]
    # Each as the agent sees it: its own participants and its own end.
    assert sessions == [await store.get_session(s.session_id, agent_id="a1") for s in sessions]
    s3 = sessions[1]
    assert (s3.agent_ids, s3.user_ids, s3.last_message_at) == (("a1", "a2"), ("u3",), at(20))
    assert [s.session_id for s in await store.list_agent_sessions("a2")] == ["s4", "s3"]
    assert [s.session_id for s in await store.list_agent_sessions("a1", limit=2)] == ["s2", "s3"]
    assert await store.list_agent_sessions("a1", limit=0) == []
    assert await store.list_agent_sessions("nobody") == []


async def test_an_agents_sessions_of_one_user(store: MemoryStore) -> None:
    await _sessions(store)

    assert [s.session_id for s in await store.list_agent_sessions("a1", user_id="u1")] == [
        "s2",
        "s1",
    ]
    assert [s.session_id for s in await store.list_agent_sessions("a1", user_id="u3")] == ["s3"]
    # u4 talked with a2 only; u3 spoke in s3 before a2 joined, so not with a2 either.
    assert await store.list_agent_sessions("a1", user_id="u4") == []
    assert await store.list_agent_sessions("a2", user_id="u3") == []
    [_, s3] = await store.list_agent_sessions("a2")
    assert (s3.session_id, s3.user_ids) == ("s3", ())


async def test_ties_in_activity_go_by_session_id(store: MemoryStore) -> None:
    for session_id in ("sb", "sa", "sc"):
        await record(store, session_id, "a1", [msg(f"{session_id}-m", seconds=7)], now_seconds=7)

    assert [s.session_id for s in await store.list_agent_sessions("a1")] == ["sa", "sb", "sc"]
    assert [(u.user_id, u.sessions) for u in await store.list_agent_users("a1")] == [("u1", 3)]
