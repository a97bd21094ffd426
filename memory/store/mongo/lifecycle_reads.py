"""The data-lifecycle snapshots of the MongoDB backend (imports, forget_user, erasure epochs,
export), read inside the caller's transaction."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from memory.ids import text_hash
from memory.models import AgentConfig
from memory.store.counts import ExportData
from memory.store.mongo.docs import (
    NO_VECTOR,
    Doc,
    consolidated_from_doc,
    fact_from_doc,
    message_from_doc,
    opt_dt,
    reflection_from_doc,
    session_from_doc,
    state_from_doc,
)
from memory.store.mongo.reembed import read_embedding_meta
from memory.store.rules import Request
from memory.store.rules import erasure as er
from memory.store.rules import imports as ri

Session = AsyncClientSession | None


async def _ids(coll: Any, query: Doc, s: Session, field: str = "_id") -> set[Any]:
    return {doc[field] async for doc in coll.find(query, {field: 1}, session=s)}


async def read_epochs(
    db: AsyncDatabase[Doc], agent_id: str, user_ids: Sequence[str], s: Session = None
) -> dict[str, int]:
    """Each user's effective epoch for the agent: its own row plus the all-agents one."""
    epochs = dict.fromkeys(user_ids, 0)
    if user_ids:
        query = {
            "agent_key": {"$in": [agent_id, er.ALL_AGENTS]},
            "user_id": {"$in": list(user_ids)},
        }
        async for doc in db.erasures.find(query, session=s):
            epochs[doc["user_id"]] += int(doc["epoch"])
    return epochs


async def _pair_epochs(
    db: AsyncDatabase[Doc], pairs: Iterable[ri.Pair], s: Session
) -> dict[ri.Pair, int]:
    return {
        (agent_id, user): epoch
        for agent_id, users in ri.users_by_agent(pairs).items()
        for user, epoch in (await read_epochs(db, agent_id, users, s)).items()
    }


async def _stored_epoch(db: AsyncDatabase[Doc], agent_key: str, user_id: str, s: Session) -> int:
    doc = await db.erasures.find_one({"agent_key": agent_key, "user_id": user_id}, session=s)
    return 0 if doc is None else int(doc["epoch"])


async def _fact_snapshot(
    db: AsyncDatabase[Doc], s: Session, req: ri.FactImportRequest
) -> ri.FactImportSnapshot:
    existing = await _ids(db.facts, {"_id": {"$in": list(req.fact_ids)}}, s)
    valid = set()
    for agent_id, hash_ in req.hashes:
        query = {"agent_id": agent_id, "hash": hash_, "invalidated": False}
        async for doc in db.facts.find(query, NO_VECTOR, session=s):
            valid.add((doc["agent_id"], doc.get("user_id") or "", doc["scope"], doc["hash"]))
    return ri.FactImportSnapshot(
        frozenset(existing), frozenset(valid),
        await read_embedding_meta(db, s),
        await _pair_epochs(db, req.pairs, s),
    )  # fmt: skip


async def _session_snapshot(
    db: AsyncDatabase[Doc], s: Session, req: ri.SessionImportRequest
) -> ri.SessionImportSnapshot:
    sid = req.session_id
    doc = await db.sessions.find_one({"_id": sid}, session=s)
    states = [
        state_from_doc(d) async for d in db.session_agents.find({"session_id": sid}, session=s)
    ]
    stored = {
        m["message_id"]: int(m["seq"])
        async for m in db.messages.find(
            {"session_id": sid, "message_id": {"$in": list(req.message_ids)}}, session=s
        )
    }
    taken = await _ids(db.messages, {"session_id": sid, "seq": {"$in": list(req.seqs)}}, s, "seq")
    after = db.messages.find({"session_id": sid, "seq": {"$gt": req.max_seq}}, session=s)
    rest = [float(m["weighted_tokens"]) async for m in after]
    return ri.SessionImportSnapshot(
        exists=doc is not None,
        last_seq=0 if doc is None else int(doc["last_seq"]),
        last_message_at=None if doc is None else opt_dt(doc.get("last_message_at")),
        user_ids=() if doc is None else tuple(doc.get("user_ids", ())),
        states={st.agent_id: st for st in states},
        stored=stored,
        taken=frozenset(int(x) for x in taken),
        pending_after_max=(len(rest), sum(rest)),
        epochs=await _pair_epochs(db, req.pairs, s),
    )


async def _user_sessions(
    db: AsyncDatabase[Doc], s: Session, req: er.ForgetRequest
) -> list[er.UserSession]:
    sessions = []
    query = {"user_ids": req.user_id, "agent_ids": req.agent_id}
    async for doc in db.sessions.find(query, session=s):
        info = session_from_doc(doc)
        sid = info.session_id
        states = [
            state_from_doc(d) async for d in db.session_agents.find({"session_id": sid}, session=s)
        ]
        messages = [m async for m in db.messages.find({"session_id": sid}, session=s)]
        others = [m for m in messages if m.get("user_id") != req.user_id]
        pending = tuple(
            (
                st,
                sum(1 for m in others if m["seq"] > st.cursor_seq),
                sum(float(m["weighted_tokens"]) for m in others if m["seq"] > st.cursor_seq),
            )
            for st in states
        )
        sessions.append(
            er.UserSession(
                session_id=sid,
                user_ids=info.user_ids,
                agent_ids=info.agent_ids,
                messages=len(messages),
                user_messages=len(messages) - len(others),
                states=pending,
            )
        )
    return sessions


