"""Reading Eden's collections from a MongoDB server (mongoeco over the wire, or MONGODB_URI)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from memory.lifecycle.eden_reader import present, read_eden
from memory.lifecycle.records import ImportBatch
from memory.settings import ReflectionSettings
from tests.lifecycle import eden_fixtures as fx
from tests.lifecycle.test_eden_mapping import agent_batch
from tests.mongo_server import running_mongo

pytestmark = pytest.mark.mongo

NOW = datetime(2026, 11, 22, tzinfo=UTC)
Doc = dict[str, Any]


@pytest.fixture
async def eden() -> AsyncIterator[AsyncDatabase[Doc]]:
    async with running_mongo() as uri:
        client: AsyncMongoClient[Doc] = AsyncMongoClient(uri, tz_aware=False)
        db = client[f"eden_{uuid.uuid4().hex[:8]}"]
        try:
            for name, docs in fx.ALL.items():
                await db[name].insert_many([dict(d) for d in docs])
            yield db
        finally:
            await client.drop_database(db.name)
            await client.close()


async def snapshot(db: AsyncDatabase[Doc]) -> dict[str, list[Doc]]:
    return {name: await db[name].find({}, sort=[("_id", 1)]).to_list() for name in fx.ALL}


async def collect(db: AsyncDatabase[Doc], **kw: Any) -> list[ImportBatch]:
    return [b async for b in read_eden(db, ReflectionSettings(), now=NOW, **kw)]


async def test_reads_both_generations_per_agent_as_the_pure_mapping(
    eden: AsyncDatabase[Doc],
) -> None:
    before = await snapshot(eden)
    batches = await collect(eden)
    assert [b.agents[0].agent_id for b in batches] == [str(fx.AGENT_A), str(fx.AGENT_B)]
    assert batches == [agent_batch(fx.AGENT_A), agent_batch(fx.AGENT_B)]
    assert await snapshot(eden) == before  # the source is only read


async def test_dry_run_reading_leaves_vectors_on_the_server(eden: AsyncDatabase[Doc]) -> None:
    [batch] = await collect(eden, embeddings=False, only_agent=str(fx.AGENT_B))
    assert batch.facts and all(f.embedding is None for f in batch.facts)


async def test_only_the_collections_that_exist_are_read(eden: AsyncDatabase[Doc]) -> None:
    for name in ("memory2_facts", "memory2_reflections", "memory2_consolidated"):
        await eden.drop_collection(name)
    assert await present(eden) == ["memory_sessions", "memory_user", "memory_agent"]
    batches = await collect(eden)
    b = next(b for b in batches if b.agents and b.agents[0].agent_id == str(fx.AGENT_B))
    # agent B's v1 blob is no longer superseded by a memory2 one
    assert [c.content for c in b.consolidated] == ["Old v1 blob"]
