"""Sessions of the MongoDB store: their layout and the cold-sessions scan.

A session document holds the message counter (``last_seq``, written by every recording
transaction, so that concurrent recorders conflict and retry instead of sharing a seq), the
agents and users in join order, and the timestamps. One ``session_agents`` document per
(session, agent) holds the formation cursor and the pending counters; ``last_seq`` and
``last_message_at`` are copied into it so that the cold-session index and the returned state
need no join.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from memory.models import SessionAgentState
from memory.store.mongo.docs import Doc, state_from_doc, ts


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
