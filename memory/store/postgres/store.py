"""The server backend: PostgreSQL with pgvector, through psycopg 3 (async) and its pool.

Writes are planned once for every backend (memory.store.planned): ``_transact`` reads the
planner's snapshot and applies its writes in one SERIALIZABLE transaction (memory.store.postgres
.pool). Many workers may share the database: formations of one agent and session that race are
serialised by PostgreSQL, and the loser is planned again on what the winner wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial

from psycopg.types.json import Jsonb

from memory.api_keys import ApiKey
from memory.directory import AgentUser
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
from memory.store.postgres.codec import (
    UPSERT_ACCESS,
    consolidated_from_row,
    from_vector,
    message_from_row,
    reflection_from_row,
    state_from_row,
    vector_param,
)
from memory.store.postgres.lifecycle_reads import export_data, read_epochs, user_agents
from memory.store.postgres.pool import Conn, PostgresPool, connect, embedding_meta
from memory.store.postgres.reads import PostgresReads, api_key, facts_by_id, read_state, reflection
from memory.store.postgres.reembed import (
    pending_reembeds,
    put_side_vectors,
)
from memory.store.postgres.schema import hnsw_index_sql, migrate
from memory.store.postgres.search import (
    distinct,
    fact_filter_sql,
    listed_facts,
    text_hits,
    vector_hits,
)
from memory.store.postgres.sessions import (
    COLD_SESSIONS_SQL,
    UNFINISHED_ENDED_SQL,
    agent_sessions,
    agent_users,
    purge_ended,
    session_view,
)
from memory.store.postgres.writes import apply_writes
from memory.store.rules import Plan, Request, check_query_dimension
from memory.store.snapshots import read_snapshot


class PostgresStore(PostgresPool, PlannedStore):
    """The store on a PostgreSQL database (pgvector required); writes are planned."""

    def __init__(self, dsn: str, *, pool_size: int = 10, ef_search: int = 100) -> None:
        super().__init__(dsn, pool_size=pool_size, ef_search=ef_search)

    async def _transact[S, R](self, request: Request[S], plan: Callable[[S], Plan[R]]) -> R:
        async def body(conn: Conn) -> R:
            planned = plan(await read_snapshot(PostgresReads(conn), request))
            await apply_writes(conn, planned.writes)
            return planned.result

        return await self._write(body)

    # ------------------------------------------------------------ lifecycle

    async def setup(self) -> None:
        """Apply the pending migrations (idempotent), then open the pool."""
        conn = await connect(self._dsn)
        try:
            await migrate(conn)
            if (meta := await embedding_meta(conn)) is not None:
                await conn.execute(hnsw_index_sql(meta[1]).encode())
        finally:
            await conn.close()
        await self._open_pool()

    async def close(self) -> None:
        await self._close_pool()

    # ------------------------------------------------------------ agents

    async def upsert_agent(self, config: AgentConfig) -> None:
        await self._rows(
            "INSERT INTO agents (agent_id, config) VALUES (%s, %s) ON CONFLICT (agent_id) "
            "DO UPDATE SET config = excluded.config RETURNING agent_id",
            (config.agent_id, Jsonb(config.model_dump(mode="json"))),
        )

    async def get_agent(self, agent_id: str) -> AgentConfig | None:
        rows = await self._rows("SELECT config FROM agents WHERE agent_id = %s", (agent_id,))
        return AgentConfig.model_validate(rows[0]["config"]) if rows else None

    # ------------------------------------------------------------ sessions and messages

    async def get_session(self, session_id: str, agent_id: str | None = None) -> SessionInfo | None:
        return await self._read(partial(session_view, session_id=session_id, agent_id=agent_id))

    async def get_session_agent_state(
        self, session_id: str, agent_id: str
    ) -> SessionAgentState | None:
        return await self._one(lambda conn: read_state(conn, session_id, agent_id))

    async def load_messages(
        self, session_id: str, after_seq: int, upto_seq: int
    ) -> list[StoredMessage]:
        rows = await self._rows(
            "SELECT * FROM messages WHERE session_id = %s AND seq > %s AND seq <= %s ORDER BY seq",
            (session_id, after_seq, upto_seq),
        )
        return [message_from_row(row) for row in rows]

    async def _messages(self, session_id: str, message_ids: list[str]) -> list[StoredMessage]:
        rows = await self._rows(
            "SELECT * FROM messages WHERE session_id = %s AND message_id = ANY(%s) ORDER BY seq",
            (session_id, message_ids),
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
        at, session, agent = after or (None, "", "")
        params: dict[str, object] = {
            "idle_before": idle_before, "min_messages": min_messages,
            "min_tokens": min_weighted_tokens, "after_at": at, "after_session": session,
            "after_agent": agent, "limit": max(limit, 0),
        }  # fmt: skip
        rows = await self._rows(COLD_SESSIONS_SQL, params)
        return [state_from_row(row) for row in rows]

    async def end_session(self, session_id: str, agent_id: str, at: datetime) -> None:
        async def end(conn: Conn) -> None:
            # Ending again (a resumed session) restarts the retention period of its memory.
            cur = await conn.execute(
                "UPDATE session_agents SET ended_at = %s, purged = false "
                "WHERE session_id = %s AND agent_id = %s",
                (at, session_id, agent_id),
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"no session {session_id} of agent {agent_id}")

        await self._write(end)

    async def _unfinished_ended_sessions(
        self, ended_before: datetime, after: tuple[str, str], limit: int
    ) -> list[tuple[str, str]]:
        params = (ended_before, *after, limit)
        rows = await self._rows(UNFINISHED_ENDED_SQL, params)
        return [(str(row["session_id"]), str(row["agent_id"])) for row in rows]

    async def _purge_ended_sessions(self, ended_before: datetime, limit: int) -> list[str]:
        return await self._write(partial(purge_ended, ended_before=ended_before, limit=limit))

    # ------------------------------------------------------------ embeddings cache

    async def put_embeddings(self, model: str, vectors: dict[str, Vector]) -> None:
        rows = [(model, text_hash, vector_param(v)) for text_hash, v in sorted(vectors.items())]

        async def put(conn: Conn) -> None:
            await conn.cursor().executemany(
                "INSERT INTO embedding_cache (model, text_hash, vector) VALUES (%s, %s, %s) "
                "ON CONFLICT (model, text_hash) DO UPDATE SET vector = excluded.vector",
                rows,
            )

        if rows:
            await self._write(put)

    async def get_embeddings(self, model: str, text_hashes: Sequence[str]) -> dict[str, Vector]:
        rows = await self._rows(
            "SELECT text_hash, vector FROM embedding_cache WHERE model = %s "
            "AND text_hash = ANY(%s)",
            (model, distinct(text_hashes)),
        )
        return {row["text_hash"]: from_vector(row["vector"]) for row in rows}

    # ------------------------------------------------------------ facts

    async def _facts(self, fact_ids: list[str]) -> list[Fact]:
        return await self._one(lambda conn: facts_by_id(conn, fact_ids))

    async def vector_search(
        self, query: Vector, flt: FactFilter, *, limit: int, min_score: float = -1.0
    ) -> list[ScoredFact]:
        vector = vector_param(query)

        async def search(meta: tuple[str, int] | None) -> list[ScoredFact]:
            if meta is None:
                return []
            check_query_dimension(meta, vector.size)
            return await self._one(
                lambda conn: vector_hits(
                    conn, vector, flt, dimension=meta[1], limit=limit, min_score=min_score
                )
            )

        # One statement, on the cached meta: the query names the dimension in its WHERE, so
        # stale meta (another worker's re-embed switch) finds nothing rather than wrong rows;
        # only then is the meta read again (a search that finds nothing is rare and cheap).
        cached = await self.embedding_meta()
        if hits := await search(cached):
            return hits
        self._meta = None
        fresh = await self.embedding_meta()
        return [] if fresh == cached else await search(fresh)

    async def text_search(self, query: str, flt: FactFilter, *, limit: int) -> list[ScoredFact]:
        return await self._read(lambda conn: text_hits(conn, query, flt, limit))

    async def _recent_facts(self, flt: FactFilter, since: datetime, limit: int) -> list[Fact]:
        return await self._one(
            lambda conn: listed_facts(
                conn, flt, valid_only=True,
                # The expression of the facts_said index (schema migration 3).
                extra="AND coalesce(f.said_at, f.updated_at) >= %(since)s "
                "ORDER BY coalesce(f.said_at, f.updated_at) DESC, f.ord DESC LIMIT %(limit)s",
                params={"since": since, "limit": limit},
            )
        )  # fmt: skip

    async def _touch_facts(self, fact_ids: list[str], at: datetime) -> None:
        async def touch(conn: Conn) -> None:
            await conn.execute(
                UPSERT_ACCESS.format(
                    rows="SELECT fact_id, 1, %s FROM facts WHERE fact_id = ANY(%s) "
                    "ORDER BY fact_id",
                    counts="access_count = a.access_count + 1",
                ).encode(),
                (at, fact_ids),
            )

        await self._write(touch)

    async def _read_embedding_meta(self) -> tuple[str, int] | None:
        return await self._one(embedding_meta)

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
            f"SELECT * FROM reflections WHERE scope_key = %s{buffered} "
            f"ORDER BY formed_at {order}, ord {order} LIMIT %s",
            (key.key, limit),  # NULL: no limit
        )
        return [reflection_from_row(row) for row in rows]

    async def count_unabsorbed(self, key: ScopeKey) -> int:
        rows = await self._rows(
            "SELECT count(*) AS n FROM reflections WHERE scope_key = %s "
            "AND absorbed_into_version IS NULL",
            (key.key,),
        )
        return int(rows[0]["n"])

    async def get_consolidated(self, key: ScopeKey) -> ConsolidatedMemory | None:
        rows = await self._rows("SELECT body FROM consolidated WHERE scope_key = %s", (key.key,))
        return consolidated_from_row(rows[0]) if rows else None

    async def _stored_scope_versions(self, keys: Sequence[str]) -> dict[str, int]:
        rows = await self._rows(
            "SELECT key, version FROM scope_versions WHERE key = ANY(%s)", (list(keys),)
        )
        return {row["key"]: int(row["version"]) for row in rows}

    # ------------------------------------------------------------ management reads

    async def _list_facts(
        self, flt: FactFilter, *, valid_only: bool, offset: int, limit: int
    ) -> list[Fact]:
        return await self._one(
            lambda conn: listed_facts(
                conn, flt, valid_only=valid_only,
                extra="ORDER BY f.updated_at DESC, f.ord DESC LIMIT %(limit)s OFFSET %(offset)s",
                params={"limit": limit, "offset": offset},
            )
        )  # fmt: skip

    async def count_facts(self, flt: FactFilter) -> int:
        where, params = fact_filter_sql(flt)
        rows = await self._rows(f"SELECT count(*) AS n FROM facts AS f WHERE {where}", params)
        return int(rows[0]["n"])

    async def get_reflection(self, reflection_id: str) -> Reflection | None:
        return await self._one(lambda conn: reflection(conn, reflection_id))

    # ------------------------------------------------------------ data lifecycle reads

    async def _user_agents(self, user_id: str) -> list[str]:
        return await self._read(lambda conn: user_agents(conn, user_id))

    async def _erasure_epochs(self, agent_id: str, user_ids: list[str]) -> dict[str, int]:
        return await self._one(lambda conn: read_epochs(conn, agent_id, user_ids))

    async def export_data(
        self, *, agent_id: str | None, user_id: str | None, messages: bool
    ) -> ExportData:
        return await self._read(
            partial(export_data, agent_id=agent_id, user_id=user_id, messages=messages)
        )

    # ------------------------------------------------------------ listings and API keys

    async def list_agent_users(self, agent_id: str, *, limit: int = 100) -> list[AgentUser]:
        return await self._one(lambda conn: agent_users(conn, agent_id, max(limit, 0)))

    async def list_agent_sessions(
        self, agent_id: str, *, user_id: str | None = None, limit: int = 100
    ) -> list[SessionInfo]:
        return await self._read(lambda conn: agent_sessions(conn, agent_id, user_id, max(limit, 0)))

    async def get_api_key(self, key_id: str) -> ApiKey | None:
        return await self._one(lambda conn: api_key(conn, key_id))

    async def list_api_keys(self) -> list[ApiKey]:
        rows = await self._rows("SELECT record FROM api_keys ORDER BY created_at, key_id")
        return [ApiKey.model_validate(row["record"]) for row in rows]
