"""The snapshots the planners ask for, read inside the caller's transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import cast

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from memory.models import Fact, FormationCommitResult, Reflection, SessionAgentState
from memory.store.mongo.docs import (
    NO_VECTOR,
    Doc,
    fact_from_doc,
    opt_dt,
    reflection_from_doc,
    state_from_doc,
    ts,
)
from memory.store.mongo.lifecycle_reads import lifecycle_snapshot, read_epochs
from memory.store.mongo.listings import api_key
from memory.store.mongo.reembed import count_pending_reembeds, read_embedding_meta
from memory.store.rules import (
    ApiKeyRequest,
    ConsolidationRequest,
    ConsolidationSnapshot,
    FactRequest,
    FactSnapshot,
    FormationRequest,
    FormationSnapshot,
    RecordRequest,
    RecordSnapshot,
    ReflectionRequest,
    Request,
)
from memory.store.rules.recheck import reflection_text_key
from memory.store.rules.reembed import SwitchRequest

Session = AsyncClientSession | None


async def read_state(
    db: AsyncDatabase[Doc], session_id: str, agent_id: str, session: Session = None
) -> SessionAgentState | None:
    doc = await db.session_agents.find_one(
        {"session_id": session_id, "agent_id": agent_id}, session=session
    )
    return None if doc is None else state_from_doc(doc)


async def find_facts(db: AsyncDatabase[Doc], query: Doc, session: Session) -> list[Fact]:
    return [fact_from_doc(doc) async for doc in db.facts.find(query, NO_VECTOR, session=session)]


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


async def formation_snapshot(
    db: AsyncDatabase[Doc], s: AsyncClientSession, req: FormationRequest
) -> FormationSnapshot:
    done = await db.formation_commits.find_one({"_id": req.formation_id}, session=s)
    by_hash = {"agent_id": req.agent_id, "hash": {"$in": list(req.hashes)}}
    facts = await find_facts(db, {"$or": [{"_id": {"$in": list(req.fact_ids)}}, by_hash]}, s)
    existing = db.reflections.find(
        {"_id": {"$in": list(req.reflection_ids)}}, {"_id": 1}, session=s
    )
    pipeline: list[Doc] = [
        {"$match": {"scope_key": {"$in": list(req.scope_keys)}, "absorbed_into_version": None}},
        {"$group": {"_id": "$scope_key", "n": {"$sum": 1}}},
    ]
    counts = await (await db.reflections.aggregate(pipeline, session=s)).to_list()
    mine = await db.session_agents.find_one(
        {"session_id": req.session_id, "agent_id": req.agent_id}, {"user_ids": 1}, session=s
    )
    recent: list[tuple[Fact, Sequence[float]]] = []
    if req.recent_since is not None:
        changed: Doc = {"agent_id": req.agent_id, "invalidated": False}
        changed["updated_at"] = {"$gte": ts(req.recent_since)}
        async for doc in db.facts.find(changed, session=s):
            recent.append((fact_from_doc(doc), [float(x) for x in doc["embedding"]]))
    texts: set[tuple[str, str]] = set()
    if req.reflection_texts:
        same: Doc = {"scope_key": {"$in": list(req.scope_keys)}}
        same["content"] = {"$in": list(req.reflection_texts)}
        async for doc in db.reflections.find(same, {"scope_key": 1, "content": 1}, session=s):
            texts.add(reflection_text_key(doc["scope_key"], doc["content"]))
    return FormationSnapshot(
        participants=frozenset(mine.get("user_ids", []) if mine else ()),
        done=None if done is None else FormationCommitResult.model_validate(done["result"]),
        state=await read_state(db, req.session_id, req.agent_id, s),
        embedding_meta=await read_embedding_meta(db, s),
        facts=facts,
        existing_reflections=frozenset([doc["_id"] async for doc in existing]),
        buffered={row["_id"]: int(row["n"]) for row in counts},
        pending_after=await pending_after(db, req.session_id, req.new_cursor, s),
        epochs=await read_epochs(db, req.agent_id, req.users, s),
        recent=recent,
        reflection_texts=frozenset(texts),
    )


async def record_snapshot(
    db: AsyncDatabase[Doc], s: AsyncClientSession, req: RecordRequest
) -> RecordSnapshot:
    session_id = req.session_id
    doc = await db.sessions.find_one({"_id": session_id}, session=s)
    state = await read_state(db, session_id, req.agent_id, s)
    stored = db.messages.find(
        {"session_id": session_id, "message_id": {"$in": list(req.message_ids)}},
        {"message_id": 1},
        session=s,
    )
    return RecordSnapshot(
        session_exists=doc is not None,
        last_seq=0 if doc is None else int(doc["last_seq"]),
        last_message_at=None if doc is None else opt_dt(doc.get("last_message_at")),
        state=state,
        stored_ids=frozenset([m["message_id"] async for m in stored]),
    )


async def reflection(
    db: AsyncDatabase[Doc], reflection_id: str, session: Session = None
) -> Reflection | None:
    doc = await db.reflections.find_one({"_id": reflection_id}, session=session)
    return None if doc is None else reflection_from_doc(doc)


async def read_snapshot[S](db: AsyncDatabase[Doc], s: AsyncClientSession, request: Request[S]) -> S:
    """The snapshot a planner asks for (see memory.store.rules)."""
    snapshot: object
    match request:
        case FormationRequest():
            snapshot = await formation_snapshot(db, s, request)
        case RecordRequest():
            snapshot = await record_snapshot(db, s, request)
        case ReflectionRequest(reflection_id=reflection_id):
            snapshot = await reflection(db, reflection_id, s)
        case FactRequest(fact_id=fact_id, content_hash=hash_):
            fact = next(iter(await find_facts(db, {"_id": fact_id}, s)), None)
            same = []
            if fact is not None and hash_ is not None:
                same = await find_facts(db, {"agent_id": fact.agent_id, "hash": hash_}, s)
            snapshot = FactSnapshot(fact, same, await read_embedding_meta(db, s))
        case ConsolidationRequest(key=key, reflection_ids=ids):
            doc = await db.consolidated.find_one({"_id": key}, {"version": 1}, session=s)
            buffered = await db.reflections.count_documents(
                {"_id": {"$in": list(ids)}, "scope_key": key, "absorbed_into_version": None},
                session=s,
            )
            snapshot = ConsolidationSnapshot(0 if doc is None else int(doc["version"]), buffered)
        case ApiKeyRequest(key_id=key_id):
            snapshot = await api_key(db, key_id, s)
        case SwitchRequest(model=model):
            snapshot = await count_pending_reembeds(db, model, s)
        case _:
            snapshot = await lifecycle_snapshot(db, s, request)
    return cast(S, snapshot)


async def recent_fact_docs(
    db: AsyncDatabase[Doc], match: Doc, since: datetime, limit: int
) -> list[Doc]:
    """The context FIFO (MemoryStore.recent_facts): MongoDB cannot index coalesce(said_at,
    updated_at), so its two halves are read in index order, at most ``limit`` of each, and
    merged: the facts said since ``since`` (index facts_said), and those without said_at updated
    since (index agent_id, updated_at)."""
    halves = (
        ({"$and": [match, {"said_at": {"$gte": ts(since)}}]}, "said_at"),
        ({"$and": [match, {"said_at": None}, {"updated_at": {"$gte": ts(since)}}]}, "updated_at"),
    )
    docs: list[Doc] = []
    for query, field in halves:
        cursor = db.facts.find(query, NO_VECTOR).sort([(field, -1), ("ins", -1)]).limit(limit)
        docs += [doc async for doc in cursor]
    docs.sort(key=lambda d: (d.get("said_at") or d["updated_at"], d["ins"]), reverse=True)
    return docs[:limit]