async def _forget_snapshot(
    db: AsyncDatabase[Doc], s: Session, req: er.ForgetRequest
) -> er.ForgetSnapshot:
    query = {"agent_id": req.agent_id, "user_id": req.user_id}
    facts = [fact_from_doc(d) async for d in db.facts.find(query, NO_VECTOR, session=s)]
    key = f"user:{req.agent_id}:{req.user_id}"
    text_hashes, content_hashes = er.cache_candidates(facts)
    cached = await _ids(db.embeddings, {"hash": {"$in": list(text_hashes)}}, s, "hash")
    # Texts another fact (any agent, any user) still holds as its content keep their entry.
    others = db.facts.find(
        {"hash": {"$in": list(content_hashes)}, "_id": {"$nin": [f.fact_id for f in facts]}},
        {"content": 1},
        session=s,
    )
    in_use = {text_hash(d["content"]) async for d in others}
    return er.ForgetSnapshot(
        epoch=await _stored_epoch(db, req.agent_id, req.user_id, s),
        facts=facts,
        reflections=await db.reflections.count_documents({"scope_key": key}, session=s),
        blob=await db.consolidated.find_one({"_id": key}, {"_id": 1}, session=s) is not None,
        sessions=await _user_sessions(db, s, req),
        cached=frozenset(cached),
        in_use=frozenset(in_use & cached),
    )


async def lifecycle_snapshot(
    db: AsyncDatabase[Doc], s: AsyncClientSession, request: Request[object]
) -> object:
    match request:
        case ri.AgentsRequest(agent_ids=ids):
            return frozenset(await _ids(db.agents, {"_id": {"$in": list(ids)}}, s))
        case ri.FactImportRequest():
            return await _fact_snapshot(db, s, request)
        case ri.BlobImportRequest(keys=keys, pairs=pairs):
            stored = {
                d["_id"]: (str(d["content"]), int(d["version"]))
                async for d in db.consolidated.find({"_id": {"$in": list(keys)}}, session=s)
            }
            return ri.BlobImportSnapshot(stored, await _pair_epochs(db, pairs, s))
        case ri.ReflectionImportRequest(reflection_ids=ids, keys=keys, pairs=pairs):
            existing = await _ids(db.reflections, {"_id": {"$in": list(ids)}}, s)
            buffered = {
                k: await db.reflections.count_documents(
                    {"scope_key": k, "absorbed_into_version": None}, session=s
                )
                for k in keys
            }
            return ri.ReflectionImportSnapshot(
                frozenset(existing), buffered, await _pair_epochs(db, pairs, s)
            )
        case ri.SessionImportRequest():
            return await _session_snapshot(db, s, request)
        case er.ForgetRequest():
            return await _forget_snapshot(db, s, request)
        case er.EraseAllRequest(user_id=user_id):
            return await _stored_epoch(db, er.ALL_AGENTS, user_id, s)
        case _:
            raise TypeError(f"no snapshot for {request!r}")


async def user_agents(db: AsyncDatabase[Doc], user_id: str) -> list[str]:
    agents: set[str] = set()
    for name in ("facts", "reflections", "consolidated"):
        agents |= set(await db[name].distinct("agent_id", {"user_id": user_id}))
    agents |= {
        a for d in await db.sessions.find({"user_ids": user_id}).to_list() for a in d["agent_ids"]
    }
    return sorted(agents)


async def export_data(
    db: AsyncDatabase[Doc], s: Session, *, agent_id: str | None, user_id: str | None, messages: bool
) -> ExportData:
    query: Doc = {}
    if agent_id is not None:
        query["agent_id"] = agent_id
    if user_id is not None:
        query["user_id"] = user_id
    agents_q: Doc = {} if agent_id is None else {"_id": agent_id}
    data = ExportData(
        agents=[
            AgentConfig.model_validate({k: v for k, v in d.items() if k != "_id"})
            async for d in db.agents.find(agents_q, session=s).sort("_id", 1)
        ],
        facts=[
            (fact_from_doc(d), [float(x) for x in d["embedding"]])
            async for d in db.facts.find(query, session=s).sort("ins", 1)
        ],
        reflections=[
            reflection_from_doc(d)
            async for d in db.reflections.find(query, session=s).sort(
                [("formed_at", 1), ("ins", 1)]
            )
        ],
        consolidated=[
            consolidated_from_doc(d)
            async for d in db.consolidated.find(query, session=s).sort("_id", 1)
        ],
    )
    if messages:
        sq: Doc = {}
        if agent_id is not None:
            sq["agent_ids"] = agent_id
        if user_id is not None:
            sq["user_ids"] = user_id
        sids = [d["_id"] async for d in db.sessions.find(sq, {"_id": 1}, session=s)]
        cursor = db.messages.find({"session_id": {"$in": sids}}, session=s)
        data.messages = [
            message_from_doc(d) async for d in cursor.sort([("session_id", 1), ("seq", 1)])
        ]
    return data
