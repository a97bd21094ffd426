"""The <MemoryContext> XML: layout, escaping, scopes, FIFO facts and recent reflections."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.context import age_suffix, assemble_context
from memory.models import AgentConfig, SessionInfo
from memory.settings import FactSettings, ReflectionSettings, Settings
from memory.store.base import MemoryStore
from tests.rag.builders import (
    MemoryWriter,
    agent,
    agent_key,
    at,
    session,
    session_key,
    user_key,
)

NOW = at(days=2)


async def context(
    store: MemoryStore,
    *,
    who: AgentConfig | None = None,
    where: SessionInfo | None = None,
    user_id: str | None = "u1",
    settings: Settings | None = None,
    now: datetime = NOW,
) -> str:
    return await assemble_context(
        store,
        settings or Settings(),
        agent=who or agent(),
        session=where or session("s1", "u1"),
        user_id=user_id,
        now=now,
    )


async def full_memory(store: MemoryStore) -> MemoryWriter:
    """Something in every part the context can show, for a1 / u1 / s1, and decoys around it."""
    w = MemoryWriter(store, "a1")
    await w.blob(agent_key(), "VERSION: 3\n[CURRENT PROJECTS]\n- Mars Festival: Phase 2")
    await w.reflections(agent_key(), "User mentioned a new deadline for Phase 3")
    await w.blob(user_key("u1"), "VERSION: 2\n[PREFERENCES]\n- Prefers concise responses")
    await w.blob(session_key("s1"), "VERSION: 1\n[CURRENT GOAL]\n- Debugging the login issue")
    await w.reflections(session_key("s1"), "Tried approach #3, still failing")
    await w.facts(("f-budget", "agent", None, "Mars Festival budget is $50,000"), when=at(days=-1))
    await w.facts(
        ("f-email", "user", "u1", "Alice's email is alice@example.com"),
        when=at(days=2, hours=-1),
        said_at=at(days=2, hours=-1),
    )
    # Decoys: another user, another session, another agent.
    await w.blob(user_key("u2"), "VERSION: 1\nBob's private notes")
    await w.facts(("f-bob", "user", "u2", "Bob's phone is 555-0100"), when=at(days=1))
    await w.reflections(session_key("s2"), "Another session's reflection")
    other = MemoryWriter(store, "a2")
    await other.reflections(session_key("s1", "a2"), "Agent a2's view of this session")
    await other.facts(("g-fact", "agent", None, "Agent a2 knows a secret"), when=at(days=1))
    return w


EXPECTED = """\
<MemoryContext>
  <AgentMemory>
    <Consolidated>VERSION: 3
[CURRENT PROJECTS]
- Mars Festival: Phase 2</Consolidated>
    <RecentReflections>
- User mentioned a new deadline for Phase 3
    </RecentReflections>
  </AgentMemory>
  <UserMemory>
    <Consolidated>VERSION: 2
[PREFERENCES]
- Prefers concise responses</Consolidated>
  </UserMemory>
  <SessionMemory>
    <Consolidated>VERSION: 1
[CURRENT GOAL]
- Debugging the login issue</Consolidated>
    <RecentReflections>
- Tried approach #3, still failing
    </RecentReflections>
  </SessionMemory>
  <Facts>
- [user] Alice's email is alice@example.com (said 3 March 2025, 1h ago)
- [agent] Mars Festival budget is $50,000 (3d ago)
  </Facts>
