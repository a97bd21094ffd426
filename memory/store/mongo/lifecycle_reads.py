"""The data-lifecycle reads of the MongoDB backend: the agents holding a user's data (forget_user
of every agent) and the export, read in one transaction."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from memory.models import AgentConfig
from memory.store.counts import Erasure, ExportData
from memory.store.mongo.docs import (
    Doc,
    consolidated_from_doc,
    dt,
    fact_and_vector,
    message_from_doc,
    reflection_from_doc,
)
from memory.store.mongo.reads import user_sessions
from memory.store.mongo.txn import run_transaction
from memory.store.records import known
from memory.store.rules.export import (
    Exported,
    UserSessions,
    export_view,
    users_of_messages,
)
from memory.store.rules.withheld import parsed


class MongoLifecycleReads:
    _db: AsyncDatabase[Doc]

    async def _user_agents(self, user_id: str) -> list[str]:
        agents: set[str] = set()
        for name in ("facts", "reflections", "consolidated"):
            agents |= set(await self._db[name].distinct("agent_id", {"user_id": user_id}))
        sessions = await self._db.sessions.find(
            await user_sessions(self._db, None, user_id)
        ).to_list()
        return sorted(agents | {agent for doc in sessions for agent in doc["agent_ids"]})

    async def _export_data(
        self, *, agent_id: str | None, user_id: str | None, messages: bool, facts: bool
    ) -> ExportData:
        async def body(s: AsyncClientSession) -> ExportData:
            return await _export(self._db, s, agent_id, user_id, messages, facts)

        return await run_transaction(self._db, body)

    async def export_fact_ids(self, *, agent_id: str | None, user_id: str | None) -> list[str]:
        # By insertion order (``ins``, set once when the fact is inserted; index facts (agent_id,
        # ins)), as _export reads them.
        query = _only(agent_id=agent_id, user_id=user_id)
        cursor = self._db.facts.find(query, {"_id": 1}).sort("ins", 1)
        return [d["_id"] async for d in cursor]

    async def _export_facts(self, fact_ids: Sequence[str]) -> list[Exported]:
        cursor = self._db.facts.find({"_id": {"$in": list(fact_ids)}})
        return [fact_and_vector(d) async for d in cursor]


def _erasure(d: Doc) -> Erasure:
    return Erasure(
        agent_key=d["agent_key"],
        user_id=d["user_id"],
        epoch=int(d["epoch"]),
        forgotten_at=dt(d["forgotten_at"]),
        counts=json.loads(d["counts"]),
    )


def _only(**fields: str | None) -> Doc:
    """Documents whose fields equal those given (None: any value)."""
    return {name: value for name, value in fields.items() if value is not None}


async def _export(
    db: AsyncDatabase[Doc],
    s: AsyncClientSession,
    agent_id: str | None,
    user_id: str | None,
    messages: bool,
    facts: bool,
) -> ExportData:
    sq = _only(agent_ids=agent_id)  # the sessions read: the agent's, holding the user's data
    memory = _only(agent_id=agent_id)  # reflections and blobs
    session_ids: list[str] = []
    participants: list[tuple[str, str]] = []
    session_agents: list[tuple[str, str]] = []
    guests: list[str] = []
    if user_id is not None:
        sq |= await user_sessions(db, s, user_id)
        fields = {"user_ids": 1, "agent_ids": 1, "has_guests": 1}
        async for d in db.sessions.find(sq, fields, session=s):
            session_ids.append(d["_id"])
            participants += [(d["_id"], user) for user in d.get("user_ids", [])]
            session_agents += [(d["_id"], agent) for agent in d.get("agent_ids", [])]
            guests += [d["_id"]] if d.get("has_guests") else []
        # Their scope's, and the session memory of their sessions: rules.export.users_export
        # keeps that of the sessions they are alone in (forget_user erases it with them).
        of_sessions = {"scope": "session", "session_id": {"$in": session_ids}}
        memory |= {"$or": [{"user_id": user_id}, of_sessions]}
    agents_q = _only(_id=agent_id)
    data = ExportData(
        agents=[
            AgentConfig.model_validate(known(AgentConfig, d))
            async for d in db.agents.find(agents_q, session=s).sort("_id", 1)
        ],
        facts=await _facts(db, s, agent_id, user_id) if facts else [],
        reflections=[
            reflection_from_doc(d)
            async for d in db.reflections.find(memory, session=s).sort(
                [("formed_at", 1), ("ins", 1)]
            )
        ],
        consolidated=[
            consolidated_from_doc(d)
            async for d in db.consolidated.find(memory, session=s).sort("_id", 1)
        ],
        erasures=[
            _erasure(d)
            async for d in db.erasures.find(_only(user_id=user_id), session=s).sort(
                [("user_id", 1), ("agent_key", 1)]
            )
        ],
    )
    if messages:
        ids = session_ids
        if user_id is None:
            ids = [d["_id"] async for d in db.sessions.find(sq, {"_id": 1}, session=s)]
        cursor = db.messages.find({"session_id": {"$in": ids}}, session=s)
        data.messages = [
            message_from_doc(d) async for d in cursor.sort([("session_id", 1), ("seq", 1)])
        ]
    # The messages a forget under the agent kept for the others (rules.withheld): read only
    # where messages are exported, of one agent (none are withheld from every agent).
    mine = {"agent_id": agent_id, "withheld": {"$exists": True, "$ne": []}}
    withheld = (
        {
            d["session_id"]: parsed(d["withheld"])
            async for d in db.session_agents.find(mine, {"session_id": 1, "withheld": 1}, session=s)
        }
        if messages and agent_id is not None
        else {}
    )
    sessions = UserSessions()
    if user_id is not None:
        # With messages, every message of these sessions is at hand: no second read of users.
        said = (
            users_of_messages(data.messages)
            if messages
            else await _message_users(db, s, session_ids)
        )
        sessions = UserSessions(participants, said, session_agents, guests)
    return export_view(data, withheld, agent_id=agent_id, user_id=user_id, sessions=sessions)


async def _facts(
    db: AsyncDatabase[Doc], s: AsyncClientSession, agent_id: str | None, user_id: str | None
) -> list[Exported]:
    """Every fact of the export, by insertion order (``ins``)."""
    query = _only(agent_id=agent_id, user_id=user_id)
    return [fact_and_vector(d) async for d in db.facts.find(query, session=s).sort("ins", 1)]


async def _message_users(
    db: AsyncDatabase[Doc], s: AsyncClientSession, session_ids: Iterable[str]
) -> list[tuple[str, str]]:
    """The (session id, user id) of the messages of these sessions, each once."""
    match = {"session_id": {"$in": list(session_ids)}, "user_id": {"$ne": None}}
    group = {"_id": {"session": "$session_id", "user": "$user_id"}}
    cursor = await db.messages.aggregate([{"$match": match}, {"$group": group}], session=s)
    return [(d["_id"]["session"], d["_id"]["user"]) async for d in cursor]
