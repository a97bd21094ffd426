"""Contract: commit_formation — fact ops, exactly once, cursor, all or nothing (both backends)."""

from __future__ import annotations

import pytest

from memory.errors import ConflictError, EmbeddingMismatchError, StaleDecisionError
from memory.formation_commit import AddRecheck, FactAdd, FactInvalidate, FactKeep, FactUpdate
from memory.ids import content_hash
from memory.models import FactFilter
from memory.store.base import MemoryStore
from tests.store.builders import (
    AGENT_KEY,
    MODEL,
    USER_KEY,
    Former,
    add,
    at,
    commit,
    msg,
    record,
    reflection,
    unit,
    user_filter,
    vec,
)


def update(fact_id: str, content: str, embedding: list[float], expected: int = 1) -> FactUpdate:
    return FactUpdate(
        fact_id=fact_id, expected_version=expected, content=content, embedding=embedding,
        reason="changed",
    )  # fmt: skip


def invalidate(fact_id: str, replaced_by: str, expected: int = 1) -> FactInvalidate:
    return FactInvalidate(fact_id=fact_id, expected_version=expected, replaced_by=replaced_by)


async def test_add_stores_facts_and_moves_the_cursor(store: MemoryStore) -> None:
    await record(store, "s1", "a1", [msg("m1", "x" * 4), msg("m2", "x" * 8), msg("m3", "x" * 12)])
    result = await store.commit_formation(
        commit(
            expected_cursor=0,
            new_cursor=2,
            ops=[
                add("f1", "Likes green tea", unit(1, 0)),
                add("f2", "Answers in French", unit(0, 1), scope="agent"),
            ],
            seconds=100,
        )
    )

    assert not result.already_committed
    assert (result.facts_added, result.facts_duplicate) == (2, 0)
    # Pending = what is after the new cursor: m3 only (3 tokens at weight 1.0).
    assert result.state is not None
    assert (result.state.cursor_seq, result.state.formations) == (2, 1)
    assert (result.state.pending_messages, result.state.pending_weighted_tokens) == (1, 3.0)
    assert await store.get_session_agent_state("s1", "a1") == result.state
    facts = {f.fact_id: f for f in await store.get_facts(["f1", "f2", "nope"])}
    assert set(facts) == {"f1", "f2"}
    user_fact = facts["f1"]
    assert (user_fact.agent_id, user_fact.user_id, user_fact.scope) == ("a1", "u1", "user")
    assert user_fact.content == "Likes green tea"
    assert user_fact.hash == content_hash("Likes green tea")
    assert (user_fact.embedding_model, user_fact.source_session_id) == (MODEL, "s1")
    assert (user_fact.formed_at, user_fact.updated_at) == (at(100), at(100))
    assert (user_fact.version, user_fact.invalidated_at, user_fact.access_count) == (1, None, 0)
    assert (facts["f2"].scope, facts["f2"].user_id) == ("agent", None)
    assert await store.embedding_meta() == (MODEL, 4)


