"""The data-lifecycle reads of both SQL backends: the snapshots of imports and forget_user
(memory.store.snapshots_lifecycle), the agents that hold a user's data, and the export; inside
the caller's transaction."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    Reflection,
    SessionAgentState,
    StoredMessage,
)
from memory.store.counts import Erasure
from memory.store.export_reads import ExportReads
from memory.store.rules.export import Exported, Pairs
from memory.store.rules.withheld import MessageMark, Withheld, parsed
from memory.store.snapshots_lifecycle import LifecycleReads
from memory.store.sql.db import Db, Row
from memory.store.sql.sessions import STATE_SQL

# The sessions holding a user's data (%(user)s): those they are a user of, and those with a
# message carrying their id, whatever its role (index messages_user).
USER_SESSIONS = (
    "(SELECT session_id FROM session_users WHERE user_id = %(user)s "
    "UNION SELECT session_id FROM messages WHERE user_id = %(user)s)"
)


class SqlLifecycleReads(LifecycleReads):
    def __init__(self, db: Db) -> None:
        self.db = db

    async def erasure_rows(
        self, agent_keys: Sequence[str], user_ids: Sequence[str] | None = None
    ) -> dict[tuple[str, str], tuple[int, datetime]]:
        sql = "SELECT agent_key, user_id, epoch, forgotten_at FROM erasures WHERE agent_key"
        if user_ids is None:
            rows = await self.db.fetch_in(sql, agent_keys)
        else:  # a query per key, each on the primary key (agent_key, user_id)
            users, sql = list(dict.fromkeys(user_ids)), sql + " = %s AND user_id"
            rows = [r for key in agent_keys for r in await self.db.fetch_in(sql, users, key)]
        return {
            (r["agent_key"], r["user_id"]): (int(r["epoch"]), self.db.time_of(r["forgotten_at"]))
            for r in rows
        }

    async def blobs(self, keys: Sequence[str]) -> dict[str, ConsolidatedMemory]:
        rows = await self.db.fetch_in("SELECT * FROM consolidated WHERE scope_key", keys)
        return {row["scope_key"]: self.db.consolidated(row) for row in rows}

    async def session_users(self, session_id: str) -> tuple[str, ...]:
        sql = f"SELECT user_id FROM session_users WHERE session_id = %s ORDER BY {self.db.ord}"
        return tuple(str(user) for user in await self.db.column(sql, session_id))

    async def parted_candidates(self) -> dict[str, datetime]:
        # Driven by the session tombstones (no agent id holds a colon: only a session scope key
        # starts so), each probing its session and its agent's state by their keys: a store
        # that forgot no one in a session reads no row, whatever sessions of nobody it holds.
        sql = (
            "SELECT DISTINCT s.session_id, s.created_at FROM erasures e "
            f"JOIN sessions s ON s.session_id = {self.db.tombstone_session} "
            "JOIN session_agents a ON a.session_id = s.session_id "
            "AND e.agent_key = 'session:' || a.agent_id || ':' || a.session_id "
            "WHERE e.agent_key LIKE %s AND NOT s.has_guests "
            "AND NOT EXISTS (SELECT 1 FROM session_users u WHERE u.session_id = s.session_id) "
            "AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.session_id)"
        )
        rows = await self.db.fetch(sql, ("session:%",))
        return {r["session_id"]: self.db.time_of(r["created_at"]) for r in rows}

    async def session_states(self, session_id: str) -> list[SessionAgentState]:
        sql = STATE_SQL + f" WHERE sa.session_id = %s ORDER BY sa.{self.db.ord}"
        return [self.db.state(row) for row in await self.db.fetch(sql, (session_id,))]

    async def session_messages(
        self,
        session_id: str,
        *,
        ids: Sequence[str] | None = None,
        seqs: Sequence[int] | None = None,
        of_user: str | None = None,
    ) -> list[MessageMark]:
        sql = (
            "SELECT message_id, seq, agent_id, user_id, role, weighted_tokens FROM messages "
            "WHERE session_id = %s"
        )
        if ids is not None:
            rows = await self.db.fetch_in(f"{sql} AND message_id", ids, session_id)
        elif seqs is not None:
            rows = await self.db.fetch_in(f"{sql} AND seq", seqs, session_id)
        elif of_user is not None:
            sql += " AND (user_id = %s OR user_id IS NULL)"
            rows = await self.db.fetch(sql, (session_id, of_user))
        else:
            rows = await self.db.fetch(sql, (session_id,))
        return sorted((
            MessageMark(int(r["seq"]), r["agent_id"], float(r["weighted_tokens"]), r["user_id"],
                        r["role"], r["message_id"])
            for r in rows
        ), key=lambda m: m.seq)  # fmt: skip

    async def message_users(self, session_id: str) -> list[str]:
        sql = "SELECT DISTINCT user_id FROM messages WHERE session_id = %s AND user_id IS NOT NULL"
        return await self.db.column(sql, session_id)

    async def user_session_ids(self, user_id: str, agent_id: str) -> list[str]:
        sql = (
            "SELECT session_id FROM session_agents WHERE agent_id = %(agent)s "
            f"AND session_id IN {USER_SESSIONS} ORDER BY session_id"
        )
        rows = await self.db.fetch(sql, {"user": user_id, "agent": agent_id})
        return [str(row["session_id"]) for row in rows]

    async def user_facts(self, agent_id: str, user_id: str) -> list[Fact]:
        sql = (
            f"SELECT {self.db.fact_select} FROM facts AS f WHERE f.agent_id = %s AND f.user_id = %s"
        )
        return [self.db.fact(row) for row in await self.db.fetch(sql, (agent_id, user_id))]

    async def reflection_count(self, key: str) -> int:
        sql = "SELECT count(*) AS n FROM reflections WHERE scope_key = %s"
        row = await self.db.fetch_one(sql, (key,))
        return 0 if row is None else int(row["n"])

    async def cached_text_hashes(self, text_hashes: Sequence[str]) -> frozenset[str]:
        sql = "SELECT DISTINCT text_hash FROM embedding_cache WHERE text_hash"
        return frozenset(await self.db.column_in(sql, text_hashes))

    async def contents_elsewhere(
        self, agent_id: str, user_id: str, content_hashes: Sequence[str]
    ) -> list[str]:
        sql = (
            f"SELECT {self.db.content} AS content FROM facts "
            "WHERE NOT (agent_id = %s AND coalesce(user_id, '') = %s) AND hash"
        )
        rows = await self.db.fetch_in(sql, content_hashes, agent_id, user_id)
        return [str(row["content"]) for row in rows]


async def user_agents(db: Db, user_id: str) -> list[str]:
    """The agents holding any of the user's data: facts, reflections, blobs or sessions."""
    sql = (
        "SELECT agent_id FROM facts WHERE user_id = %(user)s UNION "
        "SELECT agent_id FROM reflections WHERE user_id = %(user)s UNION "
        "SELECT agent_id FROM consolidated WHERE user_id = %(user)s UNION "
        f"SELECT agent_id FROM session_agents WHERE session_id IN {USER_SESSIONS} ORDER BY 1"
    )
    return [str(row["agent_id"]) for row in await db.fetch(sql, {"user": user_id})]


