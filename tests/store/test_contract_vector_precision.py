"""Contract: a fact's vector is kept as float32 (memory.store.base.Vector) on every backend, whatever
precision it was given in: one commit reads back, exports and scores the same everywhere, and an
export of one backend imports into another unchanged."""

from __future__ import annotations

import numpy as np

from memory.store.base import MemoryStore
from tests.store.builders import Former, add, unit, vec
from tests.store.test_contract_user_data import NEW


def _float32(values: list[float]) -> list[float]:
    return [float(x) for x in np.asarray(values, dtype=np.float32)]


async def _stored_vectors(store: MemoryStore) -> dict[str, list[float]]:
    data = await store.export_data(agent_id=None, user_id=None, messages=False)
    return {fact.fact_id: vector for fact, vector in data.facts}


async def test_a_committed_vector_is_stored_as_float32(store: MemoryStore) -> None:
    given = unit(1, 1)  # Python floats: float64, 0.7071067811865475
    await Former(store).start(1)
    await Former(store).form(add("f1", "Likes green tea", given))

    assert await _stored_vectors(store) == {"f1": _float32(given)}


async def test_a_switched_side_vector_is_stored_as_float32(store: MemoryStore) -> None:
    await Former(store).start(1)
    await Former(store).form(add("f1", "Likes green tea", unit(1, 0)))
    items = await store.reembed_pending(NEW, 4, limit=10)
    await store.put_reembedded(NEW, 4, [(item, vec(1, 1, 1)) for item in items])
    await store.switch_embedding(NEW, 4)

    assert await _stored_vectors(store) == {"f1": _float32(unit(1, 1, 1))}
