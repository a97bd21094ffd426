"""The MongoDB backend's listings for operators and the memory page: an agent's users and
sessions, and the API keys (their writes are planned: memory.store.rules.keys)."""

from __future__ import annotations

from pymongo.asynchronous.database import AsyncDatabase

from memory.api_keys import ApiKey
from memory.directory import AgentUser
from memory.models import SessionInfo
from memory.store.mongo.docs import Doc, dt, matching, session_from_doc, ts
from memory.store.records import known, to_record


def api_key_doc(key: ApiKey) -> Doc:
    return {"_id": key.key_id, **to_record(key, ts, exclude={"key_id"})}


def api_key_from_doc(doc: Doc) -> ApiKey:
    return ApiKey.model_validate({**known(ApiKey, doc), "key_id": doc["_id"]})


def _mine(agent_id: str, user_id: str | None = None) -> list[Doc]:
    """The agent's session_agents documents (its own participants and its end: users who spoke
    before it joined are not its), each with its ``session`` and the session's ``active`` time
    (its last message, else its creation)."""
    match = matching(agent_id=agent_id, user_ids=user_id)
    session = {"from": "sessions", "localField": "session_id", "foreignField": "_id"}
    active = {"$ifNull": ["$session.last_message_at", "$session.created_at"]}
    return [
        {"$match": match},
        {"$lookup": {**session, "as": "session"}},
        {"$unwind": "$session"},
        {"$addFields": {"active": active}},
    ]


class MongoListings:
    _db: AsyncDatabase[Doc]

    async def _list_agent_users(self, agent_id: str, limit: int) -> list[AgentUser]:
        by_user = {"_id": "$user_ids", "sessions": {"$sum": 1}, "last": {"$max": "$active"}}
        pipeline: list[Doc] = [
            *_mine(agent_id),
            {"$unwind": "$user_ids"},
            {"$group": by_user},
            {"$sort": {"last": -1, "_id": 1}},
            {"$limit": limit},
        ]
        rows = await (await self._db.session_agents.aggregate(pipeline)).to_list()
        return [
            AgentUser(user_id=row["_id"], sessions=row["sessions"], last_active_at=dt(row["last"]))
            for row in rows
        ]

    async def _list_agent_sessions(
        self, agent_id: str, user_id: str | None, limit: int
    ) -> list[SessionInfo]:
        newest: list[Doc] = [{"$sort": {"active": -1, "session_id": 1}}, {"$limit": limit}]
        cursor = await self._db.session_agents.aggregate([*_mine(agent_id, user_id), *newest])
        return [session_from_doc(doc["session"], doc) async for doc in cursor]
