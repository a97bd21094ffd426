"""Session memory is read by whoever joins the session later: a private detail told while one
user was alone there is that user's memory, not the session's (memory/scopes.py). The public
MemoryClient, the offline provider, a real SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.isolation.bench import Bench, sqlite_bench

SECRET = "I was diagnosed with diabetes in March 2024 and I feel anxious about it."


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    async with sqlite_bench(tmp_path) as bench:
        yield bench


async def test_a_private_detail_told_alone_is_not_read_by_who_joins_later(bench: Bench) -> None:
    await bench.say("eve", "desk", SECRET, user_id="alice")
    await bench.say("eve", "desk", "Let us plan my week, please.", user_id="alice")
    await bench.form("desk", "eve")
    await bench.say("eve", "desk", "Hi, I am Bob, joining the chat.", user_id="bob")

    assert "diabetes" not in await bench.memory.memory_context("eve", "desk", "bob")
    # Still alice's: shown to her where she is alone, this session or the next.
    await bench.say("eve", "alice-2", "Hello again.", user_id="alice")
    assert "diabetes" in await bench.memory.memory_context("eve", "alice-2", "alice")


async def test_what_is_not_private_stays_the_sessions(bench: Bench) -> None:
    await bench.say("eve", "desk", "Let us plan the product launch for May.", user_id="alice")
    await bench.form("desk", "eve")
    await bench.say("eve", "desk", "Hi, I am Bob, joining the chat.", user_id="bob")

    session = (await bench.memory.memory_context("eve", "desk", "bob")).split("<SessionMemory>")
    assert "product launch" in session[1]
