"""OpenAI embeddings (``text-embedding-3-small`` by default): one API call per batch."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import openai

from memory.embedding.base import Calibration, Embedder, EmbeddingBatch, normalize
from memory.errors import ProviderError
from memory.llm.errors import provider_errors

# Native widths, so the store can check a configured model before the first call.
_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
_PROVIDER = "openai"


class OpenAIEmbedder(Embedder):
    # 002's gates were set on OpenAI's embedding scale; they stay for it.
    calibration = Calibration(cosine_gate=0.65, rrf_gate=0.015, dedup_gate=0.7)

    def __init__(
        self,
        *,
        api_key: str,
        model: str = "text-embedding-3-small",
        base_url: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.model = model
        # 0 until the first answer for a model we do not know (an OpenAI-compatible server's).
        self.dimension = _DIMENSIONS.get(model, 0)
        self._api_key = api_key
        self._client = openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )

    async def embed(self, texts: Sequence[str]) -> EmbeddingBatch:
        if not texts:
            return EmbeddingBatch(
                np.zeros((0, self.dimension), np.float32), self.model, self.dimension
            )
        with provider_errors(_PROVIDER, [self._api_key]):
            response = await self._client.embeddings.create(model=self.model, input=list(texts))
        rows = sorted(response.data, key=lambda item: item.index)
        widths = {len(row.embedding) for row in rows}
        if len(rows) != len(texts) or len(widths) != 1 or self.dimension not in (0, *widths):
            raise ProviderError(
                f"openai returned {len(rows)} vectors of widths {sorted(widths)} for {len(texts)} "
                f"texts; expected width {self.dimension or 'any'}",
                retryable=True,
                provider=_PROVIDER,
            )
        vectors = normalize(np.array([row.embedding for row in rows], dtype=np.float32))
        self.dimension = vectors.shape[1]
        return EmbeddingBatch(vectors=vectors, model=self.model, dimension=self.dimension)

    async def close(self) -> None:
        await self._client.close()
