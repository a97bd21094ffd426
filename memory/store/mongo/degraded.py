"""Degraded windows (memory/degraded.py) on the MongoDB backend: one ``degraded_windows``
document per key, _id the key's compound id; forget_user's DeleteSessions deletes a session's
with it (memory.store.mongo.lifecycle_writes)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from memory.degraded import DegradedWindow
from memory.store.mongo.docs import Doc, compound_id, dt, matching, ts
from memory.store.records import from_record, to_record


def _doc(w: DegradedWindow) -> Doc:
    key = compound_id(w.session_id, w.agent_id, str(w.after_seq), str(w.upto_seq), w.step)
    return {"_id": key, **to_record(w, ts)}


async def insert_windows(
    db: AsyncDatabase[Doc], s: AsyncClientSession, windows: Sequence[DegradedWindow]
) -> None:
    """Each window whose key is not stored yet (a stored one is left as it is)."""
    for w in windows:
        doc = _doc(w)
        await db.degraded_windows.update_one(
            {"_id": doc["_id"]}, {"$setOnInsert": doc}, upsert=True, session=s
        )


class MongoDegraded:
    _db: AsyncDatabase[Doc]

    async def _list_degraded(
        self, agent_id: str | None, session_id: str | None, include_reformed: bool, limit: int
    ) -> list[DegradedWindow]:
        query = matching(agent_id=agent_id, session_id=session_id)
        query |= {} if include_reformed else {"reformed_at": None}
        order = [("degraded_at", -1), ("agent_id", 1), ("session_id", 1), ("after_seq", -1)]
        cursor = self._db.degraded_windows.find(query).sort([*order, ("step", 1)]).limit(limit)
        return [from_record(DegradedWindow, doc, dt) async for doc in cursor]

    async def mark_reformed(
        self,
        agent_id: str,
        session_id: str,
        after_seq: int,
        upto_seq: int,
        *,
        steps: Sequence[str],
        at: datetime,
    ) -> int:
        done = await self._db.degraded_windows.update_many(
            {
                "session_id": session_id, "agent_id": agent_id, "step": {"$in": list(steps)},
                "after_seq": {"$gte": after_seq}, "upto_seq": {"$lte": upto_seq},
                "reformed_at": None,
            },
            {"$set": {"reformed_at": ts(at)}},
        )  # fmt: skip
        return done.modified_count