</MemoryContext>"""


async def test_the_layout_of_002_with_only_this_agents_users_and_sessions_memory(
    store: MemoryStore,
) -> None:
    await full_memory(store)

    assert await context(store) == EXPECTED


async def test_a_group_chat_hides_user_memory_and_user_facts(store: MemoryStore) -> None:
    await full_memory(store)

    xml = await context(store, where=session("s1", "u1", "u2"))

    assert "<UserMemory>" not in xml and "Prefers concise" not in xml
    assert "[user]" not in xml
    assert "<AgentMemory>" in xml and "<SessionMemory>" in xml and "[agent] Mars" in xml


async def test_no_memory_at_all_is_the_empty_string(sqlite_store: MemoryStore) -> None:
    assert await context(sqlite_store) == ""


async def test_every_text_is_escaped(sqlite_store: MemoryStore) -> None:
    w = MemoryWriter(sqlite_store)
    await w.blob(user_key(), "VERSION: 1\nLikes <b>bold</b> & </UserMemory> tricks")
    await w.reflections(session_key(), "Asked about a < b && c > d")
    await w.facts(("f1", "agent", None, "Use <MemoryContext> & friends"), when=NOW)

    xml = await context(sqlite_store)

    assert "Likes &lt;b&gt;bold&lt;/b&gt; &amp; &lt;/UserMemory&gt; tricks" in xml
    assert "- Asked about a &lt; b &amp;&amp; c &gt; d" in xml
    assert "- [agent] Use &lt;MemoryContext&gt; &amp; friends (just now)" in xml
    assert xml.count("<UserMemory>") == 1 and xml.count("</UserMemory>") == 1
    assert xml.count("<MemoryContext>") == 1


async def test_empty_parts_are_omitted(sqlite_store: MemoryStore) -> None:
    await MemoryWriter(sqlite_store).reflections(session_key(), "Only a session note")

    xml = await context(sqlite_store)

    assert xml == (
        "<MemoryContext>\n  <SessionMemory>\n    <RecentReflections>\n- Only a session note\n"
        "    </RecentReflections>\n  </SessionMemory>\n</MemoryContext>"
    )


@pytest.mark.parametrize(
    ("user_memory", "agent_memory", "shown", "hidden"),
    [
        (False, True, ["<AgentMemory>", "[agent]"], ["<UserMemory>", "[user]"]),
        (True, False, ["<UserMemory>", "[user]"], ["<AgentMemory>", "[agent]"]),
        (False, False, [], ["<AgentMemory>", "<UserMemory>", "<Facts>"]),
    ],
)
async def test_toggles_hide_their_scopes_and_session_memory_always_shows(
    sqlite_store: MemoryStore,
    user_memory: bool,
    agent_memory: bool,
    shown: list[str],
    hidden: list[str],
) -> None:
    await full_memory(sqlite_store)

    xml = await context(sqlite_store, who=agent(user_memory=user_memory, agent_memory=agent_memory))

    assert "<SessionMemory>" in xml
    assert all(part in xml for part in shown)
    assert not any(part in xml for part in hidden)


async def test_user_memory_needs_the_sessions_own_user(sqlite_store: MemoryStore) -> None:
    await full_memory(sqlite_store)

    assert "<UserMemory>" not in await context(sqlite_store, user_id=None)
    assert "<UserMemory>" not in await context(sqlite_store, where=session("s1", "u2"))
    bob = await context(sqlite_store, where=session("s9", "u2"), user_id="u2")
    assert "Bob's private notes" in bob and "Bob's phone" in bob and "Alice" not in bob


# ---------------------------------------------------------------- FIFO facts


async def test_fifo_shows_the_newest_facts_within_the_limit(store: MemoryStore) -> None:
    w = MemoryWriter(store)
    for hour in range(6):
        await w.facts(
            (f"f{hour}", "agent", None, f"Fact number {hour}"), when=at(days=1, hours=hour)
        )
    settings = Settings(facts=FactSettings(fifo_limit=3))

    xml = await context(store, settings=settings)

    assert xml.splitlines()[2:5] == [
        "- [agent] Fact number 5 (19h ago)",
        "- [agent] Fact number 4 (20h ago)",
        "- [agent] Fact number 3 (21h ago)",
    ]
    assert "Fact number 2" not in xml


async def test_fifo_leaves_out_old_and_invalidated_facts(store: MemoryStore) -> None:
    w = MemoryWriter(store)
    await w.facts(("old", "agent", None, "Formed 49 hours ago"), when=at(hours=-1))
    await w.facts(("kept", "agent", None, "Formed 47 hours ago"), when=at(hours=1))
    await w.facts(("gone", "agent", None, "Drives a van"), when=at(days=1))
    await w.replace("gone", ("new", "agent", None, "Drives a bike"), when=at(days=1, hours=1))
    settings = Settings(facts=FactSettings(fifo_max_age_hours=48))

    xml = await context(store, settings=settings)

    assert "Formed 47 hours ago (1d ago)" in xml and "Drives a bike" in xml
    assert "Formed 49 hours ago" not in xml and "Drives a van" not in xml


async def test_a_fact_shows_when_it_was_said_and_counts_its_age_from_then(
    sqlite_store: MemoryStore,
) -> None:
    # Formed now from messages said before (a late formation, an imported history).
    w = MemoryWriter(sqlite_store)
    await w.facts(
        ("f2", "agent", None, "Caroline joined a choir"), when=NOW, said_at=NOW - timedelta(days=2)
    )
    await w.facts(
        ("f1", "agent", None, "Caroline went to a support group on 7 May 2023"),
        when=NOW,
        said_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
    )
    await w.facts(("f0", "agent", None, "An older store's fact"), when=NOW)

    xml = await context(sqlite_store)

    said = (NOW - timedelta(days=2)).strftime("%-d %B %Y")
    assert f"- [agent] Caroline joined a choir (said {said}, 2d ago)" in xml
    assert "- [agent] An older store's fact (just now)" in xml
    # Recent facts are the recently said ones: news of 2023 formed today is not among them
    # (search_facts still finds it, saying when it was said).
    assert "support group" not in xml


async def test_fifo_can_be_switched_off(sqlite_store: MemoryStore) -> None:
    await MemoryWriter(sqlite_store).facts(("f1", "agent", None, "A recent fact"), when=NOW)

    assert (
        await context(sqlite_store, settings=Settings(facts=FactSettings(fifo_enabled=False))) == ""
    )


# ---------------------------------------------------------------- recent reflections


async def test_only_the_newest_unabsorbed_reflections_show_oldest_first(
    store: MemoryStore,
) -> None:
    w = MemoryWriter(store)
    await w.reflections(agent_key(), *(f"note {i}" for i in range(1, 7)))
    absorbed = await store.unabsorbed_reflections(agent_key(), limit=1)  # note 1
    await store.commit_consolidation(
        agent_key(), expected_version=0, content="VERSION: 1\nnote 1 merged", word_limit=100,
        absorbed_ids=[r.reflection_id for r in absorbed], at=NOW,
    )  # fmt: skip
    settings = Settings(reflections=ReflectionSettings(recent_in_context=3))

    xml = await context(store, settings=settings)

    assert "- note 4\n- note 5\n- note 6\n" in xml
    assert "- note 3" not in xml and "- note 1\n" not in xml
    assert "note 1 merged" in xml


async def test_no_recent_reflections_when_the_setting_is_zero(sqlite_store: MemoryStore) -> None:
    await MemoryWriter(sqlite_store).reflections(session_key(), "a note")

    assert (
        await context(
            sqlite_store, settings=Settings(reflections=ReflectionSettings(recent_in_context=0))
        )
        == ""
    )


# ---------------------------------------------------------------- ages


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-30, "just now"),
        (0, "just now"),
        (59, "just now"),
        (60, "1m ago"),
        (5 * 60 + 59, "5m ago"),
        (3599, "59m ago"),
        (3600, "1h ago"),
        (3 * 3600 + 1800, "3h ago"),
        (86399, "23h ago"),
        (86400, "1d ago"),
        (2 * 86400 + 7200, "2d ago"),
        (400 * 86400, "400d ago"),
    ],
)
def test_age_suffix(seconds: int, text: str) -> None:
    assert age_suffix(at(), at(seconds=seconds)) == text
