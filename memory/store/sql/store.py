"""The store calls both SQL backends answer with the same SQL (memory.store.sql): the planned
writes' transaction (snapshot, plan, writes), agents, sessions and messages, the cold and ended
scans, the embedding cache, fact listings, reflections and blobs, the data-lifecycle reads,
listings and API keys, re-embedding's side vectors.

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
from memory.api_keys import ApiKey
from memory.degraded import DegradedWindow
from memory.directory import AgentUser
from memory.models import (
    SET_ASIDE,
    AgentConfig,
    Fact,
    FactFilter,
    Reflection,
    ScopeKey,
    SessionAgentState,
    SessionInfo,
    StoredMessage,
)
from memory.store.base import Cold, ReembedItem, Vector
from memory.store.base_manage import Keyset, ReembedTarget, Which, current_side_vectors, side_tag
from memory.store.counts import ExportData
from memory.store.planned import PlannedStore
from memory.store.rules import Plan, Request, Write
from memory.store.rules.export import Exported
from memory.store.snapshots import SnapshotReads, run_planned
from memory.store.sql import degraded, facts
from memory.store.sql import sessions as ss
from memory.store.sql.db import Db
from memory.store.sql.lifecycle_reads import (
    export_data,
    export_fact_ids,
    export_facts,
    user_agents,
)
from memory.store.sql.reads import PENDING_REEMBED, SqlReads, pending_params

type Body[D: Db, T] = Callable[[D], Coroutine[Any, Any, T]]


class SqlStore[D: Db](PlannedStore):
    """D: the backend's connection, which its own writes take."""

    async def _transact[S, R](self, request: Request[S], plan: Callable[[S], Plan[R]]) -> R:
        return await self._db_write(
            lambda db: run_planned(SqlReads(db), request, plan, partial(self._apply_writes, db))
        )

    @abc.abstractmethod
    async def _apply_writes(self, db: D, writes: Sequence[Write]) -> None:
        """The planners' writes, in order (the shared ones by memory.store.sql.writes)."""

    @abc.abstractmethod
    async def _db_read[T](self, body: Body[D, T]) -> T:
        """``body`` on one snapshot."""

    @abc.abstractmethod
    async def _db_write[T](self, body: Body[D, T]) -> T:
        """``body`` in one writing transaction."""

    async def _db_one[T](self, body: Body[D, T]) -> T:
        """``body`` of a single statement, which needs no transaction of its own."""
        return await self._db_read(body)

    async def _read_once[T](self, read: Callable[[SnapshotReads], Coroutine[Any, Any, T]]) -> T:
        return await self._db_one(lambda db: read(SqlReads(db)))

    # ------------------------------------------------------------ agents

    async def upsert_agent(self, config: AgentConfig) -> None:
        await self._db_write(
            lambda db: db.execute(
                "INSERT INTO agents (agent_id, config) VALUES (%s, %s) "
                "ON CONFLICT (agent_id) DO UPDATE SET config = excluded.config",
                (config.agent_id, db.document(config)),
            )
        )

    async def get_agent(self, agent_id: str) -> AgentConfig | None:
        return await self._db_one(lambda db: _agent(db, agent_id))

    async def _update_agent(
        self, agent_id: str, change: Callable[[AgentConfig], AgentConfig]
    ) -> AgentConfig | None:
        async def update(db: Db) -> AgentConfig | None:
            # SQLite's one writer and PostgreSQL's SERIALIZABLE (a concurrent update of the row
            # fails and is run again) keep the read and the write of this transaction together.
            if (current := await _agent(db, agent_id)) is None:
                return None
            changed = change(current)
            await db.execute(
                "UPDATE agents SET config = %s WHERE agent_id = %s",
                (db.document(changed), agent_id),
            )
            return changed

        return await self._db_write(update)

    async def _open_unmarked(self) -> None:
        """memory.switch_marks.opened, written at setup to the states it is for, agent by agent
        and a batch at a time."""
        agents = await self._db_read(
            lambda db: db.fetch("SELECT agent_id, config FROM agents ORDER BY agent_id")
        )
        for row in agents:
            agent_id = row["agent_id"]
            # The agent read in the batch's own transaction: a change of its switches meanwhile
            # is either before the batch (its switches) or after (states already opened).
            while await self._db_write(partial(_open_unmarked_batch, agent_id=agent_id)):
                pass

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
        return await self._db_one(lambda db: ss.first_seqs(db, session_id))

    async def _messages(self, session_id: str, message_ids: list[str]) -> list[StoredMessage]:
        async def load(db: Db) -> list[StoredMessage]:
            sql = "SELECT * FROM messages WHERE session_id = %s AND message_id"
            rows = await db.fetch_in(sql, message_ids, session_id)
            return sorted(map(db.message, rows), key=lambda m: m.seq)

        return await self._db_one(load)

    async def _cold_sessions(
        self,
        idle_before: datetime,
        min_messages: int,
        min_tokens: float,
        after: Cold,
        limit: int,
        rest_before: datetime | None,
    ) -> list[SessionAgentState]:
        return await self._db_one(
            lambda db: ss.cold_sessions(
                db, idle_before, min_messages, min_tokens, after, limit, rest_before
            )
        )

    async def _end_session(self, session_id: str, agent_id: str, at: datetime) -> bool:
        return await self._db_write(lambda db: ss.end_session(db, session_id, agent_id, at))

    async def _unfinished_ended_sessions(
        self, ended_before: datetime, after: tuple[str, str], limit: int
    ) -> list[tuple[str, str]]:
        return await self._db_one(lambda db: ss.unfinished_ended(db, ended_before, after, limit))

    # ------------------------------------------------------------ embeddings cache

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
        return await self._db_one(lambda db: facts.recent_facts(db, flt, since, limit))

    async def _list_facts(
        self, flt: FactFilter, *, valid_only: bool, offset: int, limit: int, keyset: Keyset | None
    ) -> list[Fact]:
        return await self._db_one(
            lambda db: facts.list_facts(
                db, flt, valid_only=valid_only, offset=offset, limit=limit, keyset=keyset
            )
        )

    async def count_facts(self, flt: FactFilter) -> int:
        return await self._db_one(lambda db: facts.count_facts(db, flt))

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

    # ------------------------------------------------------------ reflections and blobs

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

    async def _stored_scope_versions(self, keys: Sequence[str]) -> dict[str, int]:
        async def get(db: Db) -> dict[str, int]:
            rows = await db.fetch_in("SELECT key, version FROM scope_versions WHERE key", keys)
            return {row["key"]: int(row["version"]) for row in rows}

        return await self._db_one(get)

    # ------------------------------------------------------------ data lifecycle reads

    async def _user_agents(self, user_id: str) -> list[str]:
        return await self._db_read(lambda db: user_agents(db, user_id))

    async def _export_data(
        self, *, agent_id: str | None, user_id: str | None, messages: bool, facts: bool
    ) -> ExportData:
        return await self._db_read(
            partial(export_data, agent_id=agent_id, user_id=user_id, messages=messages, facts=facts)
        )

    async def export_fact_ids(self, *, agent_id: str | None, user_id: str | None) -> list[str]:
        return await self._db_one(lambda db: export_fact_ids(db, agent_id, user_id))

    async def _export_facts(self, fact_ids: Sequence[str]) -> list[Exported]:
        return await self._db_one(lambda db: export_facts(db, fact_ids))

    # ------------------------------------------------------------ degraded windows

    async def _list_degraded(
        self, agent_id: str | None, session_id: str | None, include_reformed: bool, limit: int
    ) -> list[DegradedWindow]:
        return await self._db_one(
            lambda db: degraded.list_degraded(db, agent_id, session_id, include_reformed, limit)
        )

    async def mark_reformed(
        self,
        agent_id: str,
        session_id: str,
        after_seq: int,
        upto_seq: int,
        *,
        steps: Sequence[str],
        at: datetime,
    ) -> int:
        return await self._db_write(
            lambda db: degraded.mark_reformed(
                db, agent_id, session_id, after_seq, upto_seq, steps, at
            )
        )

    # ------------------------------------------------------------ listings and API keys

    async def _list_agent_users(self, agent_id: str, limit: int) -> list[AgentUser]:
        return await self._db_one(lambda db: ss.agent_users(db, agent_id, limit))

    async def _list_agent_sessions(
        self, agent_id: str, user_id: str | None, limit: int
    ) -> list[SessionInfo]:
        return await self._db_read(lambda db: ss.agent_sessions(db, agent_id, user_id, limit))

    async def list_api_keys(self) -> list[ApiKey]:
        async def load(db: Db) -> list[ApiKey]:
            rows = await db.fetch("SELECT record FROM api_keys ORDER BY created_at, key_id")
            return [db.model(ApiKey, row["record"]) for row in rows]

        return await self._db_one(load)


async def _agent(db: Db, agent_id: str) -> AgentConfig | None:
    row = await db.fetch_one("SELECT config FROM agents WHERE agent_id = %s", (agent_id,))
    return None if row is None else db.model(AgentConfig, row["config"])


async def _open_unmarked_batch(db: Db, *, agent_id: str) -> int:
    if (agent := await _agent(db, agent_id)) is None:
        return 0
    stretch = json.dumps(switch_marks.opened(agent))
    params = (stretch, f", {stretch}", agent_id, _OPEN, agent_id, _OPEN, ss.UNMARKED_BATCH)
    return await db.execute(ss.OPEN_UNMARKED_SQL, params)


# A stored open stretch has a null seq, and nothing else in the JSON is null.
_OPEN = "%null%"
