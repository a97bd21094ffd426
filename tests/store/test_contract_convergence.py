"""Convergence at commit (issue #12 case 2), on each backend: an add is re-checked against the
facts committed since its candidates were read (imported ones too, whatever their own times),
and a reflection text is buffered once per key."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.errors import StaleDecisionError
from memory.formation_commit import AddRecheck, FormationCommit
from memory.store.base import MemoryStore
from tests.store.builders import (
    AGENT_KEY,
    USER_KEY,
    Former,
    add,
    assert_restatement_stale,
    at,
    imported_long_ago,
    reflection,
    unit,
    vec,
)


def rechecked(c: FormationCommit, read_seconds: float, seen: dict[str, int]) -> FormationCommit:
    recheck = AddRecheck(candidates_read_at=at(read_seconds), seen=seen, similarity=0.9)
    return c.model_copy(update={"recheck": recheck})


async def test_add_similar_to_a_fact_committed_since_is_stale(store: MemoryStore) -> None:
    one, two = await Former(store, "s1").start(), await Former(store, "s2").start()
    # s2 read its candidates (none) at 90 s; s1 committed a similar fact at 100 s.
    await one.form(add("f1", "The offsite is in Lisbon", unit(1, 0)))
    late = rechecked(two.next_commit(add("f2", "The offsite is in Porto", unit(1, 0.1))), 90, {})

    with pytest.raises(StaleDecisionError):
        await store.commit_formation(late)
    assert await store.get_facts(["f2"]) == []

    # Decided again, with f1 among its candidates: a dissimilar add commits.
    [f1] = await store.get_facts(["f1"])
    other = rechecked(two.next_commit(add("f3", "Likes tea", unit(0, 1))), 200, {"f1": f1.version})
    assert (await store.commit_formation(other)).facts_added == 1


async def test_add_similar_to_a_fact_imported_since_is_stale(store: MemoryStore) -> None:
    """A mem0 import lands while a formation is between reading its candidates and committing:
    the imported fact keeps its source's updated_at (months ago), yet it was stored after the
    candidates were read, so the formation's near-duplicate is decided again, not stored
    beside it."""
    former = await Former(store, "s1").start()
    read = datetime.now(UTC)  # the formation reads its candidates (none) now
    assert (await store.import_facts([imported_long_ago(read)], [vec(1, 0)])).inserted == 1
    await assert_restatement_stale(store, former, read, "f1")


async def test_only_facts_of_the_adds_owner_are_rechecked(store: MemoryStore) -> None:
    """A similar fact another user formed meanwhile is not this add's candidate (scopes are
    per owner), so it never makes the decision stale; the agent's own facts are rechecked
    against the agent's own adds."""
    one, two = await Former(store, "s1").start(), await Former(store, "s2").start()
    three = await Former(store, "s3").start()
    await one.form(
        add("f1", "The offsite is in Lisbon", unit(1, 0), user_id="u2"),
        add("f2", "Replies in French", unit(0, 1), scope="agent"),
    )
    other_user = rechecked(
        two.next_commit(add("f3", "The offsite is in Porto", unit(1, 0.1))), 90, {}
    )
    assert (await store.commit_formation(other_user)).facts_added == 1

    same_owner = rechecked(
        three.next_commit(add("f4", "Answers in French", unit(0.1, 1), scope="agent")), 90, {}
    )
    with pytest.raises(StaleDecisionError):
        await store.commit_formation(same_owner)


async def test_fact_the_decision_saw_does_not_make_it_stale(store: MemoryStore) -> None:
    one, two = await Former(store, "s1").start(), await Former(store, "s2").start()
    await one.form(add("f1", "The offsite is in Lisbon", unit(1, 0)))
    [f1] = await store.get_facts(["f1"])
    # Read just after f1 was committed (within the clock margin), f1 among the candidates: the
    # decision chose ADD knowingly.
    seen = rechecked(
        two.next_commit(add("f2", "The offsite is in Porto", unit(1, 0.1))),
        100 + timedelta(seconds=1).total_seconds(),
        {"f1": f1.version},
    )
    assert (await store.commit_formation(seen)).facts_added == 1


async def test_fact_less_similar_than_a_full_candidate_list_does_not_make_it_stale(
    store: MemoryStore,
) -> None:
    """A dense backlog (issue #21): many similar facts, of which the decision saw the most
    similar ones (a full list); a fact less similar than the last of them was not shown, and
    would not have been however recent."""
    one, two = await Former(store, "s1").start(), await Former(store, "s2").start()
    await one.form(add("f1", "The offsite is in Lisbon", unit(1, 0.3)))
    commit = rechecked(two.next_commit(add("f2", "The offsite is in Porto", unit(1, 0))), 90, {})
    assert commit.recheck is not None
    full = commit.recheck.model_copy(update={"floors": {"f2": 0.99}})
    assert (
        await store.commit_formation(commit.model_copy(update={"recheck": full}))
    ).facts_added == 1


async def test_commit_without_recheck_keeps_the_old_rules(store: MemoryStore) -> None:
    one, two = await Former(store, "s1").start(), await Former(store, "s2").start()
    await one.form(add("f1", "The offsite is in Lisbon", unit(1, 0)))
    result = await two.form(add("f2", "The offsite is in Porto", unit(1, 0.1)))
    assert result.facts_added == 1


async def test_reflection_text_buffered_or_absorbed_once_per_key(store: MemoryStore) -> None:
    one, two = await Former(store, "s1").start(), await Former(store, "s2").start()
    text = "The user prefers short answers."
    first = await one.form(reflections=[reflection(USER_KEY, 1, text)])
    # The same text (spacing aside) again in the same key, twice in one commit, and in another key.
    again = await two.form(
        reflections=[
            reflection(USER_KEY, 2, "The user  prefers short answers. "),
            reflection(AGENT_KEY, 3, text),
            reflection(AGENT_KEY, 4, text),
        ]
    )

    assert (first.reflections_added, again.reflections_added) == (1, 1)
    assert [r.content for r in await store.unabsorbed_reflections(USER_KEY)] == [text]
    assert [r.content for r in await store.unabsorbed_reflections(AGENT_KEY)] == [text]


async def test_reflection_said_again_after_the_memory_moved_on_is_buffered(
    store: MemoryStore,
) -> None:
    """French, then English, then French again: the third is news to the blob (English), though
    its text was absorbed before (into an older version), so it is buffered."""
    former = await Former(store, "s1").start()
    french, english = "Alice prefers answers in French.", "Alice prefers answers in English."
    for n, (text, version) in enumerate([(french, 0), (english, 1)], start=1):
        await former.form(reflections=[reflection(USER_KEY, n, text)])
        [buffered] = await store.unabsorbed_reflections(USER_KEY)
        await store.commit_consolidation(
            USER_KEY, expected_version=version, content=text, word_limit=200,
            absorbed_ids=[buffered.reflection_id], at=at(n),
        )  # fmt: skip

    current = await former.form(
        reflections=[reflection(USER_KEY, 3, " Alice prefers  answers in English.")]
    )
    again = await former.form(reflections=[reflection(USER_KEY, 4, french)])

    # English is in the current blob: not news. French was absorbed into version 1 only.
    assert (current.reflections_added, again.reflections_added) == (0, 1)
    assert [r.content for r in await store.unabsorbed_reflections(USER_KEY)] == [french]
