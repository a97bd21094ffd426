"""The client at the edge: bad input gets a clear error naming the field, and changes nothing."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from memory.errors import InvalidInputError, NotFoundError
from tests.harness import T0, Harness, conversation, facts, reflections


def message(**overrides: Any) -> dict[str, Any]:
    return {
        "message_id": "m1",
        "role": "user",
        "content": "hello",
        "created_at": T0.isoformat(),
        "user_id": "alice",
        **overrides,
    }


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"role": "robot"}, "role"),
        ({"content": ""}, "content"),
        ({"created_at": "2026-11-01T09:00:00"}, "created_at"),  # no timezone
        ({"message_id": "has space"}, "message_id"),
        ({"surprise": 1}, "surprise"),
    ],
)
async def test_a_malformed_message_names_the_field_and_writes_nothing(
    time_env: WorkflowEnvironment, tmp_path: Path, bad: dict[str, Any], field: str
) -> None:
    h = await Harness.create(time_env, tmp_path)
    good = message(message_id="m0")
    with pytest.raises(InvalidInputError, match=field):
        await h.memory.record_messages("eve", "s1", [good, message(**bad)])
    assert await h.store.get_session("s1") is None  # not even the valid message


async def test_unknown_agent_and_session_are_named(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    with pytest.raises(NotFoundError, match="'nobody'"):
        await h.memory.record_messages("nobody", "s1", conversation(1))
    with pytest.raises(NotFoundError, match="'s404'"):
        await h.memory.memory_context("eve", "s404")
    with pytest.raises(InvalidInputError, match="session_id"):
        await h.memory.maybe_form_memories("eve", "bad id!")


async def test_an_agent_update_changes_the_fields_given_or_names_what_it_refuses(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    updated = await h.memory.update_agent("eve", user_memory_enabled=False)
    assert updated == h.agent.model_copy(update={"user_memory_enabled": False})
    assert await h.store.get_agent("eve") == updated
    with pytest.raises(NotFoundError, match="'nobody'"):
        await h.memory.update_agent("nobody", persona="ghost")
    with pytest.raises(InvalidInputError, match="tier"):
        await h.memory.update_agent("eve", persona="terse", tier=-1)
    assert await h.store.get_agent("eve") == updated  # nothing written


async def test_recording_twice_is_idempotent(time_env: WorkflowEnvironment, tmp_path: Path) -> None:
    h = await Harness.create(time_env, tmp_path)
    first = await h.memory.record_messages("eve", "s1", conversation(4))
    again = await h.memory.record_messages("eve", "s1", conversation(4))
    assert (first.inserted, again.inserted, again.duplicates) == (4, 0, 4)
    assert again.state.last_seq == 4 and again.state.pending_messages == 4


async def test_the_client_hands_out_the_tool_and_the_monitoring_views(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(4))
    h.llm.script(
        "extract_reflections", reflections(user=["Alice likes bullets"], session=["planning"])
    )
    async with h.worker():
        await h.form("s1")
    memory = h.memory
    assert memory.search_facts_tool("gemini")["function_declarations"][0]["name"] == "search_facts"
    assert (
        memory.search_facts_tool()["function"]["parameters"]["properties"]["top_k"]["maximum"] == 25
    )
    answer = await memory.handle_search_facts(
        '{"query": "anything"}', agent_id="eve", session_id="s1", user_id="alice"
    )
    assert answer == "No matching facts in long-term memory."
    status = {
        s.scope_key.key: (s.buffered, s.threshold, s.due)
        for s in await memory.consolidation_status("eve", "alice", "s1")
    }
    assert status == {
        "agent:eve": (0, 10, False),
        "user:eve:alice": (1, 4, False),
        "session:eve:s1": (1, 4, False),
    }
    stats = await memory.memory_stats("eve", "alice", "s1")
    assert [s.buffered_reflections for s in stats.scopes] == [0, 1, 1]


async def test_ages_count_from_the_clients_clock(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A replay of a dated conversation (bench/quality.py) asks as of its own time: the ages in
    search results and contexts count from the client's clock, not from the wall clock."""
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(2))
    h.llm.script("extract_facts", facts(("Alice lives in Lisbon", "user"), sources=[1]))
    async with h.worker():
        await h.form("s1")
    memory = h.memory
    memory.clock = lambda: T0 + timedelta(hours=3)  # the wall clock is a day after T0

    [hit] = (await memory.search_facts("eve", "Alice lives in Lisbon", user_id="alice")).hits
    context = await memory.on_session_start("eve", "s2", user_id="alice")

    assert hit.said_at == T0 and hit.age == "3h ago"
    assert "Alice lives in Lisbon" in context and "3h ago" in context
