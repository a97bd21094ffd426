"""Contract: the management methods a backend UI calls — list, count, edit and delete facts and
buffered reflections (both backends)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.errors import ConflictError, EmbeddingMismatchError, InvalidInputError, NotFoundError
from memory.formation_commit import FactUpdate
from memory.ids import content_hash
from memory.models import Fact, FactRevision, ScopeKey
from memory.store.base import MemoryStore
from memory.store.sqlite import SQLiteStore
from tests.store.builders import (
    AGENT_KEY,
    MODEL,
    USER_KEY,
    Former,
    add,
    at,
    reflection,
    unit,
    user_filter,
    vec,
)

U2_KEY = ScopeKey(scope="user", agent_id="a1", user_id="u2")


async def _populate(store: MemoryStore) -> None:
    """a1: f1 (u1, t100), f2 (agent scope, t110), f3 (u1, t120), f4 (u2, t130); a2: g1 (u1)."""
    former = await Former(store).start()
    await former.form(add("f1", "Likes green tea", unit(1, 0)))
    await former.form(add("f2", "Answers in French", unit(0, 1), scope="agent"))
    await former.form(add("f3", "Plays the cello", unit(0, 0, 1)))
    await former.form(add("f4", "Likes green tea", unit(1, 0), user_id="u2"))
    other = await Former(store, session_id="s2", agent_id="a2").start(1)
    await other.form(add("g1", "Likes black coffee", unit(1, 1)))


# ------------------------------------------------------------ list and count


async def test_list_facts_pages_newest_first_within_the_filter(store: MemoryStore) -> None:
    await _populate(store)
    u1 = user_filter()

    assert [f.fact_id for f in await store.list_facts(u1)] == ["f3", "f2", "f1"]
    assert [f.fact_id for f in await store.list_facts(u1, offset=1, limit=1)] == ["f2"]
    assert [f.fact_id for f in await store.list_facts(u1, offset=2, limit=5)] == ["f1"]
    assert await store.list_facts(u1, offset=3) == []
    assert await store.list_facts(u1, limit=0) == []
    # Another user's facts and another agent's are never listed, even with the same content.
    only_u2 = user_filter(user_id="u2", agent_scope=False)
    assert [f.fact_id for f in await store.list_facts(only_u2)] == ["f4"]
    assert [f.fact_id for f in await store.list_facts(user_filter(user_id=None))] == ["f2"]
    assert [f.fact_id for f in await store.list_facts(user_filter("a2"))] == ["g1"]
    assert await store.list_facts(user_filter(user_id=None, agent_scope=False)) == []
    # Listed facts are the stored ones, field for field.
    listed = await store.list_facts(u1)
    assert listed == await store.get_facts(["f3", "f2", "f1"])

    assert await store.count_facts(u1) == 3
    assert await store.count_facts(only_u2) == 1
    assert await store.count_facts(user_filter(user_id=None)) == 1
    assert await store.count_facts(user_filter("a2")) == 1
    assert await store.count_facts(user_filter("nobody")) == 0


async def test_list_facts_shows_deleted_facts_only_on_request(store: MemoryStore) -> None:
    await _populate(store)
    await store.invalidate_fact("f3", at=at(500))

    assert [f.fact_id for f in await store.list_facts(user_filter())] == ["f2", "f1"]
    everything = await store.list_facts(user_filter(), include_invalid=True)
    # Deleting does not make a fact newer: it keeps its place by updated_at.
    assert [f.fact_id for f in everything] == ["f3", "f2", "f1"]
    assert everything[0].invalidated_at == at(500)
    assert await store.count_facts(user_filter()) == 2


# ------------------------------------------------------------ edit_fact


async def test_edit_fact_makes_a_new_searchable_version(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Works at Acme", unit(1, 0)))
    await former.form(add("f2", "Plays the cello", unit(0, 0, 1)))
    # Searched once before the edit, so that any cache of the old vectors is warm.
    [warm] = await store.vector_search(vec(1, 0), user_filter(), limit=1)
    assert warm.fact.fact_id == "f1"
    before = await store.scope_versions([USER_KEY.key, AGENT_KEY.key])

    edited = await store.edit_fact(
        "f1", content="Works at Globex", embedding=vec(0, 1), embedding_model=MODEL,
        at=at(500), reason="typo",
    )  # fmt: skip

    assert (edited.content, edited.version, edited.previous_content) == (
        "Works at Globex",
        2,
        "Works at Acme",
    )
    # The revision keeps the replaced version's provenance; the edit keeps the fact's own.
    revision = FactRevision(
        version=1, content="Works at Acme", changed_at=at(500), reason="typo",
        source_session_id="s1", formation_id=edited.formation_id,
    )  # fmt: skip
    assert (edited.formation_id is not None, edited.source_session_id) == (True, "s1")
    assert edited.history == (revision,)
    assert edited.hash == content_hash("Works at Globex")
    assert (edited.formed_at, edited.updated_at, edited.invalidated_at) == (at(100), at(500), None)
    assert await store.get_facts(["f1"]) == [edited]
    # The new vector is found, the old one is gone; text search sees the new words only.
    [hit] = await store.vector_search(vec(0, 1), user_filter(), limit=1)
    assert (hit.fact.fact_id, round(hit.score, 4)) == ("f1", 1.0)
    assert await store.vector_search(vec(1, 0), user_filter(), limit=5, min_score=0.5) == []
    assert [h.fact.fact_id for h in await store.text_search("Globex", user_filter(), limit=5)] == [
        "f1"
    ]
    assert await store.text_search("Acme", user_filter(), limit=5) == []
    # The edit is the newest change for the context FIFO; only the user's scope moved.
    recent = await store.recent_facts(user_filter(), since=at(0), limit=5)
    assert [f.fact_id for f in recent] == ["f1", "f2"]
    after = await store.scope_versions([USER_KEY.key, AGENT_KEY.key])
    assert after == {USER_KEY.key: before[USER_KEY.key] + 1, AGENT_KEY.key: before[AGENT_KEY.key]}


async def test_edit_fact_may_change_only_case_and_spacing(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "likes green tea", unit(1, 0)))

    edited = await store.edit_fact(
        "f1", content="Likes green tea", embedding=vec(1, 0), embedding_model=MODEL, at=at(500)
    )

    # Same normalised content: the fact does not duplicate itself.
    assert (edited.content, edited.version) == ("Likes green tea", 2)
    assert edited.history[-1].reason == "manual edit"


async def test_edit_fact_refuses_a_duplicate_and_writes_nothing(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Likes tea", unit(1, 0)), add("f2", "Likes coffee", unit(0, 1)))
    await former.form(add("f3", "Likes jazz", unit(0, 0, 1), user_id="u2"))
    [f2] = await store.get_facts(["f2"])
    versions = await store.scope_versions([USER_KEY.key])

    with pytest.raises(ConflictError, match="f1"):
        await store.edit_fact(
            "f2", content="likes  TEA.", embedding=vec(1, 0), embedding_model=MODEL, at=at(500)
        )

    assert await store.get_facts(["f2"]) == [f2]
    assert await store.scope_versions([USER_KEY.key]) == versions
    [hit] = await store.vector_search(vec(0, 1), user_filter(), limit=1)
    assert hit.fact == f2
    # Another user's fact with that content is no duplicate of this one.
    edited = await store.edit_fact(
        "f2", content="Likes jazz", embedding=vec(0, 0, 1), embedding_model=MODEL, at=at(500)
    )
    assert (edited.content, edited.version) == ("Likes jazz", 2)


async def test_edit_fact_of_a_deleted_or_unknown_fact_fails(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Likes tea", unit(1, 0)))
    deleted = await store.invalidate_fact("f1", at=at(500))

    with pytest.raises(ConflictError):
        await store.edit_fact(
            "f1", content="Likes coffee", embedding=vec(0, 1), embedding_model=MODEL, at=at(600)
        )
    with pytest.raises(NotFoundError):
        await store.edit_fact(
            "nope", content="Likes coffee", embedding=vec(0, 1), embedding_model=MODEL, at=at(600)
        )
    assert await store.get_facts(["f1"]) == [deleted]
    assert await store.vector_search(vec(0, 1), user_filter(), limit=5) == []


async def test_edit_fact_refuses_a_version_it_did_not_edit(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Likes tea", unit(1, 0)))

    async def edit(content: str, expected_version: int) -> Fact:
        return await store.edit_fact(
            "f1", content=content, embedding=vec(0, 1), embedding_model=MODEL, at=at(500),
            expected_version=expected_version,
        )  # fmt: skip

    second = await edit("Likes oolong", 1)
    # Edited from version 1 too, but version 2 is stored: nothing is written.
    with pytest.raises(ConflictError, match="version 2, not 1"):
        await edit("Likes mate", 1)
    assert await store.get_facts(["f1"]) == [second]
    assert (await edit("Likes mate", 2)).version == 3


async def test_a_statement_learnt_late_does_not_refuse_the_persons_next_edit(
    store: MemoryStore,
) -> None:
    """A person corrects "Works at Acme" to "Works at Initech"; a formation of messages said
    before the correction restates Acme, kept in the history (version + 1, the text unchanged).
    The person's next edit of the text they see, from the version their edit returned, stands:
    nothing they saw changed. One from the version before their own edit is still refused."""
    former = await Former(store).start()
    await former.form(add("f1", "Works at Acme", unit(1, 0)).model_copy(update={"said_at": at(10)}))
    shown = await store.edit_fact(
        "f1", content="Works at Initech", embedding=vec(1, 0.1), embedding_model=MODEL, at=at(103)
    )
    late = FactUpdate(
        fact_id="f1", expected_version=shown.version, content="Works at Acme",
        embedding=unit(1, 0), reason="changed", said_at=at(60),
    )  # fmt: skip
    await former.form(late)
    [kept] = await store.get_facts(["f1"])
    assert (kept.content, kept.version) == (shown.content, shown.version + 1)

    async def edit(content: str, expected_version: int) -> Fact:
        return await store.edit_fact(
            "f1", content=content, embedding=vec(1, 0.2), embedding_model=MODEL, at=at(200),
            expected_version=expected_version,
        )  # fmt: skip

    with pytest.raises(ConflictError, match="not 1"):
        await edit("Works at Globex", 1)  # Initech, the person's edit, is newer than version 1
    edited = await edit("Works at Initech, Berlin", shown.version)
    assert (edited.content, edited.version) == ("Works at Initech, Berlin", kept.version + 1)


async def test_edit_fact_checks_content_and_embedding(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Likes tea", unit(1, 0)))
    [f1] = await store.get_facts(["f1"])

    with pytest.raises(EmbeddingMismatchError):
        await store.edit_fact(
            "f1", content="Likes coffee", embedding=vec(0, 1), embedding_model="other", at=at(500)
        )
    with pytest.raises(EmbeddingMismatchError):
        await store.edit_fact(
            "f1", content="Likes coffee", embedding=vec(0, 1)[:3], embedding_model=MODEL,
            at=at(500),
        )  # fmt: skip
    with pytest.raises(InvalidInputError):
        await store.edit_fact(
            "f1", content="  ", embedding=vec(0, 1), embedding_model=MODEL, at=at(500)
        )
    assert await store.get_facts(["f1"]) == [f1]


# ------------------------------------------------------------ invalidate_fact


async def test_a_deleted_fact_is_never_shown_again(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Likes green tea", unit(1, 0)))
    await former.form(add("f2", "Likes black coffee", unit(0, 1)))
    # Every search has seen f1 before it is deleted (warm caches).
    assert "f1" in [
        h.fact.fact_id for h in await store.vector_search(vec(1, 0), user_filter(), limit=5)
    ]
    assert [h.fact.fact_id for h in await store.text_search("tea", user_filter(), limit=5)] == [
        "f1"
    ]
    versions = await store.scope_versions([USER_KEY.key])

    deleted = await store.invalidate_fact("f1", at=at(500), reason="wrong")

    assert (deleted.invalidated_at, deleted.invalidated_by) == (at(500), None)
    assert (deleted.content, deleted.version, deleted.updated_at) == ("Likes green tea", 1, at(100))
    assert deleted.history == (
        FactRevision(version=1, content="Likes green tea", changed_at=at(500), reason="wrong"),
    )
    assert await store.get_facts(["f1"]) == [deleted]
    hits = await store.vector_search(vec(1, 0), user_filter(), limit=5)
    assert [h.fact.fact_id for h in hits] == ["f2"]
    assert await store.text_search("tea", user_filter(), limit=5) == []
    recent = await store.recent_facts(user_filter(), since=at(0), limit=5)
    assert [f.fact_id for f in recent] == ["f2"]
    assert await store.count_facts(user_filter()) == 1
    assert await store.scope_versions([USER_KEY.key]) == {USER_KEY.key: versions[USER_KEY.key] + 1}

    # Idempotent: deleting again records nothing more.
    again = await store.invalidate_fact("f1", at=at(600), reason="twice")
    assert again == deleted
    assert await store.get_facts(["f1"]) == [deleted]
    with pytest.raises(NotFoundError):
        await store.invalidate_fact("nope", at=at(600))


async def test_a_deleted_fact_frees_its_content(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(
        add("f1", "Lives in Paris", unit(1, 0)), add("f2", "Lives in Rome", unit(0, 1))
    )
    await store.invalidate_fact("f1", at=at(500))

    # Only valid facts count as duplicates: f2 may now take the content f1 had.
    edited = await store.edit_fact(
        "f2", content="Lives in Paris", embedding=vec(1, 0), embedding_model=MODEL, at=at(600)
    )

    assert edited.content == "Lives in Paris"
    [hit] = await store.vector_search(vec(1, 0), user_filter(), limit=1)
    assert hit.fact.fact_id == "f2"


# ------------------------------------------------------------ reflections


async def _buffer(store: MemoryStore) -> list[str]:
    """u1 reflections at t10, t20, t30 (the first absorbed into blob version 1), one agent one."""
    former = await Former(store).start()
    user = [reflection(USER_KEY, i, f"user note {i}", seconds=10 * i) for i in (1, 2, 3)]
    await former.form(reflections=[*user, reflection(AGENT_KEY, 1, "agent note")])
    await store.commit_consolidation(
        USER_KEY, expected_version=0, content="Blob", word_limit=300,
        absorbed_ids=[user[0].reflection_id], at=at(50),
    )  # fmt: skip
    return [r.reflection_id for r in user]


async def test_list_and_get_reflections(store: MemoryStore) -> None:
    r1, r2, r3 = await _buffer(store)

    buffered = await store.list_reflections(USER_KEY)
    assert [r.reflection_id for r in buffered] == [r3, r2]
    assert [r.content for r in buffered] == ["user note 3", "user note 2"]
    assert buffered[0].scope_key == USER_KEY
    everything = await store.list_reflections(USER_KEY, include_absorbed=True)
    assert [(r.reflection_id, r.absorbed_into_version) for r in everything] == [
        (r3, None),
        (r2, None),
        (r1, 1),
    ]
    assert [r.reflection_id for r in await store.list_reflections(USER_KEY, limit=1)] == [r3]
    assert [r.content for r in await store.list_reflections(AGENT_KEY)] == ["agent note"]
    assert await store.list_reflections(U2_KEY) == []

    assert await store.get_reflection(r2) == buffered[1]
    assert await store.get_reflection(r1) == everything[2]
    assert await store.get_reflection("nope") is None


async def test_edit_a_buffered_reflection(store: MemoryStore) -> None:
    r1, r2, _ = await _buffer(store)
    versions = await store.scope_versions([USER_KEY.key])
    [before] = [r for r in await store.list_reflections(USER_KEY) if r.reflection_id == r2]

    edited = await store.edit_reflection(r2, content="user note 2, corrected")

    assert edited == before.model_copy(update={"content": "user note 2, corrected"})
    assert await store.get_reflection(r2) == edited
    assert await store.scope_versions([USER_KEY.key]) == {USER_KEY.key: versions[USER_KEY.key] + 1}
    assert [r.content for r in await store.unabsorbed_reflections(USER_KEY)] == [
        "user note 2, corrected",
        "user note 3",
    ]

    absorbed = await store.get_reflection(r1)
    with pytest.raises(ConflictError, match="absorbed"):
        await store.edit_reflection(r1, content="too late")
    assert await store.get_reflection(r1) == absorbed
    with pytest.raises(NotFoundError):
        await store.edit_reflection("nope", content="anything")
    with pytest.raises(InvalidInputError):
        await store.edit_reflection(r2, content=" ")
    assert await store.get_reflection(r2) == edited


async def test_edit_reflection_refuses_a_text_it_did_not_edit(store: MemoryStore) -> None:
    _, r2, _ = await _buffer(store)
    edited = await store.edit_reflection(
        r2, content="note 2, fixed", expected_content="user note 2"
    )

    # Another edit of "user note 2": it would replace the correction unseen.
    with pytest.raises(ConflictError, match="changed since"):
        await store.edit_reflection(r2, content="note two", expected_content="user note 2")
    assert await store.get_reflection(r2) == edited
    # The text as a form sends it back (a line break as CR LF) is the same text.
    again = await store.edit_reflection(r2, content="note 2", expected_content=" note\r\n2,  fixed")
    assert again.content == "note 2"


async def test_delete_a_buffered_reflection(store: MemoryStore) -> None:
    r1, r2, r3 = await _buffer(store)
    versions = await store.scope_versions([USER_KEY.key])
    assert await store.count_unabsorbed(USER_KEY) == 2

    await store.delete_reflection(r2)

    assert await store.get_reflection(r2) is None
    assert await store.count_unabsorbed(USER_KEY) == 1
    assert [r.reflection_id for r in await store.list_reflections(USER_KEY)] == [r3]
    assert await store.scope_versions([USER_KEY.key]) == {USER_KEY.key: versions[USER_KEY.key] + 1}
    # A consolidation that read the deleted reflection cannot absorb it.
    with pytest.raises(ConflictError):
        await store.commit_consolidation(
            USER_KEY, expected_version=1, content="Blob 2", word_limit=300,
            absorbed_ids=[r2, r3], at=at(600),
        )  # fmt: skip
    with pytest.raises(NotFoundError):
        await store.delete_reflection(r2)
    with pytest.raises(ConflictError, match="absorbed"):
        await store.delete_reflection(r1)
    assert (await store.get_reflection(r1)) is not None
    assert await store.count_unabsorbed(AGENT_KEY) == 1


# ------------------------------------------------------------ SQLite: other processes' caches


async def test_sqlite_edits_reach_the_vector_cache_of_another_store(tmp_path: Path) -> None:
    """Each SQLiteStore keeps its own vector matrix: an edit or delete made through another store
    on the same file (another process) must still change what it finds."""
    path = tmp_path / "shared.db"
    reader, writer = SQLiteStore(path), SQLiteStore(path)
    await reader.setup()
    await writer.setup()
    try:
        former = await Former(writer).start()
        await former.form(add("f1", "Works at Acme", unit(1, 0)), add("f2", "Cello", unit(0, 1)))
        assert len(await reader.vector_search(vec(1, 0), user_filter(), limit=5)) == 2

        await writer.edit_fact(
            "f1", content="Works at Globex", embedding=vec(0, 0, 1), embedding_model=MODEL,
            at=at(500),
        )  # fmt: skip
        [hit] = await reader.vector_search(vec(0, 0, 1), user_filter(), limit=1)
        assert (hit.fact.fact_id, hit.fact.version, round(hit.score, 4)) == ("f1", 2, 1.0)
        assert await reader.vector_search(vec(1, 0), user_filter(), limit=5, min_score=0.5) == []

        await writer.invalidate_fact("f2", at=at(600))
        hits = await reader.vector_search(vec(0, 1), user_filter(), limit=5)
        assert [h.fact.fact_id for h in hits] == ["f1"]
    finally:
        await reader.close()
        await writer.close()
