"""Re-embedding on the MongoDB backend: side vectors in the fact_reembed collection (_id = fact id)
until one transaction swaps them into the facts with the embedding meta (see
MemoryStore.reembed_pending). Runs as an operator command, so it reads facts in id order in pages
rather than with an index of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pymongo import ReplaceOne
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from memory.store.base import ReembedItem, Vector
from memory.store.mongo.docs import EMBEDDING_META_ID

Doc = dict[str, Any]
Session = AsyncClientSession | None
_PAGE = 500


async def read_embedding_meta(db: AsyncDatabase[Doc], session: Session) -> tuple[str, int] | None:
    """The stored (model, dimension) of the fact vectors, or None before the first fact."""
    doc = await db.meta.find_one({"_id": EMBEDDING_META_ID}, session=session)
    return None if doc is None else (doc["model"], int(doc["dimension"]))


async def _side(db: AsyncDatabase[Doc], model: str, ids: list[str], s: Session) -> dict[str, str]:
    """fact id -> content hash of the side vectors of ``model`` among ``ids``."""
    cursor = db.fact_reembed.find({"_id": {"$in": ids}, "model": model}, {"hash": 1}, session=s)
    return {doc["_id"]: doc["hash"] async for doc in cursor}


async def pending_reembeds(
    db: AsyncDatabase[Doc], model: str, limit: int, s: Session = None
) -> tuple[list[ReembedItem], int]:
    """Up to ``limit`` pending facts (all of them when limit < 0) and the count of all facts."""
    found: list[ReembedItem] = []
    total, after = 0, ""
    while True:
        page = await (
            db.facts.find(
                {"_id": {"$gt": after}}, {"content": 1, "hash": 1, "embedding_model": 1}, session=s
            )
            .sort("_id", 1)
            .limit(_PAGE)
            .to_list()
        )
        if not page:
            return found, total
        total += len(page)
        after = page[-1]["_id"]
        side = await _side(db, model, [doc["_id"] for doc in page], s)
        for doc in page:
            done = doc["embedding_model"] == model or side.get(doc["_id"]) == doc["hash"]
            if not done and (limit < 0 or len(found) < limit):
                found.append(ReembedItem(doc["_id"], doc["content"], doc["hash"]))


async def put_side_vectors(
    db: AsyncDatabase[Doc], model: str, vectors: Sequence[tuple[ReembedItem, Vector]]
) -> None:
    if vectors:
        await db.fact_reembed.bulk_write(
            [
                ReplaceOne(
                    {"_id": item.fact_id},
                    {"model": model, "hash": item.hash, "embedding": [float(x) for x in vector]},
                    upsert=True,
                )
                for item, vector in vectors
            ]
        )


async def count_pending_reembeds(
    db: AsyncDatabase[Doc], model: str, s: Session = None
) -> tuple[int, int]:
    left, total = await pending_reembeds(db, model, -1, s)
    return len(left), total


async def swap_side_vectors(
    db: AsyncDatabase[Doc], model: str, dimension: int, s: AsyncClientSession
) -> None:
    """rules.writes.SwapSideVectors."""
    async for doc in db.fact_reembed.find({"model": model}, session=s):
        await db.facts.update_one(
            {"_id": doc["_id"]},
            {"$set": {"embedding": doc["embedding"], "embedding_model": model}},
            session=s,
        )
    await db.meta.replace_one(
        {"_id": EMBEDDING_META_ID},
        {"model": model, "dimension": dimension},
        upsert=True,
        session=s,
    )
    await db.fact_reembed.delete_many({}, session=s)
