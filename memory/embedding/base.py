"""One interface for every embedding provider: one batch call per list of texts."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from memory import tracing


@dataclass(frozen=True)
class EmbeddingBatch:
    """Unit-norm float32 vectors, one row per input text, with the model that made them."""

    vectors: npt.NDArray[np.float32]
    model: str
    dimension: int


@dataclass(frozen=True)
class Calibration:
    """Where a model's search gates sit, measured on its own cosine scale (bench/locomo.py).

    Cosine scales differ between models (a question and the turn that answers it score ~0.5 with
    MiniLM, ~0.83 with multilingual-e5-small), so a gate set for one model is wrong for another.
    The store records the ``model`` its facts were embedded with and search refuses another, so
    the gates applied always belong to the model that made the vectors."""

    cosine_gate: float  # min cosine of a vector-search hit
    rrf_gate: float  # min classic RRF of a hybrid hit (0: a hit of either list is a hit)
    # Min cosine of a dedup candidate (bench/dedup.py); None: the configured threshold.
    dedup_gate: float | None = None


class Embedder(abc.ABC):
    """Providers raise memory.errors.ProviderError on failure and never retry by themselves.
    Every subclass's batches are traced (memory.tracing): one span per ``embed`` call."""

    model: str
    dimension: int
    # None: not measured, search uses the configured thresholds (002's numbers by default).
    calibration: Calibration | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        tracing.trace_embed_method(cls)

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
