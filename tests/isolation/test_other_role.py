"""A person the backend knows, speaking with role "other" (an operator, a second human in the room):
they count for the group rule and their words are theirs, never the agent's nor another user's
(memory/speakers.py). The public MemoryClient, the heuristic provider, a real SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory import transcript
from memory.models import FactFilter
from tests.isolation.bench import Bench, sqlite_bench


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    async with sqlite_bench(tmp_path) as bench:
        yield bench


async def test_a_person_speaking_as_other_makes_the_room_a_group(bench: Bench) -> None:
    await bench.say("eve", "alice-1", "I was diagnosed with diabetes in March 2024.", user_id="alice")  # fmt: skip
    await bench.form("alice-1", "eve")

    await bench.say("eve", "room", "Hi Eve, shall we start the review?", user_id="alice")
    await bench.say(
        "eve", "room", "Hello, I run the support desk here.", user_id="bob", name="Bob",
        role="other",
    )  # fmt: skip
    await bench.say("eve", "room", "I moved to Berlin in 2024 with my sister Jane.", user_id="alice")  # fmt: skip
    await bench.form("room", "eve")

    room = await bench.store.get_session("room", "eve")
    assert room is not None and set(room.user_ids) == {"alice", "bob"}
    # bob reads eve's answers there: alice's user memory is neither shown nor formed.
    seen = await bench.seen_by("eve", "room", "alice", ["diabetes", "Berlin"])
    assert "diabetes" not in seen
    hers = await bench.store.list_facts(
        FactFilter(agent_id="eve", include_agent_scope=False, user_id="alice")
    )
    assert not any("Berlin" in f.content for f in hers)


async def test_what_a_person_says_as_other_is_theirs_never_the_agents(bench: Bench) -> None:
    await bench.say(
        "eve", "desk", "I moved to Lisbon in 2021 and my locker code is 4411.", user_id="bob",
        name="", role="other",
    )  # fmt: skip
    stored = await bench.store.load_messages("desk", 0, 1)
    # Shown as bob, not as the agent that recorded it ("Eve moved to Lisbon").
    assert [(m.name, m.user_id) for m in transcript.prompt_messages(stored)] == [("bob", "bob")]
    await bench.form("desk", "eve")

    his = await bench.store.list_facts(
        FactFilter(agent_id="eve", include_agent_scope=False, user_id="bob")
    )
    assert any("4411" in f.content for f in his)
    await bench.say("eve", "carol-1", "Hello, what do you know?", user_id="carol")
    assert "4411" not in await bench.seen_by("eve", "carol-1", "carol", ["locker code"])
    agents = await bench.store.list_facts(FactFilter(agent_id="eve"))
    assert not any("eve" in f.content.lower() for f in agents)
