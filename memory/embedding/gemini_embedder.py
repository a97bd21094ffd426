"""Gemini embeddings: ``embed_content`` with the texts of a batch, at most 100 per call."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from google import genai
from google.genai import types

from memory.embedding.base import Embedder, EmbeddingBatch, normalize
from memory.errors import ProviderError
from memory.llm.errors import provider_errors
from memory.llm.gemini_provider import gemini_http_options

_PROVIDER = "gemini"
# batchEmbedContents refuses more requests than this in one call.
MAX_TEXTS_PER_CALL = 100


class GeminiEmbedder(Embedder):
    """Reduced dimensions of gemini-embedding-001 are not unit-norm, hence ``normalize``.

    The Gemini API takes at most 100 texts per call: ``embed`` splits a larger batch into calls
    of at most that many, in order, and returns one batch of all their vectors."""

    def __init__(
        self,
        *,
        api_key: str,
        model: str = "gemini-embedding-001",
        dimension: int = 768,
        base_url: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.model = model
        self.dimension = dimension
        self._api_key = api_key
        self._client = genai.Client(
            api_key=api_key, vertexai=False, http_options=gemini_http_options(timeout, base_url)
        )

    async def embed(self, texts: Sequence[str]) -> EmbeddingBatch:
        if not texts:
            return EmbeddingBatch(
                np.zeros((0, self.dimension), np.float32), self.model, self.dimension
            )
        config = types.EmbedContentConfig(output_dimensionality=self.dimension)
        rows: list[list[float]] = []
        for start in range(0, len(texts), MAX_TEXTS_PER_CALL):
            rows.extend(await self._embed_call(texts[start : start + MAX_TEXTS_PER_CALL], config))
        vectors = normalize(np.array(rows, dtype=np.float32))
        return EmbeddingBatch(vectors=vectors, model=self.model, dimension=self.dimension)

    async def _embed_call(
        self, texts: Sequence[str], config: types.EmbedContentConfig
    ) -> list[list[float]]:
        with provider_errors(_PROVIDER, [self._api_key]):
            response = await self._client.aio.models.embed_content(
                model=self.model, contents=list(texts), config=config
            )
        rows = [embedding.values or [] for embedding in response.embeddings or []]
        if len(rows) != len(texts) or any(len(row) != self.dimension for row in rows):
            raise ProviderError(
                f"gemini returned {len(rows)} vectors for {len(texts)} texts, "
                f"not all of dimension {self.dimension}",
                retryable=True,
                provider=_PROVIDER,
            )
        return rows

    async def close(self) -> None:
        await self._client.aio.aclose()
