"""One interface for every embedding provider: one batch call per list of texts."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class EmbeddingBatch:
    """Unit-norm float32 vectors, one row per input text, with the model that made them."""

    vectors: npt.NDArray[np.float32]
    model: str
    dimension: int


class Embedder(abc.ABC):
    """Providers raise memory.errors.ProviderError on failure and never retry by themselves."""

    model: str
    dimension: int

    @abc.abstractmethod
    async def embed(self, texts: Sequence[str]) -> EmbeddingBatch:
        """Embed all texts in one provider call (or one local batch run). Empty input → 0 rows."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release HTTP clients or model sessions."""


def normalize(vectors: npt.NDArray[np.floating]) -> npt.NDArray[np.float32]:
    """L2-normalise rows so that a dot product is a cosine similarity."""
    arr = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: npt.NDArray[np.float32] = (arr / norms).astype(np.float32)
    return unit
