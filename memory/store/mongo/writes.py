"""The planners' writes (memory.store.rules.writes) as MongoDB updates, inside the caller's
transaction."""

from __future__ import annotations

from collections.abc import Iterable
from typing import assert_never

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from memory import switch_marks
from memory.store.mongo.degraded import insert_windows, window_id
from memory.store.mongo.docs import (
    EMBEDDING_META_ID,
    Doc,
    by_ids,
    consolidated_doc,
    fact_fields,
    insertion_order,
    message_doc,
    reflection_doc,
    state_doc,
    ts,
    vector_doc,
)
from memory.store.mongo.lifecycle_writes import apply_lifecycle, set_view, update_session
from memory.store.mongo.listings import api_key_doc
from memory.store.mongo.reembed import swap_side_vectors
from memory.store.rules import lifecycle_writes as lw
from memory.store.rules import writes as w


async def apply_writes(
    db: AsyncDatabase[Doc], session: AsyncClientSession, writes: Iterable[w.Write]
) -> None:
    for write in writes:
        await _apply(db, session, write)


async def _apply(db: AsyncDatabase[Doc], s: AsyncClientSession, write: w.Write) -> None:
    match write:
        case w.PutFact(fact=fact, embedding=embedding, new=new):
            fields = fact_fields(fact)
            if embedding is not None:
                fields["embedding"] = vector_doc(embedding)
            if new:
                extra = {"access_count": 0, "last_accessed_at": None, "ins": insertion_order()}
                await db.facts.insert_one({"_id": fact.fact_id, **fields, **extra}, session=s)
            else:
                await db.facts.update_one({"_id": fact.fact_id}, {"$set": fields}, session=s)
        case w.SwapSideVectors(model=model, dimension=dimension):
            await swap_side_vectors(db, model, dimension, s)
        case w.SetEmbeddingMeta(model=model, dimension=dimension):
            meta = {"_id": EMBEDDING_META_ID, "model": model, "dimension": dimension}
            await db.meta.insert_one(meta, session=s)
        case w.InsertReflections(reflections=reflections):
            await db.reflections.insert_many([reflection_doc(r) for r in reflections], session=s)
        case w.MoveCursor(state=state):
            await set_view(db, s, state.session_id, state.agent_id, state_doc(state))
        case w.BumpScopeVersions(keys=keys):
            for key in keys:
                await db.scope_versions.update_one(
                    {"_id": key}, {"$inc": {"version": 1}}, upsert=True, session=s
                )
        case w.RecordFormation(result=result, committed_at=at):
            doc = {"_id": result.formation_id, "committed_at": ts(at)}
            await db.formation_commits.insert_one(
                {**doc, "result": result.model_dump(mode="json")}, session=s
            )
        case w.CreateSession(session_id=session_id, created_at=created_at):
            await db.sessions.insert_one(
                {
                    "_id": session_id, "created_at": ts(created_at), "agent_ids": [],
                    "user_ids": [], "last_seq": 0, "last_message_at": None, "has_guests": False,
                },
                session=s,
            )  # fmt: skip
        case w.AddSessionAgent(state=state):
            mine: Doc = {"ended_at": None, "purged": False, "user_ids": []}
            await db.session_agents.insert_one({**state_doc(state), **mine}, session=s)
            await db.sessions.update_one(
                {"_id": state.session_id}, {"$push": {"agent_ids": state.agent_id}}, session=s
            )
        case w.AddSessionUsers(session_id=session_id, user_ids=user_ids):
            add = {"$addToSet": {"user_ids": {"$each": list(user_ids)}}}
            await update_session(db, s, session_id, add)
        case w.MarkGuests(session_id=session_id):
            # The session document's: every agent's view reads it there (docs.session_from_doc).
            await db.sessions.update_one(
                {"_id": session_id}, {"$set": {"has_guests": True}}, session=s
            )
        case w.InsertMessages(messages=messages):
            docs = [message_doc(new.message, new.weighted_tokens) for new in messages]
            await db.messages.insert_many(docs, session=s)
        case w.SetSwitchMarks(session_id=sid, agent_id=agent_id) as marks:
            stored = switch_marks.dumped(marks.marks, marks.recorded_under)
            await set_view(db, s, sid, agent_id, {"switch_marks": stored})
        case w.AdvanceSession() as a:
            head = {"last_seq": a.last_seq, "last_message_at": ts(a.last_message_at)}
            added = {"pending_messages": a.messages, "pending_weighted_tokens": a.weighted_tokens}
            await update_session(db, s, a.session_id, {"$set": head}, {"$inc": added})
            # Memory formed of what is said now is the session's again: purged anew later.
            await db.session_agents.update_many(
                {"session_id": a.session_id, "purged": True}, {"$set": {"purged": False}}, session=s
            )
        case w.RecordDegraded(windows=windows):
            await insert_windows(db, s, windows)
        case w.MarkReformed(keys=keys, at=at):
            reformed = {"$set": {"reformed_at": ts(at)}}
            await db.degraded_windows.update_many(by_ids(map(window_id, keys)), reformed, session=s)
        case w.PutConsolidated(blob=blob):
            await db.consolidated.replace_one(
                {"_id": blob.scope_key.key}, consolidated_doc(blob), upsert=True, session=s
            )
        case w.AbsorbReflections(reflection_ids=ids, version=version):
            if ids:
                absorbed = {"$set": {"absorbed_into_version": version}}
                await db.reflections.update_many(by_ids(ids), absorbed, session=s)
        case w.SetReflectionContent(reflection_id=reflection_id, content=content):
            await db.reflections.update_one(
                {"_id": reflection_id}, {"$set": {"content": content}}, session=s
            )
        case w.DeleteReflection(reflection_id=reflection_id):
            await db.reflections.delete_one({"_id": reflection_id}, session=s)
        case w.MarkPurged(session_id=session_id, agent_id=agent_id):
            await set_view(db, s, session_id, agent_id, {"purged": True})
        case lw.LifecycleOp():
            await apply_lifecycle(db, s, write)
        case w.PutAgent(config=config):
            await db.agents.replace_one(
                {"_id": config.agent_id}, config.model_dump(mode="json"), upsert=True, session=s
            )
        case w.PutApiKey(key=key, new=new):
            if new:
                await db.api_keys.insert_one(api_key_doc(key), session=s)
            else:
                await db.api_keys.replace_one({"_id": key.key_id}, api_key_doc(key), session=s)
        case _:
            assert_never(write)
