"""The MongoDB backend's listings for operators and the memory page: an agent's users and
sessions, and the API keys (their writes are planned: memory.store.rules.keys)."""

from __future__ import annotations

from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from memory.api_keys import ApiKey
from memory.directory import AgentUser
from memory.models import SessionInfo
from memory.store.mongo.docs import Doc, dt, session_from_doc, ts
from memory.store.records import to_record


def _active(session: Doc) -> str:
    """A session's activity as stored: its last message, else its creation."""
    return str(session.get("last_message_at") or session["created_at"])


def _desc(stamp: str) -> tuple[int, ...]:
    """Sorts a stored timestamp (a fixed-width ISO string) newest first."""
    return tuple(-ord(c) for c in stamp)


def api_key_doc(key: ApiKey) -> Doc:
    return {"_id": key.key_id, **to_record(key, ts, exclude={"key_id"})}


def api_key_from_doc(doc: Doc) -> ApiKey:
    fields = {name: value for name, value in doc.items() if name != "_id"}
    return ApiKey.model_validate({**fields, "key_id": doc["_id"]})


class MongoListings:
    _db: AsyncDatabase[dict[str, Any]]

    async def _mine(self, agent_id: str, user_id: str | None = None) -> list[tuple[Doc, Doc]]:
        """(session, the agent's session_agents document) of every session of the agent: its own
        participants and its end (isolation: users who spoke before it joined are not its)."""
        query: Doc = {"agent_id": agent_id}
        if user_id is not None:
            query["user_ids"] = user_id
        mine = {d["session_id"]: d async for d in self._db.session_agents.find(query)}
        if not mine:
            return []
        sessions = self._db.sessions.find({"_id": {"$in": list(mine)}})
        return [(doc, mine[doc["_id"]]) async for doc in sessions]

    async def list_agent_users(self, agent_id: str, *, limit: int = 100) -> list[AgentUser]:
        if limit <= 0:
            return []
        seen: dict[str, tuple[int, str]] = {}  # user -> (sessions, last activity as stored)
        for doc, mine in await self._mine(agent_id):
            active = _active(doc)
            for user in mine.get("user_ids", []):
                count, last = seen.get(user, (0, active))
                seen[user] = (count + 1, max(last, active))
        ranked = sorted(seen.items(), key=lambda item: (_desc(item[1][1]), item[0]))[:limit]
        return [
            AgentUser(user_id=user, sessions=count, last_active_at=dt(last))
            for user, (count, last) in ranked
        ]

    async def list_agent_sessions(
        self, agent_id: str, *, user_id: str | None = None, limit: int = 100
    ) -> list[SessionInfo]:
        if limit <= 0:
            return []
        pairs = await self._mine(agent_id, user_id)
        pairs.sort(key=lambda pair: (_desc(_active(pair[0])), pair[0]["_id"]))
        return [session_from_doc(doc, mine) for doc, mine in pairs[:limit]]

    async def list_api_keys(self) -> list[ApiKey]:
        cursor = self._db.api_keys.find({}).sort([("created_at", 1), ("_id", 1)])
        return [api_key_from_doc(doc) async for doc in cursor]
