"""An embedding model of 3,072 dimensions (OpenAI text-embedding-3-large, Gemini at its full size)
stores and finds facts on every store. pgvector indexes at most 2,000 dimensions of vector: the
PostgreSQL store indexes such vectors as halfvec (up to 4,000), and scans wider ones exactly."""

from __future__ import annotations

import numpy as np
import pytest

from memory.formation_commit import FactAdd
from memory.store.base import MemoryStore
from tests.store.builders import Former, user_filter


def axis(dimension: int, i: int) -> list[float]:
    v = np.zeros(dimension, dtype=np.float32)
    v[i], v[(i + 1) % dimension] = 1.0, 0.1 * i
    return v.tolist()


@pytest.mark.parametrize("dimension", [3072, 4096])
async def test_a_wide_model_stores_and_finds_its_facts(store: MemoryStore, dimension: int) -> None:
    former = await Former(store).start()
    await former.form(
        *[
            FactAdd(fact_id=f"f{i}", scope="user", user_id="u1", content=f"Fact {i}",
                    embedding=axis(dimension, i))
            for i in range(3)
        ]
    )  # fmt: skip
    query = np.asarray(axis(dimension, 1), np.float32)
    hits = await store.vector_search(query, user_filter(), limit=2)
    assert hits[0].fact.fact_id == "f1"
    assert hits[0].score == pytest.approx(1.0, abs=1e-3)
