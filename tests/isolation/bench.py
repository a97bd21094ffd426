"""What the isolation tests share: a MemoryClient on a real store, the heuristic provider (or a real
provider SDK against tests/fake_provider_server.py), and
formation run step by step as the FormMemories workflow runs it (no Temporal: reading memory never
touches it, and the property test forms hundreds of windows)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import cast

from temporalio.client import Client

from client.memory_client import MemoryClient
from memory.deps import Deps
from memory.llm.base import LLMProvider
from memory.llm.heuristic import HeuristicProvider
from memory.models import AgentConfig, MessageIn
from memory.pipeline import commit, dedup, facts, reflections, window
from memory.pipeline.types import FormationRequest
from memory.settings import Settings
from memory.store.base import MemoryStore
from memory.store.sqlite import SQLiteStore
from tests.fakes import WordHashEmbedder

# A day before the run's hour: the conversations are recent (the memory context shows the facts
# said within fifo_max_age_hours), never in the future, and the same for every test of a run.
T0 = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=1)


def no_temporal() -> Client:
    """A stand-in Temporal client with the default runtime: for what reads only the store."""
    config = SimpleNamespace(runtime=None)
    return cast(Client, SimpleNamespace(service_client=SimpleNamespace(config=config)))


@dataclass
class Bench:
    store: MemoryStore
    settings: Settings
    embedder: WordHashEmbedder
    memory: MemoryClient
    llm: LLMProvider = field(default_factory=HeuristicProvider)
    clock: int = 0

    @classmethod
    async def create(cls, store: MemoryStore, agents: Sequence[AgentConfig]) -> Bench:
        settings = Settings()
        embedder = WordHashEmbedder()
        for agent in agents:
            await store.upsert_agent(agent)
        memory = MemoryClient(no_temporal(), store, settings, embedder=embedder)
        return cls(store, settings, embedder, memory)

    @property
    def deps(self) -> Deps:
        return Deps(self.settings, self.store, self.llm, self.embedder)

    async def say(
        self,
        agent_id: str,
        session_id: str,
        content: str,
        *,
        user_id: str | None,
        name: str | None = None,
        role: str = "user",
    ) -> None:
        self.clock += 1
        message = MessageIn.model_validate(
            {
                "message_id": f"m{self.clock}",
                "role": role,
                "content": content,
                "created_at": T0 + timedelta(seconds=self.clock),
                "user_id": user_id,
                "name": name if name is not None else (user_id or "").capitalize() or None,
            }
        )
        await self.memory.record_messages(agent_id, session_id, [message])

    async def form(self, session_id: str, agent_id: str) -> None:
        """Form everything pending of (session, agent), as the workflow's passes do."""
        deps = self.deps
        now = T0 + timedelta(hours=1, seconds=self.clock)
        request = FormationRequest(session_id=session_id, agent_id=agent_id, force=True)
        while (w := await window.load_window(deps.store, deps.settings, request)) is not None:
            new = (await facts.extract_facts(deps, w)).facts
            candidates = await facts.find_candidates(deps, w, new)
            decided = await dedup.decide(deps, w, new, candidates)
            found = await reflections.extract_reflections(deps, w, [f.content for f in new])
            await commit.commit(deps, w, new, decided.decisions, found.reflections, now)

    async def seen_by(
        self, agent_id: str, session_id: str, user_id: str | None, queries: Sequence[str]
    ) -> str:
        """Everything the user's turn may read: the context and the search results, as text."""
        context = await self.memory.memory_context(agent_id, session_id, user_id)
        hits: list[str] = []
        for start in range(0, len(queries), self.settings.rag.max_queries):
            found = await self.memory.search_facts(
                agent_id,
                list(queries[start : start + self.settings.rag.max_queries]),
                session_id=session_id,
                user_id=user_id,
                top_k=self.settings.rag.top_k_max,
            )
            hits += [hit.content for hit in found.hits]
        return context + "\n" + "\n".join(hits)


EVE = AgentConfig(agent_id="eve", name="Eve")


@asynccontextmanager
async def sqlite_bench(path: Path, agents: Sequence[AgentConfig] = (EVE,)) -> AsyncIterator[Bench]:
    """A bench on a real SQLite store in ``path``: the isolation cases' usual setting."""
    store = SQLiteStore(path / "mnemos.db")
    await store.setup()
    try:
        yield await Bench.create(store, agents)
    finally:
        await store.close()
