"""The first turn of a session: a backend records a turn after its answer, so during the first turn
the session has no message yet. Its search reads what its session start reads: the named user's
memory and the agent's, never another user's, and no user memory where the session is already a
group chat. So does a first turn after the agent's own greeting, recorded before the user spoke."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memory.errors import InvalidInputError
from memory.models import AgentConfig, MessageIn
from tests.harness import T0, Harness, conversation, facts

TEA = "Alice drinks green tea every morning"
BEES = "Carol keeps bees on her roof"


async def _two_users(h: Harness) -> None:
    """A fact of alice's (session s1) and one of carol's (session s2), both with eve."""
    h.llm.script("extract_facts", facts((TEA, "user"), sources=[1]))
    h.llm.script("extract_facts", facts((BEES, "user"), speaker="carol", sources=[1]))
    await h.record("s1", conversation(2))
    await h.record("s2", conversation(2, user="carol", prefix="c"))
    async with h.worker():
        await h.form("s1")
        await h.form("s2")


async def test_a_first_turn_searches_what_its_session_start_reads(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await _two_users(h)
    memory = h.memory

    context = await memory.on_session_start("eve", "new-1", user_id="alice")
    text = await memory.handle_search_facts(
        {"query": [TEA, BEES]}, agent_id="eve", session_id="new-1", user_id="alice"
    )
    assert TEA in context and TEA in text
    assert BEES not in context and BEES not in text  # carol's memory is carol's
    nobody = await memory.search_facts("eve", [TEA, BEES], session_id="new-2")
    assert nobody.hits == []  # no user named: no user memory
    # The search wrote nothing: the session exists once its first turn is recorded.
    assert await h.store.get_session("new-1") is None

    # carol spoke in "shared" (to bob): alice there makes it a group chat, where user memory is
    # off, for eve's first turn as for her session start.
    await h.store.upsert_agent(AgentConfig(agent_id="bob", name="Bob"))
    await h.record("shared", conversation(1, user="carol", prefix="b"), agent_id="bob")
    context = await memory.on_session_start("eve", "shared", user_id="alice")
    found = await memory.search_facts("eve", [TEA, BEES], session_id="shared", user_id="alice")
    assert TEA not in context and found.hits == []

    with pytest.raises(InvalidInputError, match="user_id"):
        await memory.search_facts("eve", TEA, session_id="new-3", user_id="bad id!")


def _greeting(prefix: str) -> list[MessageIn]:
    """The agent's opening message, without a user: recorded before anyone spoke."""
    return conversation(1, start=1, prefix=prefix)


async def test_the_first_turn_after_the_agents_greeting_reads_the_users_memory(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await _two_users(h)
    memory = h.memory
    await h.record("greeted", _greeting("g"))

    context = await memory.on_session_start("eve", "greeted", user_id="alice")
    later = await memory.memory_context("eve", "greeted", user_id="alice")
    text = await memory.handle_search_facts(
        {"query": [TEA, BEES]}, agent_id="eve", session_id="greeted", user_id="alice"
    )
    assert (TEA in context, TEA in later, TEA in text) == (True, True, True)
    assert BEES not in context + later + text  # carol's memory is carol's
    nobody = await memory.search_facts("eve", [TEA, BEES], session_id="greeted")
    assert nobody.hits == []  # no user named: no user memory


async def test_after_the_greeting_another_person_in_the_session_still_hides_user_memory(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await _two_users(h)
    memory = h.memory
    guest = MessageIn(
        message_id="q0002", role="user", content="hello?", created_at=T0 + timedelta(minutes=2)
    )
    # carol answered eve's greeting (the session is hers), or a guest did (alice there would
    # make it a group chat): alice's turn reads no user memory, as before the greeting.
    await h.record("carols", [*_greeting("g"), *conversation(1, user="carol", prefix="c")])
    await h.record("guests", [*_greeting("h"), guest])
    for session in ("carols", "guests"):
        context = await memory.on_session_start("eve", session, user_id="alice")
        found = await memory.search_facts("eve", [TEA, BEES], session_id=session, user_id="alice")
        assert (TEA in context, BEES in context, found.hits) == (False, False, []), session
