"""The embedded backend: one SQLite file in WAL mode, stdlib sqlite3 only, FTS5 for text and an
in-process numpy matrix per agent for exact cosine search. Every call runs on the store's own
thread (thread), never on the event loop."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial

import numpy as np

from memory.errors import NotFoundError
from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    FactFilter,
    Reflection,
    ScopeKey,
    ScoredFact,
    SessionAgentState,
    SessionInfo,
    StoredMessage,
)
from memory.store.base import ReembedItem, Vector
from memory.store.counts import ExportData
from memory.store.planned import PlannedStore
from memory.store.rules import Plan, Request, check_query_dimension
from memory.store.sqlite.codec import (
    consolidated_from_row,
    fact_columns,
    fact_from_row,
    from_blob,
    message_from_row,
    reflection_from_row,
    state_from_row,
    to_blob,
    to_us,
)
from memory.store.sqlite.lifecycle_reads import (
    ERASURES_DDL,
    export_data,
    read_epochs,
    user_agents,
)
from memory.store.sqlite.listings import SQLiteListings
from memory.store.sqlite.meta import read_embedding_meta, rows_in
from memory.store.sqlite.reads import read_snapshot_tx, read_state, reflection
from memory.store.sqlite.reembed import (
    pending_reembeds,
    put_side_vectors,
)
from memory.store.sqlite.schema import (
    ADDED_COLUMNS,
    AFTER_ADDED_COLUMNS,
    DDL,
    MIGRATE_1_TO_2,
    SAID_OR_UPDATED,
    SCHEMA_VERSION,
    needs_migration,
)
from memory.store.sqlite.search import (
    VectorCache,
    fact_filter_sql,
    facts_by_id,
    text_search_tx,
)
from memory.store.sqlite.sessions import (
    COLD_SESSIONS_SQL,
    purge_ended_sessions_tx,
    session_view,
)
from memory.store.sqlite.thread import SQLiteThread
from memory.store.sqlite.writes import apply_writes


class SQLiteStore(SQLiteListings, SQLiteThread, PlannedStore):
    """The store on one SQLite file; the writing calls are planned (memory.store.planned)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        self._vectors = VectorCache()
        self._closed = False

    async def _transact[S, R](self, request: Request[S], plan: Callable[[S], Plan[R]]) -> R:
        def body(conn: sqlite3.Connection) -> R:
            planned = plan(read_snapshot_tx(conn, request))
            apply_writes(conn, planned.writes)
            return planned.result

        return await self._write(body)

    # ------------------------------------------------------------ lifecycle

    async def setup(self) -> None:
        def create(conn: sqlite3.Connection) -> None:
            columns = {row[1] for row in conn.execute("PRAGMA table_info(session_agents)")}
            if needs_migration(columns):
                conn.executescript(MIGRATE_1_TO_2)
            conn.executescript(DDL + ERASURES_DDL)
            for table, column, declaration in ADDED_COLUMNS:
                if column not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
            conn.executescript(AFTER_ADDED_COLUMNS)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )

        await self._write(create)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        def close_connection(_: sqlite3.Connection) -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        if self._conn is not None:
            await self._call(close_connection)
        self._executor.shutdown(wait=False)

    # ------------------------------------------------------------ agents

    async def upsert_agent(self, config: AgentConfig) -> None:
        await self._write(
            lambda conn: conn.execute(
                "INSERT INTO agents (agent_id, config) VALUES (?, ?) "
                "ON CONFLICT (agent_id) DO UPDATE SET config = excluded.config",
                (config.agent_id, config.model_dump_json()),
            )
        )

    async def get_agent(self, agent_id: str) -> AgentConfig | None:
        rows = await self._rows("SELECT config FROM agents WHERE agent_id = ?", (agent_id,))
        return AgentConfig.model_validate_json(rows[0]["config"]) if rows else None

    # ------------------------------------------------------------ sessions and messages

    async def get_session(self, session_id: str, agent_id: str | None = None) -> SessionInfo | None:
        return await self._read(partial(session_view, session_id=session_id, agent_id=agent_id))

    async def get_session_agent_state(
        self, session_id: str, agent_id: str
    ) -> SessionAgentState | None:
        return await self._read(lambda conn: read_state(conn, session_id, agent_id))

    async def load_messages(
        self, session_id: str, after_seq: int, upto_seq: int
    ) -> list[StoredMessage]:
        rows = await self._rows(
            "SELECT * FROM messages WHERE session_id = ? AND seq > ? AND seq <= ? ORDER BY seq",
            (session_id, after_seq, upto_seq),
        )
        return [message_from_row(row) for row in rows]

    async def _messages(self, session_id: str, message_ids: list[str]) -> list[StoredMessage]:
        marks = ", ".join("?" * len(message_ids))
        rows = await self._rows(
            f"SELECT * FROM messages WHERE session_id = ? AND message_id IN ({marks}) ORDER BY seq",
            (session_id, *message_ids),
        )
        return [message_from_row(row) for row in rows]

    async def list_cold_sessions(
        self,
        *,
        idle_before: datetime,
        min_messages: int,
        min_weighted_tokens: float,
        after: tuple[datetime, str, str] | None,
        limit: int,
    ) -> list[SessionAgentState]:
        # Below every stored timestamp: the first page starts at the beginning of the index.
        start = (-(2**63), "", "") if after is None else (to_us(after[0]), after[1], after[2])
        params = {
            "idle_before": to_us(idle_before), "min_messages": min_messages,
            "min_tokens": min_weighted_tokens, "after_at": start[0], "after_session": start[1],
            "after_agent": start[2], "limit": max(limit, 0),  # a negative LIMIT means none
        }  # fmt: skip
        rows = await self._read(lambda conn: conn.execute(COLD_SESSIONS_SQL, params).fetchall())
        return [state_from_row(row) for row in rows]

    async def end_session(self, session_id: str, agent_id: str, at: datetime) -> None:
        def end(conn: sqlite3.Connection) -> None:
            # Ending again (a resumed session) restarts the retention period of its memory.
            cursor = conn.execute(
                "UPDATE session_agents SET ended_at = ?, purged = 0 "
                "WHERE session_id = ? AND agent_id = ?",
                (to_us(at), session_id, agent_id),
            )
            if cursor.rowcount == 0:
                raise NotFoundError(f"no session {session_id} of agent {agent_id}")

        await self._write(end)

    async def _unfinished_ended_sessions(
        self, ended_before: datetime, after: tuple[str, str], limit: int
    ) -> list[tuple[str, str]]:
        sql = (
            "SELECT u.session_id, u.agent_id FROM ("
            "  SELECT session_id, agent_id FROM reflections"
            "  WHERE scope = 'session' AND absorbed_into_version IS NULL"
            "  UNION SELECT session_id, agent_id FROM session_agents WHERE pending_messages > 0"
            ") AS u JOIN session_agents AS sa "  # ending is each agent's own
            "ON sa.session_id = u.session_id AND sa.agent_id = u.agent_id "
            "WHERE sa.ended_at IS NOT NULL AND sa.ended_at <= ? "
            "AND (u.session_id, u.agent_id) > (?, ?) "
            "ORDER BY u.session_id, u.agent_id LIMIT ?"
        )
        params = (to_us(ended_before), *after, limit)
        rows = await self._read(lambda conn: conn.execute(sql, params).fetchall())
        return [(str(row[0]), str(row[1])) for row in rows]

    async def _purge_ended_sessions(self, ended_before: datetime, limit: int) -> list[str]:
        return await self._write(
            partial(purge_ended_sessions_tx, ended_before=ended_before, limit=limit)
        )

    # ------------------------------------------------------------ embeddings cache

    async def put_embeddings(self, model: str, vectors: dict[str, Vector]) -> None:
        rows = [(model, text_hash, to_blob(vector)) for text_hash, vector in vectors.items()]
        await self._write(
            lambda conn: conn.executemany(
                "INSERT INTO embedding_cache (model, text_hash, vector) VALUES (?, ?, ?) "
                "ON CONFLICT (model, text_hash) DO UPDATE SET vector = excluded.vector",
                rows,
            )
        )

    async def get_embeddings(self, model: str, text_hashes: Sequence[str]) -> dict[str, Vector]:
        sql = "SELECT text_hash, vector FROM embedding_cache WHERE model = ? AND text_hash IN"
        hashes = list(dict.fromkeys(text_hashes))
        rows = await self._read(lambda conn: rows_in(conn, sql, hashes, model))
        return {row["text_hash"]: from_blob(row["vector"]) for row in rows}

    # ------------------------------------------------------------ facts

    async def _facts(self, fact_ids: list[str]) -> list[Fact]:
        return await self._read(lambda conn: facts_by_id(conn, fact_ids))

    async def vector_search(
        self, query: Vector, flt: FactFilter, *, limit: int, min_score: float = -1.0
    ) -> list[ScoredFact]:
        [hits] = await self.vector_searches([query], flt, limit=limit, min_score=min_score)
        return hits

    async def vector_searches(
        self, queries: Sequence[Vector], flt: FactFilter, *, limit: int, min_score: float = -1.0
    ) -> list[list[ScoredFact]]:
        """All of them in one read transaction: one look at the index's freshness, one load of
        the facts found."""
        vectors = [np.asarray(q, dtype=np.float32).reshape(-1) for q in queries]

        def search(conn: sqlite3.Connection) -> list[list[ScoredFact]]:
            meta = read_embedding_meta(conn)
            if meta is None:
                return [[] for _ in vectors]
            for vector in vectors:
                check_query_dimension(meta, vector.size)
            hits = [
                self._vectors.search(conn, v, flt, limit=limit, min_score=min_score)
                for v in vectors
            ]
            wanted = list(dict.fromkeys(fid for found in hits for fid, _ in found))
            facts = {fact.fact_id: fact for fact in facts_by_id(conn, wanted)}
            return [
                [ScoredFact(fact=facts[fid], score=score) for fid, score in found if fid in facts]
                for found in hits
            ]

        return await self._read(search)

    async def text_search(self, query: str, flt: FactFilter, *, limit: int) -> list[ScoredFact]:
        return await self._read(lambda conn: text_search_tx(conn, query, flt, limit, self._vectors))

    async def _recent_facts(self, flt: FactFilter, since: datetime, limit: int) -> list[Fact]:
        where, params = fact_filter_sql(flt)
        rows = await self._rows(
            f"SELECT {fact_columns('f')} FROM facts AS f WHERE {where} AND {SAID_OR_UPDATED} >= ? "
            f"ORDER BY {SAID_OR_UPDATED} DESC, f.rowid DESC LIMIT ?",
            (*params, to_us(since), limit),
        )
        return [fact_from_row(row) for row in rows]

    async def _touch_facts(self, fact_ids: list[str], at: datetime) -> None:
        sql = "UPDATE facts SET access_count = access_count + 1, last_accessed_at = ? WHERE fact_id IN"
        await self._write(lambda conn: rows_in(conn, sql, fact_ids, to_us(at)))

    async def _read_embedding_meta(self) -> tuple[str, int] | None:
        return await self._read(read_embedding_meta)

    # ------------------------------------------------------------ re-embedding

    async def reembed_pending(self, model: str, *, limit: int) -> list[ReembedItem]:
        return await self._read(lambda conn: pending_reembeds(conn, model, limit))

    async def put_reembedded(
        self, model: str, vectors: Sequence[tuple[ReembedItem, Vector]]
    ) -> None:
        await self._write(lambda conn: put_side_vectors(conn, model, vectors))

    # ------------------------------------------------------------ reflections and blobs

    async def _reflections(
        self, key: ScopeKey, *, buffered_only: bool, newest_first: bool, limit: int | None
    ) -> list[Reflection]:
        buffered = " AND absorbed_into_version IS NULL" if buffered_only else ""
        order = "DESC" if newest_first else "ASC"
        rows = await self._rows(
            f"SELECT * FROM reflections WHERE scope_key = ?{buffered} "
            f"ORDER BY formed_at {order}, rowid {order} LIMIT ?",
            (key.key, -1 if limit is None else limit),  # -1: no limit
        )
        return [reflection_from_row(row) for row in rows]

    async def count_unabsorbed(self, key: ScopeKey) -> int:
        rows = await self._rows(
            "SELECT count(*) FROM reflections WHERE scope_key = ? AND absorbed_into_version IS NULL",
            (key.key,),
        )
        return int(rows[0][0])

    async def get_consolidated(self, key: ScopeKey) -> ConsolidatedMemory | None:
        rows = await self._rows("SELECT * FROM consolidated WHERE scope_key = ?", (key.key,))
        return consolidated_from_row(rows[0]) if rows else None

    async def _stored_scope_versions(self, keys: Sequence[str]) -> dict[str, int]:
        sql = "SELECT key, version FROM scope_versions WHERE key IN"
        rows = await self._read(lambda conn: rows_in(conn, sql, keys))
        return {row["key"]: int(row["version"]) for row in rows}

    # ------------------------------------------------------------ management reads

    async def _list_facts(
        self, flt: FactFilter, *, valid_only: bool, offset: int, limit: int
    ) -> list[Fact]:
        where, params = fact_filter_sql(flt, valid_only=valid_only)
        sql = (
            f"SELECT {fact_columns('f')} FROM facts AS f WHERE {where} "
            "ORDER BY f.updated_at DESC, f.rowid DESC LIMIT ? OFFSET ?"
        )
        args = (*params, limit, offset)
        rows = await self._read(lambda conn: conn.execute(sql, args).fetchall())
        return [fact_from_row(row) for row in rows]

    async def count_facts(self, flt: FactFilter) -> int:
        where, params = fact_filter_sql(flt)
        sql = f"SELECT count(*) FROM facts AS f WHERE {where}"
        row = await self._read(lambda conn: conn.execute(sql, params).fetchone())
        return int(row[0])

    async def get_reflection(self, reflection_id: str) -> Reflection | None:
        return await self._read(lambda conn: reflection(conn, reflection_id))

    # ------------------------------------------------------------ data lifecycle reads

    async def _user_agents(self, user_id: str) -> list[str]:
        return await self._read(lambda conn: user_agents(conn, user_id))

    async def _erasure_epochs(self, agent_id: str, user_ids: list[str]) -> dict[str, int]:
        return await self._read(lambda conn: read_epochs(conn, agent_id, user_ids))

    async def export_data(
        self, *, agent_id: str | None, user_id: str | None, messages: bool
    ) -> ExportData:
        return await self._read(
            partial(export_data, agent_id=agent_id, user_id=user_id, messages=messages)
        )
