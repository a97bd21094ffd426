"""The server backend: PostgreSQL with pgvector, through psycopg 3 (async) and its pool.

Writes are planned once for every backend (memory.store.planned), and the SQL it shares with
SQLite is memory.store.sql's: ``_transact`` reads the planner's snapshot and applies its writes
in one SERIALIZABLE transaction (memory.store.postgres.pool). Many workers may share the database: formations of one agent and session that race are
serialised by PostgreSQL, and the loser is planned again on what the winner wrote.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memory.models import FactFilter, ScoredFact
from memory.store.base import Vector
from memory.store.postgres.codec import UPSERT_ACCESS, vector_param
from memory.store.postgres.db import PostgresDb
from memory.store.postgres.guests import mark_guests
from memory.store.postgres.hnsw import ensure_hnsw_index
from memory.store.postgres.pool import Conn, PostgresPool, connect
from memory.store.postgres.schema import migrate
from memory.store.postgres.search import text_hits, vector_hits
from memory.store.postgres.writes import apply_own
from memory.store.rules import Write, check_query_dimension
from memory.store.sql.db import Body
from memory.store.sql.reads import SqlReads
from memory.store.sql.store import SqlStore
from memory.store.sql.writes import apply_writes


class PostgresStore(PostgresPool, SqlStore[PostgresDb]):
    """The store on a PostgreSQL database (pgvector required); writes are planned."""

    def __init__(self, dsn: str, *, pool_size: int = 10, ef_search: int = 100) -> None:
        super().__init__(dsn, pool_size=pool_size, ef_search=ef_search)

    async def _apply_writes(self, db: PostgresDb, writes: Sequence[Write]) -> None:
        await apply_writes(db, writes, apply_own)

    async def _db_read[T](self, body: Body[PostgresDb, T]) -> T:
        return await self._read(lambda conn: body(PostgresDb(conn)))

    async def _db_write[T](self, body: Body[PostgresDb, T]) -> T:
        return await self._write(lambda conn: body(PostgresDb(conn)))

    async def _db_one[T](self, body: Body[PostgresDb, T]) -> T:
        return await self._one(lambda conn: body(PostgresDb(conn)))

    # ------------------------------------------------------------ lifecycle

    async def setup(self) -> None:
        """Apply the pending migrations (idempotent), mark the sessions with guests, open the
        pool, then what every start runs (PlannedLifecycle._upgrade_at_start)."""
        conn = await connect(self._dsn)
        try:
            await migrate(conn)
            await mark_guests(conn)  # after the migrations' transaction, at every start
            if (meta := await SqlReads(PostgresDb(conn)).embedding_meta()) is not None:
                await ensure_hnsw_index(conn, meta[1])
        finally:
            await conn.close()
        await self._open_pool()
        await self._upgrade_at_start()

    async def close(self) -> None:
        await self._close_pool()

    # ------------------------------------------------------------ facts

    async def _vector_search(
        self, query: Vector, flt: FactFilter, limit: int, min_score: float
    ) -> list[ScoredFact]:
        vector = vector_param(query)

        async def search(meta: tuple[str, int] | None) -> list[ScoredFact]:
            if meta is None:
                return []
            check_query_dimension(meta, vector.size)
            return await self._db_one(
                lambda db: vector_hits(
                    db, vector, flt, dimension=meta[1], limit=limit, min_score=min_score
                )
            )

        # One statement, on the cached meta: the query names the dimension in its WHERE, so
        # stale meta (another worker's re-embed switch) finds nothing rather than wrong rows;
        # only then is the meta read again (a search that finds nothing is rare and cheap).
        cached = await self.embedding_meta()
        if hits := await search(cached):
            return hits
        fresh = await self.embedding_meta(fresh=True)
        return [] if fresh == cached else await search(fresh)

    async def _text_search(self, query: str, flt: FactFilter, limit: int) -> list[ScoredFact]:
        return await self._db_read(lambda db: text_hits(db, query, flt, limit))

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