# The agent's sessions (%(agent)s; every session when NULL), and of those the ones holding the
# user's data (%(user)s): the sessions a user's export reads.
OF_AGENT = (
    "(CAST(%(agent)s AS TEXT) IS NULL OR session_id IN "
    "(SELECT session_id FROM session_agents WHERE agent_id = %(agent)s))"
)
EXPORT_SESSIONS = f"{OF_AGENT} AND session_id IN {USER_SESSIONS}"


def of_export(agent_id: str | None, user_id: str | None) -> str:
    """The facts of an export (``facts AS f``): of the agent (%(agent)s), of the user (%(user)s);
    None, of every one."""
    terms = ["1 = 1"]
    terms += [] if agent_id is None else ["f.agent_id = %(agent)s"]
    terms += [] if user_id is None else ["f.user_id = %(user)s"]
    return " AND ".join(terms)


def _erasure(db: Db, row: Row) -> Erasure:
    counts = row["counts"]  # JSON text in SQLite, jsonb (read as a dict) in PostgreSQL
    return Erasure(
        agent_key=row["agent_key"],
        user_id=row["user_id"],
        epoch=int(row["epoch"]),
        forgotten_at=db.time_of(row["forgotten_at"]),
        counts=json.loads(counts) if isinstance(counts, str) else counts,
    )


