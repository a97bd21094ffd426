"""Contract: ``mnemos reembed`` after a change of the embedding dimension alone (every backend).
The same model name at another dimension (MNEMOS_EMBEDDING__GEMINI_DIMENSION 768 -> 1536) is
another embedder: every fact is re-embedded and the store switched to (model, new dimension), and
side vectors an interrupted run made at one dimension never count for another."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from memory.embedding.base import Embedder, EmbeddingBatch
from memory.errors import EmbeddingMismatchError
from memory.pipeline.embed_cache import embed_cached
from memory.reembed import reembed
from memory.store.base import MemoryStore
from tests.store.builders import MODEL, Former, add, unit, user_filter, vec

# Each fact's axis in the new vectors: a query along it finds that fact alone.
_AXIS = {"Rides a bike": 0, "Plays chess": 5}


def _axis(dimension: int, index: int) -> np.ndarray:
    v = np.zeros(dimension, np.float32)
    v[index] = 1.0
    return v


class _SameModel(Embedder):
    """The store's model (``MODEL``, 4-d vectors) configured at another dimension. Stops (as a
    killed run) once it has embedded ``stop_after`` texts."""

    model = MODEL

    def __init__(self, dimension: int, stop_after: int | None = None) -> None:
        self.dimension = dimension
        self.stop_after = stop_after
        self.embedded: list[str] = []

    async def embed(self, texts: Sequence[str]) -> EmbeddingBatch:
        if self.stop_after is not None and len(self.embedded) >= self.stop_after:
            raise KeyboardInterrupt  # the operator's ^C mid-run
        self.embedded.extend(texts)
        rows = np.stack([_axis(self.dimension, _AXIS[t]) for t in texts])
        return EmbeddingBatch(rows, self.model, self.dimension)


async def _two_facts(store: MemoryStore) -> Former:
    former = await Former(store).start()
    await former.form(add("f1", "Rides a bike", unit(1, 0)), add("f2", "Plays chess", unit(0, 1)))
    # The old vectors were searched (SQLite: loaded into its vector cache) before the switch.
    assert await _found(store, vec(1, 0)) == ["f1"]
    return former


async def _found(store: MemoryStore, query: np.ndarray) -> list[str]:
    return [h.fact.fact_id for h in await store.vector_search(query, user_filter(), limit=1)]


async def test_reembed_switches_the_same_model_to_a_new_dimension(store: MemoryStore) -> None:
    former = await _two_facts(store)

    result = await reembed(store, _SameModel(8))

    assert (result.previous, result.total, result.embedded, result.switched) == (
        (MODEL, 4),
        2,
        2,
        True,
    )
    assert await store.embedding_meta(fresh=True) == (MODEL, 8)
    assert await _found(store, _axis(8, 5)) == ["f2"]
    with pytest.raises(EmbeddingMismatchError):
        await store.vector_search(vec(1, 0), user_filter(), limit=5)
    # Formation commits vectors of the new dimension; a second run has nothing to do.
    await former.form(add("f3", "Sings", list(_axis(8, 3))))
    assert await _found(store, _axis(8, 3)) == ["f3"]
    again = await reembed(store, _SameModel(8))
    assert (again.switched, again.embedded) == (False, 0)


async def test_an_interrupted_run_resumes_at_its_dimension_only(store: MemoryStore) -> None:
    await _two_facts(store)
    killed = _SameModel(8, stop_after=1)
    with pytest.raises(KeyboardInterrupt):
        await reembed(store, killed, batch_size=1)
    assert len(killed.embedded) == 1
    assert await store.embedding_meta(fresh=True) == (MODEL, 4)  # the old vectors still serve
    assert await _found(store, vec(0, 1)) == ["f2"]

    # Configured at 16 meanwhile: the 8-d side vector is of no use, both facts are embedded.
    wider = _SameModel(16)
    assert (await reembed(store, wider, batch_size=1)).embedded == 2
    assert await store.embedding_meta(fresh=True) == (MODEL, 16)
    assert await _found(store, _axis(16, 0)) == ["f1"]


async def test_a_resumed_run_embeds_only_what_the_killed_one_left(store: MemoryStore) -> None:
    await _two_facts(store)
    with pytest.raises(KeyboardInterrupt):
        await reembed(store, _SameModel(8, stop_after=1), batch_size=1)

    resumed = _SameModel(8)
    result = await reembed(store, resumed, batch_size=1)

    assert (result.embedded, result.switched, len(resumed.embedded)) == (1, True, 1)
    assert await store.embedding_meta(fresh=True) == (MODEL, 8)
    assert await _found(store, _axis(8, 0)) == ["f1"]


async def test_after_the_switch_the_embedding_cache_answers_the_new_dimension(
    store: MemoryStore,
) -> None:
    """A text embedded before the switch is asked again by a formation after it: the cache keys
    an embedder by model and dimension, as the re-embed does (review H137)."""
    await _two_facts(store)
    before, _ = await embed_cached(store, _SameModel(4), ["Rides a bike"])
    assert len(before["Rides a bike"]) == 4
    await reembed(store, _SameModel(8))
    after, calls = await embed_cached(store, _SameModel(8), ["Rides a bike"])
    assert (len(after["Rides a bike"]), calls) == (8, 1)
