"""Choosing the embedder. Each is imported only when chosen: the local one loads onnxruntime, the
remote ones the OpenAI or Gemini SDK."""

from __future__ import annotations

from memory.embedding.base import Embedder, EmbeddingBatch
from memory.errors import ProviderError
from memory.llm import gemini_api_key, openai_api_key
from memory.settings import Settings


def make_embedder(settings: Settings) -> Embedder:
    config = settings.embedding
    provider = config.provider
    if provider == "auto":
        provider = "openai" if openai_api_key() else "gemini" if gemini_api_key() else "local"
    match provider:
        case "openai":
            from memory.embedding.openai_embedder import OpenAIEmbedder

            if not (key := openai_api_key()):
                raise ProviderError("OPENAI_API_KEY is not set", retryable=False, provider="openai")
            return OpenAIEmbedder(
                api_key=key, model=config.openai_model, timeout=config.request_timeout_seconds
            )
        case "gemini":
            from memory.embedding.gemini_embedder import GeminiEmbedder

            if not (key := gemini_api_key()):
                raise ProviderError(
                    "GEMINI_API_KEY (or GOOGLE_API_KEY) is not set",
                    retryable=False,
                    provider="gemini",
                )
            return GeminiEmbedder(
                api_key=key,
                model=config.gemini_model,
                dimension=config.gemini_dimension,
                timeout=config.request_timeout_seconds,
            )
        case _:
            from memory.embedding.local import LocalMiniLMEmbedder

            return LocalMiniLMEmbedder(threads=config.local_threads, batch_size=config.batch_size)


__all__ = ["Embedder", "EmbeddingBatch", "make_embedder"]
