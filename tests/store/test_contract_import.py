"""Contract: the import calls insert by id what is not there yet, so a re-run imports nothing
twice, and never bring back a forgotten user (both backends)."""

from __future__ import annotations

import pytest

from memory.errors import EmbeddingMismatchError
from memory.ids import content_hash
from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    FactRevision,
    Reflection,
    ScopeKey,
    StoredMessage,
)
from memory.store.base import MemoryStore
from tests.store.builders import MODEL, USER_KEY, at, user_filter, vec

U2_KEY = ScopeKey(scope="user", agent_id="a1", user_id="u2")


def fact(fact_id: str, content: str, *, user_id: str | None = "u1", **fields: object) -> Fact:
    return Fact.model_validate(
        {
            "fact_id": fact_id, "agent_id": "a1", "user_id": user_id,
            "scope": "user" if user_id else "agent", "content": content,
            "hash": content_hash(content), "embedding_model": MODEL,
            "formed_at": at(0), "updated_at": at(10), **fields,
        }
    )  # fmt: skip


def message(session_id: str, seq: int, user_id: str | None = "u1") -> StoredMessage:
    return StoredMessage(
        session_id=session_id, seq=seq, message_id=f"{session_id}-{seq}", role="user",
        content=f"message {seq}", created_at=at(seq), user_id=user_id, agent_id="a1",
    )  # fmt: skip


async def test_agents_are_inserted_once_and_existing_ones_left_alone(store: MemoryStore) -> None:
    await store.upsert_agent(AgentConfig(agent_id="a1", name="Live name"))
    configs = [AgentConfig(agent_id="a1", name="Imported"), AgentConfig(agent_id="a2", name="A2")]

    first = await store.import_agents(configs)
    again = await store.import_agents(configs)

    assert (first.inserted, first.existing) == (1, 1)
    assert (again.inserted, again.existing) == (0, 2)
    live = await store.get_agent("a1")
    assert live is not None and live.name == "Live name"
    assert (await store.get_agent("a2")) == configs[1]


async def test_facts_keep_history_invalidation_and_access_and_import_once(
    store: MemoryStore,
) -> None:
    revision = FactRevision(version=1, content="Plays the violin", changed_at=at(5), reason="fix")
    facts = [
        fact(
            "i1", "Plays the cello", version=2, previous_content="Plays the violin",
            history=(revision,), access_count=3, last_accessed_at=at(20),
        ),
        fact("i2", "Old address", invalidated_at=at(8), invalidated_by="i1"),
        fact("i3", "Speaks Dutch", user_id=None),
    ]  # fmt: skip
    vectors = [vec(1), vec(0, 1), vec(0, 0, 1)]

    first = await store.import_facts(facts, vectors)
    again = await store.import_facts(facts, vectors)

    assert (first.inserted, first.existing) == (3, 0)
    assert (again.inserted, again.existing) == (0, 3)
    assert await store.get_facts(["i1", "i2", "i3"]) == facts
    assert await store.embedding_meta() == (MODEL, 4)
    hits = await store.vector_search(vec(1), user_filter(), limit=1)
    assert [h.fact.fact_id for h in hits] == ["i1"]
    assert [h.fact.fact_id for h in await store.text_search("cello", user_filter(), limit=5)] == [
        "i1"
    ]
    # Another valid fact with the same text for the same user is a duplicate, not a second copy.
    dup = await store.import_facts([fact("i4", "plays the CELLO")], [vec(1)])
    assert (dup.inserted, dup.duplicate) == (0, 1)
    with pytest.raises(EmbeddingMismatchError):
        await store.import_facts([fact("i5", "New", embedding_model="other")], [vec(1)])


async def test_blobs_the_live_one_wins_and_reflections_keep_absorption(store: MemoryStore) -> None:
    await store.commit_consolidation(
        U2_KEY, expected_version=0, content="live", word_limit=50, absorbed_ids=[], at=at(1)
    )
    blob = ConsolidatedMemory(
        scope_key=USER_KEY, content="imported", version=2, word_limit=50, updated_at=at(2)
    )
    clash = blob.model_copy(update={"scope_key": U2_KEY})

    first = await store.import_consolidated([blob, clash])
    again = await store.import_consolidated([blob])

    assert first == {USER_KEY.key: "inserted", U2_KEY.key: "conflict"}
    assert again == {USER_KEY.key: "existing"}
    assert await store.get_consolidated(USER_KEY) == blob
    live = await store.get_consolidated(U2_KEY)
    assert live is not None and live.content == "live"

    absorbed = Reflection(
        reflection_id="r1", scope_key=USER_KEY, content="in the blob", source_session_id="imported",
        formed_at=at(1), absorbed_into_version=2,
    )  # fmt: skip
    buffered = absorbed.model_copy(
        update={"reflection_id": "r2", "content": "not yet", "absorbed_into_version": None}
    )
    counts = await store.import_reflections([absorbed, buffered])
    assert (counts.inserted, counts.buffered) == (2, {USER_KEY.key: 1})
    assert (await store.import_reflections([absorbed, buffered])).existing == 2
    assert [r.reflection_id for r in await store.unabsorbed_reflections(USER_KEY)] == ["r2"]
    assert await store.get_reflection("r1") == absorbed


