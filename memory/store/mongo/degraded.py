"""Degraded windows (memory/degraded.py) on the MongoDB backend: one ``degraded_windows``
document per key, _id the key's compound id; forget_user's DeleteSessions deletes a session's
with it (memory.store.mongo.lifecycle_writes)."""

from __future__ import annotations

from collections.abc import Sequence

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from memory.degraded import DegradedKey, DegradedWindow
from memory.store.mongo.docs import Doc, compound_id, dt, matching, ts
from memory.store.records import from_record, to_record


def window_id(key: DegradedKey) -> str:
    agent_id, session_id, after_seq, upto_seq, step = key
    return compound_id(session_id, agent_id, str(after_seq), str(upto_seq), step)


def _doc(w: DegradedWindow) -> Doc:
    return {"_id": window_id(w.key), **to_record(w, ts)}


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
