"""search_facts finds the fact that holds the exact identifier asked about, on every backend.

Among near-identical facts ("My favourite number {i} is {v}.") an embedder that reads numbers as
noise (MiniLM nearly does: bench/backlog.py) ranks every fact alike, and a text search on the
common words fills its candidate cap (1,000, newest first on SQLite and PostgreSQL) before it
reaches an old fact. The fixture is small, so each backend's cap is shrunk to 10 here: 45 facts
then exceed it as 10,000 exceed 1,000.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from memory import rag
from memory.embedding.base import EmbeddingBatch
from memory.fusion import Fused
from memory.query_words import content_words
from memory.rag import search_facts
from memory.search_results import SearchResult
from memory.settings import Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder
from tests.rag.builders import MemoryWriter, agent, at, session

_CAPS = {
    "sqlite": ("memory.store.sqlite.search", "CANDIDATE_CAP"),
    "postgres": ("memory.store.postgres.search", "CANDIDATE_CAP"),
    "mongo": ("memory.store.mongo.search", "CANDIDATE_CAP"),
}
TARGET = "n3"


class DigitBlindEmbedder(WordHashEmbedder):
    """WordHashEmbedder that ignores digits: near-identical facts differing only by their numbers
    get the same vector."""

    async def embed(self, texts: Sequence[str]) -> EmbeddingBatch:
        return await super().embed([re.sub(r"\d", "", t) for t in texts])


@pytest.fixture
def small_cap(backend: tuple[str, str | None], monkeypatch: pytest.MonkeyPatch) -> None:
    module, name = _CAPS[backend[0]]
    monkeypatch.setattr(f"{module}.{name}", 10)


async def seed(store: MemoryStore) -> None:
    """The target, formed first (the oldest), then 44 facts whose vectors are closer to the
    query than its own (fewer words) and that hold the query's words but not its number."""
    writer = MemoryWriter(store)
    writer.embedder = DigitBlindEmbedder()
    await writer.facts(("n3", "user", "u1", "Una says her favourite number 3 is 1111, she thinks."))
    await writer.facts(
        *((f"n{i}", "user", "u1", f"My favourite number {i} is {1000 + 37 * i}.")
          for i in range(10, 54)),
        when=at(minutes=1),
    )  # fmt: skip


async def ask(store: MemoryStore, query: str, *, debug: bool = False) -> SearchResult:
    return await search_facts(
        store, DigitBlindEmbedder(), Settings(), agent=agent(), session=session("s1", "u1"),
        user_id="u1", queries=[query], top_k=10, debug=debug, now=at(days=1),
    )  # fmt: skip


@pytest.mark.usefixtures("small_cap")
async def test_a_query_naming_a_number_finds_its_fact_among_near_identical_ones(
    store: MemoryStore,
) -> None:
    await seed(store)

    result = await ask(store, "What is my favourite number 3?", debug=True)

    assert result.hits[0].fact_id == TARGET
    assert result.hits[0].bm25 is not None  # found by the identifier's own text search
    assert result.debug is not None
    text = [r.store_query for r in result.debug.lists if r.source == "text"]
    assert text == ["favourite number 3", "3"]
    vector = next(r for r in result.debug.lists if r.source == "vector")
    assert TARGET not in {c.fact_id for c in vector.candidates if c.rank}  # not by its vector


async def test_a_query_without_identifiers_ranks_as_before(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await seed(store)
    query = "What did Una say about her favourite number on May 3, 2023?"  # a date, no identifier

    result = await ask(store, query, debug=True)
    # The pipeline without the identifier rule: one text search, no tier.
    monkeypatch.setattr(rag, "text_queries", lambda q: [content_words(q)])
    monkeypatch.setattr(rag, "with_identifier_tier", lambda fused, _: list[Fused](fused))
    before = await ask(store, query, debug=True)

    assert result.hits
    assert [h.fact_id for h in result.hits] == [h.fact_id for h in before.hits]
    assert [h.score for h in result.hits] == [h.score for h in before.hits]
    assert result.debug is not None
    assert [r.source for r in result.debug.lists] == ["vector", "text"]
