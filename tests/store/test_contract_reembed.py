"""Contract: re-embedding (both backends). Side vectors wait beside the facts; the switch swaps
every vector and the embedding meta at once, and refuses while a fact has none."""

from __future__ import annotations

import numpy as np
import pytest

from memory.errors import ConflictError, EmbeddingMismatchError
from memory.store.base import MemoryStore, ReembedItem
from tests.store.builders import MODEL, Former, add, at, unit, user_filter, vec

NEW = "new-model"


def _vec3(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


async def _two_facts(store: MemoryStore) -> Former:
    former = await Former(store).start()
    await former.form(add("f1", "Rides a bike", unit(1, 0)), add("f2", "Plays chess", unit(0, 1)))
    return former


async def test_the_switch_swaps_every_vector_and_the_meta_in_one_step(store: MemoryStore) -> None:
    former = await _two_facts(store)
    await store.invalidate_fact("f2", at=at(400))  # invalid facts are re-embedded too

    items = await store.reembed_pending(NEW, 3, limit=10)
    assert {i.fact_id for i in items} == {"f1", "f2"}
    assert await store.count_reembed_pending(NEW, 3) == (2, 2)
    by_id = {i.fact_id: i for i in items}
    await store.put_reembedded(NEW, 3, [(by_id["f1"], _vec3(0, 0, 1))])

    # Half done: nothing switches, the old vectors keep serving.
    assert await store.count_reembed_pending(NEW, 3) == (1, 2)
    assert [i.fact_id for i in await store.reembed_pending(NEW, 3, limit=10)] == ["f2"]
    with pytest.raises(ConflictError):
        await store.switch_embedding(NEW, 3)
    assert await store.embedding_meta() == (MODEL, 4)
    hits = await store.vector_search(vec(1, 0), user_filter(), limit=5)
    assert [(h.fact.fact_id, round(h.score, 3)) for h in hits] == [("f1", 1.0)]

    await store.put_reembedded(NEW, 3, [(by_id["f2"], _vec3(1, 0, 0))])
    assert await store.switch_embedding(NEW, 3) == 2

    assert await store.embedding_meta() == (NEW, 3)
    assert await store.count_reembed_pending(NEW, 3) == (0, 2)
    hits = await store.vector_search(_vec3(0, 0, 1), user_filter(), limit=5)
    assert [(h.fact.fact_id, round(h.score, 3)) for h in hits] == [("f1", 1.0)]
    assert [f.embedding_model for f in await store.get_facts(["f1", "f2"])] == [NEW, NEW]
    with pytest.raises(EmbeddingMismatchError):
        await store.vector_search(vec(1, 0), user_filter(), limit=5)
    # Formation now commits in the new model only.
    with pytest.raises(EmbeddingMismatchError):
        await former.form(add("f3", "Sings", unit(1, 1)))
    await former.form(add("f3", "Sings", [0.0, 1.0, 0.0]), model=NEW)


async def test_a_fact_edited_during_a_reembed_is_pending_again(store: MemoryStore) -> None:
    await _two_facts(store)
    items = await store.reembed_pending(NEW, 3, limit=1)
    assert len(items) == 1
    await store.put_reembedded(NEW, 3, [(i, _vec3(0, 1, 0)) for i in items])
    await store.put_reembedded(
        NEW, 3, [(i, _vec3(0, 1, 0)) for i in await store.reembed_pending(NEW, 3, limit=10)]
    )
    assert await store.count_reembed_pending(NEW, 3) == (0, 2)

    await store.edit_fact(
        "f1", content="Rides a tandem", embedding=vec(1, 0), embedding_model=MODEL, at=at(500)
    )

    assert [i.fact_id for i in await store.reembed_pending(NEW, 3, limit=10)] == ["f1"]
    with pytest.raises(ConflictError):
        await store.switch_embedding(NEW, 3)


async def test_side_vectors_of_another_model_do_not_count(store: MemoryStore) -> None:
    await _two_facts(store)
    items = await store.reembed_pending(NEW, 3, limit=10)
    await store.put_reembedded("other-model", 3, [(i, _vec3(1, 1, 0)) for i in items])
    assert await store.count_reembed_pending(NEW, 3) == (2, 2)
    # Nor those of the same model at another dimension (another embedder).
    await store.put_reembedded(NEW, 2, [(i, np.asarray([1.0, 0.0], np.float32)) for i in items])
    assert await store.count_reembed_pending(NEW, 3) == (2, 2)
    assert await store.count_reembed_pending(NEW, 2) == (0, 2)
    assert isinstance(items[0], ReembedItem)
