"""Reading an Eden database: ``find`` only (the source is never written), one agent at a time so
an agent's facts and their 1536-float embeddings are the most held in memory at once."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from datetime import datetime
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from memory.lifecycle.eden import map_agent
from memory.lifecycle.eden_docs import (
    COLLECTIONS,
    V2_CONSOLIDATED,
    V2_FACTS,
    EdenAgentDocs,
    parse_agent_docs,
    plain,
)
from memory.lifecycle.records import ImportBatch
from memory.settings import ReflectionSettings

Doc = dict[str, Any]


def _agent_of(doc: Mapping[str, Any]) -> Any:
    nested = doc.get("scope_key")
    return doc.get("agent_id") or (nested.get("agent_id") if isinstance(nested, Mapping) else None)


async def present(db: AsyncDatabase[Doc]) -> list[str]:
    """Which of Eden's collections this database has (either generation, or both)."""
    names = set(await db.list_collection_names())
    return [c for c in COLLECTIONS if c in names]


async def agent_ids(db: AsyncDatabase[Doc]) -> dict[str, Any]:
    """Every agent with a document anywhere: its id as a string → as stored (ObjectId or str)."""
    found: dict[str, Any] = {}
    for collection in await present(db):
        cursor = db[collection].find({}, projection={"agent_id": 1, "scope_key.agent_id": 1})
        async for doc in cursor:
            raw = _agent_of(doc)
            if raw is not None:
                found.setdefault(str(plain(raw)), raw)
    return dict(sorted(found.items()))


async def read_agent(
    db: AsyncDatabase[Doc], agent_id: str, raw_id: Any, *, embeddings: bool = True
) -> EdenAgentDocs:
    """One agent's documents; ``embeddings=False`` leaves the vectors on the server (dry runs)."""
    found: list[tuple[str, Doc]] = []
    for collection in await present(db):
        query: dict[str, Any] = {"agent_id": raw_id}
        if collection == V2_CONSOLIDATED:
            query = {"$or": [query, {"scope_key.agent_id": raw_id}]}
        projection = None if embeddings or collection != V2_FACTS else {"embedding": 0}
        cursor = db[collection].find(query, projection=projection, sort=[("_id", 1)])
        found.extend([(collection, raw) async for raw in cursor])
    return parse_agent_docs(agent_id, found)


async def read_eden(
    db: AsyncDatabase[Doc],
    cfg: ReflectionSettings,
    *,
    now: datetime,
    embeddings: bool = True,
    only_agent: str | None = None,
) -> AsyncIterator[ImportBatch]:
    """Import records, one agent's batch at a time, in agent id order (a stable resume order)."""
    for agent_id, raw in (await agent_ids(db)).items():
        if only_agent is None or agent_id == only_agent:
            docs = await read_agent(db, agent_id, raw, embeddings=embeddings)
            yield map_agent(docs, cfg, now=now)
