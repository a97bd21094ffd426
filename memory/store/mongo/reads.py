"""The reads the planners' snapshots are assembled from (memory.store.snapshots), inside the
caller's transaction or, for the store calls that ask the same (SharedReads._read_once), on no
session; and the context FIFO's query."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.cursor import AsyncCursor
from pymongo.asynchronous.database import AsyncDatabase

from memory.api_keys import ApiKey
from memory.degraded import DegradedWindow
from memory.formation_commit import FormationCommitResult
from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    Reflection,
    SessionAgentState,
    StoredMessage,
)
from memory.store.base_manage import ReembedTarget
from memory.store.mongo.docs import (
    EMBEDDING_META_ID,
    NO_VECTOR,
    Doc,
    agent_from_doc,
    by_ids,
    compound_id,
    consolidated_from_doc,
    dt,
    fact_and_vector,
    fact_from_doc,
    inserted_from,
    message_from_doc,
    opt_dt,
    reflection_from_doc,
    state_from_doc,
    ts,
    view_of,
)
from memory.store.mongo.listings import api_key_from_doc
from memory.store.mongo.reembed import pending
from memory.store.records import from_record, known
from memory.store.rules.withheld import MessageMark
from memory.store.snapshots import SnapshotReads
from memory.store.snapshots_erased import Head


class InSession:
    """Reads of the caller's snapshot: each runs in the caller's session (None: on none)."""

    def __init__(self, db: AsyncDatabase[Doc], session: AsyncClientSession | None) -> None:
        self.db = db
        self.s = session

    def _find(self, collection: str, query: Doc, fields: Doc | None = None) -> AsyncCursor[Doc]:
        return self.db[collection].find(query, fields, session=self.s)

    async def _one(self, collection: str, query: Doc, fields: Doc | None = None) -> Doc | None:
        return await self.db[collection].find_one(query, fields, session=self.s)

    async def _facts(self, query: Doc) -> list[Fact]:
        return [fact_from_doc(d) async for d in self._find("facts", query, NO_VECTOR)]

    async def _count(self, collection: str, query: Doc) -> int:
        return await self.db[collection].count_documents(query, session=self.s)

    async def _distinct(self, collection: str, field: str, query: Doc) -> list[Any]:
        return await self.db[collection].distinct(field, query, session=self.s)

    async def _aggregate(self, collection: str, pipeline: list[Doc]) -> list[Doc]:
        return await (await self.db[collection].aggregate(pipeline, session=self.s)).to_list()

    async def user_sessions(self, user_id: str) -> Doc:
        """The query of the sessions holding a user's data (user_session_ids, ExportReads), those
        with a message of theirs found by the messages_user index."""
        said = await self._distinct("messages", "session_id", {"user_id": user_id})
        return {"$or": [{"user_ids": user_id}, {"_id": {"$in": said}}]}


class MongoReads(InSession, SnapshotReads):
    async def state(self, session_id: str, agent_id: str) -> SessionAgentState | None:
        doc = await self._one("session_agents", view_of(session_id, agent_id))
        return None if doc is None else state_from_doc(doc)

    async def facts_by_id(self, fact_ids: Sequence[str]) -> list[Fact]:
        return await self._facts(by_ids(fact_ids))

    async def facts_with_hashes(self, agent_id: str, hashes: Sequence[str]) -> list[Fact]:
        return await self._facts({"agent_id": agent_id, "hash": {"$in": list(hashes)}})

    async def embedding_meta(self) -> tuple[str, int] | None:
        doc = await self._one("meta", {"_id": EMBEDDING_META_ID})
        return None if doc is None else (doc["model"], int(doc["dimension"]))

    async def formation_done(self, formation_id: str) -> FormationCommitResult | None:
        doc = await self._one("formation_commits", {"_id": formation_id})
        if doc is None:
            return None
        return FormationCommitResult.model_validate(known(FormationCommitResult, doc["result"]))

    async def reflections(self, reflection_ids: Sequence[str]) -> list[Reflection]:
        return [
            reflection_from_doc(d) async for d in self._find("reflections", by_ids(reflection_ids))
        ]

    async def _buffered_counts(self, keys: Sequence[str]) -> dict[str, int]:
        pipeline: list[Doc] = [
            {"$match": {"scope_key": {"$in": list(keys)}, "absorbed_into_version": None}},
            {"$group": {"_id": "$scope_key", "n": {"$sum": 1}}},
        ]
        return {row["_id"]: int(row["n"]) for row in await self._aggregate("reflections", pipeline)}

    async def pending_after(
        self, session_id: str, seq: int, *, withheld: Sequence[tuple[str, int]] = ()
    ) -> tuple[int, float]:
        after: Doc = {"session_id": session_id, "seq": {"$gt": seq}}
        if withheld:
            after["$nor"] = [
                {"user_id": user or None, "seq": {"$lte": upto}} for user, upto in withheld
            ]  # "": the replies (rules.withheld.REPLIES)
        pipeline: list[Doc] = [
            {"$match": after},
            {"$group": {"_id": None, "n": {"$sum": 1}, "tokens": {"$sum": "$weighted_tokens"}}},
        ]
        rows = await self._aggregate("messages", pipeline)
        return (int(rows[0]["n"]), float(rows[0]["tokens"])) if rows else (0, 0.0)

    async def participants(self, session_id: str, agent_id: str) -> frozenset[str]:
        mine = await self._one("session_agents", view_of(session_id, agent_id), {"user_ids": 1})
        return frozenset(mine.get("user_ids", []) if mine else ())

    async def valid_since(
        self, agent_id: str, since: datetime, owners: Sequence[str]
    ) -> list[tuple[Fact, Sequence[float]]]:
        changed = {
            "agent_id": agent_id,
            "invalidated": False,
            # Inserted or updated since (rules.recheck): each term has its index.
            "$or": [{"ins": {"$gte": inserted_from(since)}}, {"updated_at": {"$gte": ts(since)}}],
            "user_id": _owned_by(owners),
        }
        return [fact_and_vector(doc) async for doc in self._find("facts", changed)]

    async def deleted_by_hand_since(
        self, agent_id: str, since: datetime, owners: Sequence[str]
    ) -> list[Fact]:
        gone = {
            "agent_id": agent_id,
            "invalidated": True,
            "invalidated_at": {"$gte": ts(since)},
            "invalidated_by": None,  # a person's deletes only (a formation's names a fact)
            "user_id": _owned_by(owners),
        }
        docs = self._find("facts", gone, NO_VECTOR)
        return [fact_from_doc(doc) async for doc in docs]

    async def reflection_texts(
        self, keys: Sequence[str], texts: Sequence[str]
    ) -> list[tuple[str, str, int | None]]:
        same = {"scope_key": {"$in": list(keys)}, "content": {"$in": list(texts)}}
        fields = {"scope_key": 1, "content": 1, "absorbed_into_version": 1}
        cursor = self._find("reflections", same, fields)
        return [
            (d["scope_key"], d["content"], d.get("absorbed_into_version")) async for d in cursor
        ]

    async def session_head(self, session_id: str) -> Head | None:
        if (doc := await self._one("sessions", {"_id": session_id})) is None:
            return None
        return Head(
            doc["last_seq"], opt_dt(doc.get("last_message_at")), bool(doc.get("has_guests"))
        )

    async def api_keys(self, key_ids: Sequence[str] | None) -> list[ApiKey]:
        query = {} if key_ids is None else by_ids(key_ids)
        return [api_key_from_doc(d) async for d in self._find("api_keys", query)]

    async def ended_unpurged(self, ended_before: datetime, limit: int) -> list[tuple[str, str]]:
        quiet = [{"last_message_at": None}, {"last_message_at": {"$lt": ts(ended_before)}}]
        query = {"ended_at": {"$ne": None, "$lt": ts(ended_before)}, "purged": False, "$or": quiet}
        cursor = self._find("session_agents", query, {"session_id": 1, "agent_id": 1})
        by_end = [("ended_at", 1), ("session_id", 1), ("agent_id", 1)]
        return [(d["session_id"], d["agent_id"]) async for d in cursor.sort(by_end).limit(limit)]

    async def unreformed(self, session_id: str, agent_id: str) -> list[DegradedWindow]:
        query = view_of(session_id, agent_id) | {"reformed_at": None}
        return [
            from_record(DegradedWindow, d, dt) async for d in self._find("degraded_windows", query)
        ]

    async def reembed_pending(self, target: ReembedTarget) -> tuple[int, int]:
        rows = await self._aggregate("facts", [*pending(target), {"$count": "n"}])
        return (int(rows[0]["n"]) if rows else 0), await self._count("facts", {})

    # ------------------------------------------------------------ the lifecycle snapshots' own

    async def erasure_rows(
        self, agent_keys: Sequence[str], user_ids: Sequence[str] | None = None
    ) -> dict[tuple[str, str], tuple[int, datetime]]:
        # By _id (compound_id), its index, not a scan: the collection holds session tombstones
        # too, one per session memory a forget deleted (rules.erasure), and every formation
        # commit reads here. Without users, a key's rows by the _id's prefix.
        if user_ids is None:
            query: Doc = {
                "$or": [{"_id": {"$gt": compound_id(k, ""), "$lt": k + "\x20"}} for k in agent_keys]
            }
        else:
            query = by_ids([compound_id(k, u) for k in agent_keys for u in dict.fromkeys(user_ids)])
        return {
            (d["agent_key"], d["user_id"]): (int(d["epoch"]), dt(d["forgotten_at"]))
            async for d in self._find("erasures", query)
        }

    async def blobs(self, keys: Sequence[str]) -> dict[str, ConsolidatedMemory]:
        cursor = self._find("consolidated", by_ids(keys))
        return {doc["_id"]: consolidated_from_doc(doc) async for doc in cursor}

    async def session_users(self, session_id: str) -> tuple[str, ...]:
        doc = await self._one("sessions", {"_id": session_id}, {"user_ids": 1})
        return () if doc is None else tuple(doc.get("user_ids", ()))

    async def parted_candidates(self) -> dict[str, datetime]:
        # One aggregation driven by the session tombstones (the _id's prefix, its index: no
        # agent id holds a colon), each looking its session up by its key, grouped only then
        # (by the few sessions without people): a store that forgot no one in a session reads
        # nothing, whatever sessions of nobody it holds; no list of ids goes to the server,
        # which a 16 MiB command would bound (h239 D3); no stage holds every tombstone.
        def part(i: int) -> Doc:  # of ``session:{agent}:{session}`` (models.ScopeKey.key)
            return {"$arrayElemAt": [{"$split": ["$agent_key", ":"]}, i]}

        def of_session(collection: str, *then: Doc) -> Doc:
            here = {"$match": {"$expr": {"$eq": ["$session_id", "$$sid"]}}}
            lookup = {"from": collection, "let": {"sid": "$_id"}, "pipeline": [here, *then]}
            return {"$lookup": lookup | {"as": collection}}

        session = {"from": "sessions", "localField": "sid", "foreignField": "_id", "as": "s"}
        theirs = {"$setIntersection": ["$agents", "$session_agents.agent_id"]}
        by_session = {
            "_id": "$sid",
            "agents": {"$addToSet": "$agent"},
            "at": {"$first": "$s.created_at"},
        }
        pipeline: list[Doc] = [
            {"$match": {"_id": {"$gte": "session:", "$lt": "session;"}}},
            {"$project": {"_id": 0, "sid": part(2), "agent": part(1)}},
            {"$lookup": session},
            {"$unwind": "$s"},
            {"$match": {"s.has_guests": {"$ne": True}, "s.user_ids.0": {"$exists": False}}},
            {"$group": by_session},
            of_session("session_agents", {"$project": {"_id": 0, "agent_id": 1}}),
            {"$match": {"$expr": {"$gt": [{"$size": theirs}, 0]}}},
            of_session("messages", {"$limit": 1}, {"$project": {"_id": 1}}),
            {"$match": {"messages.0": {"$exists": True}}},
        ]
        rows = await self._aggregate("erasures", [*pipeline, {"$project": {"at": 1}}])
        return {d["_id"]: dt(d["at"]) for d in rows}

    async def session_states(self, session_id: str) -> list[SessionAgentState]:
        doc = await self._one("sessions", {"_id": session_id}, {"agent_ids": 1})
        order = {a: i for i, a in enumerate(doc.get("agent_ids", []) if doc else [])}
        cursor = self._find("session_agents", {"session_id": session_id})
        states = [state_from_doc(d) async for d in cursor]
        return sorted(states, key=lambda s: order.get(s.agent_id, len(order)))  # join order

    async def agents(self, agent_ids: Sequence[str] | None) -> list[AgentConfig]:
        query = {} if agent_ids is None else by_ids(agent_ids)
        return [agent_from_doc(d) async for d in self._find("agents", query, {"_id": 0})]

    async def stored_messages(
        self, session_id: str, message_ids: Sequence[str]
    ) -> list[StoredMessage]:
        query = {"session_id": session_id, "message_id": {"$in": list(message_ids)}}
        return [message_from_doc(d) async for d in self._find("messages", query)]

    async def user_session_ids(self, user_id: str, agent_id: str) -> list[str]:
        query = {"agent_ids": agent_id} | await self.user_sessions(user_id)
        cursor = self._find("sessions", query, {"_id": 1}).sort("_id", 1)
        return [d["_id"] async for d in cursor]

    async def session_messages(
        self,
        session_id: str,
        *,
        ids: Sequence[str] | None = None,
        seqs: Sequence[int] | None = None,
        of_user: str | None = None,
    ) -> list[MessageMark]:
        fields = dict.fromkeys(
            ("seq", "agent_id", "weighted_tokens", "user_id", "role", "message_id"), 1
        )
        query: Doc = {"session_id": session_id}
        if ids is not None:
            query["message_id"] = {"$in": list(ids)}
        elif seqs is not None:
            query["seq"] = {"$in": list(seqs)}
        elif of_user is not None:
            query["user_id"] = {"$in": [of_user, None]}  # None: null or no field
        cursor = self._find("messages", query, fields).sort("seq", 1)
        return [
            MessageMark(int(d["seq"]), d.get("agent_id"), float(d["weighted_tokens"]),
                        d.get("user_id"), d["role"], d["message_id"])
            async for d in cursor
        ]  # fmt: skip

    async def message_users(self, session_id: str) -> list[str]:
        users = await self._distinct("messages", "user_id", {"session_id": session_id})
        return [u for u in users if u is not None]

    async def user_facts(self, agent_id: str, user_id: str) -> list[Fact]:
        return await self._facts({"agent_id": agent_id, "user_id": user_id})

    async def reflection_count(self, key: str) -> int:
        return await self._count("reflections", {"scope_key": key})

    async def cached_text_hashes(self, text_hashes: Sequence[str]) -> frozenset[str]:
        query = {"hash": {"$in": list(text_hashes)}}
        return frozenset(await self._distinct("embeddings", "hash", query))

    async def contents_elsewhere(
        self, agent_id: str, user_id: str, content_hashes: Sequence[str]
    ) -> list[str]:
        mine = {"agent_id": agent_id, "user_id": user_id}
        others = {"hash": {"$in": list(content_hashes)}, "$nor": [mine]}
        cursor = self._find("facts", others, {"content": 1})
        return [doc["content"] async for doc in cursor]


def _owned_by(owners: Sequence[str]) -> Doc:
    """The user ids of SnapshotReads.valid_since's owners ("": none, which None matches, a
    missing one too)."""
    return {"$in": [o or None for o in dict.fromkeys(owners)]}
