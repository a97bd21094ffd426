"""The MongoDB backend: pymongo's AsyncMongoClient, one database, multi-document transactions.

Works against MongoDB ≥ 7 (a replica set or Atlas: transactions need one). With Atlas Search
indexes (``setup_search_indexes``) searches run as $vectorSearch / $search with the filter inside
the search; without them as $text and exact cosine in numpy (see search).

A session document holds the message counter (``last_seq``, written by every recording
transaction, so that concurrent recorders conflict and retry instead of sharing a seq), the
agents and users in join order, and the timestamps. One ``session_agents`` document per
(session, agent) holds the agent's view: the formation cursor, the pending counters, its
participants (``user_ids``) and when it ended the session (``ended_at``, ``purged``); ``last_seq`` and
``last_message_at`` are copied into it so that the cold-session index and the returned state
need no join.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from functools import partial
from typing import Any

import numpy as np
from bson.codec_options import CodecOptions
from pymongo import ASCENDING, DESCENDING, AsyncMongoClient, ReplaceOne
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.errors import CollectionInvalid

from memory.models import SET_ASIDE, Fact, FactFilter, Reflection, ScopeKey, ScoredFact
from memory.store.base import Vector
from memory.store.base_manage import Keyset, Which
from memory.store.mongo.degraded import MongoDegraded
from memory.store.mongo.docs import (
    NO_VECTOR,
    Doc,
    by_ids,
    compound_id,
    fact_from_doc,
    past,
    reflection_from_doc,
    ts,
)
from memory.store.mongo.indexes import PLAIN_COLLECTIONS, REGULAR_INDEXES, fill_cjk_terms
from memory.store.mongo.lifecycle_reads import MongoLifecycleReads
from memory.store.mongo.listings import MongoListings
from memory.store.mongo.reads import MongoReads
from memory.store.mongo.reembed import MongoReembed
from memory.store.mongo.search import AtlasMode, FactSearch, Scored, fact_match
from memory.store.mongo.sessions import (
    MongoSessions,
    mark_guests,
    migrate_session_agents,
)
from memory.store.mongo.txn import mongo_outage, run_transaction, write_keys
from memory.store.mongo.writes import apply_writes
from memory.store.outage import CONNECT_TIMEOUT_SECONDS, translating_outages
from memory.store.planned import PlannedStore
from memory.store.records import vector_bytes, vector_of_bytes
from memory.store.rules import Plan, Request, check_query_dimension
from memory.store.snapshots import SnapshotReads, run_planned


def _scored(hits: Scored) -> list[ScoredFact]:
    return [ScoredFact(fact=fact_from_doc(doc), score=score) for doc, score in hits]


# Which reflections of a scope (MemoryStore.list_reflections) by their absorbed_into_version.
_ABSORBED = {"buffered": None, "in_no_blob": {"$in": [None, SET_ASIDE]}, "set_aside": SET_ASIDE}


@translating_outages(mongo_outage)
class MongoStore(
    MongoSessions, MongoListings, MongoLifecycleReads, MongoReembed, MongoDegraded, PlannedStore
):
    """The store on one MongoDB database; the writing calls are planned (memory.store.planned)."""

    def __init__(
        self,
        client: AsyncMongoClient[dict[str, Any]],
        database: str,
        *,
        atlas_search: AtlasMode = "auto",
        owns_client: bool = False,
    ) -> None:
        self._client = client
        # Plain dicts whatever document class the caller's client was built with.
        self._db = client.get_database(database, codec_options=CodecOptions(document_class=dict))
        self._owns_client = owns_client
        self._search = FactSearch(self._db.facts, atlas_search)

    @classmethod
    def from_uri(
        cls,
        uri: str,
        *,
        database: str,
        atlas_search: AtlasMode = "auto",
        connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
    ) -> MongoStore:
        """A store owning its client (closed by close()). Connects lazily, on first use.

        A call waits ``connect_timeout`` for a server to select, not pymongo's 30 s, unless the
        URI sets its own serverSelectionTimeoutMS."""
        options: dict[str, Any] = {}
        if "serverselectiontimeoutms" not in uri.lower():
            options["serverSelectionTimeoutMS"] = int(connect_timeout * 1000)
        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(uri, **options)
        return cls(client, database, atlas_search=atlas_search, owns_client=True)

    async def _transact[S, R](self, request: Request[S], plan: Callable[[S], Plan[R]]) -> R:
        keys = sorted(set(request.serialized_on()))

        async def body(s: AsyncClientSession) -> R:
            await write_keys(self._db, s, keys)
            return await run_planned(
                MongoReads(self._db, s), request, plan, partial(apply_writes, self._db, s)
            )

        return await run_transaction(self._db, body)

    async def _read_once[T](self, read: Callable[[SnapshotReads], Coroutine[Any, Any, T]]) -> T:
        return await read(MongoReads(self._db, None))

    # ------------------------------------------------------------ lifecycle

    async def setup(self) -> None:
        existing = set(await self._db.list_collection_names())
        for name in (*REGULAR_INDEXES, *PLAIN_COLLECTIONS):
            if name not in existing:
                # CollectionInvalid: created meanwhile by another process, which is fine.
                with contextlib.suppress(CollectionInvalid):
                    await self._db.create_collection(name)
        for name, indexes in REGULAR_INDEXES.items():
            await self._db[name].create_indexes(indexes)
        await fill_cjk_terms(self._db)  # once: the facts stored before their CJK terms
        await migrate_session_agents(self._db)
        await mark_guests(self._db)  # at every start (mongo.sessions.mark_guests)
        await self._upgrade_at_start()

    async def close(self) -> None:
        if self._owns_client:
            await self._client.close()

    # ------------------------------------------------------------ embeddings cache

    async def _put_embeddings(self, model: str, vectors: dict[str, Vector]) -> None:
        ops = [
            ReplaceOne(
                {"_id": compound_id(model, text_hash)},
                {"model": model, "hash": text_hash, "vector": vector_bytes(vector)},
                upsert=True,
            )
            for text_hash, vector in vectors.items()
        ]
        await self._db.embeddings.bulk_write(ops, ordered=False)

    async def _embeddings(self, model: str, text_hashes: list[str]) -> dict[str, Vector]:
        keys = [compound_id(model, text_hash) for text_hash in text_hashes]
        cursor = self._db.embeddings.find(by_ids(keys))
        return {doc["hash"]: vector_of_bytes(doc["vector"]) async for doc in cursor}

    # ------------------------------------------------------------ facts

    async def _vector_search(
        self, query: Vector, flt: FactFilter, limit: int, min_score: float
    ) -> list[ScoredFact]:
        vector = np.asarray(query, dtype=np.float32).reshape(-1)
        meta = await self.embedding_meta()
        if meta is None:
            return []
        check_query_dimension(meta, vector.size)
        return _scored(await self._search.vector(vector, flt, limit, min_score))

    async def _text_search(self, query: str, flt: FactFilter, limit: int) -> list[ScoredFact]:
        return _scored(await self._search.text(query, flt, limit))

    async def _recent_facts(self, flt: FactFilter, since: datetime, limit: int) -> list[Fact]:
        # MongoDB cannot index coalesce(said_at, updated_at): its two halves are read in index
        # order, at most ``limit`` of each, and merged: the facts said since ``since`` (index
        # facts_said), and those without said_at updated since (index agent_id, updated_at).
        if (match := fact_match(flt)) is None:
            return []
        recent = {"$gte": ts(since)}
        halves = (
            ({"$and": [match, {"said_at": recent}]}, "said_at"),
            ({"$and": [match, {"said_at": None}, {"updated_at": recent}]}, "updated_at"),
        )
        docs: list[Doc] = []
        for query, field in halves:
            cursor = self._db.facts.find(query, NO_VECTOR).sort([(field, -1), ("ins", -1)])
            docs += [doc async for doc in cursor.limit(limit)]
        docs.sort(key=lambda d: (d.get("said_at") or d["updated_at"], d["ins"]), reverse=True)
        return [fact_from_doc(d) for d in docs[:limit]]

    async def _touch_facts(self, fact_ids: list[str], at: datetime) -> None:
        touched = {"$inc": {"access_count": 1}, "$set": {"last_accessed_at": ts(at)}}
        await self._db.facts.update_many(by_ids(fact_ids), touched)

    # ------------------------------------------------------------ reflections and blobs

    async def _reflections(
        self, key: ScopeKey, *, which: Which, newest_first: bool, limit: int | None
    ) -> list[Reflection]:
        query: Doc = {"scope_key": key.key}
        if which != "all":
            query["absorbed_into_version"] = _ABSORBED[which]
        direction = -1 if newest_first else 1
        cursor = self._db.reflections.find(query).sort(
            [("formed_at", direction), ("ins", direction)]
        )
        if limit is not None:
            cursor = cursor.limit(limit)
        return [reflection_from_doc(doc) async for doc in cursor]

    async def _stored_scope_versions(self, keys: Sequence[str]) -> dict[str, int]:
        cursor = self._db.scope_versions.find(by_ids(keys))
        return {doc["_id"]: int(doc["version"]) async for doc in cursor}

    # ------------------------------------------------------------ management reads

    async def _list_facts(
        self, flt: FactFilter, *, valid_only: bool, offset: int, limit: int, keyset: Keyset | None
    ) -> list[Fact]:
        if (match := fact_match(flt, valid_only=valid_only)) is None:
            return []
        order = ASCENDING if keyset is not None and keyset.newer else DESCENDING
        if keyset is not None:
            (at, fact_id), side = keyset.key, "$gt" if keyset.newer else "$lt"
            match = {"$and": [match, past(("updated_at", "_id"), (ts(at), fact_id), side)]}
        cursor = self._db.facts.find(match, NO_VECTOR).sort([("updated_at", order), ("_id", order)])
        return [fact_from_doc(doc) async for doc in cursor.skip(offset).limit(limit)]

    async def count_facts(self, flt: FactFilter) -> int:
        match = fact_match(flt)
        return 0 if match is None else await self._db.facts.count_documents(match)
