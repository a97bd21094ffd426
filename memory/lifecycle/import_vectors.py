"""The vectors an import writes its facts with: the source's where they are of the store's
embedder, else new ones (cached ones first), and the check that the configured embedder is the
store's before anything is written."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory.deps import Deps
from memory.errors import EmbeddingMismatchError
from memory.ids import text_hash
from memory.lifecycle.records import FactImport
from memory.pipeline.embed_cache import cache_key
from memory.store.base import Vector


def dimension_of(deps: Deps, meta: tuple[str, int] | None) -> int:
    """The embedder's dimension; 0 while unknown (an API model measured on its first call)."""
    if deps.embedder.dimension:
        return deps.embedder.dimension
    return meta[1] if meta is not None and meta[0] == deps.embedder.model else 0


async def check_embedder(deps: Deps, *, facts: bool) -> None:
    """Facts are written with the embedder's vectors: into a store of another model or dimension
    they would fail at the first write, after the agents and blobs (refused here, before).
    ``facts``: whether the import writes any (else there is nothing to check)."""
    meta = await deps.store.embedding_meta() if facts else None
    if meta is None:
        return
    model, dimension = deps.embedder.model, dimension_of(deps, meta)
    if meta != (model, dimension):
        raise EmbeddingMismatchError(
            f"nothing imported: the store's facts are embedded as {meta[0]}/{meta[1]}, the "
            f"configured embedder makes {model}/{dimension or '?'}: import with the store's "
            "embedder (or re-embed the store first)"
        )


async def embedded(deps: Deps, texts: Sequence[str]) -> dict[str, Vector]:
    """Vectors by text: the store's cached ones, the others embedded and not cached. An import's
    vector is written only with its fact, by the transaction that judges whether its user was
    forgotten: a cache entry written before would stay when it refuses the fact (a forget
    landing meanwhile), the vector of an erased text no fact holds, where no forget finds it."""
    unique = list(dict.fromkeys(texts))
    hashes = {t: text_hash(t) for t in unique}
    cached = await deps.store.get_embeddings(cache_key(deps.embedder), list(hashes.values()))
    vectors = {t: cached[hashes[t]] for t in unique if hashes[t] in cached}
    missing = [t for t in unique if t not in vectors]
    if missing:
        batch = await deps.embedder.embed(missing)
        vectors |= {t: batch.vectors[i] for i, t in enumerate(missing)}
    return vectors


async def vectors_for(deps: Deps, facts: Sequence[FactImport]) -> tuple[list[Vector], int]:
    """The source's vector where it is of the embedder's model and dimension (and finite), else a
    new one: a vector of another size, even under the model's name, would set the dimension of a
    fresh store and make every later formation fail."""
    model = deps.embedder.model
    dimension = dimension_of(deps, await deps.store.embedding_meta())
    reusable = [
        f.embedding is not None
        and f.embedding_model == model
        and len(f.embedding) == dimension > 0
        and bool(np.isfinite(f.embedding).all())
        for f in facts
    ]
    texts = [f.content for f, ok in zip(facts, reusable, strict=True) if not ok]
    fresh = await embedded(deps, texts) if texts else {}
    vectors = [
        np.asarray(f.embedding, dtype=np.float32) if ok else fresh[f.content]
        for f, ok in zip(facts, reusable, strict=True)
    ]
    return vectors, len(texts)
