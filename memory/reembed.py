"""Re-embedding every fact with the configured embedder (``mnemos reembed``).

New vectors go to the store's side records in batches (resumable: a new run embeds only the facts
still pending), then one transaction swaps every vector and the embedding meta. Until then the
store keeps serving, and searching, with the model it was built with. An embedder is its model
and its dimension: the same model at another dimension re-embeds every fact too."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memory.embedding.base import Embedder
from memory.errors import ConflictError
from memory.store.base import MemoryStore

# A formation that commits between the last batch and the switch leaves a fact pending: the
# switch refuses, the new facts are embedded and the switch is tried again.
_SWITCH_ATTEMPTS = 5


@dataclass(frozen=True)
class ReembedResult:
    model: str
    dimension: int
    previous: tuple[str, int] | None  # the store's (model, dimension) before
    total: int  # facts in the store (valid or not)
    embedded: int  # facts this run embedded (the rest were done by an earlier run)
    switched: bool  # False: nothing to do (no fact, or already this model at this dimension)


async def reembed(
    store: MemoryStore,
    embedder: Embedder,
    *,
    batch_size: int = 64,
    on_progress: Callable[[int, int], None] = lambda done, total: None,
) -> ReembedResult:
    """Re-embed every pending fact with ``embedder`` and switch the store to its model and
    dimension."""
    model, dimension = embedder.model, embedder.dimension
    previous = await store.embedding_meta(fresh=True)
    left, total = await store.count_reembed_pending(model, dimension)
    if total == 0 or (previous == (model, dimension) and left == 0):
        return ReembedResult(model, dimension, previous, total, 0, switched=False)
    embedded = 0
    for attempt in range(1, _SWITCH_ATTEMPTS + 1):
        left, total = await store.count_reembed_pending(model, dimension)
        on_progress(total - left, total)
        while items := await store.reembed_pending(model, dimension, limit=batch_size):
            batch = await embedder.embed([item.content for item in items])
            vectors = list(zip(items, batch.vectors, strict=True))
            await store.put_reembedded(model, dimension, vectors)
            embedded += len(items)
            left = max(0, left - len(items))
            on_progress(total - left, total)
        try:
            await store.switch_embedding(model, dimension)
            break
        except ConflictError:
            if attempt == _SWITCH_ATTEMPTS:
                raise
    return ReembedResult(model, dimension, previous, total, embedded, switched=True)
