"""The embedded backend: one SQLite file in WAL mode, stdlib sqlite3 only, FTS5 for text and an
in-process numpy matrix per agent for exact cosine search. Every call runs on the store's own
thread (thread), never on the event loop."""

from __future__ import annotations

import math
import os
import sqlite3
import time
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from memory.logging import get_logger
from memory.models import FactFilter, ScoredFact
from memory.store.base import Vector
from memory.store.counts import ForgetCounts
from memory.store.rules import Write, check_query_dimension
from memory.store.snapshots import run_sync
from memory.store.sql.db import Body
from memory.store.sql.reads import SqlReads
from memory.store.sql.store import SqlStore
from memory.store.sql.writes import apply_writes
from memory.store.sqlite.codec import to_us
from memory.store.sqlite.db import SQLiteDb
from memory.store.sqlite.fts import migrate_fts, refold_kana
from memory.store.sqlite.schema import (
    ADDED_COLUMNS,
    AFTER_ADDED_COLUMNS,
    DDL,
    DEGRADED_DDL,
    ERASURES_DDL,
    KANA_SCHEMA,
    MIGRATE_1_TO_2,
    SCHEMA_VERSION,
    needs_migration,
)
from memory.store.sqlite.search import VectorCache, text_search_tx
from memory.store.sqlite.thread import BUSY_TIMEOUT_SECONDS, SQLiteThread
from memory.store.sqlite.writes import apply_own

# How long a forget waits for readers of older snapshots before leaving the log's truncation to
# the store's next call: short, since the store's one writer waits with it.
_ERASED_WAL_WAIT_MS = 500
_WAL_TRUNCATE_EVERY_SECONDS = 60.0


class SQLiteStore(SQLiteThread, SqlStore[SQLiteDb]):
    """The store on one SQLite file; the writing calls are planned (memory.store.planned), the
    SQL it shares with PostgreSQL is memory.store.sql's."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        self._vectors = VectorCache()
        self._closed = False
        self._wal_holds_erased = False  # a forget's truncation of the log is still to be done
        self._wal_truncated_at = -math.inf  # when this store last tried (monotonic seconds)

    async def _apply_writes(self, db: SQLiteDb, writes: Sequence[Write]) -> None:
        await apply_writes(db, writes, apply_own)

    async def _db_read[T](self, body: Body[SQLiteDb, T]) -> T:
        result = await self._read(lambda conn: run_sync(body(SQLiteDb(conn))))
        if self._wal_holds_erased:
            await self._reader.call(lambda conn: self._truncate_wal(conn, wait_ms=0))
        return result

    async def _db_write[T](self, body: Body[SQLiteDb, T]) -> T:
        result = await self._write(lambda conn: run_sync(body(SQLiteDb(conn))))
        # Another process's forget may have left erased frames in the shared log (a read held
        # it past its wait): every writer empties the log now and then, so they go within a
        # minute of the next write, whoever forgot. It waits on no one.
        due = time.monotonic() - self._wal_truncated_at > _WAL_TRUNCATE_EVERY_SECONDS
        if self._wal_holds_erased or due:
            self._wal_truncated_at = time.monotonic()
            await self._writer.call(lambda conn: self._truncate_wal(conn, wait_ms=0))
        return result

    async def forget_user(
        self, user_id: str, *, agent_id: str | None, at: datetime
    ) -> list[ForgetCounts]:
        counts = await super().forget_user(user_id, agent_id=agent_id, at=at)
        # secure_delete zeroes what the erasure freed in the database file; the write-ahead log
        # keeps the frames that held the user's words, reused but never zeroed, for as long as a
        # connection is open (a server's: weeks). Checkpointed into the file and truncated, the
        # log holds none of them. A reader on an older snapshot (another process's page read)
        # keeps the checkpoint from the log's end: it is tried again after every later call of
        # this store until it goes through, waiting on no one (the writer is not held 30 s).
        self._wal_holds_erased = True
        await self._writer.call(lambda conn: self._truncate_wal(conn, wait_ms=_ERASED_WAL_WAIT_MS))
        return counts

    def _truncate_wal(self, conn: sqlite3.Connection, *, wait_ms: int) -> None:
        """Checkpoint the whole log into the file and truncate it, waiting at most ``wait_ms``
        for readers of older snapshots; done, the log holds no erased frame."""
        conn.execute(f"PRAGMA busy_timeout = {wait_ms}")
        try:
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        if not busy:
            self._wal_holds_erased = False

    # ------------------------------------------------------------ lifecycle

    async def setup(self) -> None:
        def create(conn: sqlite3.Connection) -> None:
            columns = {row[1] for row in conn.execute("PRAGMA table_info(session_agents)")}
            if needs_migration(columns):
                conn.executescript(MIGRATE_1_TO_2)
            conn.executescript(DDL + ERASURES_DDL + DEGRADED_DDL)
            for table, column, declaration in ADDED_COLUMNS:
                if column not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
            conn.executescript(AFTER_ADDED_COLUMNS)
            migrate_fts(conn)
            stored = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if stored is not None and int(stored[0]) < KANA_SCHEMA:
                refold_kana(conn)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )

        await self._write(create)
        await self._upgrade_at_start()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._wal_holds_erased:
            # A short-lived store (`mnemos forget`) has no next call to try again on, and a worker
            # keeping the file open leaves the log as it is: wait for the readers here, as long as
            # any statement would.
            wait_ms = int(BUSY_TIMEOUT_SECONDS * 1000)
            await self._writer.call(lambda conn: self._truncate_wal(conn, wait_ms=wait_ms))
            if self._wal_holds_erased:
                get_logger().warning(
                    "erased words left in the write-ahead log: a read held it past the timeout",
                )
        await self._close_connections()

    # ------------------------------------------------------------ facts

    async def _vector_search(
        self, query: Vector, flt: FactFilter, limit: int, min_score: float
    ) -> list[ScoredFact]:
        [hits] = await self._vector_searches([query], flt, limit, min_score)
        return hits

    async def _vector_searches(
        self, queries: Sequence[Vector], flt: FactFilter, limit: int, min_score: float
    ) -> list[list[ScoredFact]]:
        """All of them in one read transaction: one look at the index's freshness, one load of
        the facts found."""
        vectors = [np.asarray(q, dtype=np.float32).reshape(-1) for q in queries]

        async def search(db: SQLiteDb) -> list[list[ScoredFact]]:
            reads = SqlReads(db)
            meta = await reads.embedding_meta()
            if meta is None:
                return [[] for _ in vectors]
            for vector in vectors:
                check_query_dimension(meta, vector.size)
            hits = [
                self._vectors.search(db.conn, v, flt, limit=limit, min_score=min_score)
                for v in vectors
            ]
            wanted = list(dict.fromkeys(fid for found in hits for fid, _ in found))
            facts = {fact.fact_id: fact for fact in await reads.facts_by_id(wanted)}
            return [
                [ScoredFact(fact=facts[fid], score=score) for fid, score in found if fid in facts]
                for found in hits
            ]

        return await self._db_read(search)

    async def _text_search(self, query: str, flt: FactFilter, limit: int) -> list[ScoredFact]:
        return await self._db_read(lambda db: text_search_tx(db, query, flt, limit, self._vectors))

    async def _touch_facts(self, fact_ids: list[str], at: datetime) -> None:
        sql = (
            "UPDATE facts SET access_count = access_count + 1, last_accessed_at = %s WHERE fact_id"
        )
        await self._db_write(lambda db: db.execute_in(sql, fact_ids, to_us(at)))
