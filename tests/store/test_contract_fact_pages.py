"""Contract: a fact listing read page by page from a fact's key (store.fact_key) — the API's and
the memory page's cursors — lists every fact once while facts are deleted, edited or formed
between pages, facts committed together (one updated_at) included, in both directions (every
backend)."""

from __future__ import annotations

from memory.store.base import MemoryStore
from memory.store.base_manage import fact_key
from tests.store.builders import MODEL, Former, add, at, unit, user_filter, vec

U1 = user_filter(agent_scope=False)


async def _ids(store: MemoryStore, **page: object) -> list[str]:
    return [f.fact_id for f in await store.list_facts(U1, **page)]  # type: ignore[arg-type]


async def test_pages_from_a_key_skip_and_repeat_nothing_as_facts_come_and_go(
    store: MemoryStore,
) -> None:
    former = await Former(store).start()
    # f0..f4 in one commit (one updated_at: the fact id orders them), f5..f7 one each after.
    await former.form(*[add(f"f{n}", f"Fact {n}", unit(1, n / 10)) for n in range(5)])
    for n in range(5, 8):
        await former.form(add(f"f{n}", f"Fact {n}", unit(0, 1, n / 10)))
    everything = await _ids(store)
    assert everything == ["f7", "f6", "f5", "f4", "f3", "f2", "f1", "f0"]

    first = await store.list_facts(U1, limit=3)
    await store.invalidate_fact("f6", at=at(900))  # deleted on the first page
    await store.invalidate_fact("f3", at=at(900))  # deleted before its page is read
    second = await _ids(store, limit=3, after=fact_key(first[-1]))
    assert second == ["f4", "f2", "f1"]  # nothing skipped: f4 follows f5 as it did
    [f1] = await store.get_facts(["f1"])
    assert await _ids(store, limit=3, after=fact_key(f1)) == ["f0"]

    # Back from f2: the nearest newer ones, newest first (f3 and f6 are deleted now).
    f2 = (await store.get_facts(["f2"]))[0]
    assert await _ids(store, limit=2, before=fact_key(f2)) == ["f5", "f4"]
    assert await _ids(store, limit=5, before=fact_key(f2)) == ["f7", "f5", "f4"]
    assert await _ids(store, limit=5, before=fact_key(first[0])) == []
    # Deleted ones on request, in their places.
    with_deleted = await store.list_facts(U1, include_invalid=True, limit=2, after=fact_key(f2))
    assert [f.fact_id for f in with_deleted] == ["f1", "f0"]


async def test_a_fact_edited_or_formed_between_pages_is_neither_skipped_nor_repeated(
    store: MemoryStore,
) -> None:
    """A person reads the first page; meanwhile f3 (on a later page) is edited and f8 is formed.
    Both were changed last, so they lead the listing read again from the start; the pages on
    from the first one's key hold every other fact once (an offset of 3 would repeat f5)."""
    former = await Former(store).start(messages=10)
    for n in range(8):
        await former.form(add(f"f{n}", f"Fact {n}", unit(0, 1, n / 10)))
    first = await _ids(store, limit=3)
    assert first == ["f7", "f6", "f5"]
    [f5] = await store.get_facts(["f5"])

    await store.edit_fact(
        "f3", content="Fact 3, corrected", embedding=vec(1, 1), embedding_model=MODEL, at=at(900)
    )
    await former.form(add("f8", "Fact 8", unit(1, 0, 1)))

    rest = await _ids(store, limit=3, after=fact_key(f5))
    [last] = await store.get_facts([rest[-1]])
    rest += await _ids(store, limit=3, after=fact_key(last))
    assert rest == ["f4", "f2", "f1", "f0"]  # f3 left for the front, nothing else moved
    assert await _ids(store, limit=3) == ["f3", "f8", "f7"]  # both seen from the start
