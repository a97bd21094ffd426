"""The MongoDB backend's listings for operators and the memory page: an agent's users and
sessions, and the API keys (their writes are planned: memory.store.rules.keys)."""

from __future__ import annotations

from typing import Any

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from memory.api_keys import ApiKey
from memory.directory import AgentUser
from memory.models import SessionInfo
from memory.store.mongo.docs import Doc, dt, session_from_doc, ts

# A session's activity: its last message, else its creation (both fixed-width ISO strings).
_ACTIVE = {"$ifNull": ["$last_message_at", "$created_at"]}


def api_key_doc(key: ApiKey) -> Doc:
    fields = key.model_dump(mode="json", exclude={"key_id", "created_at", "revoked_at"})
    revoked = None if key.revoked_at is None else ts(key.revoked_at)
    return {"_id": key.key_id, **fields, "created_at": ts(key.created_at), "revoked_at": revoked}


def api_key_from_doc(doc: Doc) -> ApiKey:
    fields = {name: value for name, value in doc.items() if name != "_id"}
    return ApiKey.model_validate({**fields, "key_id": doc["_id"]})


async def api_key(
    db: AsyncDatabase[Doc], key_id: str, session: AsyncClientSession | None = None
) -> ApiKey | None:
    doc = await db.api_keys.find_one({"_id": key_id}, session=session)
    return None if doc is None else api_key_from_doc(doc)


class MongoListings:
    _db: AsyncDatabase[dict[str, Any]]

    async def list_agent_users(self, agent_id: str, *, limit: int = 100) -> list[AgentUser]:
        if limit <= 0:
            return []
        pipeline: list[Doc] = [
            {"$match": {"agent_ids": agent_id}},
            {"$project": {"user_ids": 1, "active": _ACTIVE}},
            {"$unwind": "$user_ids"},
            {"$group": {"_id": "$user_ids", "sessions": {"$sum": 1}, "last": {"$max": "$active"}}},
            {"$sort": {"last": -1, "_id": 1}},
            {"$limit": limit},
        ]
        cursor = await self._db.sessions.aggregate(pipeline)
        return [
            AgentUser(user_id=d["_id"], sessions=int(d["sessions"]), last_active_at=dt(d["last"]))
            async for d in cursor
        ]

    async def list_agent_sessions(
        self, agent_id: str, *, user_id: str | None = None, limit: int = 100
    ) -> list[SessionInfo]:
        if limit <= 0:
            return []
        match: Doc = {"agent_ids": agent_id}
        if user_id is not None:
            match["user_ids"] = user_id
        pipeline: list[Doc] = [
            {"$match": match},
            {"$addFields": {"active": _ACTIVE}},
            {"$sort": {"active": -1, "_id": 1}},
            {"$limit": limit},
        ]
        cursor = await self._db.sessions.aggregate(pipeline)
        return [session_from_doc(d) async for d in cursor]

    async def get_api_key(self, key_id: str) -> ApiKey | None:
        return await api_key(self._db, key_id)

    async def list_api_keys(self) -> list[ApiKey]:
        cursor = self._db.api_keys.find({}).sort([("created_at", 1), ("_id", 1)])
        return [api_key_from_doc(doc) async for doc in cursor]
