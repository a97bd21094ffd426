"""Contract: a change of an agent's memory switches marks, in its transaction, every session of
the agent with messages still to form with the switches they were recorded under
(memory/switch_marks.py): by ``update_agent`` and by ``upsert_agent`` (a registration again)
alike; a session formed up, another agent's and a change of another field are not marked."""

from __future__ import annotations

from memory.models import AgentConfig
from memory.store.base import MemoryStore
from tests.store.builders import commit, msg, record


async def _marks(store: MemoryStore, session_id: str, agent_id: str = "a1") -> object:
    state = await store.get_session_agent_state(session_id, agent_id)
    assert state is not None
    return state.switch_marks


async def test_a_switch_change_marks_the_sessions_with_messages_to_form(
    store: MemoryStore,
) -> None:
    await store.upsert_agent(AgentConfig(agent_id="a1", name="Ada"))
    await store.upsert_agent(AgentConfig(agent_id="a2", name="Bo"))
    await record(store, "pending", "a1", [msg("p1", seconds=1), msg("p2", seconds=2)])
    await record(store, "formed", "a1", [msg("f1", seconds=1)])
    await store.commit_formation(commit(session_id="formed", new_cursor=1))
    await record(store, "other", "a2", [msg("o1", seconds=1)])

    await store.update_agent("a1", {"persona": "terse"})  # no switch: nothing marked
    assert await _marks(store, "pending") == ()

    await store.update_agent("a1", {"user_memory_enabled": False})
    # Recorded up to seq 2 while both switches were on; the formed-up session has nothing to mark.
    assert await _marks(store, "pending") == ((2, True, True),)
    assert await _marks(store, "formed") == ()
    assert await _marks(store, "other", "a2") == ()

    # Turned on again before anything more was said: nothing was recorded while it was off.
    await store.update_agent("a1", {"user_memory_enabled": True})
    assert await _marks(store, "pending") == ((2, True, True),)

    await store.update_agent("a1", {"agent_memory_enabled": False})
    await record(store, "pending", "a1", [msg("p3", seconds=3)])
    # A registration again is a change too: seq 3 was recorded with agent memory off.
    await store.upsert_agent(AgentConfig(agent_id="a1", name="Ada"))
    assert await _marks(store, "pending") == ((2, True, True), (3, True, False))
    # The other sessions' marks are untouched by the recording; a new session has none.
    await record(store, "new", "a1", [msg("n1", seconds=4)])
    assert await _marks(store, "new") == ()
