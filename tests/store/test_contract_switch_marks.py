"""Contract: a recording keeps, in its transaction, the memory switches each agent of the session
heard the new messages under (memory/switch_marks.py): where an agent's switches changed since
its state's last messages were recorded, that stretch is closed by a mark; a change of a switch
writes only the agent, a change with nothing recorded on one side marks nothing, and each agent
of a shared session keeps its own."""

from __future__ import annotations

from memory.models import AgentConfig, SessionAgentState
from memory.store.base import MemoryStore
from memory.switch_marks import as_recorded
from tests.store.builders import commit, msg, record, record_before_marks


async def _state(store: MemoryStore, session_id: str, agent_id: str = "a1") -> SessionAgentState:
    state = await store.get_session_agent_state(session_id, agent_id)
    assert state is not None
    return state


async def test_a_recording_closes_the_stretch_recorded_under_other_switches(
    store: MemoryStore,
) -> None:
    await store.upsert_agent(AgentConfig(agent_id="a1", name="Ada"))
    await store.upsert_agent(AgentConfig(agent_id="a2", name="Bo", user_memory_enabled=False))
    await record(store, "s1", "a1", [msg("m1", seconds=1), msg("m2", seconds=2)])
    first = await _state(store, "s1")
    assert (first.switch_marks, first.recorded_under) == ((), (True, True))

    await store.update_agent("a1", {"persona": "terse"})  # no switch
    await store.update_agent("a1", {"user_memory_enabled": False})
    assert (await _state(store, "s1")).switch_marks == ()  # the change writes only the agent
    await record(store, "s1", "a1", [msg("m3", seconds=3)])
    second = await _state(store, "s1")
    assert (second.switch_marks, second.recorded_under) == (((2, True, True),), (False, True))

    # Off and on again with nothing said between: the stretch goes on, nothing marked.
    await store.update_agent("a1", {"user_memory_enabled": True})
    await store.update_agent("a1", {"user_memory_enabled": False})
    await record(store, "s1", "a1", [msg("m4", seconds=4)])
    assert (await _state(store, "s1")).switch_marks == ((2, True, True),)

    # A second agent joins at the head under its own switches; both hear what follows.
    await record(store, "s1", "a2", [msg("m5", seconds=5)])
    await store.update_agent("a1", {"agent_memory_enabled": False})
    await record(store, "s1", "a2", [msg("m6", seconds=6)])
    a1, a2 = await _state(store, "s1"), await _state(store, "s1", "a2")
    assert (a1.switch_marks, a1.recorded_under) == (
        ((2, True, True), (5, False, True)), (False, False)
    )  # fmt: skip
    assert (a2.switch_marks, a2.recorded_under) == ((), (False, True))


async def test_a_start_opens_the_stretch_of_messages_recorded_before_the_marks(
    store: MemoryStore,
) -> None:
    """Messages pending at the upgrade were said under the agent's switches then (the README
    asks for no change during the roll): the next start keeps them, so a change after the roll
    does not reach back to what was said before it."""
    await store.upsert_agent(AgentConfig(agent_id="a1", name="Ada", user_memory_enabled=False))
    await store.upsert_agent(AgentConfig(agent_id="a2", name="Bo"))
    await record_before_marks(store, "s1", "a1", [msg("m1", seconds=1)])
    await record_before_marks(store, "s2", "a2", [msg("m2", seconds=2)])
    await record_before_marks(store, "s3", "a1", [msg("m3", seconds=3)])
    await store.commit_formation(commit(session_id="s3"))  # nothing left to form: nothing kept
    assert (await _state(store, "s1")).recorded_under is None

    await store.setup()  # the first start of this version
    await store.update_agent("a1", {"user_memory_enabled": True})  # after the roll
    s1, s2, s3 = (
        await _state(store, "s1"),
        await _state(store, "s2", "a2"),
        await _state(store, "s3"),
    )
    assert (s1.switch_marks, s1.recorded_under) == ((), (False, True))
    assert as_recorded(await _agent(store, "a1"), s1, 1).user_memory_enabled is False
    assert (s2.switch_marks, s2.recorded_under) == ((), (True, True))
    assert s3.recorded_under is None

    await record(store, "s1", "a1", [msg("m4", seconds=4)])  # said with user memory on
    after = await _state(store, "s1")
    assert (after.switch_marks, after.recorded_under) == (((1, False, True),), (True, True))
    await store.setup()  # a later start changes nothing
    assert await _state(store, "s1") == after


async def _agent(store: MemoryStore, agent_id: str) -> AgentConfig:
    agent = await store.get_agent(agent_id)
    assert agent is not None
    return agent
