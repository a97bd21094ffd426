"""Session reads and writes of the MongoDB backend that are per agent: an agent's view of a
session, ending it, the ended sessions with memory still to form, and the migration of documents written when ending was session-wide."""

from __future__ import annotations

from datetime import datetime

from pymongo.asynchronous.database import AsyncDatabase

from memory.models import SessionInfo, StoredMessage
from memory.store.mongo.docs import Doc, message_from_doc, session_from_doc, ts


async def find_messages(db: AsyncDatabase[Doc], query: Doc) -> list[StoredMessage]:
    """The session's messages matching ``query``, in seq order."""
    return [message_from_doc(doc) async for doc in db.messages.find(query).sort("seq", 1)]


async def session_view(
    db: AsyncDatabase[Doc], session_id: str, agent_id: str | None
) -> SessionInfo | None:
    doc = await db.sessions.find_one({"_id": session_id})
    if doc is None:
        return None
    if agent_id is None:
        return session_from_doc(doc)
    mine = await db.session_agents.find_one({"session_id": session_id, "agent_id": agent_id})
    return None if mine is None else session_from_doc(doc, mine)


async def end_session(db: AsyncDatabase[Doc], session_id: str, agent_id: str, at: datetime) -> bool:
    result = await db.session_agents.update_one(
        {"session_id": session_id, "agent_id": agent_id},
        {"$set": {"ended_at": ts(at), "purged": False}},
    )
    return result.matched_count > 0


async def migrate_session_agents(db: AsyncDatabase[Doc]) -> None:
    """Documents of a store where ending and users were session-wide: each agent of an ended
    session ended it then, and every user of the session is among its participants. Idempotent:
    only agent documents without the per-agent fields are touched."""
    async for doc in db.sessions.find({"ended_at": {"$exists": True}}):
        fields = {
            "ended_at": doc.get("ended_at"),
            "purged": bool(doc.get("purged", False)),
            "user_ids": list(doc.get("user_ids", [])),
        }
        await db.session_agents.update_many(
            {"session_id": doc["_id"], "ended_at": {"$exists": False}}, {"$set": fields}
        )
        await db.sessions.update_one(
            {"_id": doc["_id"]}, {"$unset": {"ended_at": "", "purged": ""}}
        )


async def unfinished_ended_sessions(
    db: AsyncDatabase[Doc], ended_before: datetime, after: tuple[str, str], limit: int
) -> list[tuple[str, str]]:
    """(session, agent) pairs ended by ``ended_before`` with unformed messages or a non-empty
    session buffer, in order, after ``after``. Both kinds are few: session buffers consolidate at a
    small threshold, and unformed messages are formed within minutes."""
    buffered: Doc = {"scope": "session", "absorbed_into_version": None}
    unformed: Doc = {"pending_messages": {"$gte": 1}}
    pairs = {(d["session_id"], d["agent_id"]) async for d in db.reflections.find(buffered)}
    pairs |= {(d["session_id"], d["agent_id"]) async for d in db.session_agents.find(unformed)}
    # Ending is each agent's own: its session_agents document holds when it ended.
    ended = {
        "session_id": {"$in": sorted({s for s, _ in pairs})},
        "ended_at": {"$ne": None, "$lte": ts(ended_before)},
    }
    done = {
        (d["session_id"], d["agent_id"])
        async for d in db.session_agents.find(ended, {"session_id": 1, "agent_id": 1})
    }
    found = sorted(p for p in pairs if p in done and p > after)
    return found[:limit]
