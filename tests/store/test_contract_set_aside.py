"""Contract: a reflection no consolidation could take is set aside: out of the buffer, listed,
still a person's to correct (which puts it back) or remove (every backend)."""

from __future__ import annotations

import pytest

from memory.errors import ConflictError
from memory.ids import text_hash
from memory.models import SET_ASIDE
from memory.store.base import MemoryStore
from tests.store.builders import AGENT_KEY, USER_KEY, Former, at, reflection


async def _buffer(store: MemoryStore, count: int) -> list[str]:
    former = await Former(store).start()
    reflections = [reflection(USER_KEY, i, f"r{i}", seconds=i) for i in range(count)]
    await former.form(reflections=reflections)
    return [r.reflection_id for r in reflections]


async def test_a_set_aside_reflection_leaves_the_buffer_and_stays_listed(
    store: MemoryStore,
) -> None:
    first, second, third = await _buffer(store, 3)
    before = (await store.scope_versions([USER_KEY.key]))[USER_KEY.key]

    assert await store.set_aside_reflection(USER_KEY, second, content_hash=text_hash("r1"))

    assert [r.reflection_id for r in await store.unabsorbed_reflections(USER_KEY)] == [first, third]
    assert await store.count_unabsorbed(USER_KEY) == 2
    listed = {
        r.reflection_id: r.absorbed_into_version for r in await store.list_reflections(USER_KEY)
    }
    assert listed == {first: None, second: SET_ASIDE, third: None}
    assert (await store.scope_versions([USER_KEY.key]))[USER_KEY.key] > before
    # A consolidation can no longer absorb it: it is not buffered.
    with pytest.raises(ConflictError):
        await store.commit_consolidation(
            USER_KEY, expected_version=0, content="- r", word_limit=100,
            absorbed_ids=[second], at=at(100),
        )  # fmt: skip


async def test_a_corrected_gone_or_foreign_reflection_is_not_set_aside(store: MemoryStore) -> None:
    first, second = await _buffer(store, 2)
    await store.edit_reflection(first, content="r0, corrected")

    assert not await store.set_aside_reflection(USER_KEY, first, content_hash=text_hash("r0"))
    assert not await store.set_aside_reflection(AGENT_KEY, second, content_hash=text_hash("r1"))
    assert not await store.set_aside_reflection(USER_KEY, "nope", content_hash=text_hash("r1"))
    assert await store.count_unabsorbed(USER_KEY) == 2
    # Already set aside: once.
    assert await store.set_aside_reflection(USER_KEY, second, content_hash=text_hash("r1"))
    assert not await store.set_aside_reflection(USER_KEY, second, content_hash=text_hash("r1"))


async def test_correcting_a_set_aside_reflection_puts_it_back_and_it_can_be_removed(
    store: MemoryStore,
) -> None:
    first, second = await _buffer(store, 2)
    await store.set_aside_reflection(USER_KEY, first, content_hash=text_hash("r0"))
    await store.set_aside_reflection(USER_KEY, second, content_hash=text_hash("r1"))

    edited = await store.edit_reflection(first, content="r0, said otherwise")

    assert (edited.content, edited.absorbed_into_version) == ("r0, said otherwise", None)
    [back] = await store.unabsorbed_reflections(USER_KEY)
    assert (back.reflection_id, back.content) == (first, "r0, said otherwise")
    await store.delete_reflection(second)
    assert [
        r.reflection_id for r in await store.list_reflections(USER_KEY, include_absorbed=True)
    ] == [first]


async def test_the_set_aside_reflections_are_listed_alone_however_many_are_buffered_after(
    store: MemoryStore,
) -> None:
    """A reflection set aside before newer ones were buffered (an outage, an import) is still
    listed, to be corrected; absorbed, buffered and other scopes' ones are not."""
    former = await Former(store).start()
    user = [reflection(USER_KEY, i, f"r{i}", seconds=i) for i in range(4)]
    await former.form(reflections=[*user, reflection(AGENT_KEY, 9, "a9", seconds=9)])
    first, second, third, fourth = (r.reflection_id for r in user)
    for key, reflection_id, text in (
        (USER_KEY, first, "r0"),
        (USER_KEY, third, "r2"),
        (AGENT_KEY, reflection(AGENT_KEY, 9).reflection_id, "a9"),
    ):
        assert await store.set_aside_reflection(key, reflection_id, content_hash=text_hash(text))
    await store.commit_consolidation(
        USER_KEY, expected_version=0, content="- r1", word_limit=100,
        absorbed_ids=[second], at=at(100),
    )  # fmt: skip

    listed = await store.list_set_aside_reflections(USER_KEY, limit=10)

    assert [(r.reflection_id, r.absorbed_into_version) for r in listed] == [
        (third, SET_ASIDE),
        (first, SET_ASIDE),
    ]
    newest = await store.list_set_aside_reflections(USER_KEY, limit=1)
    assert [r.reflection_id for r in newest] == [third]
    assert await store.list_set_aside_reflections(USER_KEY, limit=0) == []
    # The newest of those in no blob is buffered: the set-aside ones are past it.
    assert [r.reflection_id for r in await store.list_reflections(USER_KEY, limit=1)] == [fourth]
