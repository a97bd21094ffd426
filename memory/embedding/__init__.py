"""Choosing the embedder. Each is imported only when chosen: the local one loads onnxruntime, the
remote ones the OpenAI or Gemini SDK."""

from __future__ import annotations

from typing import Literal

from memory.embedding.base import Embedder, EmbeddingBatch
from memory.errors import ProviderError
from memory.llm import gemini_api_key, openai_api_key
from memory.llm.selection import select
from memory.settings import Settings

type EmbeddingVendor = Literal["local", "openai", "gemini"]


def embedding_vendor(settings: Settings) -> tuple[EmbeddingVendor, str | None]:
    """The embedder's vendor and its key. ``auto`` follows the LLM (``llm.selection.select``):
    OpenAI's or Gemini's embeddings when the LLM is that vendor's, else the local model. A
    vendor's variable in the environment alone never chooses it: a key exported for other tools
    would otherwise send every fact to a vendor the operator did not pick for mnemos (an LLM on
    a local server beside an exported OPENAI_API_KEY, say). The LLM's key (``models.api_key``
    included) goes to the embedder only when both are the same vendor's."""
    llm = select(settings)
    provider = settings.embedding.provider
    if provider == "auto":
        provider = llm.provider if llm.provider in ("openai", "gemini") else "local"
    match provider:
        case "openai" | "gemini" if llm.provider == provider:
            return provider, llm.api_key
        case "openai":
            return provider, openai_api_key()
        case "gemini":
            return provider, gemini_api_key()
        case _:
            return "local", None


def make_embedder(settings: Settings) -> Embedder:
    config = settings.embedding
    provider, key = embedding_vendor(settings)
    match provider:
        case "openai":
            from memory.embedding.openai_embedder import OpenAIEmbedder

            if not key:
                raise ProviderError("OPENAI_API_KEY is not set", retryable=False, provider="openai")
            return OpenAIEmbedder(
                api_key=key, model=config.openai_model, timeout=config.request_timeout_seconds
            )
        case "gemini":
            from memory.embedding.gemini_embedder import GeminiEmbedder

            if not key:
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
