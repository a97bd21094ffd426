"""MemoryManager: what a backend UI does with a user's and an agent's memory (004 "Managing User
Memory", "Managing Collective Memory"), on a real SQLite store with a word-hash embedder."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import pytest

from client.management import MemoryManager, ScopeConsolidationStatus
from memory.errors import ConflictError, InvalidInputError, NotFoundError
from memory.models import AgentConfig, FactFilter, ScopeKey
from memory.settings import ReflectionSettings, Settings
from memory.store.sqlite import SQLiteStore
from tests.fakes import WordHashEmbedder
from tests.store.builders import AGENT_KEY, USER_KEY, Former, add, at, reflection

U1 = FactFilter(agent_id="a1", user_id="u1")
U2_ONLY = FactFilter(agent_id="a1", user_id="u2", include_agent_scope=False)
SESSION_KEY = ScopeKey(scope="session", agent_id="a1", session_id="s1")


class Clock:
    def __init__(self) -> None:
        self.now = at(1000)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / "mnemos.db")
    await opened.setup()
    await opened.upsert_agent(AgentConfig(agent_id="a1", name="Eve"))
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def embedder() -> WordHashEmbedder:
    return WordHashEmbedder()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def manager(store: SQLiteStore, embedder: WordHashEmbedder, clock: Clock) -> MemoryManager:
    settings = Settings(reflections=ReflectionSettings(threshold_user=3, word_limit_user=20))
    return MemoryManager(store, embedder, settings, clock=clock)


async def _facts(store: SQLiteStore, embedder: WordHashEmbedder) -> Former:
    """f1 (u1, t100), f2 (agent scope, t110), f3 (u1, t120), f4 (u2, t130), one formation each,
    embedded with the test embedder."""
    former = await Former(store).start()
    facts = [
        ("f1", "Likes green tea", "user", "u1"),
        ("f2", "Answers in French", "agent", None),
        ("f3", "Plays the cello", "user", "u1"),
        ("f4", "Lives in Rome", "user", "u2"),
    ]
    batch = await embedder.embed([content for _, content, _, _ in facts])
    for (fact_id, content, scope, user), vector in zip(facts, batch.vectors, strict=True):
        op = add(fact_id, content, [float(x) for x in vector], scope=scope, user_id=user)
        await former.form(op, model=embedder.model)
    embedder.calls.clear()
    return former


async def _top_hit(store: SQLiteStore, embedder: WordHashEmbedder, query: str) -> str | None:
    batch = await embedder.embed([query])
    hits = await store.vector_search(batch.vectors[0], U1, limit=1, min_score=0.5)
    return hits[0].fact.fact_id if hits else None


# ------------------------------------------------------------ facts


async def test_facts_are_listed_newest_first_one_page_at_a_time(
    manager: MemoryManager, store: SQLiteStore, embedder: WordHashEmbedder
) -> None:
    await _facts(store, embedder)

    first = await manager.list_facts(U1, limit=2)
    assert [f.fact_id for f in first.facts] == ["f3", "f2"]
    assert (first.has_more, first.valid_total) == (True, 3)
    second = await manager.list_facts(U1, offset=2, limit=2)
    assert [f.fact_id for f in second.facts] == ["f1"]
    assert not second.has_more
    # Another user's facts stay out of this user's view, and the other way round.
    assert [f.fact_id for f in (await manager.list_facts(U2_ONLY)).facts] == ["f4"]

    with pytest.raises(InvalidInputError):
        await manager.list_facts(U1, limit=0)
    with pytest.raises(InvalidInputError):
        await manager.list_facts(U1, offset=-1)
    with pytest.raises(NotFoundError, match="not registered"):
        await manager.list_facts(FactFilter(agent_id="a2", user_id="u1"))


async def test_pages_follow_their_cursors_both_ways(
    manager: MemoryManager, store: SQLiteStore, embedder: WordHashEmbedder
) -> None:
    await _facts(store, embedder)

    first = await manager.list_facts(U1, limit=2)
    assert first.prev_cursor is None and first.next_cursor is not None
    second = await manager.list_facts(U1, limit=2, cursor=first.next_cursor)
    assert [f.fact_id for f in second.facts] == ["f1"]
    assert (second.has_more, second.next_cursor) == (False, None)
    assert second.prev_cursor is not None
    back = await manager.list_facts(U1, limit=2, cursor=second.prev_cursor)
    assert [f.fact_id for f in back.facts] == ["f3", "f2"]
    assert back.prev_cursor is None and back.next_cursor is not None  # the first page again

    edge = base64.urlsafe_b64encode(b'["after","0001-01-01T00:00:00+05:00","f1"]').decode()
    for bad in ("nonsense", "W10", first.next_cursor[:-3], edge):  # edge: no store writes it
        with pytest.raises(InvalidInputError, match="cursor is not one a fact listing gave"):
            await manager.list_facts(U1, cursor=bad)
    with pytest.raises(InvalidInputError, match="a cursor or an offset"):
        await manager.list_facts(U1, offset=2, cursor=first.next_cursor)


async def test_an_edited_fact_is_re_embedded_and_found_by_its_new_text(
    manager: MemoryManager, store: SQLiteStore, embedder: WordHashEmbedder, clock: Clock
) -> None:
    await _facts(store, embedder)
    assert await _top_hit(store, embedder, "likes green tea") == "f1"

    edited = await manager.edit_fact("f1", "  Drinks oolong every morning  ", within=U1)

    assert embedder.calls[-1] == ["Drinks oolong every morning"]
    assert (edited.content, edited.version, edited.updated_at) == (
        "Drinks oolong every morning",
        2,
        clock.now,
    )
    assert edited.history[-1].content == "Likes green tea"
    assert await manager.show_fact("f1") == edited
    assert await _top_hit(store, embedder, "drinks oolong every morning") == "f1"
    assert await _top_hit(store, embedder, "likes green tea") is None
    # Saving the same text again is no new version and costs no embedding.
    calls = len(embedder.calls)
    assert await manager.edit_fact("f1", "Drinks oolong every morning") == edited
    assert len(embedder.calls) == calls


async def test_a_fact_edit_that_cannot_apply_changes_nothing(
    manager: MemoryManager, store: SQLiteStore, embedder: WordHashEmbedder
) -> None:
    await _facts(store, embedder)
    before = await store.get_facts(["f1", "f3", "f4"])
    limit = manager.settings.facts.max_words * 2

    with pytest.raises(InvalidInputError, match="empty"):
        await manager.edit_fact("f1", "   ")
    with pytest.raises(InvalidInputError, match=f"at most {limit} words"):
        await manager.edit_fact("f1", " ".join(["word"] * (limit + 1)))
    with pytest.raises(NotFoundError):
        await manager.edit_fact("nope", "Likes coffee")
    # f4 is u2's: a UI serving u1 cannot reach it, nor tell it exists.
    with pytest.raises(NotFoundError):
        await manager.edit_fact("f4", "Lives in Milan", within=U1)
    with pytest.raises(NotFoundError):
        await manager.show_fact("f4", within=U1)
    assert embedder.calls == []
    # The text of another of the user's facts: the two would be one fact.
    with pytest.raises(ConflictError, match="f1"):
        await manager.edit_fact("f3", "likes green tea.")

    assert await store.get_facts(["f1", "f3", "f4"]) == before
    assert await manager.edit_fact("f1", " ".join(["word"] * limit)) is not None


async def test_a_fact_edit_of_an_older_version_never_overwrites_unseen(
    manager: MemoryManager, store: SQLiteStore, embedder: WordHashEmbedder
) -> None:
    await _facts(store, embedder)
    # Two people opened f1 at version 1; the first one's correction is version 2.
    mine = await manager.edit_fact("f1", "Drinks oolong", within=U1, expected_version=1)
    calls = len(embedder.calls)

    with pytest.raises(ConflictError, match="version 2, not 1: reload and edit again"):
        await manager.edit_fact("f1", "Drinks mate", within=U1, expected_version=1)
    assert len(embedder.calls) == calls  # refused before it costs an embedding
    assert await manager.show_fact("f1") == mine
    with pytest.raises(InvalidInputError, match="0 or more"):
        await manager.edit_fact("f1", "Drinks mate", expected_version=-1)
    # Without a version: whichever is stored, as a script's edit always did.
    assert (await manager.edit_fact("f1", "Drinks mate")).version == 3


async def test_a_deleted_fact_disappears_from_the_list(
    manager: MemoryManager, store: SQLiteStore, embedder: WordHashEmbedder, clock: Clock
) -> None:
    await _facts(store, embedder)

    deleted = await manager.delete_fact("f1", within=U1)

    assert deleted.invalidated_at == clock.now
    assert deleted.history[-1].reason == "manual delete"
    page = await manager.list_facts(U1)
    assert ([f.fact_id for f in page.facts], page.valid_total) == (["f3", "f2"], 2)
    shown = await manager.list_facts(U1, include_invalid=True)
    assert [f.fact_id for f in shown.facts] == ["f3", "f2", "f1"]
    assert await _top_hit(store, embedder, "likes green tea") is None
    assert await manager.delete_fact("f1") == deleted  # idempotent
    with pytest.raises(ConflictError, match="deleted"):
        await manager.edit_fact("f1", "Likes coffee")
    with pytest.raises(NotFoundError):
        await manager.delete_fact("f4", within=U1)
    assert embedder.calls == [["likes green tea"]]  # the search's: deleting embeds nothing


# ------------------------------------------------------------ reflections


async def _reflections(store: SQLiteStore) -> list[str]:
    """u1: three buffered reflections (t10, t20, t30); agent: one. Formed in session s2, so
    that it does not replay the formations of _facts (same ids: already committed)."""
    former = await Former(store, session_id="s2").start()
    user = [reflection(USER_KEY, i, f"user note {i}", seconds=10 * i) for i in (1, 2, 3)]
    await former.form(reflections=[*user, reflection(AGENT_KEY, 1, "agent note")])
    return [r.reflection_id for r in user]


async def test_buffered_reflections_are_edited_and_deleted_before_consolidation(
    manager: MemoryManager, store: SQLiteStore
) -> None:
    r1, r2, r3 = await _reflections(store)

    assert [r.content for r in await manager.list_reflections(USER_KEY)] == [
        "user note 3",
        "user note 2",
        "user note 1",
    ]
    edited = await manager.edit_reflection(USER_KEY, r2, " user note 2, refined ")
    assert edited.content == "user note 2, refined"
    await manager.delete_reflection(USER_KEY, r3)

    assert [r.content for r in await store.unabsorbed_reflections(USER_KEY)] == [
        "user note 1",
        "user note 2, refined",
    ]
    # The agent's reflections are not reachable through the user's key.
    [agent_note] = await manager.list_reflections(AGENT_KEY)
    with pytest.raises(NotFoundError):
        await manager.delete_reflection(USER_KEY, agent_note.reflection_id)
    with pytest.raises(NotFoundError):
        await manager.edit_reflection(USER_KEY, r3, "gone")
    limit = manager.settings.reflections.max_words * 2
    with pytest.raises(InvalidInputError, match=f"at most {limit} words"):
        await manager.edit_reflection(USER_KEY, r1, " ".join(["word"] * (limit + 1)))
    with pytest.raises(InvalidInputError):
        await manager.edit_reflection(USER_KEY, r1, "")
    assert await store.count_unabsorbed(AGENT_KEY) == 1

    # Once absorbed into the blob, a reflection is the blob's to change.
    await store.commit_consolidation(
        USER_KEY, expected_version=0, content="VERSION: 1\nblob", word_limit=20,
        absorbed_ids=[r1, r2], at=at(500),
    )  # fmt: skip
    with pytest.raises(ConflictError, match="absorbed"):
        await manager.edit_reflection(USER_KEY, r1, "too late")
    with pytest.raises(ConflictError, match="absorbed"):
        await manager.delete_reflection(USER_KEY, r2)
    assert await manager.list_reflections(USER_KEY) == []
    assert len(await manager.list_reflections(USER_KEY, include_absorbed=True)) == 2


async def test_a_reflection_edit_of_a_text_changed_since_never_overwrites_unseen(
    manager: MemoryManager, store: SQLiteStore
) -> None:
    _, r2, _ = await _reflections(store)
    mine = await manager.edit_reflection(
        USER_KEY, r2, "user note 2, refined", expected_content="user note 2"
    )

    with pytest.raises(ConflictError, match="changed since it was read"):
        await manager.edit_reflection(USER_KEY, r2, "note two", expected_content="user note 2")
    assert await store.get_reflection(r2) == mine


# ------------------------------------------------------------ consolidated memory


async def test_a_manual_blob_edit_is_a_new_version_that_never_overwrites_unseen(
    manager: MemoryManager, store: SQLiteStore, clock: Clock
) -> None:
    await _reflections(store)
    assert await manager.show_consolidated(USER_KEY) is None

    first = await manager.edit_consolidated(
        USER_KEY, "[PREFERENCES]\n- Green tea", expected_version=0
    )

    assert (first.version, first.edited_by, first.updated_at) == (1, "manual", clock.now)
    assert first.content == "VERSION: 1\n[PREFERENCES]\n- Green tea"
    assert first.word_limit == 20
    assert await manager.show_consolidated(USER_KEY) == first
    # The buffered reflections stay buffered: the next consolidation merges them into the edit.
    assert await store.count_unabsorbed(USER_KEY) == 3

    # A consolidation lands while the person is editing version 1: their save must not win.
    moved = await store.commit_consolidation(
        USER_KEY, expected_version=1, content="VERSION: 2\nconsolidated", word_limit=20,
        absorbed_ids=[], at=at(1100),
    )  # fmt: skip
    with pytest.raises(ConflictError, match="version 2"):
        await manager.edit_consolidated(USER_KEY, "VERSION: 1\nmine", expected_version=1)
    assert await manager.show_consolidated(USER_KEY) == moved

    # Edited from what they see (with its VERSION line): the line is the new version's.
    third = await manager.edit_consolidated(USER_KEY, "VERSION: 2\n- Oolong now")
    assert (third.version, third.content) == (3, "VERSION: 3\n- Oolong now")
    # Saved as it stands (the page's Save pressed twice): no new version.
    assert await manager.edit_consolidated(USER_KEY, third.content, expected_version=3) == third
    assert await manager.edit_consolidated(USER_KEY, "- Oolong now\n") == third

    with pytest.raises(InvalidInputError, match="empty"):
        await manager.edit_consolidated(USER_KEY, "VERSION: 3\n  ")
    with pytest.raises(InvalidInputError, match="at most 22 words"):  # 20 + 10% tolerance
        await manager.edit_consolidated(USER_KEY, " ".join(["word"] * 23))
    with pytest.raises(NotFoundError):
        await manager.edit_consolidated(ScopeKey(scope="agent", agent_id="a2"), "text")
    assert await manager.show_consolidated(USER_KEY) == third


# ------------------------------------------------------------ overview


async def test_stats_and_consolidation_status_per_scope(
    manager: MemoryManager, store: SQLiteStore, embedder: WordHashEmbedder
) -> None:
    await _facts(store, embedder)
    await _reflections(store)
    await manager.edit_consolidated(USER_KEY, "- Likes green tea\n- Plays the cello")

    stats = await manager.stats("a1", user_id="u1", session_id="s1")

    by_scope = {s.scope_key.scope: s for s in stats.scopes}
    assert [s.scope_key for s in stats.scopes] == [AGENT_KEY, USER_KEY, SESSION_KEY]
    agent, user, session = by_scope["agent"], by_scope["user"], by_scope["session"]
    assert (agent.valid_facts, agent.buffered_reflections, agent.blob_version) == (1, 1, 0)
    assert (agent.blob_words, agent.blob_updated_at, agent.blob_edited_by) == (0, None, None)
    assert (user.valid_facts, user.buffered_reflections) == (2, 3)
    assert (user.blob_version, user.blob_words, user.blob_edited_by) == (1, 10, "manual")
    assert user.blob_updated_at == at(1000)
    assert (session.valid_facts, session.buffered_reflections) == (None, 0)

    status = await manager.consolidation_status("a1", user_id="u1", session_id="s1")
    assert status == [
        ScopeConsolidationStatus(
            scope_key=AGENT_KEY, blob_version=0, buffered=1, threshold=10, due=False
        ),
        ScopeConsolidationStatus(
            scope_key=USER_KEY, blob_version=1, buffered=3, threshold=3, due=True
        ),
        ScopeConsolidationStatus(
            scope_key=SESSION_KEY, blob_version=0, buffered=0, threshold=4, due=False
        ),
    ]
    assert [s.scope_key for s in (await manager.stats("a1")).scopes] == [AGENT_KEY]
    with pytest.raises(NotFoundError):
        await manager.stats("a2")
    with pytest.raises(InvalidInputError):
        await manager.consolidation_status("a1", user_id="not a valid id!")
