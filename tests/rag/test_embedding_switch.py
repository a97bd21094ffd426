"""A server process whose store was switched to another embedding model by `mnemos reembed`, run
in another process: its next search is a clear EmbeddingMismatchError (restart with the new
embedder), never query vectors of the old model compared with the new stored ones."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from memory.embedding.base import EmbeddingBatch
from memory.errors import EmbeddingMismatchError
from memory.rag import search_facts
from memory.reembed import reembed
from memory.search_results import SearchResult
from memory.settings import Settings
from memory.store.sqlite import SQLiteStore
from tests.fakes import WordHashEmbedder
from tests.rag.builders import MemoryWriter, agent, at, session


class _OtherModel(WordHashEmbedder):
    """Another model of the same dimension: another vector space."""

    model = "other-model"

    async def embed(self, texts: Sequence[str]) -> EmbeddingBatch:
        batch = await super().embed([t[::-1] for t in texts])
        return EmbeddingBatch(vectors=batch.vectors, model=self.model, dimension=self.dimension)


async def _search(store: SQLiteStore, embedder: WordHashEmbedder) -> SearchResult:
    return await search_facts(
        store,
        embedder,
        Settings(),
        agent=agent(),
        session=session("s1", "u1"),
        user_id="u1",
        queries=["Alice email"],
        now=at(days=1),
    )


async def test_a_search_after_another_process_switched_the_model_is_refused(
    tmp_path: Path,
) -> None:
    server, cli = SQLiteStore(tmp_path / "m.db"), SQLiteStore(tmp_path / "m.db")
    await server.setup()
    await cli.setup()
    try:
        await MemoryWriter(server).facts(("f1", "user", "u1", "Alice's email is alice@example.com"))
        before = await _search(server, WordHashEmbedder())
        assert [h.fact_id for h in before.hits] == ["f1"]

        await reembed(cli, _OtherModel())

        with pytest.raises(EmbeddingMismatchError, match="other-model"):
            await _search(server, WordHashEmbedder())
    finally:
        await server.close()
        await cli.close()
