"""The client at the edge: bad input gets a clear error naming the field, and changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from memory.errors import InvalidInputError, NotFoundError
from tests.harness import T0, Harness, conversation


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


async def test_recording_twice_is_idempotent(time_env: WorkflowEnvironment, tmp_path: Path) -> None:
    h = await Harness.create(time_env, tmp_path)
    first = await h.memory.record_messages("eve", "s1", conversation(4))
    again = await h.memory.record_messages("eve", "s1", conversation(4))
    assert (first.inserted, again.inserted, again.duplicates) == (4, 0, 4)
    assert again.state.last_seq == 4 and again.state.pending_messages == 4
