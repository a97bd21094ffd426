"""Connections and transactions of the PostgreSQL backend.

Writes are SERIALIZABLE transactions: a planner reads its snapshot and the writes it plans are
applied in the same transaction, so any concurrent change to what the snapshot read (another
formation of the same agent and session, a consolidation of the same blob, an edit of the same
fact) makes one of the two fail with a serialization failure, and that one is run again from
the start, on a fresh snapshot: the planner then sees the other's writes (a moved cursor, a new
fact version) and decides again. Planning is pure, so a retry is safe. Reads of several
statements run in one REPEATABLE READ READ ONLY transaction (one snapshot).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg import IsolationLevel, errors
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memory.store.outage import CONNECT_TIMEOUT_SECONDS, outages_translated
from memory.store.retry import retry_conflicts

Conn = psycopg.AsyncConnection[DictRow]
Row = dict[str, Any]

MAX_ATTEMPTS = 30
# What a concurrent transaction causes, never the request itself: run it again. A unique
# violation is one too (two transactions inserting the same key, the second having read before
# the first committed); a key that truly exists is seen by the snapshot of the next attempt.
_RETRY = (errors.SerializationFailure, errors.DeadlockDetected, errors.UniqueViolation)
# The server says it cannot serve now: shutting down, crashed, starting, out of connections.
_SERVER_AWAY = frozenset({"57P01", "57P02", "57P03", "53300"})


def postgres_outage(exc: BaseException) -> bool:
    """Whether ``exc`` is the server out of reach: no connection to be had (the pool's timeout, a
    refused connection), a connection lost (no SQLSTATE: the server never answered), a
    connection exception (class 08), or the server saying it cannot serve now. A statement's own
    failure (a timeout, a constraint) is not: the server answered it."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in _SERVER_AWAY


async def connect(dsn: str) -> Conn:
    """One connection outside the pool (migrations run before the pool registers the types)."""
    return await psycopg.AsyncConnection.connect(dsn, autocommit=True, row_factory=dict_row)


class PostgresPool:
    """The pool of one store; every statement runs through ``_read``, ``_write`` or ``_one``."""

    def __init__(
        self,
        dsn: str,
        *,
        pool_size: int = 10,
        ef_search: int = 100,
        connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
    ) -> None:
        self._dsn = dsn
        self._ef_search = ef_search
        self._pool: AsyncConnectionPool[Conn] | None = None
        self._pool_size = pool_size
        self._connect_timeout = connect_timeout

    async def _configure(self, conn: Conn) -> None:
        await register_vector_async(conn)
        # UTC timestamps; ef_search: HNSW candidates per query (recall against latency);
        # iterative scans: a filtered query keeps walking the graph until it has its rows.
        await conn.execute(
            "SELECT set_config('timezone', 'UTC', false), "
            "set_config('hnsw.ef_search', %s, false), "
            "set_config('hnsw.iterative_scan', 'relaxed_order', false)",
            (str(self._ef_search),),
        )

    async def _open_pool(self) -> None:
        if self._pool is None:
            pool = AsyncConnectionPool(
                self._dsn,
                min_size=1,
                max_size=self._pool_size,
                kwargs={"autocommit": True, "row_factory": dict_row},
                connection_class=psycopg.AsyncConnection[DictRow],
                configure=self._configure,
                # A connection that died with its server is discarded when returned broken; the
                # call that met it fails (a store step is retried by Temporal).
                open=False,
                # A call waits this long for a connection, not psycopg_pool's 30 s: a server
                # out of reach is a prompt StoreUnavailableError, not a request held a minute.
                timeout=self._connect_timeout,
            )
            await pool.open(wait=True)
            self._pool = pool

    async def _close_pool(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    def _connection(self) -> Any:
        assert self._pool is not None, "call setup() first"
        return self._pool.connection()

    async def _write[T](self, body: Callable[[Conn], Awaitable[T]]) -> T:
        """``body`` in one SERIALIZABLE transaction, run again on a serialization conflict."""
        return await retry_conflicts(
            lambda: self._on_live_connection(body, IsolationLevel.SERIALIZABLE, read_only=False),
            lambda exc: isinstance(exc, _RETRY),
            attempts=MAX_ATTEMPTS,
            first_delay=0.01,
        )

    async def _read[T](self, body: Callable[[Conn], Awaitable[T]]) -> T:
        """``body`` on one snapshot."""
        return await self._on_live_connection(body, IsolationLevel.REPEATABLE_READ, read_only=True)

    async def _one[T](self, body: Callable[[Conn], Awaitable[T]]) -> T:
        """``body`` of a single statement: no transaction around it."""
        return await self._on_live_connection(body, None, read_only=True)

    async def _on_live_connection[T](
        self, body: Callable[[Conn], Awaitable[T]], level: IsolationLevel | None, *, read_only: bool
    ) -> T:
        """``_attempts``, the server out of reach raised as StoreUnavailableError."""
        with outages_translated(postgres_outage):
            return await self._attempts(body, level, read_only=read_only)

    async def _attempts[T](
        self, body: Callable[[Conn], Awaitable[T]], level: IsolationLevel | None, *, read_only: bool
    ) -> T:
        """``body`` in a transaction at ``level`` (None: autocommit, a read of one statement).

        A pooled connection may have died with its server (a restart) since its last use; the
        pool only learns it when the connection fails. A transaction that failed that way at
        its BEGIN never ran, and a one-statement read is safe to repeat: both run again once,
        after the pool has tested its idle connections (the others died too). A transaction that failed later may or may not have committed: its
        error reaches the caller (a store step is retried; the writes the guarantees rest on
        are idempotent). No connection within the pool's timeout is no dead connection: the
        server is out of reach, and a second wait would only double the caller's."""
        for attempt in (1, 2):
            began = False
            try:
                async with self._connection() as conn:
                    if level is None:
                        return await body(conn)
                    await _begin_as(conn, level, read_only=read_only)
                    async with conn.transaction():
                        began = True
                        return await body(conn)
            except psycopg.OperationalError as exc:
                if attempt == 2 or (began and not read_only) or isinstance(exc, PoolTimeout):
                    raise
                # The server went away (a restart, a failover): every idle connection died with
                # it, so the next one the pool hands out would fail too. Test them all first.
                if self._pool is not None:
                    await self._pool.check()
        raise AssertionError("unreachable")


async def _begin_as(conn: Conn, level: IsolationLevel, *, read_only: bool) -> None:
    """The next BEGIN names the level (no statement of its own; an idle connection in
    autocommit mode only records it)."""
    if conn.isolation_level != level:
        await conn.set_isolation_level(level)
    if conn.read_only != read_only:
        await conn.set_read_only(read_only)