async def test_messages_create_the_session_and_count_as_formed(store: MemoryStore) -> None:
    messages = [message("s1", 1), message("s1", 2), message("s2", 1, user_id="u2")]

    first = await store.import_messages(messages)
    again = await store.import_messages(messages)

    assert (first.inserted, again.inserted, again.existing) == (3, 0, 3)
    session = await store.get_session("s1")
    assert session is not None and (session.agent_ids, session.user_ids) == (("a1",), ("u1",))
    assert await store.load_messages("s1", 0, 10) == messages[:2]
    state = await store.get_session_agent_state("s1", "a1")
    assert state is not None
    assert (state.cursor_seq, state.last_seq, state.pending_messages) == (2, 2, 0)
    # A seq held by another message is a conflict: the stored one stays.
    taken = message("s1", 2).model_copy(update={"message_id": "other"})
    assert (await store.import_messages([taken])).conflict == 1


async def test_an_imported_guest_message_makes_the_session_have_guests(
    store: MemoryStore,
) -> None:
    """As when it was recorded: a user message without a user id is a guest's, and beside a
    user the session is a group chat (002 rule 3)."""
    await store.import_messages([message("s1", 1), message("s1", 2, user_id=None)])
    await store.import_messages([message("s2", 1)])
    guests = await store.get_session("s1", "a1")
    assert guests is not None and guests.has_guests and guests.is_group
    alone = await store.get_session("s2", "a1")
    assert alone is not None and not alone.has_guests and not alone.is_group


async def test_a_forgotten_user_is_never_imported_again(store: MemoryStore) -> None:
    await store.forget_user("u1", agent_id="a1", at=at(0))
    blob = ConsolidatedMemory(
        scope_key=USER_KEY, content="x", version=1, word_limit=5, updated_at=at(1)
    )

    facts = await store.import_facts(
        [fact("i1", "Plays the cello"), fact("i2", "Agent fact", user_id=None)], [vec(1), vec(0, 1)]
    )
    blobs = await store.import_consolidated([blob])
    messages = await store.import_messages([message("s1", 1), message("s1", 2, user_id="u2")])

    assert (facts.forgotten, facts.inserted) == (1, 1)
    assert blobs == {USER_KEY.key: "forgotten"}
    assert (messages.forgotten, messages.inserted) == (1, 1)
    assert await store.get_facts(["i1"]) == []


async def test_messages_an_export_marks_unformed_stay_to_form(store: MemoryStore) -> None:
    """A live store moved by export and import: the messages its agent had not formed yet (the
    file's cursor, 2) stay pending in the copy, so the copy forms them; the others are formed."""
    messages = [message("s1", seq) for seq in (1, 2, 3, 4)]

    counts = await store.import_messages(messages, cursors={"s1": {"a1": 2}})

    assert counts.inserted == 4
    state = await store.get_session_agent_state("s1", "a1")
    assert state is not None
    assert (state.cursor_seq, state.last_seq, state.pending_messages) == (2, 4, 2)
    assert state.pending_weighted_tokens > 0


async def test_a_stored_session_keeps_its_unformed_messages_and_gains_the_files(
    store: MemoryStore,
) -> None:
    """The copy already holds the session's first messages (an earlier import), formed up to 1:
    the file's later ones, unformed where they come from, add to what is pending."""
    await store.import_messages([message("s1", 1), message("s1", 2)], cursors={"s1": {"a1": 1}})
    messages = [message("s1", seq) for seq in (1, 2, 3, 4)]

    counts = await store.import_messages(messages, cursors={"s1": {"a1": 3}})

    assert (counts.existing, counts.inserted) == (2, 2)
    state = await store.get_session_agent_state("s1", "a1")
    assert state is not None
    # Message 2 is not formed here: the cursor stays at 1 (formed twice at worst, never skipped).
    assert (state.cursor_seq, state.pending_messages) == (1, 3)


async def test_an_agent_scoped_fact_is_one_whatever_user_id_a_file_gives_it(
    store: MemoryStore,
) -> None:
    """An agent's own facts are shared by every user: the same content under agent scope is one
    fact, whichever user id a file (an older export, another tool's) put on each copy. Before,
    the SQL stores kept one copy per user id, and MongoDB refused the import's transaction."""
    copies = [
        fact(f"i{n}", "The team ships on Fridays", user_id=None).model_copy(update={"user_id": u})
        for n, u in enumerate(("u1", "u2", None))
    ]
    counts = await store.import_facts(copies, [vec(1)] * 3)
    assert (counts.inserted, counts.duplicate) == (1, 2)
    agent_facts = [f for f in await store.get_facts(["i0", "i1", "i2"]) if f.invalidated_at is None]
    assert [f.content for f in agent_facts] == ["The team ships on Fridays"]
