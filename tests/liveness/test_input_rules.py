"""Issue #12 case 7 and #21, odd input: content with nothing visible or holding control characters,
or a timestamp more than a day ahead or before 1970, gets a clear InvalidInputError naming the
offset and stores nothing (not even the valid messages of the call)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from memory.errors import InvalidInputError
from memory.input_rules import FUTURE_SKEW
from memory.llm.heuristic import HeuristicProvider
from memory.models import MessageIn, Role
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
        ("   \n\t  ", "only whitespace or invisible characters"),
        ("\u200b\u2060\ufeff \u00ad", "only whitespace or invisible characters"),
        # Drawn as nothing too (h231 D2: accepted, they formed "alice asked: ㅤ" into memory):
        # Hangul fillers, the blank braille pattern, a variation selector, a bidi override, the
        # combining grapheme joiner, a tag character.
        ("\u3164 \u115f\u1160\uffa0", "only whitespace or invisible characters"),
        ("\u2800\u2800", "only whitespace or invisible characters"),
        ("\ufe0f\u202e\u034f\U000e0020", "only whitespace or invisible characters"),
        ("abc\x00def", "NUL character at offset 3"),
        ("bell\x07", "U\\+0007"),
        ("\x1b[31mred", "U\\+001B"),
        ("del\x7f", "U\\+007F"),
        ("\x9b31mMy door code is 7777.", "U\\+009B"),  # a terminal's CSI, in one character
    ],
)
async def test_unreadable_content_is_refused_and_nothing_is_stored(
    time_env: WorkflowEnvironment, tmp_path: Path, content: str, why: str
) -> None:
    h = await Harness.create(time_env, tmp_path)
    with pytest.raises(InvalidInputError, match=why):
        await h.memory.record_messages("eve", "s1", [message("m0"), message(content=content)])
    assert await h.store.get_session("s1") is None  # not even the valid message


async def test_a_speakers_name_with_a_control_character_is_refused(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    with pytest.raises(InvalidInputError, match="name holds control character U\\+001B"):
        await h.memory.record_messages("eve", "s1", [message(name="Al\x1b[2J\x07ice")])
    assert await h.store.get_session("s1") is None


async def test_a_speakers_name_with_a_bidi_control_is_refused(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """ "\u202eecila" shows as "alice", and turns what follows it around (h231 D2)."""
    h = await Harness.create(time_env, tmp_path)
    with pytest.raises(InvalidInputError, match="name holds bidirectional control U\\+202E"):
        await h.memory.record_messages("eve", "s1", [message(name="\u202eecila")])
    assert await h.store.get_session("s1") is None
    outcome = await h.memory.record_messages("eve", "s1", [message(name="עדי", content="שלום")])
    assert outcome.inserted == 1  # a right-to-left name and text need no control


async def test_tabs_newlines_and_carriage_returns_are_content(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    text = "line one\r\n\tline two\n\u200b"  # a zero-width space beside words is content
    outcome = await h.memory.record_messages("eve", "s1", [message(content=text)])
    assert outcome.inserted == 1
    [stored] = await h.store.load_messages("s1", 0, 1)
    assert stored.content == text


@pytest.mark.parametrize(
    ("created_at", "why"),
    [
        (datetime(9999, 1, 1, tzinfo=UTC), "more than a day after"),
        (datetime.now(UTC) + timedelta(days=1, hours=1), "more than a day after"),
        (datetime(1, 1, 1, tzinfo=UTC), "before 1970-01-01"),
        (datetime(1969, 12, 31, 23, 59, tzinfo=UTC), "before 1970-01-01"),
    ],
    ids=["year-9999", "a-day-and-an-hour", "year-1", "a-minute-before-1970"],
)
async def test_a_timestamp_from_the_future_or_before_1970_is_refused_and_nothing_stored(
    time_env: WorkflowEnvironment, tmp_path: Path, created_at: datetime, why: str
) -> None:
    h = await Harness.create(time_env, tmp_path)
    bad = message("m1", created_at=created_at.isoformat())
    with pytest.raises(InvalidInputError, match=f"offset 1: .*{why}"):
        await h.memory.record_messages("eve", "s1", [message("m0"), bad])
    assert await h.store.get_session("s1") is None  # not even the valid message


async def test_a_clock_up_to_a_day_ahead_is_taken_as_the_recording_time_and_the_epoch_believed(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Accepted, a message dated ahead is stored as said when it was recorded (never later),
    on its own clock: the offset it was sent with is kept for its relative dates."""
    h = await Harness.create(time_env, tmp_path)
    tokyo = timezone(timedelta(hours=9))
    ahead = (datetime.now(UTC) + FUTURE_SKEW - timedelta(minutes=5)).astimezone(tokyo)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    before = datetime.now(UTC)
    await h.memory.record_messages(
        "eve",
        "s1",
        [message("m0", created_at=epoch.isoformat()), message(created_at=ahead.isoformat())],
    )
    after = datetime.now(UTC)
    first, second = await h.store.load_messages("s1", 0, 2)
    assert first.created_at == epoch
    assert before <= second.created_at <= after
    assert second.utc_offset_minutes == 540


def said(message_id: str, content: str, at: datetime, role: Role = "user") -> MessageIn:
    return MessageIn(
        message_id=message_id, role=role, content=content, created_at=at,
        user_id="alice" if role == "user" else None,
    )  # fmt: skip


async def test_a_correction_after_a_message_dated_ahead_of_the_clock_is_applied(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Alice's backend stamps her messages 20 hours ahead (a misread time zone); her correction
    comes a minute later through a source with a right clock (another device, an MCP note). It
    is what she said last: the fact is corrected, and shown as said today, not tomorrow."""
    h = await Harness.create(time_env, tmp_path)
    h.llm = HeuristicProvider()  # type: ignore[assignment]
    now = datetime.now(UTC)
    ahead, later = now + timedelta(hours=20), now + timedelta(minutes=1)
    await h.record(
        "s1", [said("m1", "My locker code is 5522.", ahead), said("m2", "ok", ahead, "agent")]
    )
    async with h.worker():
        await h.form("s1")
        await h.record("s1", [
            said("m3", "Sorry, my locker code is 4411.", later), said("m4", "ok", later, "agent"),
        ])  # fmt: skip
        await h.form("s1")
    [fact] = await h.all_facts()
    assert fact.content == "Alice's locker code is 4411."
    assert fact.said_at is not None and fact.said_at - now < timedelta(minutes=2)  # not tomorrow
    assert [r.content for r in fact.history] == ["Alice's locker code is 5522."]
