"""Contract: a re-embed's side vectors are only of facts as they are stored now. A batch read by
reembed_pending may be written after its facts changed (``mnemos reembed`` runs beside forgets
and edits): a side vector of a fact forgotten since would be the erased text's vector back in the
store with no fact behind it, and no later forget could find it; one of a fact edited since is of
text the fact no longer holds."""

from __future__ import annotations

from memory.store.base import MemoryStore
from tests.store.builders import MODEL, Former, add, at, unit, vec
from tests.store.test_contract_user_data import NEW, _side_vectors


async def _two_facts(store: MemoryStore) -> Former:
    former = await Former(store).start(2)
    await former.form(add("f1", "Has epilepsy", unit(1, 0)))
    await former.form(add("f2", "Answers in French", unit(0, 1), scope="agent"))
    return former


async def test_a_batch_written_after_a_forget_puts_back_no_vector_of_the_user(
    store: MemoryStore,
) -> None:
    await _two_facts(store)
    items = await store.reembed_pending(NEW, 4, limit=10)  # the re-embed reads its batch
    await store.forget_user("u1", agent_id=None, at=at(500))  # the user is forgotten
    await store.put_reembedded(NEW, 4, [(item, vec(0, 1)) for item in items])  # batch written

    assert await _side_vectors(store) == {"f2"}
    assert await store.count_reembed_pending(NEW, 4) == (0, 1)


async def test_a_batch_written_after_an_edit_keeps_no_vector_of_the_old_text(
    store: MemoryStore,
) -> None:
    await _two_facts(store)
    items = await store.reembed_pending(NEW, 4, limit=10)
    await store.edit_fact(
        "f1", content="Has asthma", embedding=vec(1, 0), embedding_model=MODEL, at=at(500)
    )
    await store.put_reembedded(NEW, 4, [(item, vec(0, 1)) for item in items])

    assert await _side_vectors(store) == {"f2"}
    assert [i.fact_id for i in await store.reembed_pending(NEW, 4, limit=10)] == ["f1"]