async def test_add_of_an_exact_duplicate_is_skipped(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Likes green tea", unit(1, 0)))

    result = await former.form(
        add("f2", "likes  GREEN tea.", unit(1, 0)),  # the same once normalised
        add("f3", "Likes green tea", unit(1, 0), user_id="u2"),  # another user's: not a duplicate
    )

    assert (result.facts_added, result.facts_duplicate) == (1, 1)
    assert [f.fact_id for f in await store.get_facts(["f1", "f2", "f3"])] == ["f1", "f3"]


async def test_add_revives_an_invalidated_fact_with_the_same_content(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Lives in Paris", unit(1, 0)))
    await former.form(add("f2", "Lives in Rome", unit(0, 1)), invalidate("f1", "f2"))

    result = await former.form(add("f3", "Lives in Paris", unit(1, 0)))

    assert result.facts_added == 1
    assert await store.get_facts(["f3"]) == []
    [revived] = await store.get_facts(["f1"])
    assert (revived.invalidated_at, revived.invalidated_by) == (None, None)
    hits = await store.vector_search(vec(1, 0), user_filter(), limit=5)
    assert [h.fact.fact_id for h in hits][:1] == ["f1"]


ADDRESS = "Alice's home address is 12 Rue de Rivoli"


def said(fact_id: str, seconds: float) -> FactAdd:
    """An ADD of Alice's address, said at T0 + seconds."""
    return add(fact_id, ADDRESS, unit(1, 0)).model_copy(update={"said_at": at(seconds)})


async def test_a_fact_a_person_deleted_is_not_brought_back_by_what_was_said_before(
    store: MemoryStore,
) -> None:
    """DELETE …/facts/{id}: "never shown to the agent again". A formation of messages said
    before the delete (a hot trigger's run in flight, a backlog, the cold job) restates the fact:
    it stays deleted, the ADD counted as a duplicate (already known: as deleted)."""
    former = await Former(store).start()
    await former.form(said("f1", 10))  # committed at 100
    deleted = await store.invalidate_fact("f1", at=at(105), reason="user asked to delete it")

    result = await former.form(said("f2", 60))  # said before the delete, committed at 110

    assert (result.facts_added, result.facts_duplicate) == (0, 1)
    assert await store.get_facts(["f1", "f2"]) == [deleted]
    assert await store.list_facts(user_filter()) == []
    assert await store.vector_search(vec(1, 0), user_filter(), limit=5) == []
    assert await store.text_search("Rivoli", user_filter(), limit=5) == []


async def test_a_fact_a_person_deleted_comes_back_when_told_again_after(
    store: MemoryStore,
) -> None:
    former = await Former(store).start()
    await former.form(said("f1", 10))
    await store.invalidate_fact("f1", at=at(105), reason="user asked to delete it")

    result = await former.form(said("f2", 108))  # the person says it again after deleting it

    assert (result.facts_added, result.facts_duplicate) == (1, 0)
    [fact] = await store.list_facts(user_filter())
    assert (fact.fact_id, fact.content, fact.said_at) == ("f1", ADDRESS, at(108))
    assert [r.reason for r in fact.history] == ["user asked to delete it", "revived"]


async def test_a_fact_a_person_edited_then_deleted_is_not_brought_back_in_its_formed_words(
    store: MemoryStore,
) -> None:
    """The person corrects the address, then deletes it; a formation of messages said before
    the delete restates the formed text (no longer the fact's current one): it stays deleted."""
    former = await Former(store).start()
    await former.form(said("f1", 10))  # committed at 100
    edited = f"{ADDRESS}, Paris"
    await store.edit_fact(
        "f1", content=edited, embedding=vec(1, 0.1), embedding_model=MODEL, at=at(103)
    )
    deleted = await store.invalidate_fact("f1", at=at(105), reason="user asked to delete it")

    result = await former.form(said("f2", 60))  # said before the delete, committed at 110

    assert (result.facts_added, result.facts_duplicate) == (0, 1)
    assert await store.get_facts(["f1", "f2"]) == [deleted]
    assert await store.list_facts(user_filter()) == []


async def test_a_distinct_fact_said_before_a_person_deleted_a_similar_one_is_added(
    store: MemoryStore,
) -> None:
    """The user's peanut allergy is deleted by hand; a formation of messages said before the
    delete finds a penicillin allergy, as similar to it as a dedup candidate may be (MiniLM
    scores the two 0.53 over its gate of 0.45): a distinct fact, added, the deleted one left
    deleted. Similar is no proof of the same statement."""
    former = await Former(store).start()
    peanuts = add("f1", "User is allergic to peanuts", unit(1, 0))
    await former.form(peanuts.model_copy(update={"said_at": at(10)}))
    deleted = await store.invalidate_fact("f1", at=at(105), reason="user asked to delete it")
    penicillin = add("f2", "User is allergic to penicillin", unit(1, 0.2))  # cosine 0.98
    late = former.next_commit(penicillin.model_copy(update={"said_at": at(60)}))
    recheck = AddRecheck(candidates_read_at=at(106), similarity=0.9)

    result = await store.commit_formation(late.model_copy(update={"recheck": recheck}))

    assert (result.facts_added, result.facts_duplicate) == (1, 0)
    assert [f.content for f in await store.list_facts(user_filter())] == [penicillin.content]
    assert await store.get_facts(["f1"]) == [deleted]


async def test_update_keeps_history_and_bumps_the_version(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Works at Acme", unit(1, 0)))

    result = await former.form(update("f1", "Works at Globex", unit(0, 1)))

    assert result.facts_updated == 1
    [fact] = await store.get_facts(["f1"])
    assert (fact.content, fact.version, fact.previous_content) == (
        "Works at Globex",
        2,
        "Works at Acme",
    )
    assert fact.hash == content_hash("Works at Globex")
    assert fact.updated_at == at(110)
    assert fact.formed_at == at(100)
    assert [(rev.version, rev.content) for rev in fact.history] == [(1, "Works at Acme")]
    # The new vector is the one searched.
    [hit] = await store.vector_search(vec(0, 1), user_filter(), limit=1)
    assert hit.fact.fact_id == "f1"
    assert hit.score == pytest.approx(1.0, abs=1e-5)


async def test_invalidate_marks_the_old_fact_replaced(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Has a cat", unit(1, 0)))

    result = await former.form(add("f2", "Has a dog", unit(0, 1)), invalidate("f1", "f2"))

    assert (result.facts_added, result.facts_invalidated) == (1, 1)
    facts = {f.fact_id: f for f in await store.get_facts(["f1", "f2"])}
    assert facts["f1"].invalidated_at == at(110)
    assert facts["f1"].invalidated_by == "f2"
    assert facts["f1"].content == "Has a cat"
    assert facts["f2"].invalidated_at is None


@pytest.mark.parametrize("stale", ["update-version", "update-invalidated", "invalidate-version"])
async def test_stale_decision_writes_nothing(store: MemoryStore, stale: str) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Plays chess", unit(1, 0)))
    await former.form(update("f1", "Plays chess weekly", unit(1, 0.1)))  # f1 is now version 2
    await former.form(add("f2", "Plays go", unit(0, 1)), add("f3", "Plays golf", unit(0, 0, 1)))
    await former.form(add("f4", "Plays bridge", unit(0, 0, 0, 1)), invalidate("f3", "f4"))
    versions_before = await store.scope_versions([USER_KEY.key])
    state_before = await store.get_session_agent_state("s1", "a1")
    decisions: dict[str, FactUpdate | FactInvalidate] = {
        "update-version": update("f1", "Plays chess daily", unit(1, 0.2), expected=1),
        "update-invalidated": update("f3", "Plays mini golf", unit(0, 0, 1)),
        "invalidate-version": invalidate("f1", "f5", expected=1),
    }
    attempt = former.next_commit(
        add("f5", "Plays poker", unit(1, 1)),
        decisions[stale],
        reflections=[reflection(USER_KEY, 1)],
    )

    with pytest.raises(StaleDecisionError):
        await store.commit_formation(attempt)

    assert await store.get_facts(["f5"]) == []
    [f1] = await store.get_facts(["f1"])
    assert (f1.version, f1.content, f1.invalidated_at) == (2, "Plays chess weekly", None)
    assert await store.count_unabsorbed(USER_KEY) == 0
    assert await store.get_session_agent_state("s1", "a1") == state_before
    assert await store.scope_versions([USER_KEY.key]) == versions_before
    # Nothing remembers the failed formation: a corrected commit with the same id applies.
    fixed = attempt.model_copy(update={"fact_ops": attempt.fact_ops[:1]})
    result = await store.commit_formation(fixed)
    assert (result.already_committed, result.facts_added) == (False, 1)


@pytest.mark.parametrize("change", ["updated", "invalidated"])
async def test_a_none_of_a_fact_changed_since_is_stale_and_writes_nothing(
    store: MemoryStore, change: str
) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Lives in Berlin", unit(1, 0)))
    # s1's next window says "I live in Berlin" again: NONE, already known as f1 at version 1.
    attempt = former.next_commit(
        FactKeep(fact_id="f1", expected_version=1), reflections=[reflection(USER_KEY, 1)]
    )
    # Meanwhile another session's formation moves Alice to Munich, or retires the fact.
    other = await Former(store, session_id="s2").start()
    if change == "updated":
        await other.form(update("f1", "Lives in Munich", unit(0, 1)))
    else:
        await other.form(add("f2", "Lives in Munich", unit(0, 1)), invalidate("f1", "f2"))
    state_before = await store.get_session_agent_state("s1", "a1")

    with pytest.raises(StaleDecisionError):
        await store.commit_formation(attempt)

    assert await store.get_session_agent_state("s1", "a1") == state_before
    assert await store.count_unabsorbed(USER_KEY) == 0
    # Decided again (an add of what was said), the same formation commits: nothing said is lost.
    redecided = attempt.model_copy(update={"fact_ops": [add("f3", "Lives in Berlin", unit(1, 0))]})
    result = await store.commit_formation(redecided)
    assert (result.already_committed, result.facts_added) == (False, 1)
    contents = [f.content for f in await store.list_facts(FactFilter(agent_id="a1", user_id="u1"))]
    assert "Lives in Berlin" in contents


async def test_wrong_cursor_is_a_conflict_and_writes_nothing(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Likes jazz", unit(1, 0)))

    stale = commit(expected_cursor=0, new_cursor=2, ops=[add("f2", "Likes rock", unit(0, 1))])
    with pytest.raises(ConflictError):
        await store.commit_formation(stale)

    assert await store.get_facts(["f2"]) == []
    state = await store.get_session_agent_state("s1", "a1")
    assert state is not None
    assert (state.cursor_seq, state.formations) == (1, 1)


async def test_same_formation_id_commits_once(store: MemoryStore) -> None:
    former = await Former(store).start()
    first_commit = former.next_commit(
        add("f1", "Owns a bike", unit(1, 0)), reflections=[reflection(AGENT_KEY, 1)]
    )
    first = await store.commit_formation(first_commit)

    # A replay, even one carrying other ops, returns the stored result and writes nothing.
    replay = first_commit.model_copy(update={"fact_ops": [add("f2", "Owns a car", unit(0, 1))]})
    again = await store.commit_formation(replay)

    assert again.already_committed
    assert again.model_copy(update={"already_committed": False}) == first
    assert await store.get_facts(["f2"]) == []
    assert await store.count_unabsorbed(AGENT_KEY) == 1
    state = await store.get_session_agent_state("s1", "a1")
    assert state is not None
    assert (state.cursor_seq, state.formations) == (1, 1)


@pytest.mark.parametrize("mismatch", ["model", "dimension"])
async def test_embedding_mismatch_writes_nothing(store: MemoryStore, mismatch: str) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Speaks Dutch", unit(1, 0)))

    if mismatch == "model":
        attempt = former.next_commit(add("f2", "Speaks Greek", unit(0, 1)), model="other-model")
    else:
        attempt = former.next_commit(add("f2", "Speaks Greek", [0.0, 1.0, 0.0]))
    with pytest.raises(EmbeddingMismatchError):
        await store.commit_formation(attempt)

    assert await store.get_facts(["f2"]) == []
    assert await store.embedding_meta() == (MODEL, 4)
    state = await store.get_session_agent_state("s1", "a1")
    assert state is not None and state.cursor_seq == 1
