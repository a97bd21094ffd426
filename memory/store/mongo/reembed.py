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
from memory.store.base_manage import ReembedTarget, current_side_vectors, side_tag
from memory.store.mongo.docs import EMBEDDING_META_ID, Doc, by_ids, vector_doc
from memory.store.mongo.txn import run_transaction, write_keys
from memory.store.rules.writes import user_key

_ID_ONLY = {"$project": {"_id": 1}}  # a side vector is only looked for, never read here
_HASH_AND_USER = {"hash": 1, "user_id": 1}


def pending(target: ReembedTarget) -> list[Doc]:
    """``target``'s pending facts: their vector is not the embedder's already, and they have no
    side vector of it made from their current content (its hash)."""
    side = {"$expr": {"$and": [{"$eq": ["$_id", "$$id"]}, {"$eq": ["$hash", "$$hash"]}]}}
    lookup = {"from": "fact_reembed", "let": {"id": "$_id", "hash": "$hash"}, "as": "side"}
    return [
        {"$match": {"embedding_model": {"$ne": target.kept_model}}},
        {"$lookup": {**lookup, "pipeline": [{"$match": {**side, "model": target.tag}}, _ID_ONLY]}},
        {"$match": {"side": {"$size": 0}}},
    ]


class MongoReembed:
    _db: AsyncDatabase[Doc]

    async def _reembed_pending(self, target: ReembedTarget, limit: int) -> list[ReembedItem]:
        fields = {"content": 1, "hash": 1}
        page: list[Doc] = [{"$sort": {"_id": 1}}, {"$limit": limit}, {"$project": fields}]
        cursor = await self._db.facts.aggregate([*pending(target), *page])
        return [ReembedItem(doc["_id"], doc["content"], doc["hash"]) async for doc in cursor]

    async def put_reembedded(
        self, model: str, dimension: int, vectors: Sequence[tuple[ReembedItem, Vector]]
    ) -> None:
        tag = side_tag(model, dimension)

        async def put(s: AsyncClientSession) -> None:
            ids = by_ids(item.fact_id for item, _ in vectors)
            facts = await self._db.facts.find(ids, _HASH_AND_USER, session=s).to_list()
            kept = current_side_vectors(vectors, {doc["_id"]: doc["hash"] for doc in facts})
            # Snapshot isolation lets a forget delete a fact read above and commit before this
            # does (it deletes no side vector: none yet). Writing the serialization key of the
            # kept facts' users, which forget_user writes too (Request.serialized_on), makes the
            # two conflict: the later one is retried, and sees the other's writes.
            kept_ids = {item.fact_id for item, _ in kept}
            users = {d["user_id"] for d in facts if d["_id"] in kept_ids and d.get("user_id")}
            await write_keys(self._db, s, sorted(map(user_key, users)))
            if kept:
                await self._db.fact_reembed.bulk_write(
                    [
                        ReplaceOne(
                            {"_id": item.fact_id},
                            {"model": tag, "hash": item.hash, "embedding": vector_doc(v)},
                            upsert=True,
                        )
                        for item, v in kept
                    ],
                    session=s,
                )

        if vectors:
            await run_transaction(self._db, put)


async def swap_side_vectors(
    db: AsyncDatabase[Doc], model: str, dimension: int, s: AsyncClientSession
) -> None:
    """rules.writes.SwapSideVectors."""
    async for doc in db.fact_reembed.find({"model": side_tag(model, dimension)}, session=s):
        await db.facts.update_one(
            {"_id": doc["_id"]},
            {"$set": {"embedding": vector_doc(doc["embedding"]), "embedding_model": model}},
            session=s,
        )
    await db.meta.replace_one(
        {"_id": EMBEDDING_META_ID},
        {"model": model, "dimension": dimension},
        upsert=True,
        session=s,
    )
    await db.fact_reembed.delete_many({}, session=s)
