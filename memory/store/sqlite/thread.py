"""The thread that owns a store's SQLite connection, and its transactions.

Every database call runs on a dedicated worker thread that owns its connection (one for reads,
one for writes), so the event loop never waits on disk or on a lock. Several stores (threads or
processes) may share the file: writes are BEGIN IMMEDIATE transactions, which take the write lock
up front and wait for it (busy_timeout) instead of failing when a read transaction would have to
be upgraded.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memory.store.outage import outages_translated

BUSY_TIMEOUT_SECONDS = 30.0
# Reads through a memory map instead of read() calls into SQLite's small page cache: a text
# search visits each match's row at random, and at 100k facts its FTS5 join took 5.2 ms with
# read() and 0.9 ms mapped (bench/search.py's queries). The map is address space, not memory:
# the pages are the OS page cache's, shared with every process on the file.
MMAP_BYTES = 1 << 30


# The file cannot be opened (a directory gone or unreadable, a volume unmounted) or read and
# written (an I/O error of the disk under it): the store out of reach, not a bug. The primary
# result code: every extended I/O error (SQLITE_IOERR_READ, …) is one.
_OUT_OF_REACH = frozenset({sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR})


def sqlite_outage(exc: BaseException) -> bool:
    """Whether ``exc`` is the database file out of reach."""
    # None for an error the module raises itself (a closed connection): no database's answer.
    code: int | None = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.Error) and code is not None and code & 0xFF in _OUT_OF_REACH


def _transaction[T](
    conn: sqlite3.Connection, begin: str, body: Callable[[sqlite3.Connection], T]
) -> T:
    """Run body between ``begin`` and COMMIT; any exception rolls everything back."""
    conn.execute(begin)
    try:
        result = body(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


class _Owned:
    """One connection and the one thread that uses it."""

    def __init__(self, path: Path, name: str) -> None:
        self._path = path
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._conn: sqlite3.Connection | None = None  # opened and used on the worker thread only

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            # check_same_thread off: the single worker thread serialises every use anyway.
            conn = sqlite3.connect(
                self._path, autocommit=True, timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False
            )
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            # Deleted content is overwritten, not left in free page space, whatever the build's
            # default: what forget_user deletes is not in the file afterwards.
            conn.execute("PRAGMA secure_delete = ON")
            conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            self._conn = conn
        return self._conn

    async def call[T](self, fn: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        with outages_translated(sqlite_outage):
            return await loop.run_in_executor(self._executor, lambda: fn(self._connection()))

    async def close(self) -> None:
        def close_connection(_: sqlite3.Connection) -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        if self._conn is not None:
            await self.call(close_connection)
        self._executor.shutdown(wait=False)


class SQLiteThread:
    """Two threads, each owning one connection (WAL, foreign keys): snapshot reads on one,
    immediate writes on the other. Reads never queue behind a write that waits for the file's
    write lock (another process's commit): with one thread, an API server under formations spent
    31% of its time in BEGIN IMMEDIATE, with its context and search reads queued behind it
    (docs/http_api.md "Load")."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._reader = _Owned(Path(path), "mnemos-sqlite-read")
        self._writer = _Owned(Path(path), "mnemos-sqlite-write")

    async def _read[T](self, body: Callable[[sqlite3.Connection], T]) -> T:
        """One consistent snapshot for every statement of ``body``."""
        return await self._reader.call(lambda conn: _transaction(conn, "BEGIN", body))

    async def _write[T](self, body: Callable[[sqlite3.Connection], T]) -> T:
        return await self._writer.call(lambda conn: _transaction(conn, "BEGIN IMMEDIATE", body))

    async def _close_connections(self) -> None:
        await self._writer.close()
        await self._reader.close()
