"""Sessions on the MongoDB backend, per agent: an agent's view of a session, its messages, the
cold-sessions scan, ending it, the ended sessions with memory still to form, the migration of
documents written when ending was session-wide, and the marking of sessions with guests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bson import ObjectId
from pymongo.asynchronous.database import AsyncDatabase

from memory import switch_marks
from memory.models import SessionAgentState, SessionInfo, StoredMessage
from memory.store.base import Cold
from memory.store.mongo.docs import (
    Doc,
    agent_from_doc,
    by_ids,
    message_from_doc,
    past,
    session_from_doc,
    state_from_doc,
    ts,
    view_of,
)
from memory.store.planned_lifecycle import UNMARKED_BATCH


class MongoSessions:
    _db: AsyncDatabase[Doc]

    async def get_session(self, session_id: str, agent_id: str | None = None) -> SessionInfo | None:
        doc = await self._db.sessions.find_one({"_id": session_id})
        if doc is None:
            return None
        if agent_id is None:
            return session_from_doc(doc)
        mine = await self._db.session_agents.find_one(view_of(session_id, agent_id))
        return None if mine is None else session_from_doc(doc, mine)

    async def load_messages(
        self, session_id: str, after_seq: int, upto_seq: int
    ) -> list[StoredMessage]:
        seqs = {"$gt": after_seq, "$lte": upto_seq}
        cursor = self._db.messages.find({"session_id": session_id, "seq": seqs}).sort("seq", 1)
        return [message_from_doc(doc) async for doc in cursor]

    async def first_seqs(self, session_id: str) -> dict[str | None, int]:
        # The guests' grouped under None: a guest message's user_id is null or missing.
        persons = {"$or": [{"user_id": {"$ne": None}}, GUEST_MESSAGE]}
        pipeline: list[Doc] = [
            {"$match": {"session_id": session_id, **persons}},
            {"$group": {"_id": "$user_id", "first_seq": {"$min": "$seq"}}},
        ]
        cursor = await self._db.messages.aggregate(pipeline)
        return {doc["_id"]: int(doc["first_seq"]) async for doc in cursor}

    async def _cold_sessions(
        self,
        idle_before: datetime,
        min_messages: int,
        min_tokens: float,
        after: Cold,
        limit: int,
        rest_before: datetime | None,
    ) -> list[SessionAgentState]:
        # A keyset page over the (last_message_at, session_id, agent_id) index.
        enough: list[Doc] = [
            {"pending_messages": {"$gte": min_messages}},
            {"pending_weighted_tokens": {"$gte": min_tokens}},
        ]
        if rest_before is not None:
            enough.append({"last_message_at": {"$lte": ts(rest_before)}})
        terms: list[Doc] = [
            {"last_message_at": {"$lte": ts(idle_before)}},
            {"pending_messages": {"$gte": 1}},
            {"$or": enough},
        ]
        order = ("last_message_at", "session_id", "agent_id")
        if after is not None:
            terms.append(past(order, (ts(after[0]), after[1], after[2])))
        sort = [(field, 1) for field in order]
        cursor = self._db.session_agents.find({"$and": terms}).sort(sort).limit(limit)
        return [state_from_doc(doc) async for doc in cursor]

    async def _end_session(self, session_id: str, agent_id: str, at: datetime) -> bool:
        result = await self._db.session_agents.update_one(
            view_of(session_id, agent_id), {"$set": {"ended_at": ts(at), "purged": False}}
        )
        return result.matched_count > 0

    async def _unfinished_ended_sessions(
        self, ended_before: datetime, after: tuple[str, str], limit: int
    ) -> list[tuple[str, str]]:
        # The pairs with unformed messages or a session buffer, then those ended: both kinds
        # are few (session buffers consolidate at a small threshold, unformed messages are
        # formed within minutes).
        buffered: Doc = {"scope": "session", "absorbed_into_version": None}
        unformed: Doc = {"pending_messages": {"$gte": 1}}
        pairs = {
            (d["session_id"], d["agent_id"]) async for d in self._db.reflections.find(buffered)
        }
        pairs |= {
            (d["session_id"], d["agent_id"]) async for d in self._db.session_agents.find(unformed)
        }
        # Ending is each agent's own: its session_agents document holds when it ended.
        cut = ts(ended_before)
        ended = {
            "session_id": {"$in": sorted({s for s, _ in pairs})},
            "ended_at": {"$ne": None, "$lte": cut},
            "$or": [{"last_message_at": None}, {"last_message_at": {"$lte": cut}}],
        }
        done = {
            (d["session_id"], d["agent_id"])
            async for d in self._db.session_agents.find(ended, {"session_id": 1, "agent_id": 1})
        }
        found = sorted(p for p in pairs if p in done and p > after)
        return found[:limit]

    async def _open_unmarked(self, agent_id: str) -> int:
        if (doc := await self._db.agents.find_one({"_id": agent_id}, {"_id": 0})) is None:
            return 0
        unmarked = {"agent_id": agent_id, **_UNMARKED}
        found = self._db.session_agents.find(unmarked, {"_id": 1}).limit(UNMARKED_BATCH)
        if ids := [d["_id"] async for d in found]:
            # The filter checked again: a state a recording opened meanwhile keeps its own.
            opened = {"$push": {"switch_marks": switch_marks.opened(agent_from_doc(doc))}}
            await self._db.session_agents.update_many(by_ids(ids) | unmarked, opened)
        return len(ids)


# memory.switch_marks.opened's states: messages to form, no open stretch (a document stored
# before the field, written by a process of the previous version, or imported from a version 2
# file, marks or not).
_UNMARKED: Doc = {
    "pending_messages": {"$gt": 0},
    # No open stretch: no item holding a null (its seq; the switches are booleans).
    "switch_marks": {"$not": {"$elemMatch": {"$elemMatch": {"$eq": None}}}},
}


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


# A guest's message (rules.derived.said_by_guest) as a query: null matches a missing user_id too.
GUEST_MESSAGE: Doc = {"user_id": None, "role": "user"}
# meta: where the next mark_guests walk starts, as an ObjectId (messages' _id, made by pymongo
# from the writer's clock when it inserts them).
_GUESTS_WALKED = "guests_walked"
# Each walk reads from this long before the previous walk began: a message's _id is made before
# its transaction commits (within a minute: MongoDB aborts older transactions) and by its
# writer's clock, which may be behind this one's.
_GUESTS_OVERLAP = timedelta(hours=1)
_BATCH = 1000


async def mark_guests(db: AsyncDatabase[Doc]) -> None:
    """Mark the sessions holding a guest's message that are not marked yet (a session document
    without the field reads False). At every setup: stored before ``has_guests`` was, or
    recorded since by a writer of the previous version (still running during a rolling
    upgrade), such a session would otherwise never be marked.

    The first walk reads every message without a user id (the messages_user index); each later
    one only those inserted since the previous walk began, less _GUESTS_OVERLAP (their _id
    range): a start costs what was recorded since the last one, not the whole history. A walk
    that dies midway records nothing and the next one does its part again; concurrent walks
    keep the later start (``$max``)."""
    started = ObjectId.from_datetime(datetime.now(UTC) - _GUESTS_OVERLAP)
    walked = await db.meta.find_one({"_id": _GUESTS_WALKED})
    pipeline: list[Doc] = [{"$match": GUEST_MESSAGE}, {"$group": {"_id": "$session_id"}}]
    if walked is None:
        sessions = await db.messages.aggregate(pipeline)
    else:  # the _id range, not messages_user's messages without a user id (a tie if none match)
        pipeline[0] = {"$match": {**GUEST_MESSAGE, "_id": {"$gte": walked["from"]}}}
        sessions = await db.messages.aggregate(pipeline, hint={"_id": 1})
    batch: list[str] = []
    async for doc in sessions:
        batch.append(doc["_id"])
        if len(batch) == _BATCH:
            await _mark_guests(db, batch)
            batch = []
    await _mark_guests(db, batch)
    await db.meta.update_one({"_id": _GUESTS_WALKED}, {"$max": {"from": started}}, upsert=True)


async def _mark_guests(db: AsyncDatabase[Doc], session_ids: list[str]) -> None:
    if session_ids:
        await db.sessions.update_many(
            by_ids(session_ids) | {"has_guests": {"$ne": True}},
            {"$set": {"has_guests": True}},
        )
