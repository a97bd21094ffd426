"""The data-lifecycle writes (memory.store.rules.lifecycle_writes) as MongoDB updates."""

from __future__ import annotations

import re
from typing import assert_never

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from memory.degraded import ERASED_REASON
from memory.store.mongo.docs import (
    Doc,
    by_ids,
    compound_id,
    opt_ts,
    reflection_doc,
    ts,
    view_of,
)
from memory.store.rules import lifecycle_writes as lw
from memory.store.rules.writes import user_key


async def update_session(
    db: AsyncDatabase[Doc],
    s: AsyncClientSession,
    session_id: str,
    update: Doc,
    agents: Doc | None = None,
) -> None:
    """``update`` on the session document and on each agent's copy (the head, last_seq and
    last_message_at, and the participants live in both), plus ``agents`` on the copies only."""
    await db.sessions.update_one({"_id": session_id}, update, session=s)
    await db.session_agents.update_many(
        {"session_id": session_id}, update | (agents or {}), session=s
    )


async def set_view(
    db: AsyncDatabase[Doc], s: AsyncClientSession, session_id: str, agent_id: str, fields: Doc
) -> None:
    """``fields`` set on the agent's session_agents document (its view of the session)."""
    await db.session_agents.update_one(view_of(session_id, agent_id), {"$set": fields}, session=s)


async def apply_lifecycle(
    db: AsyncDatabase[Doc], s: AsyncClientSession, write: lw.LifecycleWrite
) -> None:
    match write:
        case lw.InsertAgents(configs=configs):
            for c in configs:
                await db.agents.insert_one(
                    {"_id": c.agent_id, **c.model_dump(mode="json")}, session=s
                )
        case lw.SetFactAccess(fact_id=fact_id, access_count=n, last_accessed_at=at):
            fields = {"access_count": n, "last_accessed_at": opt_ts(at)}
            await db.facts.update_one({"_id": fact_id}, {"$set": fields}, session=s)
        case lw.ImportReflections(reflections=reflections):
            docs = [
                {**reflection_doc(r), "absorbed_into_version": r.absorbed_into_version}
                for r in reflections
            ]
            await db.reflections.insert_many(docs, session=s)
        case lw.SetSessionHead(session_id=sid, last_seq=seq, last_message_at=at):
            head = {"last_seq": seq, "last_message_at": ts(at)}
            await update_session(db, s, sid, {"$set": head})
        case lw.PutErasure() as e:
            await db.erasures.replace_one(
                {"_id": compound_id(e.agent_key, e.user_id)},
                {
                    "agent_key": e.agent_key, "user_id": e.user_id, "epoch": e.epoch,
                    "forgotten_at": ts(e.forgotten_at), "counts": e.counts_json,
                },
                upsert=True,
                session=s,
            )  # fmt: skip
            # The user's serialization key (Request.serialized_on), written earlier in this very
            # transaction, names them: it goes. A commit that read before still conflicts on it.
            await db.txn_keys.delete_one({"_id": user_key(e.user_id)}, session=s)
        case lw.DeleteFacts(fact_ids=ids):
            await db.facts.delete_many(by_ids(ids), session=s)
            await db.fact_reembed.delete_many(by_ids(ids), session=s)
        case lw.DeleteScope(key=key):
            await db.reflections.delete_many({"scope_key": key}, session=s)
            await db.consolidated.delete_many({"_id": key}, session=s)
        case lw.DeleteSessions(session_ids=ids, formations=formations):
            for prefix in formations:
                await db.formation_commits.delete_many(
                    {"_id": {"$regex": f"^{re.escape(prefix)}"}}, session=s
                )
            in_ids = {"$in": list(ids)}
            scoped = {"session_id": in_ids, "scope": "session"}
            await db.reflections.delete_many(scoped, session=s)
            await db.consolidated.delete_many(scoped, session=s)
            await db.degraded_windows.delete_many({"session_id": in_ids}, session=s)
            await db.messages.delete_many({"session_id": in_ids}, session=s)
            await db.session_agents.delete_many({"session_id": in_ids}, session=s)
            await db.sessions.delete_many({"_id": in_ids}, session=s)
        case lw.DeleteUserMessages(session_id=sid, user_id=user_id, seqs=seqs, agents=agents):
            mine: Doc = {"session_id": sid, "user_id": user_id}
            if seqs is not None:
                mine["seq"] = {"$in": list(seqs)}
            await db.messages.delete_many(mine, session=s)
            await db.degraded_windows.update_many(
                {"session_id": sid}, {"$set": {"reason": ERASED_REASON}}, session=s
            )
            pull = {"$pull": {"user_ids": user_id}}
            if seqs is None:  # session-wide and each agent's participants
                await update_session(db, s, sid, pull)
            else:  # these agents' only: the user's other messages stay
                of = {"session_id": sid, "agent_id": {"$in": list(agents)}}
                await db.session_agents.update_many(of, pull, session=s)
        case lw.DeleteReplies(session_id=sid, seqs=seqs):
            replies = {"session_id": sid, "user_id": None, "seq": {"$in": list(seqs)}}
            await db.messages.delete_many(replies, session=s)
        case lw.SetWithheld(session_id=sid, agent_id=agent_id, withheld=withheld):
            await set_view(db, s, sid, agent_id, {"withheld": [[u, seq] for u, seq in withheld]})
        case lw.DeleteEmbeddings(text_hashes=hashes):
            await db.embeddings.delete_many({"hash": {"$in": list(hashes)}}, session=s)
        case _:
            assert_never(write)
