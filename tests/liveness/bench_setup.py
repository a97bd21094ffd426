"""A formation bench on any store with the offline heuristic provider: what the contention test
and bench/contention.py share."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from temporalio.client import Client
from temporalio.worker import Worker

from client.memory_client import MemoryClient
from memory.deps import Deps
from memory.llm.heuristic import HeuristicProvider
from memory.models import AgentConfig, Fact, FactFilter, MessageIn
from memory.settings import RetrySettings, Settings, TemporalSettings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder
from worker import build_worker
from workflows.summary import FormationSummary

AGENT = AgentConfig(agent_id="eve", name="Eve")
USER = "alice"
STORED_DEADLINE = "The project deadline is March 1, 2024."
_MONTHS = ("April", "May", "June", "July", "August", "September", "October", "November")
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def bench_settings(base: Settings | None = None) -> Settings:
    return (base or Settings()).model_copy(
        update={
            "temporal": TemporalSettings(
                task_queue=f"tq-{uuid.uuid4().hex[:8]}", search_attributes=False
            ),
            "retries": RetrySettings(
                llm_initial_interval_seconds=0.01,
                store_initial_interval_seconds=0.01,
                llm_max_interval_seconds=0.05,
                store_max_interval_seconds=0.05,
            ),
        }
    )


def new_deadline(i: int) -> str:
    return f"The project deadline is {_MONTHS[i % len(_MONTHS)]} {i + 2}, 2024."


def said(session: str, text: str, at: datetime) -> list[MessageIn]:
    return [
        MessageIn(
            message_id=f"{session}-u", role="user", content=text, created_at=at, user_id=USER
        ),
        MessageIn(message_id=f"{session}-a", role="agent", content="Noted.", created_at=at),
    ]


@dataclass
class Bench:
    client: Client
    store: MemoryStore
    settings: Settings

    @property
    def deps(self) -> Deps:
        return Deps(
            settings=self.settings,
            store=self.store,
            llm=HeuristicProvider(),
            embedder=WordHashEmbedder(),
        )

    @property
    def memory(self) -> MemoryClient:
        return MemoryClient(self.client, self.store, self.settings, embedder=WordHashEmbedder())

    async def setup(self) -> None:
        await self.store.upsert_agent(AGENT)

    async def form(self, session: str) -> FormationSummary:
        handle = await self.memory._start_formation(AGENT.agent_id, session, force=True)
        return await handle.result()

    async def contend(self, sessions: int, *, stored: bool = True) -> list[FormationSummary]:
        """One stored deadline (``stored``), then ``sessions`` sessions that each state a new
        one, formed at once. Runs inside a worker of this bench."""
        if stored:
            first = said("s-first", STORED_DEADLINE, T0)
            await self.memory.record_messages(AGENT.agent_id, "s-first", first)
            await self.form("s-first")
        names = [f"s-{i:02d}" for i in range(sessions)]
        for i, name in enumerate(names):
            at = T0 + timedelta(hours=1, minutes=i)
            await self.memory.record_messages(AGENT.agent_id, name, said(name, new_deadline(i), at))
        return list(await asyncio.gather(*(self.form(name) for name in names)))

    async def facts(self, include_invalid: bool = False) -> list[Fact]:
        flt = FactFilter(agent_id=AGENT.agent_id, user_id=USER)
        return await self.store.list_facts(flt, include_invalid=include_invalid, limit=1000)

    def worker(self) -> Worker:
        return build_worker(self.client, self.deps, self.settings)
