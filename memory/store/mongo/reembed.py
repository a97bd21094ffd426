"""Re-embedding on the MongoDB backend: side vectors in the fact_reembed collection (_id = fact id)
until one transaction swaps them into the facts with the embedding meta (see
MemoryStore.reembed_pending). Runs as an operator command: the pending facts are found by a
lookup of each fact's side vector rather than with an index of their own."""

from __future__ import annotations

from collections.abc import Sequence

from pymongo import ReplaceOne
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from memory.store.base import ReembedItem, Vector
from memory.store.mongo.docs import EMBEDDING_META_ID, Doc

Session = AsyncClientSession | None
_ID_ONLY = {"$project": {"_id": 1}}  # a side vector is only looked for, never read here


async def read_embedding_meta(db: AsyncDatabase[Doc], session: Session) -> tuple[str, int] | None:
    """The stored (model, dimension) of the fact vectors, or None before the first fact."""
    doc = await db.meta.find_one({"_id": EMBEDDING_META_ID}, session=session)
    return None if doc is None else (doc["model"], int(doc["dimension"]))


def _pending(model: str) -> list[Doc]:
    """The facts pending a re-embed into ``model``: their vector is another model's, and they
    have no side vector of ``model`` made from their current content (its hash)."""
    side = {"$expr": {"$and": [{"$eq": ["$_id", "$$id"]}, {"$eq": ["$hash", "$$hash"]}]}}
    lookup = {"from": "fact_reembed", "let": {"id": "$_id", "hash": "$hash"}, "as": "side"}
    return [
        {"$match": {"embedding_model": {"$ne": model}}},
        {"$lookup": {**lookup, "pipeline": [{"$match": {**side, "model": model}}, _ID_ONLY]}},
        {"$match": {"side": {"$size": 0}}},
    ]


async def count_pending_reembeds(db: AsyncDatabase[Doc], model: str, s: Session) -> tuple[int, int]:
    """(pending facts, all facts)."""
    counted = [*_pending(model), {"$count": "n"}]
    rows = await (await db.facts.aggregate(counted, session=s)).to_list()
    return (int(rows[0]["n"]) if rows else 0), await db.facts.count_documents({}, session=s)


class MongoReembed:
    _db: AsyncDatabase[Doc]

    async def _reembed_pending(self, model: str, limit: int) -> list[ReembedItem]:
        fields = {"content": 1, "hash": 1}
        page: list[Doc] = [{"$sort": {"_id": 1}}, {"$limit": limit}, {"$project": fields}]
        cursor = await self._db.facts.aggregate([*_pending(model), *page])
        return [ReembedItem(doc["_id"], doc["content"], doc["hash"]) async for doc in cursor]

    async def put_reembedded(
        self, model: str, vectors: Sequence[tuple[ReembedItem, Vector]]
    ) -> None:
        if vectors:
            await self._db.fact_reembed.bulk_write(
                [
                    ReplaceOne(
                        {"_id": item.fact_id},
                        {"model": model, "hash": item.hash, "embedding": [float(x) for x in v]},
                        upsert=True,
                    )
                    for item, v in vectors
                ]
            )


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
