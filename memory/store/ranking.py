"""The ranking of search candidates, once for every backend: the best first, equal scores in
the order the backend gives (its tie rule), and exact cosine for a backend whose server does
not score vectors on the contract's scale (Atlas reports (1 + cos) / 2, mongoeco raw cosine,
and approximate candidates are re-ranked exactly)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from memory.store.base import Vector

# Above this many matrix cells the cosine product runs in a worker thread.
_THREAD_CELLS = 1_000_000


def best[T](
    scored: Iterable[tuple[T, float]], limit: int, min_score: float = -math.inf
) -> list[tuple[T, float]]:
    """The ``limit`` best at or above ``min_score``, best first; equal scores keep the order
    given (a stable sort)."""
    kept = [item for item in scored if item[1] >= min_score]
    kept.sort(key=lambda item: -item[1])
    return kept[:limit]


def text_hits[T](scored: Iterable[tuple[T, float]], limit: int) -> list[tuple[T, float]]:
    """A text search's hits among its candidates (given newest first, each with its shared BM25,
    memory.store.rules.text): those holding a query word, the ``limit`` best first, equal scores
    the newer first. BM25 is 0 exactly for a candidate holding none of the query's words as the
    shared tokenizer splits and stems them: one the server's index matched by its own word split
    (FTS5 splits "cool_cat" in two, the shared tokenizer does not), which is no hit."""
    return best(((item, score) for item, score in scored if score > 0), limit)


def _cosine(query: Vector, matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    q_norm = float(np.linalg.norm(query))
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    scores = (matrix @ query) / (norms * (q_norm or 1.0))
    return np.clip(scores, -1.0, 1.0).astype(np.float32, copy=False)


async def cosine_scores(query: Vector, embeddings: Sequence[Sequence[float]]) -> list[float]:
    """The cosine of ``query`` and each embedding, in [-1, 1]."""
    if not embeddings:
        return []
    matrix = np.asarray(embeddings, dtype=np.float32)
    if matrix.size > _THREAD_CELLS:
        scores = await asyncio.to_thread(_cosine, query, matrix)
    else:
        scores = _cosine(query, matrix)
    return [float(s) for s in scores]
