"""Embeddings through the store's content-addressed cache: vectors never travel through workflow
history, and a retried step does not pay for the same embedding twice."""

from __future__ import annotations

from collections.abc import Sequence

from memory.embedding.base import Embedder
from memory.ids import text_hash
from memory.store.base import MemoryStore, Vector
from memory.store.base_manage import side_tag


def cache_key(embedder: Embedder) -> str:
    """What the embedding cache knows an embedder by: its model and its dimension, as a re-embed
    does (base_manage.side_tag). By the model alone, a switch of dimension (mnemos reembed) would
    hand the new embedder the old size's vectors, and every commit of them would be refused."""
    return side_tag(embedder.model, embedder.dimension)


async def embed_cached(
    store: MemoryStore, embedder: Embedder, texts: Sequence[str]
) -> tuple[dict[str, Vector], int]:
    """Vectors by text for every text, embedding the missing ones in one call. Returns (vectors, calls)."""
    unique = list(dict.fromkeys(texts))
    hashes = {t: text_hash(t) for t in unique}
    cached = await store.get_embeddings(cache_key(embedder), list(hashes.values()))
    missing = [t for t in unique if hashes[t] not in cached]
    calls = 0
    if missing:
        batch = await embedder.embed(missing)
        calls = 1
        fresh = {hashes[t]: batch.vectors[i] for i, t in enumerate(missing)}
        await store.put_embeddings(cache_key(embedder), fresh)
        cached.update(fresh)
    return {t: cached[hashes[t]] for t in unique}, calls
