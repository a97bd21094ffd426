"""Issue #12 case 7, odd input: content empty after trimming or holding control characters gets a
clear InvalidInputError and stores nothing; a timestamp far in the future is stored as the
recording time, so its session still reaches the cold-sessions scan."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from memory.errors import InvalidInputError
from memory.models import FUTURE_SKEW
from tests.harness import T0, Harness


def message(message_id: str = "m1", **overrides: Any) -> dict[str, Any]:
    return {
        "message_id": message_id,
        "role": "user",
        "content": "hello",
        "created_at": T0.isoformat(),
        "user_id": "alice",
        **overrides,
    }


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("   \n\t  ", "empty after trimming"),
        ("abc\x00def", "U\\+0000"),
        ("bell\x07", "U\\+0007"),
        ("\x1b[31mred", "U\\+001B"),
        ("del\x7f", "U\\+007F"),
    ],
)
async def test_unreadable_content_is_refused_and_nothing_is_stored(
    time_env: WorkflowEnvironment, tmp_path: Path, content: str, why: str
) -> None:
    h = await Harness.create(time_env, tmp_path)
    with pytest.raises(InvalidInputError, match=why):
        await h.memory.record_messages("eve", "s1", [message("m0"), message(content=content)])
    assert await h.store.get_session("s1") is None  # not even the valid message


async def test_tabs_newlines_and_carriage_returns_are_content(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    text = "line one\r\n\tline two\n"
    outcome = await h.memory.record_messages("eve", "s1", [message(content=text)])
    assert outcome.inserted == 1
    [stored] = await h.store.load_messages("s1", 0, 1)
    assert stored.content == text


@pytest.mark.parametrize("ahead", [None, timedelta(hours=2)], ids=["year-9999", "two-hours"])
async def test_future_timestamp_is_clamped_to_the_recording_time(
    time_env: WorkflowEnvironment, tmp_path: Path, ahead: timedelta | None
) -> None:
    h = await Harness.create(time_env, tmp_path)
    before = datetime.now(UTC)
    future = datetime(9999, 12, 31, tzinfo=UTC) if ahead is None else before + ahead
    await h.memory.record_messages("eve", "s1", [message(created_at=future.isoformat())])
    after = datetime.now(UTC)

    [stored] = await h.store.load_messages("s1", 0, 1)
    assert before <= stored.created_at <= after
    cold = await h.store.list_cold_sessions(
        idle_before=after + timedelta(seconds=1),
        min_messages=1,
        min_weighted_tokens=0,
        after=None,
        limit=10,
    )
    assert [s.session_id for s in cold] == ["s1"]


async def test_a_clock_slightly_ahead_is_believed(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    ahead = datetime.now(UTC) + FUTURE_SKEW / 2
    await h.memory.record_messages("eve", "s1", [message(created_at=ahead.isoformat())])
    [stored] = await h.store.load_messages("s1", 0, 1)
    assert stored.created_at == ahead