def exported(db: Db, row: Row) -> Exported:
    return db.fact(row), db.vector_of(row["embedding"]).tolist()


class SqlExport(ExportReads):
    """Each read of an export (memory.store.export_reads decides which) as one query of the
    caller's read transaction."""

    def __init__(self, db: Db, agent_id: str | None, user_id: str | None) -> None:
        super().__init__(agent_id, user_id)
        self.db = db
        self.params = {"agent": agent_id, "user": user_id}

    async def _rows(self, sql: str) -> list[Row]:
        return await self.db.fetch(sql, self.params)

    def _memory(self) -> str:
        """The reflections and blobs read: with a user, their scope's and the session memory of
        their sessions (rules.export.users_export keeps that of those they are alone in)."""
        memory = "1 = 1" if self.agent_id is None else "agent_id = %(agent)s"
        if self.user_id is None:
            return memory
        return f"{memory} AND (user_id = %(user)s OR (scope = 'session' AND {EXPORT_SESSIONS}))"

    async def agents(self) -> list[AgentConfig]:
        sql = "SELECT config FROM agents WHERE CAST(%(agent)s AS TEXT) IS NULL OR agent_id = %(agent)s"
        return [
            self.db.model(AgentConfig, r["config"])
            for r in await self._rows(f"{sql} ORDER BY agent_id")
        ]

    async def facts(self) -> list[Exported]:
        where = of_export(self.agent_id, self.user_id)
        sql = f"SELECT {self.db.fact_select}, f.embedding FROM facts AS f WHERE {where}"
        return [exported(self.db, r) for r in await self._rows(f"{sql} ORDER BY f.{self.db.ord}")]

    async def reflections(self) -> list[Reflection]:
        sql = f"SELECT * FROM reflections WHERE {self._memory()} ORDER BY formed_at, {self.db.ord}"
        return [self.db.reflection(r) for r in await self._rows(sql)]

    async def blobs(self) -> list[ConsolidatedMemory]:
        sql = f"SELECT * FROM consolidated WHERE {self._memory()} ORDER BY scope_key"
        return [self.db.consolidated(r) for r in await self._rows(sql)]

    async def erasures(self) -> list[Erasure]:
        sql = (
            "SELECT * FROM erasures WHERE CAST(%(user)s AS TEXT) IS NULL OR user_id = %(user)s "
            "ORDER BY user_id, agent_key"
        )
        return [_erasure(self.db, r) for r in await self._rows(sql)]

    async def messages(self) -> list[StoredMessage]:
        of_sessions = OF_AGENT if self.user_id is None else EXPORT_SESSIONS
        sql = f"SELECT * FROM messages WHERE {of_sessions} ORDER BY session_id, seq"
        return [self.db.message(r) for r in await self._rows(sql)]

    async def withheld(self) -> dict[str, Withheld]:
        sql = (
            "SELECT session_id, withheld FROM session_agents "
            "WHERE agent_id = %(agent)s AND withheld <> '[]'"
        )
        return {str(r["session_id"]): parsed(r["withheld"]) for r in await self._rows(sql)}

    # The sessions holding the user's data, as (session id, id) rows.

    async def participants(self) -> Pairs:
        return await self._pairs("SELECT session_id, user_id AS id FROM session_users WHERE")

    async def message_users(self) -> Pairs:
        return await self._pairs(
            "SELECT DISTINCT session_id, user_id AS id FROM messages WHERE user_id IS NOT NULL AND"
        )

    async def session_agents(self) -> Pairs:
        return await self._pairs("SELECT session_id, agent_id AS id FROM session_agents WHERE")

    async def guest_sessions(self) -> list[str]:
        rows = await self._rows(
            f"SELECT session_id FROM sessions WHERE has_guests AND {EXPORT_SESSIONS}"
        )
        return [str(r["session_id"]) for r in rows]

    async def _pairs(self, select: str) -> Pairs:
        rows = await self._rows(f"{select} {EXPORT_SESSIONS}")
        return [(str(r["session_id"]), str(r["id"])) for r in rows]
