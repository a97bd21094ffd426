"""The store calls both SQL backends answer with the same SQL (memory.store.sql): the planned
writes' transaction (snapshot, plan, writes), agents, sessions and messages, the cold and ended
scans, the embedding cache and the context's recent facts; the management and lifecycle calls
are memory.store.sql.manage's.

A backend gives its connection (``D``), its transactions (``_db_read``, ``_db_write``,
``_db_one``) and the writes of the records it stores its own way (``_apply_writes``); it keeps
its schema and search."""

from __future__ import annotations

import abc
import json
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from functools import partial
from typing import Any

from memory import switch_marks
from memory.models import (
    AgentConfig,
    Fact,
    FactFilter,
    SessionAgentState,
    SessionInfo,
    StoredMessage,
)
from memory.store.base import Cold, Vector
from memory.store.planned import PlannedStore
from memory.store.planned_lifecycle import UNMARKED_BATCH
from memory.store.rules import Plan, Request, Write
from memory.store.snapshots import SnapshotReads, run_planned
from memory.store.sql import sessions as ss
from memory.store.sql.db import Db
from memory.store.sql.facts import SAID_OR_UPDATED, listed_facts
from memory.store.sql.manage import SqlManage
from memory.store.sql.reads import SqlReads


class SqlStore[D: Db](SqlManage[D], PlannedStore):
    """D: the backend's connection, which its own writes take."""

    async def _transact[S, R](self, request: Request[S], plan: Callable[[S], Plan[R]]) -> R:
        return await self._db_write(
            lambda db: run_planned(SqlReads(db), request, plan, partial(self._apply_writes, db))
        )

    @abc.abstractmethod
    async def _apply_writes(self, db: D, writes: Sequence[Write]) -> None:
        """The planners' writes, in order (the shared ones by memory.store.sql.writes)."""

    async def _read_once[T](self, read: Callable[[SnapshotReads], Coroutine[Any, Any, T]]) -> T:
        return await self._db_one(lambda db: read(SqlReads(db)))

    # ------------------------------------------------------------ agents

    async def _open_unmarked(self, agent_id: str) -> int:
        return await self._db_write(partial(_open_unmarked_batch, agent_id=agent_id))

    # ------------------------------------------------------------ sessions and messages

    async def get_session(self, session_id: str, agent_id: str | None = None) -> SessionInfo | None:
        return await self._db_read(lambda db: ss.session_view(db, session_id, agent_id))

    async def load_messages(
        self, session_id: str, after_seq: int, upto_seq: int
    ) -> list[StoredMessage]:
        async def load(db: Db) -> list[StoredMessage]:
            rows = await db.fetch(
                "SELECT * FROM messages WHERE session_id = %s AND seq > %s AND seq <= %s "
                "ORDER BY seq",
                (session_id, after_seq, upto_seq),
            )
            return [db.message(row) for row in rows]

        return await self._db_one(load)

    async def first_seqs(self, session_id: str) -> dict[str | None, int]:
        async def first(db: Db) -> dict[str | None, int]:
            rows = await db.fetch(
                "SELECT user_id, MIN(seq) AS first_seq FROM messages WHERE session_id = %s "
                f"AND (user_id IS NOT NULL OR {ss.GUEST_MESSAGE_SQL}) GROUP BY user_id",
                (session_id,),
            )
            return {row["user_id"]: int(row["first_seq"]) for row in rows}  # guests' under NULL

        return await self._db_one(first)

    async def _cold_sessions(
        self,
        idle_before: datetime,
        min_messages: int,
        min_tokens: float,
        after: Cold,
        limit: int,
        rest_before: datetime | None,
    ) -> list[SessionAgentState]:
        async def cold(db: Db) -> list[SessionAgentState]:
            at, session, agent = (
                (db.min_time, "", "") if after is None else (db.time(after[0]), *after[1:])
            )
            rest = db.min_time if rest_before is None else db.time(rest_before)  # none rests
            params: dict[str, object] = {
                "idle_before": db.time(idle_before), "min_messages": min_messages,
                "min_tokens": min_tokens, "rest_before": rest, "after_at": at,
                "after_session": session, "after_agent": agent, "limit": limit,
            }  # fmt: skip
            return [db.state(row) for row in await db.fetch(ss.COLD_SESSIONS_SQL, params)]

        return await self._db_one(cold)

    async def _end_session(self, session_id: str, agent_id: str, at: datetime) -> bool:
        changed = await self._db_write(
            lambda db: db.execute(
                "UPDATE session_agents SET ended_at = %s, purged = false "
                "WHERE session_id = %s AND agent_id = %s",
                (db.time(at), session_id, agent_id),
            )
        )
        return changed > 0

    async def _unfinished_ended_sessions(
        self, ended_before: datetime, after: tuple[str, str], limit: int
    ) -> list[tuple[str, str]]:
        async def ended(db: Db) -> list[tuple[str, str]]:
            params: dict[str, object] = {
                "cut": db.time(ended_before), "after_session": after[0],
                "after_agent": after[1], "limit": limit,
            }  # fmt: skip
            rows = await db.fetch(ss.UNFINISHED_ENDED_SQL, params)
            return [(str(row["session_id"]), str(row["agent_id"])) for row in rows]

        return await self._db_one(ended)

    # ------------------------------------------------------------ embeddings cache, context

    async def _put_embeddings(self, model: str, vectors: dict[str, Vector]) -> None:
        await self._db_write(
            lambda db: db.execute_many(
                "INSERT INTO embedding_cache (model, text_hash, vector) VALUES (%s, %s, %s) "
                "ON CONFLICT (model, text_hash) DO UPDATE SET vector = excluded.vector",
                [(model, text_hash, db.vector(v)) for text_hash, v in sorted(vectors.items())],
            )
        )

    async def _embeddings(self, model: str, text_hashes: list[str]) -> dict[str, Vector]:
        async def get(db: Db) -> dict[str, Vector]:
            sql = "SELECT text_hash, vector FROM embedding_cache WHERE model = %s AND text_hash"
            rows = await db.fetch_in(sql, text_hashes, model)
            return {row["text_hash"]: db.vector_of(row["vector"]) for row in rows}

        return await self._db_one(get)

    async def _recent_facts(self, flt: FactFilter, since: datetime, limit: int) -> list[Fact]:
        return await self._db_one(
            lambda db: listed_facts(
                db, flt, valid_only=True,
                then=f"AND {SAID_OR_UPDATED} >= %(since)s "
                f"ORDER BY {SAID_OR_UPDATED} DESC, f.{db.ord} DESC LIMIT %(limit)s",
                params={"since": db.time(since), "limit": limit},
            )
        )  # fmt: skip

    async def _stored_scope_versions(self, keys: Sequence[str]) -> dict[str, int]:
        async def get(db: Db) -> dict[str, int]:
            rows = await db.fetch_in("SELECT key, version FROM scope_versions WHERE key", keys)
            return {row["key"]: int(row["version"]) for row in rows}

        return await self._db_one(get)


async def _agent(db: Db, agent_id: str) -> AgentConfig | None:
    return next(iter(await SqlReads(db).agents([agent_id])), None)


async def _open_unmarked_batch(db: Db, *, agent_id: str) -> int:
    if (agent := await _agent(db, agent_id)) is None:
        return 0
    stretch = json.dumps(switch_marks.opened(agent))
    params = (stretch, f", {stretch}", agent_id, _OPEN, agent_id, _OPEN, UNMARKED_BATCH)
    return await db.execute(ss.OPEN_UNMARKED_SQL, params)


# A stored open stretch has a null seq, and nothing else in the JSON is null.
_OPEN = "%null%"
