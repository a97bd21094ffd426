"""Sessions and messages of the MongoDB store: the record_messages transaction and its helpers.

A session document holds the message counter (``last_seq``, advanced by $inc inside the
transaction, so that concurrent recorders conflict and retry instead of sharing a seq), the
agents and users in join order, and the timestamps. One ``session_agents`` document per
(session, agent) holds the formation cursor and the pending counters; ``last_seq`` and
``last_message_at`` are copied into it so that the cold-session index and the returned state
need no join.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pymongo import ReturnDocument
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from memory.errors import InvalidInputError
from memory.models import MessageIn, RecordOutcome, SessionAgentState
from memory.store.mongo_docs import Doc, state_from_doc, ts


def weighted_tokens(message: MessageIn, weights: dict[str, float], chars_per_token: float) -> float:
    """weight(role) * ceil(len / chars_per_token); roles without a weight take the 'other' one."""
    weight = weights.get(message.role, weights.get("other", 1.0))
    return weight * math.ceil(len(message.content) / chars_per_token)


async def pending_after(
    db: AsyncDatabase[Doc], session_id: str, after_seq: int, session: AsyncClientSession
) -> tuple[int, float]:
    """(count, weighted tokens) of the session's messages with seq > after_seq."""
    pipeline: list[Doc] = [
        {"$match": {"session_id": session_id, "seq": {"$gt": after_seq}}},
        {"$group": {"_id": None, "n": {"$sum": 1}, "tokens": {"$sum": "$weighted_tokens"}}},
    ]
    rows = await (await db.messages.aggregate(pipeline, session=session)).to_list()
    if not rows:
        return 0, 0.0
    return int(rows[0]["n"]), float(rows[0]["tokens"])


async def read_state(
    db: AsyncDatabase[Doc],
    session_id: str,
    agent_id: str,
    session: AsyncClientSession | None = None,
) -> SessionAgentState | None:
    doc = await db.session_agents.find_one(
        {"session_id": session_id, "agent_id": agent_id}, session=session
    )
    return None if doc is None else state_from_doc(doc)


async def record_messages_tx(
    db: AsyncDatabase[Doc],
    session: AsyncClientSession,
    *,
    session_id: str,
    agent_id: str,
    messages: Sequence[MessageIn],
    weights: dict[str, float],
    chars_per_token: float,
    now: datetime,
) -> RecordOutcome:
    if chars_per_token <= 0:
        raise InvalidInputError("chars_per_token must be > 0")
    # A message id repeated within the call is a duplicate of its first occurrence.
    first: dict[str, MessageIn] = {}
    for message in messages:
        first.setdefault(message.message_id, message)
    unique = list(first.values())
    stored = {
        doc["message_id"]
        async for doc in db.messages.find(
            {"session_id": session_id, "message_id": {"$in": [m.message_id for m in unique]}},
            {"message_id": 1},
            session=session,
        )
    }
    new = [m for m in unique if m.message_id not in stored]
    users = list(dict.fromkeys(m.user_id for m in new if m.role == "user" and m.user_id))

    update: Doc = {
        "$setOnInsert": {"created_at": ts(now), "ended_at": None, "purged": False},
        "$addToSet": {"agent_ids": agent_id, "user_ids": {"$each": users}},
        "$inc": {"last_seq": len(new)},
    }
    if new:
        update["$max"] = {"last_message_at": max(ts(m.created_at) for m in new)}
    doc = await db.sessions.find_one_and_update(
        {"_id": session_id},
        update,
        upsert=True,
        return_document=ReturnDocument.AFTER,
        session=session,
    )
    assert doc is not None  # an upsert returning the document after it always has one
    last_seq: int = doc["last_seq"]
    first_seq = last_seq - len(new) + 1

    if await read_state(db, session_id, agent_id, session) is None:
        # A newcomer owes formation of everything already said: cursor 0, all of it pending.
        count, tokens = await pending_after(db, session_id, 0, session)
        await db.session_agents.insert_one(
            {
                "session_id": session_id,
                "agent_id": agent_id,
                "cursor_seq": 0,
                "last_seq": first_seq - 1,
                "pending_messages": count,
                "pending_weighted_tokens": tokens,
                "last_message_at": doc.get("last_message_at"),
                "formations": 0,
            },
            session=session,
        )

    if new:
        docs: list[Doc] = []
        for seq, message in enumerate(new, start=first_seq):
            docs.append(
                {
                    "session_id": session_id,
                    "seq": seq,
                    "message_id": message.message_id,
                    "role": message.role,
                    "content": message.content,
                    "created_at": ts(message.created_at),
                    "user_id": message.user_id,
                    "name": message.name,
                    "agent_id": agent_id,
                    # Kept per message so that pending counters can be recomputed after a cursor
                    # move without the recording call's settings.
                    "weighted_tokens": weighted_tokens(message, weights, chars_per_token),
                }
            )
        await db.messages.insert_many(docs, session=session)
        await db.session_agents.update_many(
            {"session_id": session_id},
            {
                "$inc": {
                    "pending_messages": len(new),
                    "pending_weighted_tokens": sum(d["weighted_tokens"] for d in docs),
                },
                "$set": {"last_seq": last_seq, "last_message_at": doc["last_message_at"]},
            },
            session=session,
        )
    state = await read_state(db, session_id, agent_id, session)
    assert state is not None  # inserted above in this transaction
    return RecordOutcome(inserted=len(new), duplicates=len(messages) - len(new), state=state)


async def cold_sessions(
    db: AsyncDatabase[Doc],
    *,
    idle_before: datetime,
    min_messages: int,
    min_weighted_tokens: float,
    after: tuple[datetime, str, str] | None,
    limit: int,
) -> list[SessionAgentState]:
    """Keyset page over the (last_message_at, session_id, agent_id) index."""
    if limit <= 0:
        return []
    terms: list[Doc] = [
        {"last_message_at": {"$lte": ts(idle_before)}},
        {"pending_messages": {"$gte": 1}},
        {
            "$or": [
                {"pending_messages": {"$gte": min_messages}},
                {"pending_weighted_tokens": {"$gte": min_weighted_tokens}},
            ]
        },
    ]
    if after is not None:
        at, sid, aid = ts(after[0]), after[1], after[2]
        terms.append(
            {
                "$or": [
                    {"last_message_at": {"$gt": at}},
                    {"last_message_at": at, "session_id": {"$gt": sid}},
                    {"last_message_at": at, "session_id": sid, "agent_id": {"$gt": aid}},
                ]
            }
        )
    sort: list[tuple[str, Any]] = [("last_message_at", 1), ("session_id", 1), ("agent_id", 1)]
    cursor = db.session_agents.find({"$and": terms}).sort(sort).limit(limit)
    return [state_from_doc(doc) async for doc in cursor]
