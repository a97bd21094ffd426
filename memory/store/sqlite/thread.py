"""The thread that owns a store's SQLite connection, and its transactions.

Every database call runs on one dedicated worker thread that owns the connection, so the event
loop never waits on disk or on a lock. Several stores (threads or processes) may share the file:
writes are BEGIN IMMEDIATE transactions, which take the write lock up front and wait for it
(busy_timeout) instead of failing when a read transaction would have to be upgraded.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BUSY_TIMEOUT_SECONDS = 30.0
# Reads through a memory map instead of read() calls into SQLite's small page cache: a text
# search visits each match's row at random, and at 100k facts its FTS5 join took 5.2 ms with
# read() and 0.9 ms mapped (bench/search.py's queries). The map is address space, not memory:
# the pages are the OS page cache's, shared with every process on the file.
MMAP_BYTES = 1 << 30


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


class SQLiteThread:
    """One worker thread, one connection (WAL, foreign keys), snapshot reads and immediate writes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = Path(path)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mnemos-sqlite")
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
            conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            self._conn = conn
        return self._conn

    async def _call[T](self, fn: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(self._connection()))

    async def _read[T](self, body: Callable[[sqlite3.Connection], T]) -> T:
        """One consistent snapshot for every statement of ``body``."""
        return await self._call(lambda conn: _transaction(conn, "BEGIN", body))

    async def _write[T](self, body: Callable[[sqlite3.Connection], T]) -> T:
        return await self._call(lambda conn: _transaction(conn, "BEGIN IMMEDIATE", body))
