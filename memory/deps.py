"""What the use cases need, built once per process (worker or client)."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.embedding import make_embedder
from memory.embedding.base import Embedder
from memory.llm import make_llm
from memory.llm.base import LLMProvider
from memory.pipeline.transcripts import TranscriptCache
from memory.settings import Settings
from memory.store import MemoryStore, open_store


@dataclass
class Deps:
    settings: Settings
    store: MemoryStore
    llm: LLMProvider
    embedder: Embedder
    # The per-worker cache that lets the steps of one formation pass load its transcript once.
    transcripts: TranscriptCache = field(default_factory=TranscriptCache)

    async def close(self) -> None:
        await self.llm.close()
        await self.embedder.close()
        await self.store.close()


async def open_deps(settings: Settings) -> Deps:
    store = await open_store(settings)
    return Deps(
        settings=settings, store=store, llm=make_llm(settings), embedder=make_embedder(settings)
    )
