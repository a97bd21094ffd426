"""The data-lifecycle reads of the MongoDB backend: the agents holding a user's data (forget_user
of every agent) and the export, read in one transaction."""

from __future__ import annotations

import json
from collections.abc import Sequence

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.cursor import AsyncCursor
from pymongo.asynchronous.database import AsyncDatabase

from memory.models import AgentConfig, ConsolidatedMemory, Reflection, StoredMessage
from memory.store.counts import Erasure, ExportData
from memory.store.export_reads import ExportReads, read_export
from memory.store.mongo.docs import (
    Doc,
    agent_from_doc,
    by_ids,
    consolidated_from_doc,
    dt,
    fact_and_vector,
    matching,
    message_from_doc,
    reflection_from_doc,
)
from memory.store.mongo.reads import InSession
from memory.store.mongo.txn import run_transaction
from memory.store.records import from_record
from memory.store.rules.export import Exported, Pairs
from memory.store.rules.withheld import Withheld, parsed


class MongoLifecycleReads:
    _db: AsyncDatabase[Doc]

    async def _user_agents(self, user_id: str) -> list[str]:
        agents: set[str] = set()
        for name in ("facts", "reflections", "consolidated"):
            agents |= set(await self._db[name].distinct("agent_id", {"user_id": user_id}))
        sessions = await InSession(self._db, None).user_sessions(user_id)
        return sorted(agents | set(await self._db.sessions.distinct("agent_ids", sessions)))

    async def _export_data(
        self, *, agent_id: str | None, user_id: str | None, messages: bool, facts: bool
    ) -> ExportData:
        async def body(s: AsyncClientSession) -> ExportData:
            reads = _MongoExport(self._db, s, agent_id, user_id)
            return await read_export(reads, messages=messages, facts=facts)

        return await run_transaction(self._db, body)

    async def export_fact_ids(self, *, agent_id: str | None, user_id: str | None) -> list[str]:
        # By insertion order (``ins``, set once when the fact is inserted; index facts (agent_id,
        # ins)), as _export reads them.
        query = matching(agent_id=agent_id, user_id=user_id)
        cursor = self._db.facts.find(query, {"_id": 1}).sort("ins", 1)
        return [d["_id"] async for d in cursor]

    async def _export_facts(self, fact_ids: Sequence[str]) -> list[Exported]:
        cursor = self._db.facts.find(by_ids(fact_ids))
        return [fact_and_vector(d) async for d in cursor]


class _MongoExport(InSession, ExportReads):
    def __init__(
        self,
        db: AsyncDatabase[Doc],
        s: AsyncClientSession,
        agent_id: str | None,
        user_id: str | None,
    ) -> None:
        InSession.__init__(self, db, s)
        ExportReads.__init__(self, agent_id, user_id)
        self._read: list[Doc] | None = None

    def _sorted(self, collection: str, query: Doc, *order: str) -> AsyncCursor[Doc]:
        return self._find(collection, query).sort([(f, 1) for f in order])

    async def _sessions(self) -> list[Doc]:
        """The agent's sessions (every one without an agent); with a user, those holding the
        user's data. Read once."""
        if self._read is None:
            query = matching(agent_ids=self.agent_id)
            if self.user_id is not None:
                query |= await self.user_sessions(self.user_id)
            fields = {"user_ids": 1, "agent_ids": 1, "has_guests": 1}
            self._read = await self._find("sessions", query, fields).to_list()
        return self._read

    async def _session_ids(self) -> list[str]:
        return [d["_id"] for d in await self._sessions()]

    async def _memory(self) -> Doc:
        """The reflections and blobs read: with a user, their scope's and the session memory
        of their sessions (rules.export.users_export keeps that of those they are alone in)."""
        memory = matching(agent_id=self.agent_id)
        if self.user_id is None:
            return memory
        of_sessions = {"scope": "session", "session_id": {"$in": await self._session_ids()}}
        return memory | {"$or": [{"user_id": self.user_id}, of_sessions]}

    async def agents(self) -> list[AgentConfig]:
        cursor = self._sorted("agents", matching(_id=self.agent_id), "_id")
        return [agent_from_doc(d) async for d in cursor]

    async def facts(self) -> list[Exported]:
        query = matching(agent_id=self.agent_id, user_id=self.user_id)
        return [fact_and_vector(d) async for d in self._sorted("facts", query, "ins")]

    async def reflections(self) -> list[Reflection]:
        cursor = self._sorted("reflections", await self._memory(), "formed_at", "ins")
        return [reflection_from_doc(d) async for d in cursor]

    async def blobs(self) -> list[ConsolidatedMemory]:
        cursor = self._sorted("consolidated", await self._memory(), "_id")
        return [consolidated_from_doc(d) async for d in cursor]

    async def erasures(self) -> list[Erasure]:
        cursor = self._sorted("erasures", matching(user_id=self.user_id), "user_id", "agent_key")
        return [
            from_record(
                Erasure, d, dt, forgotten_at=dt(d["forgotten_at"]), counts=json.loads(d["counts"])
            )
            async for d in cursor
        ]

    async def messages(self) -> list[StoredMessage]:
        query = {"session_id": {"$in": await self._session_ids()}}
        return [
            message_from_doc(d) async for d in self._sorted("messages", query, "session_id", "seq")
        ]

    async def withheld(self) -> dict[str, Withheld]:
        mine = {"agent_id": self.agent_id, "withheld": {"$exists": True, "$ne": []}}
        cursor = self._find("session_agents", mine, {"session_id": 1, "withheld": 1})
        return {d["session_id"]: parsed(d["withheld"]) async for d in cursor}

    async def participants(self) -> Pairs:
        return [(d["_id"], u) for d in await self._sessions() for u in d.get("user_ids", [])]

    async def session_agents(self) -> Pairs:
        return [(d["_id"], a) for d in await self._sessions() for a in d.get("agent_ids", [])]

    async def guest_sessions(self) -> list[str]:
        return [d["_id"] for d in await self._sessions() if d.get("has_guests")]

    async def message_users(self) -> Pairs:
        """Each (session id, user id) of their messages once."""
        match = {"session_id": {"$in": await self._session_ids()}, "user_id": {"$ne": None}}
        group = {"_id": {"session": "$session_id", "user": "$user_id"}}
        rows = await self._aggregate("messages", [{"$match": match}, {"$group": group}])
        return [(d["_id"]["session"], d["_id"]["user"]) for d in rows]
