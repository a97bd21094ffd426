"""The management and data-lifecycle calls both SQL backends answer with the same SQL: the
management listing of facts, re-embedding's side vectors, reflections, the export, degraded
windows, the memory page's listings of an agent's users and sessions, and API keys."""

from __future__ import annotations

from collections.abc import Sequence

from memory.degraded import DegradedWindow
from memory.directory import AgentUser
from memory.models import SET_ASIDE, Fact, FactFilter, Reflection, ScopeKey, SessionInfo
from memory.store.base import ReembedItem, Vector
from memory.store.base_manage import Keyset, ReembedTarget, Which, current_side_vectors, side_tag
from memory.store.counts import ExportData
from memory.store.export_reads import read_export
from memory.store.rules.export import Exported
from memory.store.sql import sessions as ss
from memory.store.sql.db import Db, Transactions
from memory.store.sql.facts import fact_filter_sql, listed_facts
from memory.store.sql.lifecycle_reads import SqlExport, exported, of_export, user_agents
from memory.store.sql.reads import PENDING_REEMBED, pending_params


class SqlManage[D: Db](Transactions[D]):
    # ------------------------------------------------------------ facts

    async def _list_facts(
        self, flt: FactFilter, *, valid_only: bool, offset: int, limit: int, keyset: Keyset | None
    ) -> list[Fact]:
        async def page(db: Db) -> list[Fact]:
            order, then = "DESC", ""
            params: dict[str, object] = {"limit": limit, "offset": offset}
            if keyset is not None:
                order, side = ("ASC", ">") if keyset.newer else ("DESC", "<")
                at, fact_id = keyset.key
                # The bound alone first: an index range for the planner (PostgreSQL scanned
                # from the top without it, O(position) as an offset); the OR breaks the ties.
                then = (
                    f"AND f.updated_at {side}= %(at)s AND (f.updated_at {side} %(at)s "
                    f"OR (f.updated_at = %(at)s AND f.fact_id {side} %(id)s)) "
                )
                params |= {"at": db.time(at), "id": fact_id}
            return await listed_facts(
                db, flt, valid_only=valid_only,
                then=f"{then}ORDER BY f.updated_at {order}, f.fact_id {order} "
                "LIMIT %(limit)s OFFSET %(offset)s",
                params=params,
            )  # fmt: skip

        return await self._db_one(page)

    async def count_facts(self, flt: FactFilter) -> int:
        where, params = fact_filter_sql(flt)
        sql = f"SELECT count(*) AS n FROM facts AS f WHERE {where}"
        row = await self._db_one(lambda db: db.fetch_one(sql, params))
        return 0 if row is None else int(row["n"])

    # ------------------------------------------------------------ re-embedding

    async def _reembed_pending(self, target: ReembedTarget, limit: int) -> list[ReembedItem]:
        async def pending(db: Db) -> list[ReembedItem]:
            rows = await db.fetch(
                f"SELECT f.fact_id, {db.content} AS content, f.hash {PENDING_REEMBED} "
                f"ORDER BY f.{db.ord} LIMIT %(limit)s",
                {**pending_params(target), "limit": limit},
            )
            return [ReembedItem(row["fact_id"], row["content"], row["hash"]) for row in rows]

        return await self._db_one(pending)

    async def put_reembedded(
        self, model: str, dimension: int, vectors: Sequence[tuple[ReembedItem, Vector]]
    ) -> None:
        tag = side_tag(model, dimension)

        async def put(db: D) -> None:
            # The facts' hashes read in the writing transaction: a forget or an edit commits
            # before it (SQLite: one writer) or conflicts with it (PostgreSQL: SERIALIZABLE).
            sql = "SELECT fact_id, hash FROM facts WHERE fact_id"
            rows = await db.fetch_in(sql, [item.fact_id for item, _ in vectors])
            kept = current_side_vectors(vectors, {row["fact_id"]: row["hash"] for row in rows})
            await db.execute_many(
                "INSERT INTO fact_reembed (fact_id, model, hash, embedding) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (fact_id) DO UPDATE SET "
                "model = excluded.model, hash = excluded.hash, embedding = excluded.embedding",
                [(item.fact_id, tag, item.hash, db.vector(v)) for item, v in kept],
            )

        if vectors:
            await self._db_write(put)

    # ------------------------------------------------------------ reflections

    async def _reflections(
        self, key: ScopeKey, *, which: Which, newest_first: bool, limit: int | None
    ) -> list[Reflection]:
        state = {
            "buffered": " AND absorbed_into_version IS NULL",
            "in_no_blob": f" AND coalesce(absorbed_into_version, {SET_ASIDE}) = {SET_ASIDE}",
            "set_aside": f" AND absorbed_into_version = {SET_ASIDE}",
            "all": "",
        }[which]
        order = "DESC" if newest_first else "ASC"

        async def load(db: Db) -> list[Reflection]:
            rows = await db.fetch(
                f"SELECT * FROM reflections WHERE scope_key = %s{state} "
                f"ORDER BY formed_at {order}, {db.ord} {order} LIMIT %s",
                (key.key, db.no_limit if limit is None else limit),
            )
            return [db.reflection(row) for row in rows]

        return await self._db_one(load)

    # ------------------------------------------------------------ data lifecycle reads

    async def _user_agents(self, user_id: str) -> list[str]:
        return await self._db_read(lambda db: user_agents(db, user_id))

    async def _export_data(
        self, *, agent_id: str | None, user_id: str | None, messages: bool, facts: bool
    ) -> ExportData:
        async def read(db: Db) -> ExportData:
            reads = SqlExport(db, agent_id, user_id)
            return await read_export(reads, messages=messages, facts=facts)

        return await self._db_read(read)

    async def export_fact_ids(self, *, agent_id: str | None, user_id: str | None) -> list[str]:
        async def ids(db: Db) -> list[str]:
            # By insertion order (db.ord).
            sql = f"SELECT f.fact_id FROM facts AS f WHERE {of_export(agent_id, user_id)} "
            rows = await db.fetch(f"{sql}ORDER BY f.{db.ord}", {"agent": agent_id, "user": user_id})
            return [str(row["fact_id"]) for row in rows]

        return await self._db_one(ids)

    async def _export_facts(self, fact_ids: Sequence[str]) -> list[Exported]:
        async def load(db: Db) -> list[Exported]:
            # By their ids (the primary key), in any order.
            sql = f"SELECT {db.fact_select}, f.embedding FROM facts AS f WHERE f.fact_id"
            return [exported(db, row) for row in await db.fetch_in(sql, fact_ids)]

        return await self._db_one(load)

    # ------------------------------------------------------------ degraded windows

    async def _list_degraded(
        self, agent_id: str | None, session_id: str | None, include_reformed: bool, limit: int
    ) -> list[DegradedWindow]:
        terms = ["reformed_at IS NULL"] if not include_reformed else ["1 = 1"]
        terms += [] if agent_id is None else ["agent_id = %(agent)s"]
        terms += [] if session_id is None else ["session_id = %(session)s"]
        sql = (
            f"SELECT * FROM degraded_windows WHERE {' AND '.join(terms)} "
            "ORDER BY degraded_at DESC, agent_id, session_id, after_seq DESC, step LIMIT %(limit)s"
        )

        async def load(db: Db) -> list[DegradedWindow]:
            params = {"agent": agent_id, "session": session_id, "limit": limit}
            return [db.record(DegradedWindow, row) for row in await db.fetch(sql, params)]

        return await self._db_one(load)

    # ------------------------------------------------------------ listings

    async def _list_agent_users(self, agent_id: str, limit: int) -> list[AgentUser]:
        async def load(db: Db) -> list[AgentUser]:
            rows = await db.fetch(ss.USERS_SQL, (agent_id, limit))
            return [
                AgentUser(
                    user_id=row["user_id"],
                    sessions=row["sessions"],
                    last_active_at=db.time_of(row["last_active_at"]),
                )
                for row in rows
            ]

        return await self._db_one(load)

    async def _list_agent_sessions(
        self, agent_id: str, user_id: str | None, limit: int
    ) -> list[SessionInfo]:
        async def load(db: Db) -> list[SessionInfo]:
            params = {"agent_id": agent_id, "user_id": user_id, "limit": limit}
            rows = await db.fetch(ss.SESSIONS_SQL, params)
            views = [await ss.session_view(db, row["session_id"], agent_id) for row in rows]
            return [view for view in views if view is not None]  # the agent's view of each

        return await self._db_read(load)
