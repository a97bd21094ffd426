"""The data-lifecycle snapshots of the MongoDB backend (imports, forget_user, erasure epochs,
export), read inside the caller's transaction."""

from __future__ import annotations

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from memory.models import AgentConfig
from memory.store.counts import ExportData
from memory.store.mongo.docs import (
    Doc,
    consolidated_from_doc,
    fact_and_vector,
    message_from_doc,
    reflection_from_doc,
)

Session = AsyncClientSession | None


async def user_agents(db: AsyncDatabase[Doc], user_id: str) -> list[str]:
    agents: set[str] = set()
    for name in ("facts", "reflections", "consolidated"):
        agents |= set(await db[name].distinct("agent_id", {"user_id": user_id}))
    agents |= {
        a for d in await db.sessions.find({"user_ids": user_id}).to_list() for a in d["agent_ids"]
    }
    return sorted(agents)


async def export_data(
    db: AsyncDatabase[Doc], s: Session, *, agent_id: str | None, user_id: str | None, messages: bool
) -> ExportData:
    query: Doc = {}
    if agent_id is not None:
        query["agent_id"] = agent_id
    if user_id is not None:
        query["user_id"] = user_id
    agents_q: Doc = {} if agent_id is None else {"_id": agent_id}
    data = ExportData(
        agents=[
            AgentConfig.model_validate({k: v for k, v in d.items() if k != "_id"})
            async for d in db.agents.find(agents_q, session=s).sort("_id", 1)
        ],
        facts=[fact_and_vector(d) async for d in db.facts.find(query, session=s).sort("ins", 1)],
        reflections=[
            reflection_from_doc(d)
            async for d in db.reflections.find(query, session=s).sort(
                [("formed_at", 1), ("ins", 1)]
            )
        ],
        consolidated=[
            consolidated_from_doc(d)
            async for d in db.consolidated.find(query, session=s).sort("_id", 1)
        ],
    )
    if messages:
        sq: Doc = {}
        if agent_id is not None:
            sq["agent_ids"] = agent_id
        if user_id is not None:
            sq["user_ids"] = user_id
        sids = [d["_id"] async for d in db.sessions.find(sq, {"_id": 1}, session=s)]
        cursor = db.messages.find({"session_id": {"$in": sids}}, session=s)
        data.messages = [
            message_from_doc(d) async for d in cursor.sort([("session_id", 1), ("seq", 1)])
        ]
    return data
