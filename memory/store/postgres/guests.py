"""PostgreSQL's marking of the sessions with guests (SessionInfo.has_guests), at every setup
after the migrations (memory.store.postgres.migrations, migration 10)."""

from __future__ import annotations

from memory.store.postgres.pool import Conn
from memory.store.postgres.schema import LOCK
from memory.store.sql.sessions import GUEST_SESSIONS_AFTER_SQL, GUESTS_INDEX_SQL

_GUESTS_BATCH = 1000


async def mark_guests(conn: Conn) -> int:
    """Mark the sessions holding a guest's message that are not marked yet; return how many.
    Every setup runs it after the migrations committed, on an autocommit connection: stored
    before migration 10, or recorded since by a writer of the previous version (still running
    during a rolling upgrade), such a session would otherwise never be marked.

    The partial index messages_guests (the guests' messages only) is built here, once, in a
    transaction of its own: its SHARE lock on messages pauses message inserts for that one
    scan and takes no lock on sessions (built inside the migrations' transaction, it would
    hold their lock on sessions as long, or deadlock with a writer that holds a session row
    and inserts messages). Then batches in session id order, each an UPDATE of its own that
    locks the rows it marks only. Idempotent; a setup that dies midway leaves the rest to the
    next."""
    cur = await conn.execute("SELECT to_regclass('messages_guests') IS NOT NULL AS built")
    row = await cur.fetchone()
    if not (row and row["built"]):  # no lock on messages once it is there
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK,))  # a concurrent start
            await conn.execute(GUESTS_INDEX_SQL.encode())
    marked, after = 0, ""
    while True:
        cur = await conn.execute(GUEST_SESSIONS_AFTER_SQL.encode(), (after, _GUESTS_BATCH))
        batch = [row["session_id"] for row in await cur.fetchall()]
        if batch:
            cur = await conn.execute(
                "UPDATE sessions SET has_guests = true "
                "WHERE session_id = ANY(%s) AND NOT has_guests",
                (batch,),
            )
            marked += cur.rowcount
        if len(batch) < _GUESTS_BATCH:
            return marked
        after = batch[-1]
